"""``chatlog import``: files of raw IRC lines (as other loggers keep them) into ``chatlog.messages``.

What is read: the files, ``.gz`` files (gunzipped as they are read), directories and justlog trees that
:mod:`ingest.import_tree` lists, one after the other, into one producer. A file that cannot be opened or
whose gzip data is corrupt or cut short is reported in one line (``PATH: skipped ...: reason``) and the
import goes on with the next one; the summary counts it as unreadable or corrupt. A truncated ``.gz`` loses
only its tail (the lines before the cut are imported); a corrupt one (a CRC mismatch shows only at the end,
after garbled lines: :func:`gzip_damage` checks first) is skipped whole.

Each line of a file is one IRC line as received (``\\n``, ``\\r\\n`` or ``\\r`` terminated, UTF-8). A line may
start with a logger's timestamp in brackets, ``[2026-11-21 15:04:05] `` (optionally ``.fff`` and a ``Z``
or ``+hh:mm`` offset; without an offset it is read as UTC). That is unambiguous because an IRC line
starts with ``@``, ``:`` or a command, never with ``[``; a ``[`` that is not such a timestamp makes the
line malformed. The timestamp is used when the line itself carries none (no ``tmi-sent-ts``, no
``time`` tag); ``raw`` is the IRC line without it, as a live ingester would see it.

``received_at`` is ``sent_at`` when the line (or its bracket timestamp) tells it. A line without a
(plausible) time of its own gets one that does not change from one import to the next, since the stored
rows are keyed by it: its file's time base plus its line number in milliseconds (so the file's order
stays), the base being 00:00 UTC of a justlog channel file's day, else the file's modification time
(when it is after 2001-09-09 and not in the future), else the time of the import, as for stdin. Importing
the same file twice thus stores each line once, as long as the file's modification time is the same: a
copy, a ``touch`` or a pipe gives its timeless lines other times, so they are stored again.
``ingester`` is ``"import"``. Records get the broker's CreateTime (now), never the historic
``sent_at``: the topic's time retention would otherwise delete old imports at once.

Every line is accounted for: a chat event (printed or produced), a non-chat IRC line (PING, JOIN, ...:
skipped, no error), a blank line (skipped), or a problem (not UTF-8, not IRC, a malformed chat line,
a line past the contract's bounds), which is reported as ``FILE:LINENO: reason`` (the first
:data:`MAX_REPORTED` of the whole import, then a count) and, in a real run,
sent to the dead-letter topic with the raw line as value and ``reason``/``source`` headers. Records
are never dropped on a full producer queue (``BufferError``: poll and retry); each failed delivery is
counted and reported.

A UTF-8 byte order mark at the start of the file is not part of line 1. Lines are read with a bound
(:func:`bounded_lines`, :data:`MAX_IMPORT_LINE_BYTES`): a longer line is a problem whose dead letter
holds its first ``MAX_IMPORT_LINE_BYTES`` bytes, and the rest of it is skipped without being held, so
a file with a 1 GB line needs no more memory than any other.

Importing the same files again stores nothing new: every event's ``message_id`` comes from the line
(Twitch's ``id`` tag, IRCv3 ``msgid``, else the hash of the line, :func:`core.irc_parse.line_hash`; for a
line whose time the import gave, of that time and the line, :func:`timed_line_id`), and the tables are
keyed by it. The topic holds the records twice; the sink writes each row once.

Outcome (``chatlog import``'s exit code): 0 when something was imported, or when no line was a problem
(a file of PINGs and JOINs imports nothing, correctly), with the one-line summary counting the files,
problems and dead letters; 1 when nothing could be read (a missing path, empty or unreadable files) or
when every line with content was a problem (a wrong file, not a bad line in a good one); 3 when records
were not delivered.
"""

from __future__ import annotations

import gzip
import os
import re
import stat
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any, Final, Protocol, cast

from core.errors import ChatlogError
from core.irc_parse import MalformedLine, command_of, line_hash, parse_line
from core.settings import KafkaSettings
from core.times import epoch_ms, now_ms
from ingest.import_tree import STDIN, ImportFile, PlanFailed, channel_file_day_ms, plan_import
from schemas.chat_event import MAX_LINE_CHARS, MAX_TIME_MS, MIN_PLAUSIBLE_SENT_MS, ChatEvent, encode

INGESTER: Final = "import"
MAX_REPORTED: Final = 20
PROGRESS_EVERY: Final = 8192
"""Lines between two calls of :meth:`ImportProgress.lines` (each call costs a little on the hot path)."""
MAX_IMPORT_LINE_BYTES: Final = 4 * MAX_LINE_CHARS + 64
"""Longest line read whole: the contract's longest line in UTF-8 (4 bytes a character at most) and a
logger's bracket timestamp. Lines up to it that the contract still rejects are the parser's problems."""
_BOM: Final = b"\xef\xbb\xbf"
_NOT_GZIP: Final = "Not a gzipped file"
"""What Python's gzip says when the bytes after a member are not another member."""
_TRAILING: Final = "data after the gzip stream is not gzip (zcat ignores it too)"
_BRACKET_TS: Final = re.compile(
    r"\[(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)(Z|[+-]\d{2}:?\d{2})?\] +"
)
PRODUCER_CONFIG: Final[dict[str, Any]] = {
    "client.id": "chatlog-import",
    # zstd: fewer bytes on the wire than lz4 at the same produce rate (`chatlog bench ingest` compares).
    "compression.type": "zstd",
    "linger.ms": 20,
    # librdkafka's own error lines (one per reconnect attempt) would drown the one-line reports; an
    # unreachable cluster and every failed delivery are reported by the import itself.
    "log_level": 2,
}


def _kafka_reason(exc: Exception) -> str:
    """The text of a KafkaException's KafkaError, without the code/val wrapping."""
    err: Any = exc.args[0] if exc.args else None
    return str(err.str()) if hasattr(err, "str") else str(exc)


class LineStream(Protocol):
    """What lines are read from: a file, a gzip file, stdin."""

    def read1(self, size: int = -1, /) -> bytes: ...

    def close(self) -> None: ...


class ImportFailed(ChatlogError):
    """The import could not start or could not read anything."""


@dataclass
class ImportStats:
    """What happened to every line of one import."""

    read: int = 0
    events: int = 0
    not_chat: int = 0
    blank: int = 0
    problems: int = 0
    produced: int = 0
    dead_lettered: int = 0
    failed: int = 0
    queue_full_waits: int = 0  # times the producer queue was full and the import waited (BufferError)
    files: int = 0  # files opened or tried, the bad ones included
    bad_files: int = 0  # files that could not be opened, or whose gzip data is corrupt or cut short

    @property
    def skipped(self) -> int:
        return self.not_chat + self.blank + self.problems

    def summary(self, source: str) -> str:
        """One line; the file counts only when there was more (or less) than one good file."""
        files = (
            f"files {self.files} ({self.bad_files} unreadable or corrupt), "
            if self.files != 1 or self.bad_files
            else ""
        )
        return (
            f"import {source}: {files}read {self.read}, events {self.events}, skipped {self.skipped} "
            f"({self.not_chat} not chat, {self.problems} problems, {self.blank} blank), "
            f"produced {self.produced}, dead-lettered {self.dead_lettered}, failed {self.failed}"
        )


class ImportProgress(Protocol):
    """Told how far an import is (the command line draws a progress bar from it)."""

    def start(self, files: int) -> None: ...

    def file(self, path: str) -> None:
        """Reading ``path`` starts."""

    def lines(self, count: int) -> None:
        """``count`` more lines were read (every :data:`PROGRESS_EVERY` lines, and at a file's end)."""

    def file_done(self) -> None: ...


class NoProgress:
    def start(self, files: int) -> None:
        del files

    def file(self, path: str) -> None:
        del path

    def lines(self, count: int) -> None:
        del count

    def file_done(self) -> None:
        pass


class EventSink(Protocol):
    """Where an import puts what it read: stdout for ``--dry-run``, Kafka for a real run."""

    def event(self, event: ChatEvent) -> None: ...

    def dead_letter(self, raw: bytes, reason: str, source: str) -> None: ...

    def finish(self, stats: ImportStats) -> None:
        """Wait for everything to be written; add the delivery counts to ``stats``."""


class OutputClosed(ChatlogError):
    """``--dry-run``'s reader went away (``chatlog import x --dry-run | head``): not the input's fault."""


class NdjsonSink:
    """``--dry-run``: each event as one line of JSON on ``out``; problems go nowhere but stderr."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out

    def event(self, event: ChatEvent) -> None:
        try:
            self._out.write(encode(event) + b"\n")
        except BrokenPipeError:
            raise OutputClosed("the output was closed") from None

    def dead_letter(self, raw: bytes, reason: str, source: str) -> None:
        del raw, reason, source

    def finish(self, stats: ImportStats) -> None:
        del stats
        try:
            self._out.flush()
        except BrokenPipeError:
            raise OutputClosed("the output was closed") from None


class KafkaImportSink:
    """A real run: events to the messages topic (key = channel), problems to the dead-letter topic."""

    def __init__(
        self,
        settings: KafkaSettings,
        *,
        report: Callable[[str], None],
        overrides: dict[str, Any] | None = None,
    ) -> None:
        from confluent_kafka import Producer

        from core.kafka_probe import probe

        self._messages = settings.topic_messages
        self._deadletter = settings.topic_deadletter
        self._report = report
        self._events_ok = self._dead_ok = self._failed = self._waits = 0
        # all topics (asking for one by name could auto-create it with the broker's defaults), within the
        # bounded probe: Kafka down, a refused login or TLS is one line naming the setting (KafkaUnreachable,
        # exit 2), before anything is read
        existing = probe(settings).topics
        # idempotent with acks=all by default: retries neither duplicate nor reorder a partition's records
        conf = (
            settings.kafka_client_config()
            | PRODUCER_CONFIG
            | settings.producer_guarantees()
            | (overrides or {})
        )
        self._producer = Producer(conf)
        missing = [t for t in (self._messages, self._deadletter) if t not in existing]
        if missing:
            raise ImportFailed(f"topic {missing[0]} does not exist (`chatlog stack up` creates the topics)")

    def _produce(self, topic: str, key: bytes | None, value: bytes, headers: Any, callback: Any) -> None:
        from confluent_kafka import KafkaException

        while True:
            try:
                self._producer.produce(topic, value, key, on_delivery=callback, headers=headers)
                break
            except BufferError:  # the local queue is full: let deliveries drain, then retry; never drop
                self._waits += 1
                self._producer.poll(0.1)
            except KafkaException as exc:  # e.g. a record larger than message.max.bytes
                self._fail(f"{topic}: {_kafka_reason(exc)}")
                return
        self._producer.poll(0)

    def _fail(self, reason: str) -> None:
        self._failed += 1
        if self._failed <= MAX_REPORTED:
            self._report(f"delivery failed: {reason}")

    def _on_event(self, err: Any, msg: Any) -> None:
        if err is None:
            self._events_ok += 1
        else:
            self._fail(f"{self._messages} key {msg.key()!r}: {err.str()}")

    def _on_dead_letter(self, err: Any, msg: Any) -> None:
        if err is None:
            self._dead_ok += 1
        else:
            self._fail(f"{self._deadletter} {dict(msg.headers() or ())}: {err.str()}")

    def event(self, event: ChatEvent) -> None:
        self._produce(self._messages, event.channel.encode(), encode(event), None, self._on_event)

    def dead_letter(self, raw: bytes, reason: str, source: str) -> None:
        headers = [("reason", reason.encode()), ("source", source.encode())]
        self._produce(self._deadletter, None, raw, headers, self._on_dead_letter)

    def finish(self, stats: ImportStats) -> None:
        undelivered = self._producer.flush()  # blocks until every record is delivered or failed
        stats.produced = self._events_ok
        stats.dead_lettered = self._dead_ok
        stats.failed = self._failed + undelivered
        stats.queue_full_waits = self._waits
        if self._failed > MAX_REPORTED:
            self._report(f"{self._failed - MAX_REPORTED} more delivery failures not shown")


def bracket_timestamp(line: str) -> tuple[int | None, str]:
    """Split a leading ``[YYYY-MM-DD HH:MM:SS] `` off ``line``: (epoch ms or None, the IRC line)."""
    if line[:1] != "[":
        return None, line
    match = _BRACKET_TS.match(line)
    if match is None:
        raise MalformedLine("line starts with '[' but not with a [YYYY-MM-DD HH:MM:SS] timestamp")
    try:
        stamp = datetime.fromisoformat(match[1] + (match[2] or "Z"))
    except ValueError as exc:  # e.g. month 13
        raise MalformedLine(f"bad leading timestamp: {exc}") from None
    ms = epoch_ms(stamp)
    if not 0 <= ms <= MAX_TIME_MS:
        raise MalformedLine(f"leading timestamp {match[0].strip()} is outside 1970-9999")
    return ms, line[match.end() :]


def bounded_lines(
    stream: LineStream, limit: int = MAX_IMPORT_LINE_BYTES, chunk: int = 1 << 16
) -> Iterator[bytes]:
    """The lines of ``stream``, terminators included: ``\\n``, ``\\r\\n`` or a bare ``\\r`` (no IRC line
    holds one: a file written with old Mac line ends is read line by line, not as one line). Read
    ``chunk`` bytes at a time at most (``read1``: what one read gives, so a pipe's lines come as they
    arrive, and a gzip file cut short gives its lines up to the cut). A line longer than ``limit`` bytes
    comes out as its first ``limit`` + 1 bytes with no terminator, so that it is seen to be too long,
    and the rest of it is read and dropped piece by piece: a 1 GB line is never held."""
    pending = b""  # the start of a line whose end has not been read yet (or a CR whose LF may follow)
    skipping = False  # inside a line already cut at the bound
    lone_cr = False  # a line cut at the bound ended with the CR that ended the last read: drop an LF next
    while data := stream.read1(chunk):
        if lone_cr:
            lone_cr, data = False, data.removeprefix(b"\n")
        lines = (pending + data).splitlines(keepends=True)
        if not lines:
            continue
        pending = lines.pop() if lines[-1][-1:] != b"\n" else b""
        for line in lines:
            if skipping:  # the end of the line that was cut
                skipping = False
            elif len(line) > limit and len(line.rstrip(b"\r\n")) > limit:
                yield line[: limit + 1]
            else:
                yield line
        if len(pending) > limit + 2:  # no end yet, and past the bound already
            if not skipping:
                yield pending[: limit + 1]
            lone_cr = pending[-1:] == b"\r"  # the line has ended: only its LF may be left
            skipping, pending = not lone_cr, b""
    if pending and not skipping:
        yield pending[: limit + 1] if len(pending.rstrip(b"\r")) > limit else pending


def _is_command(token: str | None) -> bool:
    """An IRC command as servers send it: upper-case letters, or a three-digit numeric."""
    if not token or not token.isascii():
        return False
    return (token.isalpha() and token.isupper()) or (len(token) == 3 and token.isdigit())


class _Run:
    """One import: one sink and one :class:`ImportStats` over every file it reads."""

    def __init__(
        self,
        sink: EventSink,
        report: Callable[[str], None],
        clock: Callable[[], int] = now_ms,
        progress: ImportProgress | None = None,
    ) -> None:
        self.stats = ImportStats()
        self._sink = sink
        self._report = report
        self._clock = clock
        self._progress = progress or NoProgress()

    def _problem(self, source: str, lineno: int, raw: bytes, reason: str) -> None:
        self.stats.problems += 1
        if self.stats.problems <= MAX_REPORTED:
            self._report(f"{source}:{lineno}: {reason}")
        self._sink.dead_letter(raw, reason, f"import:{source}:{lineno}")

    def read_lines(self, lines: Iterable[bytes], source: str, time_base: int | None = None) -> None:
        """Parse ``lines`` (raw file lines, terminator included or not) into the sink; count everything.
        A line without a time of its own is given ``time_base`` + (line number - 1) ms (``None``: the
        import's clock). Errors of ``lines`` itself (a read error, corrupt gzip) are the caller's."""
        stats, sink, clock = self.stats, self._sink, self._clock
        lineno = 0
        try:
            for lineno, raw_line in enumerate(lines, start=1):
                stats.read += 1
                if not lineno % PROGRESS_EVERY:
                    self._progress.lines(PROGRESS_EVERY)
                raw = raw_line.rstrip(b"\n").removesuffix(b"\r")
                if lineno == 1:
                    raw = raw.removeprefix(_BOM)
                if len(raw) > MAX_IMPORT_LINE_BYTES:
                    limit = MAX_IMPORT_LINE_BYTES
                    reason = f"line longer than {limit} bytes (the dead letter holds the first)"
                    self._problem(source, lineno, raw[:limit], reason)
                    continue
                if not raw or raw.isspace():
                    stats.blank += 1
                    continue
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    reason = f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
                    self._problem(source, lineno, raw, reason)
                    continue
                try:
                    stamp, line = bracket_timestamp(text)
                    now = clock()  # what a line's own time is judged against (not more than a day ahead)
                    event = parse_line(
                        line, received_at=stamp if stamp is not None else now, ingester=INGESTER
                    )
                except MalformedLine as exc:
                    self._problem(source, lineno, raw, str(exc))
                    continue
                if event is None:
                    if _is_command(command_of(line)):
                        stats.not_chat += 1
                    else:
                        reason = "not an IRC line (expected '@tags', ':prefix' or a command first)"
                        self._problem(source, lineno, raw, reason)
                    continue
                if event.sent_at == (now if stamp is None else stamp):  # no (plausible) time of its own
                    if stamp is None and time_base is not None:
                        event.sent_at = time_base + lineno - 1
                    if not (event.tags.get("id") or event.tags.get("msgid")):
                        event.message_id = timed_line_id(line, event.sent_at)
                event.received_at = event.sent_at  # the line's own time when it has one, else the placeholder
                stats.events += 1
                sink.event(event)
        finally:
            self._progress.lines(lineno % PROGRESS_EVERY)

    def read_file(self, item: ImportFile) -> None:
        """Read one file; one line to the report (and on to the next file) if it cannot be read through."""
        self.stats.files += 1
        self._progress.file(item.path)
        before = self.stats.read
        damage = gzip_damage(item.path) if item.gz else None
        if damage is not None:
            self._bad_file(item.path, 0, damage)  # "skipped:": none of its lines, as none can be trusted
            self._progress.file_done()
            return
        try:
            stream = _open(item)
        except OSError as exc:
            self._bad_file(item.path, 0, exc.strerror or str(exc))
            return
        try:
            self.read_lines(bounded_lines(stream), item.path, _time_base(item, self._clock()))
        except (OSError, EOFError, zlib.error) as exc:
            lines = self.stats.read - before
            if lines and isinstance(exc, gzip.BadGzipFile) and _NOT_GZIP in str(exc):
                self._bad_file(
                    item.path, lines, "data after the gzip stream is not gzip (zcat ignores it too)"
                )
            else:
                self._bad_file(item.path, lines, _read_error(exc))
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()
            self._progress.file_done()

    def _bad_file(self, path: str, lines_read: int, reason: str) -> None:
        self.stats.bad_files += 1
        if lines_read:
            self._report(f"{path}: skipped after line {lines_read} (lines 1-{lines_read} imported): {reason}")
        else:
            self._report(f"{path}: skipped: {reason}")

    def finish(self, label: str) -> ImportStats:
        """Wait for the sink; report the problems that were not shown."""
        try:
            if self.stats.problems > MAX_REPORTED:
                self._report(f"{label}: {self.stats.problems - MAX_REPORTED} more problems not shown")
        finally:
            self._sink.finish(self.stats)
        return self.stats


def timed_line_id(line: str, sent_at: int) -> str:
    """The id of an imported line with neither an id tag nor a time of its own: the hash of the line and
    the time the import gave it, so that two equal lines (a repeated "lol" in a log of untagged lines) are
    two messages, and importing the file again gives the same ids. A live ingester has no such time to
    share with the other replicas' copies, and hashes the line alone (:func:`core.irc_parse.line_hash`)."""
    return line_hash(f"{sent_at} {line}")


def _time_base(item: ImportFile, now: int) -> int:
    """The time of a file's lines that have none (see the module doc): its justlog day, else its
    modification time when plausible (after 2001-09-09, not after ``now``), else ``now``."""
    if item.path == STDIN:
        return now
    path = Path(item.path).absolute()
    day = channel_file_day_ms(path)
    if day is not None:
        return day
    try:
        mtime = path.stat().st_mtime_ns // 1_000_000
    except OSError:
        return now
    return mtime if MIN_PLAUSIBLE_SENT_MS <= mtime <= now else now


def gzip_damage(path: str, chunk: int = 1 << 20) -> str | None:
    """Why the gzip file at ``path`` cannot be trusted, or None. It is decompressed once, its output thrown
    away: a CRC mismatch shows only at a member's end, after lines garbled by the damage were read. A file
    that is only cut short (or cannot be opened) is None here: its lines up to the cut are sound, and reading
    it reports the cut; so is one with data after its last member that is not gzip (zcat's "trailing
    garbage": every member before it was checked). A pipe or a device is not read twice: None."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        out = 0
        with gzip.open(path, "rb") as stream:
            while data := stream.read1(chunk):  # one member's data at a time: counted before a bad header
                out += len(data)
    except EOFError:
        return None
    except gzip.BadGzipFile as exc:
        return None if out and _NOT_GZIP in str(exc) else _read_error(exc)
    except zlib.error as exc:
        return _read_error(exc)
    except OSError:
        return None
    return None


def _read_error(exc: BaseException) -> str:
    """Why a file could not be read through, in a few words."""
    if isinstance(exc, EOFError):
        return "corrupt gzip: cut short (no end-of-stream marker)"
    if isinstance(exc, zlib.error | gzip.BadGzipFile):
        return f"corrupt gzip: {exc}"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


def import_lines(
    lines: Iterable[bytes],
    *,
    source: str,
    sink: EventSink,
    report: Callable[[str], None],
    clock: Callable[[], int] = now_ms,
) -> ImportStats:
    """Parse ``lines`` (raw file lines, terminator included or not) into ``sink``; count everything."""
    run = _Run(sink, report, clock)
    try:  # also on Ctrl-C or a read error: what is already queued still gets delivered
        run.read_lines(lines, source)
    finally:
        run.finish(source)
    return run.stats


def _open(item: ImportFile) -> LineStream:
    if item.path == STDIN:
        return cast(LineStream, sys.stdin.buffer)  # a BufferedReader: it has read1
    if item.gz:
        return gzip.open(item.path, "rb")
    return Path(item.path).open("rb")


def paths_label(paths: Sequence[str]) -> str:
    """How reports name the paths of one import: the path, or the first and a count."""
    return paths[0] if len(paths) == 1 else f"{paths[0]} and {len(paths) - 1} more"


def import_paths(
    paths: Sequence[str],
    *,
    dry_run: bool,
    settings: KafkaSettings,
    out: IO[bytes],
    report: Callable[[str], None],
    justlog: bool | None = None,
    progress: ImportProgress | None = None,
    producer_config: dict[str, Any] | None = None,
) -> ImportStats:
    """Import every file ``paths`` stand for (:func:`ingest.import_tree.plan_import`; ``-`` is stdin)
    into one sink. Raises :class:`ImportFailed` before reading anything if a path is missing, and after
    the import if nothing could be read or every line with content was a problem (after sending their
    dead letters)."""
    if not paths:
        raise ImportFailed("nothing to import: no path given")
    try:
        plan = plan_import(paths, justlog=justlog)
    except PlanFailed as exc:
        raise ImportFailed(str(exc)) from None
    for line in (*plan.notes, *plan.problems):
        report(line)
    label = paths_label(paths)
    sink: EventSink = (
        NdjsonSink(out) if dry_run else KafkaImportSink(settings, report=report, overrides=producer_config)
    )
    run = _Run(sink, report, progress=progress)
    run.stats.bad_files = len(plan.problems)  # directories that could not be listed
    (progress or NoProgress()).start(len(plan.files))
    try:
        for item in plan.files:
            run.read_file(item)
    finally:
        stats = run.finish(label)
    if stats.read == 0:
        if stats.bad_files:
            raise ImportFailed(f"nothing imported from {label}: nothing could be read (listed above)")
        if not plan.files:
            raise ImportFailed(f"nothing to import: no files in {label}")
        raise ImportFailed(f"nothing to import: {label} is empty")
    if stats.problems and not stats.events and not stats.not_chat:
        sent = "dry run: none sent" if dry_run else f"{stats.dead_lettered} dead-lettered"
        raise ImportFailed(
            f"nothing imported from {label}: every line with content was a problem "
            f"({stats.problems}; {sent}; the first are listed above)"
        )
    return stats


def import_file(
    path: str,
    *,
    dry_run: bool,
    settings: KafkaSettings,
    out: IO[bytes],
    report: Callable[[str], None],
    producer_config: dict[str, Any] | None = None,
) -> ImportStats:
    """:func:`import_paths` of one path."""
    return import_paths(
        [path], dry_run=dry_run, settings=settings, out=out, report=report, producer_config=producer_config
    )
