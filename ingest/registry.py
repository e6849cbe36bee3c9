"""The channel registry: the compacted ``chatlog.channels`` topic (key = login, tombstone = removed).

Names are normalised (an optional leading ``#`` stripped, lower case) and checked before anything is
written; one bad name rejects the whole request with a one-line error naming it, so nothing is half
done. Which names are valid depends on the server dialect (``CHATLOG_IRC_FLAVOR``):

* ``twitch``: Twitch logins, 1-25 characters of ``a-z 0-9 _``.
* ``ircv3`` (a general IRC server): 1-50 characters of ``a-z 0-9 _ - .``, not starting with ``-`` or
  ``.``. That is a conservative subset of RFC 2812 channel names (no ``#`` inside, no ``,`` ``:``
  spaces or control characters), short enough for common ``CHANNELLEN`` limits, and safe as a Kafka
  key, a Cassandra partition key and a file name.

The partition of a channel record is its bucket. Records are written with librdkafka's
``murmur2_random`` partitioner (the Java client's default), so any Kafka client puts a login into the
same bucket, and an add and its later tombstone always land in the same partition.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal

import msgspec
from confluent_kafka import Producer

from core.compacted import fold, read_to_end
from core.errors import ChatlogError
from core.settings import KafkaSettings
from core.times import now_ms

Flavor = Literal["twitch", "ircv3"]

_NAME_RULES: Final[dict[str, tuple[re.Pattern[str], str]]] = {
    "twitch": (re.compile(r"[a-z0-9_]{1,25}"), "1-25 characters of a-z 0-9 _"),
    "ircv3": (
        re.compile(r"[a-z0-9_][a-z0-9_.\-]{0,49}"),
        "1-50 characters of a-z 0-9 _ - . (not starting with - or .)",
    ),
}
PARTITIONER: Final = "murmur2_random"
# One-shot clients report failures as one-line errors; librdkafka's own retry chatter is muted.
QUIET: Final[dict[str, Any]] = {"log_level": 2}


class InvalidChannelName(ChatlogError):
    """A channel name that breaks the naming rule of the configured flavor."""


class ChannelRecord(msgspec.Struct, frozen=True):
    """The value of a channel record."""

    login: str
    added_at: int = 0


_encode = msgspec.json.Encoder().encode
_decode_record = msgspec.json.Decoder(ChannelRecord).decode


def normalize(name: str, flavor: Flavor = "ircv3") -> str:
    """The login of ``name`` (``#Foo`` -> ``foo``); :class:`InvalidChannelName` if it breaks the rule."""
    login = name.strip()
    if login.startswith("#"):
        login = login[1:]
    login = login.lower()
    pattern, rule = _NAME_RULES[flavor]
    if not pattern.fullmatch(login):
        raise InvalidChannelName(f"invalid channel name {name!r} ({flavor} channels: {rule})")
    return login


def normalize_all(names: Iterable[str], flavor: Flavor = "ircv3") -> list[str]:
    """Every name normalised, duplicates dropped, order kept; the first bad name raises (with a count)."""
    out: dict[str, None] = {}
    first_error: InvalidChannelName | None = None
    bad = 0
    for name in names:
        try:
            out[normalize(name, flavor)] = None
        except InvalidChannelName as exc:
            bad += 1
            first_error = first_error or exc
    if first_error is not None:
        more = f" and {bad - 1} more bad name(s)" if bad > 1 else ""
        raise InvalidChannelName(f"{first_error}{more}; nothing was changed")
    return list(out)


def names_from_text(text: str) -> list[str]:
    """Channel names from a file: separated by whitespace or commas; blank lines are ignored."""
    return text.replace(",", " ").split()


def encode_record(login: str, added_at: int) -> bytes:
    return _encode(ChannelRecord(login=login, added_at=added_at))


def decode_record(key: str, value: bytes) -> ChannelRecord:
    """A record's value; a value that is not our JSON still registers its key (added_at 0)."""
    try:
        return _decode_record(value)
    except msgspec.DecodeError:
        return ChannelRecord(login=key)


@dataclass(frozen=True)
class Change:
    """What an add or remove did."""

    changed: list[str]
    unchanged: list[str]


class Registry:
    """Reads and writes the channel registry of one Kafka cluster."""

    def __init__(self, settings: KafkaSettings, *, flavor: Flavor = "ircv3", timeout: float = 60.0) -> None:
        self.settings = settings
        self.flavor: Flavor = flavor
        self.timeout = timeout

    def channels(self) -> dict[str, ChannelRecord]:
        """Every registered channel (login -> record), read to the end of the topic."""
        latest = fold(read_to_end(self.settings, self.settings.topic_channels, timeout=self.timeout))
        out = {}
        for key, value in latest.items():
            login = key.decode("utf-8", "replace")
            out[login] = decode_record(login, value)
        return out

    def add(self, names: Iterable[str]) -> Change:
        """Register channels; already registered ones are left alone (no new record)."""
        logins = normalize_all(names, self.flavor)
        existing = self.channels()
        new = [login for login in logins if login not in existing]
        now = now_ms()
        self._write((login, encode_record(login, now)) for login in new)
        return Change(changed=new, unchanged=[login for login in logins if login in existing])

    def remove(self, names: Iterable[str]) -> Change:
        """Unregister channels with tombstones; names that are not registered are reported, not written."""
        logins = normalize_all(names, self.flavor)
        existing = self.channels()
        gone = [login for login in logins if login in existing]
        self._write((login, None) for login in gone)
        return Change(changed=gone, unchanged=[login for login in logins if login not in existing])

    def _write(self, records: Iterable[tuple[str, bytes | None]]) -> None:
        """Produce a batch and flush once; any failed delivery is an error (nothing is dropped silently)."""
        failures: list[str] = []

        def on_delivery(err: object, msg: object) -> None:
            if err is not None:
                failures.append(str(err))

        producer = Producer(
            {
                **self.settings.kafka_client_config(),
                **QUIET,
                **self.settings.producer_guarantees(),
                "linger.ms": 20,
                "compression.type": "lz4",
                "partitioner": PARTITIONER,
                "queue.buffering.max.messages": 200_000,
            }
        )
        topic = self.settings.topic_channels
        count = 0
        for login, value in records:
            while True:
                try:
                    producer.produce(topic, value, login, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.1)
            count += 1
        if count == 0:
            return
        left = producer.flush(self.timeout)
        if left or failures:
            detail = failures[0] if failures else f"{left} record(s) not acknowledged in {self.timeout:.0f}s"
            raise ChatlogError(f"writing to {topic} failed for {len(failures) + left} record(s): {detail}")
