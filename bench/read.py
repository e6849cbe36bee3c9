"""``chatlog bench read``: the reader library on the id-keyed tables E64s (issue 17, item 5), local stack.

A data set is written into a scratch keyspace (dropped at the end, whether the run succeeded or not) by
the sink's own writer (:func:`sink.writer.partition.write_partition`; no Spark, no Kafka), from realistic
Twitch lines (:func:`bench.storage.corpus`: full tags, replies, ``/me``, non-Latin text; ``pool_lines`` of
them cycled) re-homed and re-timed: a new uuid ``id``, ``room-id``, ``tmi-sent-ts`` and channel in each line
(and the user's prefix, ``user-id`` and ``display-name``), so the stored line says what the event says:

* :data:`DAY_CHANNEL`: ``day_messages`` spread over :data:`DAY` (the channel-day read);
* :data:`MONTH_CHANNEL`: ``channel_messages`` spread over the 30 days of :data:`MONTH_LO`..:data:`MONTH_HI`
  and ``user_messages`` of :data:`USER` spread over the same days, each in its own 5-minute bucket (the
  user-month read; spread out is the pointer layout's worst case: one channel-table query per message).

Writing is split into chunks of :data:`CHUNK_EVENTS` over ``workers`` processes (each its own sink writer
and Cassandra session). The tables are then flushed and major-compacted as ``chatlog bench storage`` does
(the stack has no nodetool), and measured:

* **bytes on disk**: the ``*-Data.db`` files of ``chat_by_channel``, ``chat_by_user`` and ``chat_buckets``
  per message, against the raw line's mean size (goal at most 0.42x, justlog's);
* **the channel-day** read in time order through :class:`store.read.LogReader` (every
  line's IRC text restored: :attr:`store.line.LogLine.raw`, what ``?raw`` answers) and, alternately in
  the same run, a raw cassandra-driver read of the same rows (the same session, ``chat_buckets`` for the
  buckets, then ``SELECT sent_at, message_id, line, received_at`` bucket by bucket with the store's fetch
  size and read-ahead), ``repeat`` times each: lines/s (best and median) and the ratio (the goal's); and
  the same raw read selecting the reader's columns (``toUnixTimestamp``, ``CAST(... AS text)``). Beside
  them, ``repeat`` reader runs each of what other answers do with the lines: ``text`` (the justlog text
  line, :func:`serve.formats.log_text_line`) and ``events`` (every line parsed into its event, what JSON
  needs). The reader's CPU per line, and what restoring (:func:`store.stored_line.restore`) and restoring
  + parsing (:func:`store.line.stored_event`) the rows read cost per line; a cProfile of one more
  reader run (not timed);
* **the user-month** (:meth:`CassandraStore.user_lines` over the month) ``reads`` times at each
  concurrency (asyncio tasks in this process, a closed loop): p50/p99, this process's CPU (cores busy
  and ms per read) and Cassandra's (ms per read); then, one read at a time, the CPU of this process and of
  its main thread (the event loop; the rest is the driver's I/O thread), and a cProfile of a few reads.

The machine is shared: the 1-minute load average is recorded with every measurement.
"""

from __future__ import annotations

import asyncio
import cProfile
import multiprocessing
import os
import pstats
import queue
import random
import statistics
import sys
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import msgspec
from schemas.cql import bucket_of, channel_key

from bench.serve_data import event_line
from core.errors import ChatlogError, one_line
from core.times import epoch_ms, naive_utc
from serve.formats import log_text_line

if TYPE_CHECKING:
    from schemas.chat_event import ChatEvent

DAY_MS: Final = 86_400_000
MONTH_LO: Final = 1_711_929_600_000
"""2024-04-01T00:00:00Z: the user-month is April 2024 (30 days, all in the past)."""
MONTH_HI: Final = 1_714_521_600_000
"""2024-05-01T00:00:00Z."""
DAY: Final = date(2024, 4, 17)
"""The day read in :data:`DAY_CHANNEL`."""
DAY_LO: Final = 1_713_312_000_000
""":data:`DAY` at 00:00 UTC."""
DAY_CHANNEL: Final = "benchreadday"
DAY_ROOM: Final = "2000000001"
MONTH_CHANNEL: Final = "benchreadmonth"
MONTH_ROOM: Final = "2000000002"
USER: Final = "benchreader"
USER_ID: Final = "1000000001"
"""Ids above the corpus's (at most 999,999,999), so no chatter of the corpus shares them."""
USER_OFFSET_MS: Final = 1_234_567
"""The user's first message, after the month's start (its messages are not on bucket edges)."""
RECEIVE_DELAY_MS: Final = 40
INGESTER: Final = "bench-read"
CHUNK_EVENTS: Final = 20_000
POOL_SEED: Final = 20261123
TABLES: Final = ("chat_by_channel", "chat_by_user", "chat_buckets")
"""The tables of layout E64s (schemas/cassandra.cql) whose bytes on disk are measured."""
GOALS: Final = {
    "channel_day_lines_per_s": 100_000,
    "channel_day_ratio_to_raw": 0.7,
    "user_month_p99_ms_at_32": 30.0,
    "bytes_ratio_to_raw_line": 0.42,
}
"""Issue 17, item 5."""


def say(message: str) -> None:
    """Progress on stderr (the run takes minutes): the time and the 1-minute load average with it."""
    print(f"{time.strftime('%H:%M:%S')} [load {load_average():.1f}] {message}", file=sys.stderr, flush=True)


def load_average() -> float:
    return round(os.getloadavg()[0], 2)


@dataclass(frozen=True)
class Params:
    """What one run measures; the defaults take ~10-15 minutes on the 2-core machine (writing dominates)."""

    day_messages: int = 200_000
    channel_messages: int = 2_000_000
    user_messages: int = 300
    reads: int = 200
    """User-month reads at each concurrency."""
    concurrency: tuple[int, ...] = (1, 32)
    repeat: int = 3
    """Channel-day reads through the reader, and as many raw reads, alternately."""
    workers: int = 2
    """Processes writing the data set."""
    pool_lines: int = 20_000
    """Distinct realistic lines (:func:`bench.storage.corpus`) the messages are made from."""
    limit_s: float = 300.0
    """A concurrency level's reads still running after this are cancelled (their percentiles: over)."""
    compact_timeout_s: float = 1200.0


# -- the data set (pure) ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """``count`` messages in ``channel`` spread evenly over ``[lo, hi)``: by the corpus's chatters, or all
    by ``user`` (login, id)."""

    name: str
    channel: str
    room_id: str
    lo: int
    hi: int
    count: int
    salt: int
    """Seeds the message ids and picks where in the pool the part starts."""
    user: tuple[str, str] | None = None

    def sent_at(self, i: int) -> int:
        return self.lo + (self.hi - self.lo) * i // self.count

    def buckets(self) -> int:
        """The 5-minute buckets its messages fall in."""
        return len({bucket_of(self.sent_at(i)) for i in range(self.count)})


@dataclass(frozen=True)
class Chunk:
    """Messages ``[start, stop)`` of a part: what one :func:`write_partition` call writes."""

    part: Part
    start: int
    stop: int

    @property
    def count(self) -> int:
        return self.stop - self.start


def parts(params: Params) -> tuple[Part, ...]:
    """The data set: the read day, the month channel's messages, the user's messages (parts that are
    empty left out)."""
    every = (
        Part("day", DAY_CHANNEL, DAY_ROOM, DAY_LO, DAY_LO + DAY_MS, params.day_messages, 1),
        Part("channel", MONTH_CHANNEL, MONTH_ROOM, MONTH_LO, MONTH_HI, params.channel_messages, 2),
        Part(
            "user",
            MONTH_CHANNEL,
            MONTH_ROOM,
            MONTH_LO + USER_OFFSET_MS,
            MONTH_HI,
            params.user_messages,
            3,
            (USER, USER_ID),
        ),
    )
    return tuple(p for p in every if p.count > 0)


def chunks(of: Sequence[Part], size: int = CHUNK_EVENTS) -> list[Chunk]:
    """Every part cut into chunks of at most ``size`` messages."""
    if size < 1:
        raise ValueError(f"chunk size must be positive, got {size}")
    return [Chunk(p, i, min(i + size, p.count)) for p in of for i in range(0, p.count, size)]


@dataclass(frozen=True)
class Template:
    """A realistic event and its line as a format string: ``{id}``, ``{room}``, ``{ts}`` and
    ``{channel}`` in place of its id, room id, send time and channel; ``user_line`` also ``{login}``
    (the prefix), ``{user_id}`` and ``{display}`` (every other brace doubled)."""

    event: ChatEvent
    line: str
    user_line: str


def _swap(text: str, old: str, new: str) -> str:
    found = text.count(old)
    if found != 1:
        raise ValueError(f"a template line holds {old!r} {found} times, not once")
    return text.replace(old, new)


def template(event: ChatEvent) -> Template:
    """``event`` (a Twitch PRIVMSG with ``id``, ``room-id``, ``tmi-sent-ts``, ``user-id`` and
    ``display-name`` tags, none of them first) as a :class:`Template`; ValueError for any other."""
    tags, login = event.tags, event.user_login
    if event.raw != event_line(event) or login is None:
        raise ValueError(f"not a line event_line rebuilds: {event.raw[:80]!r}")
    missing = [k for k in ("id", "room-id", "tmi-sent-ts", "user-id", "display-name") if not tags.get(k)]
    if missing:
        raise ValueError(f"a template line without {', '.join(missing)}: {event.raw[:80]!r}")
    line = event.raw.replace("{", "{{").replace("}", "}}")
    line = _swap(line, f";id={tags['id']};", ";id={id};")
    line = _swap(line, f";room-id={tags['room-id']};", ";room-id={room};")
    line = _swap(line, f";tmi-sent-ts={tags['tmi-sent-ts']};", ";tmi-sent-ts={ts};")
    line = _swap(line, f" {event.kind} #{event.channel} ", f" {event.kind} #{{channel}} ")
    user_line = _swap(line, f";user-id={tags['user-id']};", ";user-id={user_id};")
    user_line = _swap(user_line, f";display-name={tags['display-name']};", ";display-name={display};")
    user_line = _swap(
        user_line, f" :{login}!{login}@{login}.tmi.twitch.tv ", " :{login}!{login}@{login}.tmi.twitch.tv "
    )
    return Template(event, line, user_line)


def template_pool(n: int, seed: int = POOL_SEED) -> list[Template]:
    """``n`` realistic Twitch PRIVMSGs (:func:`bench.storage.corpus`, parsed) to make messages from."""
    from bench.storage import T0_MS, corpus
    from core.irc_parse import parse_line

    out = []
    for line in corpus(n, seed=seed):
        event = parse_line(line, received_at=T0_MS + DAY_MS)
        if event is None:  # pragma: no cover - the corpus is PRIVMSGs only
            raise ValueError(f"not a chat line: {line[:80]!r}")
        out.append(template(event))
    return out


def chunk_events(chunk: Chunk, pool: Sequence[Template]) -> list[ChatEvent]:
    """The messages of ``chunk``: each a pool event moved to the part's channel (``room-id``) and time
    (``tmi-sent-ts``), with a new uuid ``id`` (deterministic: seeded by the part and chunk), sent by
    the part's user if it has one; its line is the template's with these values (what
    :func:`bench.serve_data.event_line` of its fields gives, at a tenth of the cost)."""
    if not pool:
        raise ValueError("an empty template pool")
    part = chunk.part
    rng = random.Random(part.salt * 1_000_000_007 + chunk.start)
    step = 7919  # a prime: consecutive messages take templates far apart, every one in turn
    replace = msgspec.structs.replace
    out = []
    for i in range(chunk.start, chunk.stop):
        t = pool[(i * step + part.salt * 104_729) % len(pool)]
        base = t.event
        sent = part.sent_at(i)
        ts = str(sent)
        message_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        tags = dict(base.tags)  # the line's tag order is kept
        tags["id"] = message_id
        tags["room-id"] = part.room_id
        tags["tmi-sent-ts"] = ts
        if part.user is None:
            login, user_id, display = base.user_login, base.user_id, base.display_name
            raw = t.line.format(id=message_id, room=part.room_id, ts=ts, channel=part.channel)
        else:
            login, user_id = part.user
            display = login.capitalize()
            tags["user-id"] = user_id
            tags["display-name"] = display
            raw = t.user_line.format(
                id=message_id,
                room=part.room_id,
                ts=ts,
                channel=part.channel,
                login=login,
                user_id=user_id,
                display=display,
            )
        out.append(
            replace(
                base,
                message_id=message_id,
                channel=part.channel,
                channel_id=part.room_id,
                user_login=login,
                user_id=user_id,
                display_name=display,
                sent_at=sent,
                received_at=sent + RECEIVE_DELAY_MS,
                tags=tags,
                raw=raw,
                ingester=INGESTER,
            )
        )
    return out


# -- writing ---------------------------------------------------------------------------------------


def _write_worker(settings: Any, todo: Sequence[Chunk], pool_lines: int, out: Any) -> None:
    """A writer process: ``todo`` through the sink's writer; ("chunk", events, rows, raw bytes,
    dead letters) on ``out`` after each chunk, then ("done",), or ("error", one line) and exit 1."""
    import logging

    from sink.writer.cassandra import close_sessions

    from core.cql import quiet_driver_logs
    from schemas.chat_event import encode
    from sink.writer.collaborators import production
    from sink.writer.partition import write_partition

    logging.basicConfig(level=logging.WARNING)
    quiet_driver_logs()
    try:
        pool = template_pool(pool_lines)
        wiring = production(settings, dead_letters=False)  # dead letters counted, not produced
        for chunk in todo:
            events = chunk_events(chunk, pool)
            raw_bytes = sum(len(e.raw.encode()) for e in events)
            stats = write_partition([(encode(e), None, None) for e in events], settings, wiring)
            out.put(("chunk", stats.events, stats.rows_total, raw_bytes, stats.deadletters))
    except BaseException as exc:
        out.put(("error", one_line(exc, 300, typed=True)))
        close_sessions()
        sys.exit(1)
    close_sessions()
    out.put(("done",))


def write(settings: Any, params: Params) -> dict[str, Any]:
    """Create the schema in ``settings.cassandra_keyspace`` (sink settings) and write the data set with
    ``params.workers`` processes; what it took. A failed or vanished writer fails the run (the writers
    still running are terminated)."""
    from store.schema import apply_schema

    apply_schema(settings)
    todo = chunks(parts(params))
    total = sum(c.count for c in todo)
    shares = [todo[k :: params.workers] for k in range(params.workers)]
    context = multiprocessing.get_context("spawn")  # no driver threads forked
    results: Any = context.Queue()
    procs = [
        context.Process(target=_write_worker, args=(settings, share, params.pool_lines, results), daemon=True)
        for share in shares
        if share
    ]
    events = rows = raw_bytes = deadletters = finished = 0
    start = last_said = time.perf_counter()
    try:
        for proc in procs:
            proc.start()
        while finished < len(procs):
            try:
                message = results.get(timeout=5.0)
            except queue.Empty:
                gone = [p for p in procs if p.exitcode not in (None, 0)]
                if gone:
                    raise ChatlogError(f"a writer process exited with {gone[0].exitcode}") from None
                continue
            if message[0] == "error":
                raise ChatlogError(f"writing the data set: {message[1]}")
            if message[0] == "done":
                finished += 1
                continue
            events, rows = events + message[1], rows + message[2]
            raw_bytes, deadletters = raw_bytes + message[3], deadletters + message[4]
            now = time.perf_counter()
            if now - last_said >= 15.0:
                last_said = now
                say(f"written {events:,} / {total:,} events ({events / (now - start):,.0f}/s)")
        for proc in procs:
            proc.join(60)
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
                proc.join(10)
    seconds = time.perf_counter() - start
    if deadletters or events != total:
        raise ChatlogError(f"wrote {events:,} of {total:,} events ({deadletters} dead letters)")
    return {
        "events": events,
        "rows": rows,
        "raw_line_bytes_mean": round(raw_bytes / events, 1) if events else None,
        "workers": len(procs),
        "seconds": round(seconds, 1),
        "events_per_s": round(events / seconds) if seconds else None,
    }


# -- flush, major compaction, bytes on disk ------------------------------------------------------------

_MAJOR_COMPACTION: Final = (
    "{'class': 'SizeTieredCompactionStrategy', 'min_threshold': 2, 'max_threshold': 64, "
    "'bucket_low': 0.001, 'bucket_high': 1000, 'min_sstable_size': 1099511627776}"
)
"""Size-tiered compaction whose one bucket takes every SSTable of the table, two at least: a major
compaction without nodetool (as ``chatlog bench storage``). ``min_sstable_size`` (1 TiB: every SSTable is
"small", so all share one bucket) as well: otherwise a 300 MB SSTable and the one-row SSTable written
after the flush are more than ``bucket_high`` apart and are never compacted together."""


def flush_and_compact(session: Any, keyspace: str, data_dir: Path, timeout_s: float) -> float:
    """Flush :data:`TABLES` and compact each into one SSTable (``chatlog bench storage``'s way: a flush
    period of a second, then a size-tiered strategy that takes every SSTable); the seconds it took.

    Flushes write LZ4 whatever the table's compressor (cassandra.yaml ``flush_compression: fast``), so one
    row of each table is written again once it has flushed (the same cells: nothing more once compacted):
    a second SSTable, and the compaction writes the table's own Zstd."""
    from bench.storage import table_files, wait_compacted

    t0 = time.monotonic()
    for table in TABLES:
        session.execute(f"ALTER TABLE {keyspace}.{table} WITH compaction = {_MAJOR_COMPACTION}", timeout=120)
        session.execute(
            f"ALTER TABLE {keyspace}.{table} WITH memtable_flush_period_in_ms = 1000", timeout=120
        )
    while not all(any(f.endswith("-Data.db") for f in table_files(data_dir, keyspace, t)) for t in TABLES):
        if time.monotonic() - t0 > timeout_s:
            raise ChatlogError(f"{keyspace}: the tables were not flushed in {timeout_s:.0f} s")
        time.sleep(0.5)
    for table in TABLES:
        _write_one_again(session, keyspace, table)
    return wait_compacted(
        session, keyspace, lambda: [table_files(data_dir, keyspace, t) for t in TABLES], t0, timeout_s
    )


def _write_one_again(session: Any, keyspace: str, table: str) -> None:
    """Write one row of ``table`` again, the same cells: a row with its clustering key, else (every
    partition read holds its statics alone: packed months) a partition's static cells."""
    meta = session.cluster.metadata.keyspaces[keyspace].tables[table]
    keys = [c.name for c in meta.primary_key]
    rows = session.execute(f"SELECT * FROM {keyspace}.{table} LIMIT 1000", timeout=60).all()
    if not rows:
        raise ChatlogError(f"{keyspace}.{table} is empty")
    whole = [row for row in rows if all(getattr(row, k) is not None for k in keys)]
    if whole:
        values = {k: v for k, v in whole[0]._asdict().items() if v is not None}
        columns = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        insert = session.prepare(f"INSERT INTO {keyspace}.{table} ({columns}) VALUES ({marks})")
        session.execute(insert, tuple(values.values()), timeout=60)
        return
    row = rows[0]._asdict()
    statics = {c.name: row[c.name] for c in meta.columns.values() if c.is_static and row[c.name] is not None}
    where = " AND ".join(f"{c.name} = ?" for c in meta.partition_key)
    sets = ", ".join(f"{name} = ?" for name in statics)
    update = session.prepare(f"UPDATE {keyspace}.{table} SET {sets} WHERE {where}")
    session.execute(update, (*statics.values(), *(row[c.name] for c in meta.partition_key)), timeout=60)


def disk_usage(data_dir: Path, keyspace: str, messages: int, raw_mean: float) -> dict[str, Any]:
    """Bytes of the ``*-Data.db`` files of :data:`TABLES`, per message and against the raw line."""
    from bench.storage import compression_info, sstables, table_dir

    tables: dict[str, Any] = {}
    total = 0
    for table in TABLES:
        d = table_dir(data_dir, keyspace, table)
        data = sstables(d) if d is not None else []
        size = sum(p.stat().st_size for p in data)
        infos = [
            compression_info(p.with_name(p.name.replace("-Data.db", "-CompressionInfo.db"))) for p in data
        ]
        tables[table] = {
            "sstables": len(data),
            "compressor": sorted({i["compressor"] for i in infos}),
            "data_db_bytes": size,
            "uncompressed_bytes": sum(i["data_length"] for i in infos),
            "bytes_per_message": round(size / messages, 1),
        }
        total += size
    per = total / messages
    return {
        "tables": tables,
        "data_db_bytes": total,
        "messages": messages,
        "bytes_per_message": round(per, 1),
        "raw_line_bytes_mean": raw_mean,
        "ratio_to_raw_line": round(per / raw_mean, 3),
    }


# -- reads ---------------------------------------------------------------------------------------------


RAW_COLUMNS: Final = "sent_at, message_id, line, received_at"
"""The raw read's columns: the table's own (the goal's baseline)."""


class RawReader:
    """The channel-day read done with cassandra-driver alone: the buckets from ``chat_buckets``, then each
    bucket's rows (``SELECT sent_at, message_id, line, received_at``), the next ``read_ahead`` buckets'
    first pages requested while one is read, later pages fetched as the rows are iterated."""

    def __init__(self, session: Any, *, fetch_size: int, read_ahead: int, columns: str = RAW_COLUMNS) -> None:
        self.session = session
        self.read_ahead = read_ahead
        self.buckets = session.prepare(
            "SELECT bucket FROM chat_buckets WHERE channel_key = ? AND bucket >= ? AND bucket < ?"
        )
        self.rows = session.prepare(
            f"SELECT {columns} FROM chat_by_channel WHERE channel_key = ? AND bucket = ?"
        )
        self.buckets.fetch_size = fetch_size
        self.rows.fetch_size = fetch_size

    def day(self, key: str, lo: int, hi: int, keep: list[Any] | None = None) -> int:
        """Rows read of ``key``'s buckets in ``[lo, hi)`` (each row's line touched); kept in ``keep``."""
        starts = iter(
            [r.bucket for r in self.session.execute(self.buckets, (key, naive_utc(lo), naive_utc(hi)))]
        )
        ahead: deque[Any] = deque()

        def submit() -> None:
            start = next(starts, None)
            if start is not None:
                ahead.append(self.session.execute_async(self.rows, (key, start)))

        for _ in range(self.read_ahead + 1):
            submit()
        n = 0
        while ahead:
            result = ahead.popleft().result()
            submit()
            for row in result:  # the next pages are fetched as the rows are iterated
                n += 1
                if row.line is None:
                    raise ChatlogError(f"a row of {key} without its line")
                if keep is not None:
                    keep.append(row)
        return n


USES: Final[dict[str, Callable[[Any], object]]] = {
    "raw": lambda line: line.raw,
    "text": log_text_line,
    "events": lambda line: line.event,
}
"""What a channel-day read does with each :class:`~store.line.LogLine`: ``raw`` is the goal's."""


async def _consume(lines: AsyncIterator[Any], use: Callable[[Any], object] = USES["raw"]) -> int:
    n = 0
    async for line in lines:
        use(line)
        n += 1
    return n


def cpu_per_line(rows: Sequence[Any], hint: str, repeat: int = 2) -> dict[str, float]:
    """µs per row (best of ``repeat``) of what the reader does with a row besides fetching it: the
    timestamps to ms, :func:`~store.stored_line.restore` of the line, and
    :func:`~store.line.stored_event` (restore and parse into the event)."""
    from store.line import stored_event
    from store.stored_line import restore

    if not rows:
        raise ValueError("no rows")

    def convert() -> None:
        for r in rows:
            epoch_ms(r.sent_at)
            if r.received_at is not None:
                epoch_ms(r.received_at)

    def restore_all() -> None:
        for r in rows:
            restore(r.line, r.message_id, epoch_ms(r.sent_at))

    def events() -> None:
        for r in rows:
            stored_event(
                r.line,
                r.message_id,
                epoch_ms(r.sent_at),
                None if r.received_at is None else epoch_ms(r.received_at),
                hint,
            )

    out: dict[str, float] = {}
    for name, work in (("timestamps", convert), ("restore", restore_all), ("stored_event", events)):
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            work()
            best = min(best, time.perf_counter() - t0)
        out[name] = round(best / len(rows) * 1e6, 3)
    out["restore_only"] = round(out["restore"] - out["timestamps"], 3)
    out["parse"] = round(out["stored_event"] - out["restore"], 3)
    return out


def profile_top(profile: cProfile.Profile, n: int = 20) -> list[dict[str, Any]]:
    """The ``n`` functions with the most own time of ``profile``: where, calls, own and cumulative s."""
    stats: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    ranked = sorted(stats.items(), key=lambda kv: kv[1][2], reverse=True)[:n]
    return [
        {
            "function": where(file, line, name),
            "calls": calls,
            "own_s": round(own, 3),
            "cumulative_s": round(cum, 3),
        }
        for (file, line, name), (_, calls, own, cum, _) in ranked
    ]


def where(file: str, line: int, name: str) -> str:
    """``file:line(name)`` with the file shortened to its package path (``~`` for built-ins)."""
    for marker in ("site-packages/", "/work/main/", "/lib/python3."):
        at = file.find(marker)
        if at >= 0:
            file = file[at + len(marker) :]
            if marker == "/lib/python3.":
                file = file.split("/", 1)[-1]
            break
    return f"{file}:{line}({name})" if file != "~" else name


def _runs_summary(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    rates = [r["lines_per_s"] for r in runs]
    return {
        "runs": list(runs),
        "best_lines_per_s": max(rates),
        "median_lines_per_s": round(statistics.median(rates)),
    }


async def channel_day(store: Any, params: Params, fetch_size: int) -> dict[str, Any]:
    """The channel-day read through the reader (``store``, a :class:`CassandraStore` whose statements
    fetch ``fetch_size`` rows a page) and raw, alternately (see the module doc)."""
    from store.read import ROW_COLUMNS

    raw = RawReader(store.session, fetch_size=fetch_size, read_ahead=store.read_ahead)
    # the same driver read with the reader's columns (the key's values made by Cassandra): what of the
    # reader's gain over the raw read is its query, not its code
    keyed = RawReader(store.session, fetch_size=fetch_size, read_ahead=store.read_ahead, columns=ROW_COLUMNS)
    key = channel_key(DAY_ROOM, DAY_CHANNEL)
    lo, hi = DAY_LO, DAY_LO + DAY_MS
    expected = params.day_messages
    await _consume(store.channel_lines(DAY_CHANNEL, lo, hi))  # warm: prepared statements, name lookups
    raw.day(key, lo, hi)
    reader_runs, raw_runs, keyed_runs = [], [], []
    used: dict[str, list[dict[str, Any]]] = {"text": [], "events": []}
    kept: list[Any] = []
    for i in range(params.repeat):
        load_before, cpu0, t0 = load_average(), time.process_time(), time.perf_counter()
        n = await _consume(store.channel_lines(DAY_CHANNEL, lo, hi))
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        if n != expected:
            raise ChatlogError(f"the reader gave {n:,} events of the day, not {expected:,}")
        reader_runs.append(_run(n, wall, cpu, load_before))
        keep = kept if i == params.repeat - 1 else None
        load_before, cpu0, t0 = load_average(), time.process_time(), time.perf_counter()
        n = raw.day(key, lo, hi, keep)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        if n != expected:
            raise ChatlogError(f"the raw read gave {n:,} rows of the day, not {expected:,}")
        raw_runs.append(_run(n, wall, cpu, load_before))
        load_before, cpu0, t0 = load_average(), time.process_time(), time.perf_counter()
        n = keyed.day(key, lo, hi)
        keyed_runs.append(_run(n, time.perf_counter() - t0, time.process_time() - cpu0, load_before))
        for name in ("text", "events"):
            load_before, cpu0, t0 = load_average(), time.process_time(), time.perf_counter()
            n = await _consume(store.channel_lines(DAY_CHANNEL, lo, hi), USES[name])
            used[name].append(_run(n, time.perf_counter() - t0, time.process_time() - cpu0, load_before))
        say(
            f"channel-day run {i + 1}: reader {reader_runs[-1]['lines_per_s']:,} lines/s, "
            f"raw {raw_runs[-1]['lines_per_s']:,} lines/s; text {used['text'][-1]['lines_per_s']:,}, "
            f"events {used['events'][-1]['lines_per_s']:,} lines/s"
        )
    out: dict[str, Any] = {
        "channel": DAY_CHANNEL,
        "day": DAY.isoformat(),
        "lines": expected,
        "buckets": len({bucket_of(DAY_LO + DAY_MS * i // max(expected, 1)) for i in range(expected)}),
        "fetch_size": fetch_size,
        "read_ahead": store.read_ahead,
        "reader": _runs_summary(reader_runs),
        "raw": _runs_summary(raw_runs),
        "raw_reader_columns": _runs_summary(keyed_runs),
        **{f"reader_{name}": _runs_summary(runs) for name, runs in used.items()},
    }
    out["ratio_to_raw"] = round(out["reader"]["best_lines_per_s"] / out["raw"]["best_lines_per_s"], 3)
    out["ratio_to_raw_median"] = round(
        out["reader"]["median_lines_per_s"] / out["raw"]["median_lines_per_s"], 3
    )
    out["ratio_to_raw_reader_columns"] = round(
        out["reader"]["best_lines_per_s"] / out["raw_reader_columns"]["best_lines_per_s"], 3
    )
    cpu0, main0 = time.process_time(), time.thread_time()
    await _consume(store.channel_lines(DAY_CHANNEL, lo, hi))
    cpu, main = time.process_time() - cpu0, time.thread_time() - main0
    out["cpu_split_us_per_line"] = {
        "process": round(cpu / expected * 1e6, 2),
        "main_thread": round(main / expected * 1e6, 2),
    }
    say("channel-day: CPU per line of restore and parse over the rows read")
    out["cpu_us_per_line"] = cpu_per_line(kept, DAY_CHANNEL)
    profile = cProfile.Profile()
    t0 = time.perf_counter()
    profile.enable()
    await _consume(store.channel_lines(DAY_CHANNEL, lo, hi))
    profile.disable()
    out["profile"] = {
        "seconds_profiled": round(time.perf_counter() - t0, 2),
        "top_own_time": profile_top(profile),
    }
    return out


def _run(n: int, wall: float, cpu: float, load_before: float) -> dict[str, Any]:
    return {
        "lines": n,
        "seconds": round(wall, 3),
        "lines_per_s": round(n / wall),
        "process_cpu_us_per_line": round(cpu / n * 1e6, 2),
        "load_average": [load_before, load_average()],
    }


async def user_month(store: Any, params: Params, cassandra_pid: int | None) -> dict[str, Any]:
    """The user-month read ``params.reads`` times at each of ``params.concurrency``."""
    from bench.serve_load import closed_loop
    from bench.storage import cpu_seconds

    expected = params.user_messages

    async def fetch() -> int:
        n = await _consume(store.user_lines(MONTH_CHANNEL, USER, MONTH_LO, MONTH_HI))
        if n != expected:
            raise ChatlogError(f"the user-month gave {n} events, not {expected}")
        return n

    for _ in range(3):  # warm: prepared statements, name lookups (cached as in the service)
        await fetch()
    user = next(p for p in parts(params) if p.name == "user")
    out: dict[str, Any] = {
        "channel": MONTH_CHANNEL,
        "channel_messages": params.channel_messages,
        "user": USER,
        "user_messages": expected,
        "user_buckets": user.buckets(),
        "levels": {},
    }
    for clients in params.concurrency:
        load_before = load_average()
        cpu0, cass0 = time.process_time(), cpu_seconds(cassandra_pid)
        result = await closed_loop(
            fetch, clients=clients, seconds=params.limit_s, max_requests=params.reads, limit_s=params.limit_s
        )
        cpu, cass1 = time.process_time() - cpu0, cpu_seconds(cassandra_pid)
        cell = result.summary()
        reads = max(result.requests, 1)
        cell["process_cpu_cores"] = round(cpu / result.wall_s, 2) if result.wall_s else None
        cell["process_cpu_ms_per_read"] = round(cpu * 1000 / reads, 2)
        if cass0 is not None and cass1 is not None:
            cell["cassandra_cpu_ms_per_read"] = round((cass1 - cass0) * 1000 / reads, 2)
        cell["load_average"] = [load_before, load_average()]
        out["levels"][str(clients)] = cell
        say(
            f"user-month at {clients}: p50 {cell['p50_ms']} ms, p99 {cell['p99_ms']} ms, "
            f"{cell['requests_per_s']} reads/s, this process {cell['process_cpu_cores']} cores"
        )
    out["cpu_split"] = await _cpu_split(fetch, PROFILED_READS)
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(PROFILED_READS):
        await fetch()
    profile.disable()
    out["profile"] = {"reads": PROFILED_READS, "top_own_time": profile_top(profile)}
    return out


PROFILED_READS: Final = 5


async def _cpu_split(fetch: Callable[[], Awaitable[int]], reads: int) -> dict[str, Any]:
    """CPU ms per read, one at a time: of this process, and of its main thread (the event loop: the
    store, making requests, parsing); the rest is the driver's I/O thread (answers decoded there)."""
    cpu0, main0, t0 = time.process_time(), time.thread_time(), time.perf_counter()
    for _ in range(reads):
        await fetch()
    cpu, main = time.process_time() - cpu0, time.thread_time() - main0
    return {
        "reads": reads,
        "wall_ms_per_read": round((time.perf_counter() - t0) * 1000 / reads, 2),
        "process_cpu_ms_per_read": round(cpu * 1000 / reads, 2),
        "main_thread_cpu_ms_per_read": round(main * 1000 / reads, 2),
    }


async def _reads(keyspace: str, params: Params, cassandra_pid: int | None) -> dict[str, Any]:
    from core.cql import quiet_driver_logs
    from core.settings import load
    from serve.api.app import open_store
    from serve.settings import ServeSettings

    quiet_driver_logs()
    settings = load(ServeSettings, cassandra_keyspace=keyspace)
    cluster, store = await asyncio.to_thread(open_store, settings)
    try:
        out: dict[str, Any] = {}
        if params.day_messages:
            say(f"channel-day: {params.day_messages:,} lines, reader and raw, {params.repeat} runs each")
            out["channel_day"] = await channel_day(store, params, settings.serve_fetch_size)
        if params.user_messages:
            say(f"user-month: {params.reads} reads at each of {list(params.concurrency)} concurrent readers")
            out["user_month"] = await user_month(store, params, cassandra_pid)
        return out
    finally:
        await asyncio.to_thread(cluster.shutdown)


def run(
    settings: Any, data_dir: Path, cassandra_pid: int | None, params: Params, out: Path
) -> dict[str, Any]:
    """The whole benchmark: ``settings`` are sink settings (where Cassandra is), ``data_dir`` the local
    Cassandra's data directory; results at ``out`` (JSON) and next to it (PNG)."""
    from bench.scratch import scratch_keyspaces
    from chatlog.results import write_json
    from core.cql import connect, quiet_driver_logs

    if not data_dir.is_dir():
        raise ChatlogError(
            f"no local Cassandra data directory at {data_dir}: start the stack (`chatlog stack up`)"
        )
    started = time.perf_counter()
    keyspace = f"benchread{uuid.uuid4().hex[:8]}"
    scratch = settings.model_copy(
        update={"cassandra_keyspace": keyspace, "sink_metrics_port": 0, "cassandra_ttl_s": 0}
    )
    result: dict[str, Any] = {
        "params": {**asdict(params), "concurrency": list(params.concurrency)},
        "data": {
            "day_channel": DAY_CHANNEL,
            "day": DAY.isoformat(),
            "day_messages": params.day_messages,
            "month_channel": MONTH_CHANNEL,
            "month": "2024-04",
            "channel_messages": params.channel_messages,
            "user": USER,
            "user_messages": params.user_messages,
            "lines": "bench.storage.corpus (realistic Twitch PRIVMSGs), re-homed and re-timed",
        },
        "goals": GOALS,
        "cpus": os.cpu_count(),
        "cassandra_pid_found": cassandra_pid is not None,
        "load_average_start": list(os.getloadavg()),
    }
    quiet_driver_logs()
    with scratch_keyspaces(scratch, keyspace):
        total = sum(p.count for p in parts(params))
        say(f"writing {total:,} events into scratch keyspace {keyspace} with {params.workers} processes")
        result["write"] = write(scratch, params)
        say(f"written: {result['write']}; flushing and compacting")
        cluster, session = connect(scratch, timeout=120)
        try:
            compact_s = flush_and_compact(session, keyspace, data_dir, params.compact_timeout_s)
        finally:
            cluster.shutdown()
        result["disk"] = disk_usage(
            data_dir, keyspace, result["write"]["events"], result["write"]["raw_line_bytes_mean"]
        )
        result["disk"]["flush_compact_s"] = round(compact_s, 1)
        say(
            f"on disk: {result['disk']['bytes_per_message']} B/message, "
            f"{result['disk']['ratio_to_raw_line']}x the raw line"
        )
        result.update(asyncio.run(_reads(keyspace, params, cassandra_pid)))
    result["load_average_end"] = list(os.getloadavg())
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["verdict"] = verdict(result)
    write_json(out, result)
    plot(result, out.with_suffix(".png"))
    return result


# -- reporting -----------------------------------------------------------------------------------------


def verdict(result: dict[str, Any]) -> dict[str, Any]:
    """Each goal: the measured value and whether it is met (goals whose part was not run are left out)."""
    out: dict[str, Any] = {}
    day = result.get("channel_day")
    if day is not None:
        rate = day["reader"]["best_lines_per_s"]
        out["channel_day_lines_per_s"] = {"value": rate, "met": rate >= GOALS["channel_day_lines_per_s"]}
        ratio = day["ratio_to_raw"]
        out["channel_day_ratio_to_raw"] = {"value": ratio, "met": ratio >= GOALS["channel_day_ratio_to_raw"]}
    month = result.get("user_month")
    if month is not None and "32" in month["levels"]:
        cell = month["levels"]["32"]
        p99 = cell["p99_ms"]
        if p99 is None or cell["errors"]:
            out["user_month_p99_ms_at_32"] = {"value": f">{cell.get('over_ms', 0)}", "met": False}
        else:
            out["user_month_p99_ms_at_32"] = {"value": p99, "met": p99 <= GOALS["user_month_p99_ms_at_32"]}
    disk = result.get("disk")
    if disk is not None:
        ratio = disk["ratio_to_raw_line"]
        out["bytes_ratio_to_raw_line"] = {
            "value": ratio,
            "bytes_per_message": disk["bytes_per_message"],
            "met": ratio <= GOALS["bytes_ratio_to_raw_line"],
        }
    return out


def summary(result: dict[str, Any]) -> str:
    """The numbers and the goals, for the terminal; the last line says whether every goal was met."""
    lines = []
    write_, data = result["write"], result["data"]
    lines.append(
        f"data: {write_['events']:,} events ({data['channel_messages']:,} in the month channel, "
        f"{data['day_messages']:,} on the read day, {data['user_messages']} by the user), "
        f"raw line {write_['raw_line_bytes_mean']} B on average; written at {write_['events_per_s']:,}/s "
        f"by {write_['workers']} processes"
    )
    disk = result["disk"]
    per_table = ", ".join(f"{t} {v['bytes_per_message']}" for t, v in disk["tables"].items())
    lines.append(
        f"on disk: {disk['bytes_per_message']} B/message = {disk['ratio_to_raw_line']}x the raw line "
        f"({per_table})"
    )
    day = result.get("channel_day")
    if day is not None:
        cpu = day["cpu_us_per_line"]
        lines.append(
            f"channel-day ({day['lines']:,} lines, {day['buckets']} buckets): reader "
            f"{day['reader']['best_lines_per_s']:,} lines/s "
            f"(median {day['reader']['median_lines_per_s']:,}), raw "
            f"driver {day['raw']['best_lines_per_s']:,} (median {day['raw']['median_lines_per_s']:,}): "
            f"{day['ratio_to_raw']}x"
        )
        if "raw_reader_columns" in day:
            keyed = day["raw_reader_columns"]
            lines.append(
                f"  raw driver with the reader's columns (the key's values made by Cassandra): "
                f"{keyed['best_lines_per_s']:,} (median {keyed['median_lines_per_s']:,}): reader "
                f"{day['ratio_to_raw_reader_columns']}x of it"
            )
        lines.append(
            f"  per line: reader CPU {day['reader']['runs'][-1]['process_cpu_us_per_line']} µs, raw read CPU "
            f"{day['raw']['runs'][-1]['process_cpu_us_per_line']} µs; of the rows read: restore "
            f"{cpu['restore_only']} µs, parse {cpu['parse']} µs, timestamps {cpu['timestamps']} µs"
        )
        split = day.get("cpu_split_us_per_line")
        if split is not None:
            lines.append(
                f"  reader CPU per line, one more run: {split['process']} µs, of which the event loop's "
                f"thread {split['main_thread']} µs"
            )
    month = result.get("user_month")
    if month is not None:
        for clients, cell in month["levels"].items():
            lines.append(
                f"user-month ({month['user_messages']} messages in {month['user_buckets']} buckets, "
                f"channel of {month['channel_messages']:,}) at {clients}: p50 {cell['p50_ms']} ms, "
                f"p99 {cell['p99_ms']} ms, "
                f"{cell['requests_per_s']} reads/s, this process {cell['process_cpu_cores']} cores "
                f"({cell['process_cpu_ms_per_read']} ms CPU/read), Cassandra "
                f"{cell.get('cassandra_cpu_ms_per_read', '?')} ms CPU/read"
            )
        split = month.get("cpu_split")
        if split is not None:
            lines.append(
                f"user-month one at a time: {split['wall_ms_per_read']} ms, "
                f"CPU {split['process_cpu_ms_per_read']} ms/read, of which the event loop's thread "
                f"{split['main_thread_cpu_ms_per_read']} ms"
            )
    verdicts = result["verdict"]
    for goal, got in verdicts.items():
        lines.append(f"goal {goal}: {got['value']} {'met' if got['met'] else 'NOT met'}")
    missed = [g for g, v in verdicts.items() if not v["met"]]
    lines.append(
        f"{len(verdicts) - len(missed)} of {len(verdicts)} goals met"
        + (f" (missed: {', '.join(missed)})" if missed else "")
        + f"; {result['seconds']:.0f} s"
    )
    return "\n".join(lines)


def plot(result: dict[str, Any], path: Path) -> None:
    """Channel-day lines/s (reader, raw), user-month p50/p99 by concurrency, bytes per message by table."""
    from chatlog.results import figure

    with figure(path, 1, 3, figsize=(16, 5)) as (_, axes):
        rates, latency, disk = axes
        day = result.get("channel_day")
        if day is not None:
            names = ["reader", "raw"]
            rates.bar(names, [day[n]["best_lines_per_s"] for n in names], color=["tab:blue", "tab:grey"])
            rates.axhline(GOALS["channel_day_lines_per_s"], color="tab:red", linestyle="--", label="goal")
            rates.set_title(
                f"channel-day ({day['lines']:,} lines): lines/s, best of {len(day['reader']['runs'])}"
            )
            rates.legend()
        month = result.get("user_month")
        if month is not None:
            levels = [int(c) for c in month["levels"]]
            for key, style in (("p50_ms", "o-"), ("p99_ms", "s-")):
                values = [month["levels"][str(c)][key] for c in levels]
                latency.plot(levels, [v if v is not None else float("nan") for v in values], style, label=key)
            latency.axhline(
                GOALS["user_month_p99_ms_at_32"], color="tab:red", linestyle="--", label="goal p99"
            )
            latency.set_xscale("log", base=2)
            latency.set_yscale("log")
            latency.set_xlabel("concurrent readers")
            latency.set_title(f"user-month ({month['user_messages']} messages): latency ms")
            latency.legend()
        disk_ = result["disk"]
        bottom = 0.0
        for table, values in disk_["tables"].items():
            disk.bar(["E64s"], [values["bytes_per_message"]], bottom=bottom, label=table)
            bottom += values["bytes_per_message"]
        goal = GOALS["bytes_ratio_to_raw_line"] * disk_["raw_line_bytes_mean"]
        disk.axhline(goal, color="tab:red", linestyle="--", label=f"goal 0.42x raw ({goal:.0f} B)")
        disk.set_title(f"bytes on disk per message (raw line {disk_['raw_line_bytes_mean']} B)")
        disk.legend(fontsize=8)
