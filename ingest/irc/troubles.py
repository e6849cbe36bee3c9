"""Channels whose JOIN went wrong: moved to a fresh connection after the watchdog gave up on one,
or waiting out a backoff after a refusal (banned, suspended...) or a second timeout. Clock-injected."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Set as AbstractSet

MAX_BLOCK_S = 3600.0


class JoinTroubles:
    def __init__(
        self, backoff_s: float, clock: Callable[[], float], max_backoff_s: float = MAX_BLOCK_S
    ) -> None:
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._clock = clock
        self.fresh_after: dict[str, int] = {}  # channel → lowest connection id it may be joined on
        self.blocked: dict[str, float] = {}  # channel → monotonic time it may be tried again
        self.failures: dict[str, int] = {}  # blocks in a row, for the doubling

    def __bool__(self) -> bool:
        return bool(self.fresh_after or self.blocked or self.failures)

    def move(self, channel: str, min_conn_id: int) -> bool:
        """Send the channel to a connection opened from now on; False if it was moved already
        (then it is blocked instead: two connections in a row did not echo it)."""
        if channel in self.fresh_after:
            self.block(channel)
            return False
        self.fresh_after[channel] = min_conn_id
        return True

    def block(self, channel: str) -> float:
        """Leave the channel alone for a while (doubling per failure in a row); returns the delay."""
        failures = self.failures.get(channel, 0) + 1
        self.failures[channel] = failures
        delay: float = min(self.max_backoff_s, self.backoff_s * 2.0 ** min(failures - 1, 30))
        self.blocked[channel] = self._clock() + delay
        self.fresh_after.pop(channel, None)
        return delay

    def settle(self, wanted: AbstractSet[str], confirmed: Callable[[], AbstractSet[str]]) -> bool:
        """Forget channels that got confirmed or are no longer wanted, and blocks that ran out.
        Returns True when a blocked channel may be tried again."""
        if not self:
            return False
        now = self._clock()
        done = confirmed()
        for ch in [c for c in self.fresh_after if c in done or c not in wanted]:
            del self.fresh_after[ch]
        for ch in [c for c in self.failures if c in done or c not in wanted]:
            del self.failures[ch]
        expired = [c for c, until in self.blocked.items() if until <= now or c not in wanted]
        for ch in expired:
            del self.blocked[ch]
        return bool(expired)
