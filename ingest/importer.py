"""``chatlog import``: a file of raw IRC lines (as other loggers export them) into ``chatlog.messages``.

Each line of the file is one IRC line as received (``\\n`` or ``\\r\\n`` terminated, UTF-8). A line may
start with a logger's timestamp in brackets, ``[2026-11-21 15:04:05] `` (optionally ``.fff`` and a ``Z``
or ``+hh:mm`` offset; without an offset it is read as UTC). That is unambiguous because an IRC line
starts with ``@``, ``:`` or a command, never with ``[``; a ``[`` that is not such a timestamp makes the
line malformed. The timestamp is used when the line itself carries none (no ``tmi-sent-ts``, no
``time`` tag); ``raw`` and the id are those of the IRC line without it, as a live ingester would see it.

``received_at`` is ``sent_at`` when the line (or its bracket timestamp) tells it, else the time of the
import. ``ingester`` is ``"import"``. Records get the broker's CreateTime (now), never the historic
``sent_at``: the topic's time retention would otherwise delete old imports at once.

Every line is accounted for: a chat event (printed or produced), a non-chat IRC line (PING, JOIN, ...:
skipped, no error), a blank line (skipped), or a problem (not UTF-8, not IRC, a malformed chat line,
a line past the contract's bounds), which is reported as ``FILE:LINENO: reason`` and, in a real run,
sent to the dead-letter topic with the raw line as value and ``reason``/``source`` headers. Records
are never dropped on a full producer queue (``BufferError``: poll and retry); each failed delivery is
counted and reported.

A UTF-8 byte order mark at the start of the file is not part of line 1. Lines are read with a bound
(:func:`bounded_lines`, :data:`MAX_IMPORT_LINE_BYTES`): a longer line is a problem whose dead letter
holds its first ``MAX_IMPORT_LINE_BYTES`` bytes, and the rest of it is skipped without being held, so
a file with a 1 GB line needs no more memory than any other.

Outcome (``chatlog import``'s exit code): 0 when something was imported, or when no line was a problem
(a file of PINGs and JOINs imports nothing, correctly), with the one-line summary counting the problems
and dead letters; 1 when nothing could be read (a missing or empty file) or when every line with
content was a problem (a wrong file, not a bad line in a good one); 3 when records were not delivered.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any, Final, Protocol

from core.errors import ChatlogError
from core.settings import KafkaSettings
from ingest.parse import MalformedLine, command_of, parse_line
from schemas.chat_event import MAX_LINE_CHARS, MAX_TIME_MS, ChatEvent, encode

INGESTER: Final = "import"
MAX_REPORTED: Final = 20
MAX_IMPORT_LINE_BYTES: Final = 4 * MAX_LINE_CHARS + 64
"""Longest line read whole: the contract's longest line in UTF-8 (4 bytes a character at most) and a
logger's bracket timestamp. Lines up to it that the contract still rejects are the parser's problems."""
_BOM: Final = b"\xef\xbb\xbf"
_BRACKET_TS: Final = re.compile(
    r"\[(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)(Z|[+-]\d{2}:?\d{2})?\] +"
)
PRODUCER_CONFIG: Final[dict[str, Any]] = {
    "client.id": "chatlog-import",
    "enable.idempotence": True,  # retries neither duplicate nor reorder records of a partition
    "acks": "all",
    # zstd: fewer bytes on the wire than lz4 at the same produce rate (`chatlog bench ingest` compares).
    "compression.type": "zstd",
    "linger.ms": 20,
    # librdkafka's own error lines (one per reconnect attempt) would drown the one-line reports; an
    # unreachable cluster and every failed delivery are reported by the import itself.
    "log_level": 2,
}
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MS: Final = timedelta(milliseconds=1)


def _kafka_reason(exc: Exception) -> str:
    """The text of a KafkaException's KafkaError, without the code/val wrapping."""
    err: Any = exc.args[0] if exc.args else None
    return str(err.str()) if hasattr(err, "str") else str(exc)


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

    @property
    def skipped(self) -> int:
        return self.not_chat + self.blank + self.problems

    def summary(self, source: str) -> str:
        return (
            f"import {source}: read {self.read}, events {self.events}, skipped {self.skipped} "
            f"({self.not_chat} not chat, {self.problems} problems, {self.blank} blank), "
            f"produced {self.produced}, dead-lettered {self.dead_lettered}, failed {self.failed}"
        )


class EventSink(Protocol):
    """Where an import puts what it read: stdout for ``--dry-run``, Kafka for a real run."""

    def event(self, event: ChatEvent) -> None: ...

    def dead_letter(self, raw: bytes, reason: str, source: str) -> None: ...

    def finish(self, stats: ImportStats) -> None:
        """Wait for everything to be written; add the delivery counts to ``stats``."""


class NdjsonSink:
    """``--dry-run``: each event as one line of JSON on ``out``; problems go nowhere but stderr."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out

    def event(self, event: ChatEvent) -> None:
        self._out.write(encode(event) + b"\n")

    def dead_letter(self, raw: bytes, reason: str, source: str) -> None:
        del raw, reason, source

    def finish(self, stats: ImportStats) -> None:
        del stats
        self._out.flush()


class KafkaImportSink:
    """A real run: events to the messages topic (key = channel), problems to the dead-letter topic."""

    def __init__(
        self,
        settings: KafkaSettings,
        *,
        report: Callable[[str], None],
        overrides: dict[str, Any] | None = None,
        connect_timeout_s: float = 15.0,
    ) -> None:
        from confluent_kafka import KafkaException, Producer

        self._messages = settings.topic_messages
        self._deadletter = settings.topic_deadletter
        self._report = report
        self._events_ok = self._dead_ok = self._failed = self._waits = 0
        conf = settings.kafka_client_config() | PRODUCER_CONFIG | (overrides or {})
        self._producer = Producer(conf)
        try:  # all topics: asking for one by name could auto-create it with the broker's defaults
            existing = self._producer.list_topics(timeout=connect_timeout_s).topics
        except KafkaException as exc:
            where = settings.kafka_bootstrap_servers
            raise ImportFailed(f"cannot reach Kafka at {where}: {_kafka_reason(exc)}") from None
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
    ms = (stamp - _EPOCH) // _MS
    if not 0 <= ms <= MAX_TIME_MS:
        raise MalformedLine(f"leading timestamp {match[0].strip()} is outside 1970-9999")
    return ms, line[match.end() :]


def bounded_lines(stream: IO[bytes], limit: int = MAX_IMPORT_LINE_BYTES) -> Iterator[bytes]:
    """The lines of ``stream``, terminators included, read at most ``limit`` + 2 bytes at a time (a
    line of ``limit`` bytes and its CR LF). A longer line comes out as its first ``limit`` + 1 bytes
    with no terminator, so that it is seen to be too long, and the rest of it is read and dropped
    piece by piece: a 1 GB line is never held."""
    size = limit + 2
    while line := stream.readline(size):
        if len(line) == size and line[-1:] != b"\n":
            while (rest := stream.readline(size)) and rest[-1:] != b"\n":
                pass
            line = line[: limit + 1]
        yield line


def _is_command(token: str | None) -> bool:
    """An IRC command as servers send it: upper-case letters, or a three-digit numeric."""
    if not token or not token.isascii():
        return False
    return (token.isalpha() and token.isupper()) or (len(token) == 3 and token.isdigit())


def import_lines(
    lines: Iterable[bytes],
    *,
    source: str,
    sink: EventSink,
    report: Callable[[str], None],
    clock: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
) -> ImportStats:
    """Parse ``lines`` (raw file lines, terminator included or not) into ``sink``; count everything."""
    stats = ImportStats()

    def problem(lineno: int, raw: bytes, reason: str) -> None:
        stats.problems += 1
        if stats.problems <= MAX_REPORTED:
            report(f"{source}:{lineno}: {reason}")
        sink.dead_letter(raw, reason, f"import:{source}:{lineno}")

    try:
        for lineno, raw_line in enumerate(lines, start=1):
            stats.read += 1
            raw = raw_line.rstrip(b"\n").removesuffix(b"\r")
            if lineno == 1:
                raw = raw.removeprefix(_BOM)
            if len(raw) > MAX_IMPORT_LINE_BYTES:
                limit = MAX_IMPORT_LINE_BYTES
                problem(
                    lineno, raw[:limit], f"line longer than {limit} bytes (the dead letter holds the first)"
                )
                continue
            if not raw or raw.isspace():
                stats.blank += 1
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                problem(lineno, raw, f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})")
                continue
            try:
                stamp, line = bracket_timestamp(text)
                event = parse_line(
                    line, received_at=stamp if stamp is not None else clock(), ingester=INGESTER
                )
            except MalformedLine as exc:
                problem(lineno, raw, str(exc))
                continue
            if event is None:
                if _is_command(command_of(line)):
                    stats.not_chat += 1
                else:
                    problem(lineno, raw, "not an IRC line (expected '@tags', ':prefix' or a command first)")
                continue
            event.received_at = event.sent_at  # the line's own time when it has one, else the placeholder
            stats.events += 1
            sink.event(event)
        if stats.problems > MAX_REPORTED:
            report(f"{source}: {stats.problems - MAX_REPORTED} more problems not shown")
    finally:  # also on Ctrl-C or a read error: what is already queued still gets delivered
        sink.finish(stats)
    return stats


def _open(path: str) -> IO[bytes]:
    if path == "-":
        return sys.stdin.buffer
    try:
        return Path(path).open("rb")
    except OSError as exc:
        raise ImportFailed(f"cannot read {path}: {exc.strerror or exc}") from None


def import_file(
    path: str,
    *,
    dry_run: bool,
    settings: KafkaSettings,
    out: IO[bytes],
    report: Callable[[str], None],
    producer_config: dict[str, Any] | None = None,
) -> ImportStats:
    """Import ``path`` (``-`` is stdin); raises :class:`ImportFailed` if nothing could be read, or if
    every line with content was a problem (after sending their dead letters)."""
    stream = _open(path)
    try:
        sink: EventSink
        if dry_run:
            sink = NdjsonSink(out)
        else:
            sink = KafkaImportSink(settings, report=report, overrides=producer_config)
        try:
            stats = import_lines(bounded_lines(stream), source=path, sink=sink, report=report)
        except OSError as exc:
            raise ImportFailed(f"reading {path} failed: {exc.strerror or exc}") from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    if stats.read == 0:
        raise ImportFailed(f"nothing to import: {path} is empty")
    if stats.problems and not stats.events and not stats.not_chat:
        sent = "dry run: none sent" if dry_run else f"{stats.dead_lettered} dead-lettered"
        raise ImportFailed(
            f"nothing imported from {path}: every line with content was a problem "
            f"({stats.problems}; {sent}; the first are listed above)"
        )
    return stats
