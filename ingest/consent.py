"""Consent in the ingester: opted-out users' events are dropped before Kafka, opted-out channels are
parted, and the self-service chat command registers an opt-out (issue 20).

:class:`OptOutGate` is the ingester's view of the opt-out registry (``chatlog.optout``, read by
:class:`consent.registry.OptOutRegistry` in a background thread). Its sets are replaced, never changed,
so the hot path (:meth:`OptOutGate.drop`, called by the producer for every chat event on the event
loop's thread) reads them without a lock: a set look-up for the sender's ``user-id``, one for the
``room-id``, and a look-up of the channel's known room id (~0.3 µs an event with 1,000 opt-outs, next
to ~7 µs for parsing the line).

Channels are opted out by Twitch id (``room-id``), but the ingester joins channels by login (the
channel registry holds logins). So the gate keeps a login -> room id map, learned from the lines it
reads (every PRIVMSG, USERNOTICE... carries ``room-id``; Twitch sends ROOMSTATE on every JOIN): the
channels it lets the IRC pool join are the wanted ones minus those whose known room id opted out
(:meth:`OptOutGate.allowed`). A line of a joined channel whose room id opted out is dropped and makes
the worker part the channel at once; an opt-out of a channel whose room id is known parts it as soon
as the registry has it; a lift rejoins it (the map is kept).

Which events an opt-out takes is :mod:`consent.rule`'s one rule (the sink, erasure and the read side
call it too): moderation events that target an opted-out user are dropped as well; one that names its
user by login only (CLEARMSG) is matched against the logins the gate saw opted-out users send with.

Self-service: a PRIVMSG whose text is ``<command word> optout CODE`` (the word or one of its aliases;
or ``... CODE channel`` from the channel's broadcaster) with a live code of the registry registers an
opt-out of the sender's user id (or of the channel's room id), retires the code (single use) and is
dropped. Both copies of a
redundant pair of ingesters may see the line: both write the same key (``user:<id>``), so the outcome
is one opt-out. A line with an unknown or expired code is a normal chat line. The opt-out is enforced
by this ingester at once (before the registry echoes it back); the writes to Kafka run on a thread of
their own, never on the event loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from consent.records import Code, Kind, OptOut, normalize_code
from consent.rule import BY_LOGIN, OUT, SeenLogins, named_login, verdict
from core.irc_parse import roomstate
from schemas.chat_event import ChatEvent

if TYPE_CHECKING:
    from consent.registry import RegistryView

log = logging.getLogger(__name__)

PENDING_S: Final = 120.0
"""How long an opt-out registered here is enforced before the registry shows it (then the registry's
record decides; a lift within this time is seen as soon as the registry has the opt-out)."""
RETIRED_S: Final = 600.0
"""A code retired this recently (used by another ingester of a redundant pair) still makes its line a
consent command: dropped, nothing registered."""
_RETIRED_MAX: Final = 10_000


class Publisher(Protocol):
    """What self-service writes with (:class:`consent.publish.OptOutPublisher`)."""

    def add(
        self, kind: Kind, id: str, *, reason: str | None, by: str, keep_history: bool = False
    ) -> OptOut: ...
    def retire_code(self, code: str) -> None: ...
    def flush(self, timeout_s: float) -> None: ...


@dataclass(frozen=True)
class Command:
    """A self-service command found in a chat line: the code, and whether it opts out the channel."""

    code: str
    channel: bool


def parse_command(text: str, words: str | tuple[str, ...]) -> Command | None:
    """``<word> optout CODE`` or ``<word> optout CODE channel`` (any case, any spacing; ``word`` one of
    ``words``) -> the command; anything else (another word, a malformed code, more words) -> None."""
    parts = text.split()
    if isinstance(words, str):
        words = (words,)
    if len(parts) not in (3, 4) or parts[0] not in words or parts[1].lower() != "optout":
        return None
    if len(parts) == 4 and parts[3].lower() != "channel":
        return None
    code = normalize_code(parts[2])
    if code is None:
        return None
    return Command(code, len(parts) == 4)


def is_broadcaster(event: ChatEvent) -> bool:
    """Whether the sender owns the channel: a ``broadcaster/1`` badge, or its user id is the room id."""
    if event.user_id is not None and event.user_id == event.channel_id:
        return True
    badges = event.tags.get("badges") or ""
    return any(badge == "broadcaster/1" for badge in badges.split(","))


class OptOutGate:
    """Opted-out users and channels as this ingester enforces them (see the module doc).

    Every method runs on the worker's event loop, except :meth:`on_record` (the registry's thread),
    which only swaps whole sets and asks ``notify`` (thread-safe, set by the worker) to have
    :meth:`refresh` run on the loop.
    """

    def __init__(
        self,
        registry: RegistryView,
        *,
        command_word: str = "!chatlog",
        aliases: Sequence[str] = (),
        publisher: Publisher | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.registry = registry
        self.command_words: tuple[str, ...] = (command_word, *aliases)
        """The command word, then the other words accepted for it (justlog's and rustlog's frontends
        tell their users to type ``!justlog optout CODE`` / ``!rustlog optout CODE``)."""
        self._publisher = publisher
        self._clock = clock
        self._users: frozenset[str] = frozenset()
        self._channels: frozenset[str] = frozenset()
        self._pending: dict[tuple[Kind, str], float] = {}
        self._retired: dict[str, float] = {}
        self._used: set[str] = set()
        self._seen_logins = SeenLogins()
        self.room_ids: dict[str, str] = {}
        """Channel login -> Twitch room id, as read from the channel's lines."""
        self.dropped = 0
        """Events dropped because their user or channel opted out (or they targeted such a user)."""
        self.registered = 0
        """Self-service opt-outs this ingester registered."""
        self.publish_errors = 0
        self.channels_changed: Callable[[], None] = lambda: None
        """Called (on the loop) when the set of allowed channels may have changed: the worker re-applies
        its wanted channels through :meth:`allowed`."""
        self.notify: Callable[[], None] = lambda: None
        """Called from the registry's thread when an opt-out or a lift arrived (the worker hands it to
        the loop, which calls :meth:`refresh`)."""
        self._writer: ThreadPoolExecutor | None = None
        self._writes: list[Future[None]] = []
        self._lock = threading.Lock()

    # -- life ---------------------------------------------------------------------------------------
    def start(self, ready_timeout_s: float) -> None:
        """Follow the registry and wait until it has read the whole topic (blocking: run it off the loop).
        Raises :class:`core.errors.ChatlogError` when the topic cannot be read in time."""
        self.registry.subscribe(self.on_record)
        self.registry.start()
        self.registry.wait_ready(ready_timeout_s)
        self.refresh()

    def close(self, timeout_s: float = 10.0) -> None:
        """Wait for the self-service writes under way, then stop following the registry."""
        writer = self._writer
        if writer is not None:
            writer.shutdown(wait=True)
        if self._publisher is not None and self._writes:
            self._publisher.flush(timeout_s)
        self.registry.close()

    # -- the registry's thread -----------------------------------------------------------------------
    def on_record(self, key: str, value: OptOut | Code | None) -> None:
        """Every record the registry reads (its thread): opt-outs and lifts wake the loop up; retired
        codes are remembered for :data:`RETIRED_S`."""
        if key.startswith("code:"):
            if value is None:
                now = self._clock()
                with self._lock:
                    if len(self._retired) >= _RETIRED_MAX:
                        self._retired = {c: t for c, t in self._retired.items() if now - t < RETIRED_S}
                    self._retired[key[5:]] = now
            return
        self.notify()

    # -- the loop ------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Take the registry's current sets (plus this ingester's own opt-outs not echoed back yet)."""
        users, channels = self.registry.users(), self.registry.channels()
        if self._pending:
            now = self._clock()
            for (kind, id_), since in list(self._pending.items()):
                known = users if kind == "user" else channels
                if id_ in known or now - since > PENDING_S:
                    del self._pending[(kind, id_)]
            extra_users = {i for k, i in self._pending if k == "user"}
            extra_channels = {i for k, i in self._pending if k == "channel"}
            users, channels = users | extra_users, channels | extra_channels
        before = self._channels
        self._users, self._channels = users, channels
        if channels != before:
            self.channels_changed()

    def allowed(self, wanted: AbstractSet[str]) -> AbstractSet[str]:
        """The channels of ``wanted`` (logins) this ingester may join: those whose room id (when known)
        did not opt out. ``wanted`` itself when none did (no copy)."""
        channels = self._channels
        if not channels:
            return wanted
        room_ids = self.room_ids
        out = frozenset(login for login in wanted if room_ids.get(login) not in channels)
        return wanted if len(out) == len(wanted) else out

    def opted_out_channels(self, logins: Iterable[str]) -> list[str]:
        """Which of ``logins`` are known to belong to an opted-out channel."""
        channels, room_ids = self._channels, self.room_ids
        return sorted(login for login in logins if room_ids.get(login) in channels)

    def drop(self, event: ChatEvent) -> bool:
        """Whether ``event`` must not reach Kafka (the producer's hot path; counted in ``dropped``): the
        one rule of :mod:`consent.rule`, a login-only event resolved by the logins this ingester saw
        opted-out users send with. Learns the channel's room id; handles a self-service command."""
        room = event.channel_id
        if room is not None and self.room_ids.get(event.channel) != room:
            self._learn(event.channel, room)
        users = self._users
        found = verdict(event, users, self._channels)
        if found is OUT:
            self._seen_logins.learn(event, users)
            self.dropped += 1
            return True
        if found is BY_LOGIN and named_login(event) in self._seen_logins:
            self.dropped += 1
            return True
        if event.kind == "PRIVMSG":
            text = event.text
            if text is not None and text.startswith(self.command_words):
                return self._command(event)
        return False

    def not_chat(self, line: str) -> None:
        """A line that is no chat event: a ROOMSTATE teaches the channel's room id."""
        found = roomstate(line)
        if found is not None and self.room_ids.get(found[0]) != found[1]:
            self._learn(*found)

    def _learn(self, login: str, room: str) -> None:
        self.room_ids[login] = room
        if room in self._channels:
            log.info("channel %s (room id %s) opted out: parting it", login, room)
            self.channels_changed()

    # -- self-service ---------------------------------------------------------------------------------
    def _command(self, event: ChatEvent) -> bool:
        assert event.text is not None
        command = parse_command(event.text, self.command_words)
        if command is None:
            return False
        code = command.code
        if code in self._used or self._recently_retired(code):
            self.dropped += 1  # the other ingester of a redundant pair (or this one) used it already
            return True
        if self.registry.code(code) is None:
            return False  # unknown or expired: a chat line like any other
        if command.channel:
            if event.channel_id is None or not is_broadcaster(event):
                log.info("self-service: %s asked for a channel opt-out of %s without owning it: ignored",
                         event.user_login, event.channel)  # fmt: skip
                return False
            kind: Kind = "channel"
            target = event.channel_id
        else:
            if event.user_id is None:
                return False  # no Twitch id to opt out
            kind, target = "user", event.user_id
        self._used.add(code)
        self._pending[(kind, target)] = self._clock()
        self.registered += 1
        self.dropped += 1
        log.info("self-service: %s %s opted out with a chat code", kind, target)
        self.refresh()
        self._publish(kind, target, code)
        return True

    def _recently_retired(self, code: str) -> bool:
        at = self._retired.get(code)
        return at is not None and self._clock() - at < RETIRED_S

    def _publish(self, kind: Kind, target: str, code: str) -> None:
        publisher = self._publisher
        if publisher is None:
            log.error("self-service: no publisher: the %s opt-out of %s is not registered", kind, target)
            self.publish_errors += 1
            return
        if self._writer is None:
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="optout-publish")

        def write() -> None:
            try:
                publisher.add(kind, target, reason="self-service chat command", by=f"code:{code}")
                publisher.flush(30.0)  # the opt-out is in the log before its code is retired
                publisher.retire_code(code)
                publisher.flush(30.0)
            except Exception as exc:
                self.publish_errors += 1
                log.error("self-service: registering the %s opt-out of %s failed: %s", kind, target, exc)

        self._writes = [f for f in self._writes if not f.done()]
        self._writes.append(self._writer.submit(write))
