"""The coverage event: when an ingester started and stopped logging a channel.

Every ingester publishes one to ``chatlog.coverage`` when the IRC server confirms its JOIN of a channel
(``joined``) and when it stops covering it (``left``: parted, disconnected, handed off, stopped), and
re-announces the channels it covers every ``CHATLOG_INGEST_COVERAGE_REFRESH_S`` so that a reader never
has to look further back than that. It also sends an ``alive`` record for itself at every heartbeat,
so that the spans of a worker killed without a word end at its last sign of life.

The key is ``<replica>/<channel>/<worker>`` (``<replica>/~alive/<worker>`` for ``alive``): compaction
keeps the latest state of each worker's coverage of each channel. The ledger in Cassandra keeps the
history (``coverage_by_channel``); spans and gaps are computed from it (``core.coverage_spans``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any, Final, Literal

import msgspec

JOINED: Final = "joined"
LEFT: Final = "left"
ALIVE: Final = "alive"
DAY_MS: Final = 86_400_000
"""The ledger's tables are partitioned by channel and UTC day (``day`` = epoch ms // DAY_MS)."""

State = Literal["joined", "left", "alive"]


class CoverageEvent(msgspec.Struct, kw_only=True, frozen=True):
    """One change of one ingester's coverage of one channel (or, for ``alive``, of the ingester)."""

    replica: Annotated[int, msgspec.Meta(ge=0, le=1000, description="Replica group of the ingester.")]
    worker: Annotated[str, msgspec.Meta(min_length=1, max_length=200, description="Worker id.")]
    session: Annotated[int, msgspec.Meta(ge=0, description="Epoch ms when this run of the worker started.")]
    state: Annotated[State, msgspec.Meta(description="joined, left, or alive (a worker's sign of life).")]
    at: Annotated[int, msgspec.Meta(ge=0, description="Epoch ms of the change (the ingester's clock).")]
    channel: Annotated[str, msgspec.Meta(max_length=200, description="Channel login; empty for `alive`.")] = (
        ""
    )
    reason: Annotated[
        str,
        msgspec.Meta(
            max_length=200,
            description="Why it left: parted (no longer wanted), handed-off, lost (connection or kick), "
            "stopped (the worker shut down); refresh for a re-announced join.",
        ),
    ] = ""

    @property
    def key(self) -> str:
        """The Kafka key: compacts to the latest state per worker and channel."""
        if self.state == ALIVE:
            return f"{self.replica}/~alive/{self.worker}"
        return f"{self.replica}/{self.channel}/{self.worker}"


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(CoverageEvent)


def encode(event: CoverageEvent) -> bytes:
    return _encoder.encode(event)


def decode(value: bytes) -> CoverageEvent:
    """The event in ``value``; raises ``msgspec.ValidationError`` / ``DecodeError`` when it is not one."""
    return _decoder.decode(value)


def decode_records(records: Iterable[Any]) -> tuple[list[CoverageEvent], int]:
    """The coverage events in Kafka records (anything with ``value()`` and ``error()``), and how many
    records were not one (tombstones and errors are skipped, not counted)."""
    events: list[CoverageEvent] = []
    bad = 0
    for record in records:
        value = record.value()
        if record.error() is not None or value is None:
            continue
        try:
            events.append(_decoder.decode(value))
        except (msgspec.DecodeError, msgspec.ValidationError):
            bad += 1
    return events, bad
