"""What stands between a call and the data: the rate limiter, the idempotency store and the
cursors. All in memory, all keyed by (OAuth client, user, tool)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any


def canonical(value: Any) -> str:
    """JSON with sorted keys and no spaces: two equal JSON values give the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class SlidingLogLimiter:
    """A true sliding window: a call is refused when `limit` calls were accepted in the 60 s
    before it. Refused calls are not logged (so a client hammering a full window gets in again as
    soon as the oldest accepted call is 60 s old)."""

    WINDOW = 60.0

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self._logs: dict[tuple, deque[float]] = {}
        self._calls = 0

    def admit(self, key: tuple, limit: int) -> int | None:
        """None when the call may go on; else the milliseconds until it could (at least 1)."""
        now = self._clock()
        self._calls += 1
        if self._calls % 5000 == 0:
            self._sweep(now)
        log = self._logs.setdefault(key, deque())
        while log and log[0] <= now - self.WINDOW:
            log.popleft()
        if len(log) >= limit:
            return max(1, math.ceil((log[0] + self.WINDOW - now) * 1000))
        log.append(now)
        return None

    def _sweep(self, now: float) -> None:
        for key in [k for k, log in self._logs.items() if not log or log[-1] <= now - self.WINDOW]:
            del self._logs[key]


@dataclass
class _Entry:
    fingerprint: str
    created: float
    running: bool = True
    data: Any = None


class InProgress(Exception):
    pass


class Mismatch(Exception):
    pass


@dataclass
class IdempotencyStore:
    """Results of keyed writes, for 24 h. Keys and arguments are stored only as keyed hashes
    (HMAC-SHA256 with the server's secret); only successes are kept."""

    secret: bytes
    ttl: float = 24 * 3600.0
    clock: Any = time.time
    _entries: dict[str, _Entry] = field(default_factory=dict)
    _calls: int = 0

    def _mac(self, *parts: str) -> str:
        return hmac.new(self.secret, "\x1f".join(parts).encode(), hashlib.sha256).hexdigest()

    def begin(self, client: str, user: str, tool: str, key: str, arguments: dict) -> tuple[str, Any]:
        """("new", slot) when the call should run (then `finish` or `abandon` the slot), or
        ("replay", data). Raises Mismatch or InProgress."""
        now = self.clock()
        self._calls += 1
        if self._calls % 1000 == 0:
            for k in [k for k, e in self._entries.items() if not e.running and e.created + self.ttl <= now]:
                del self._entries[k]
        slot = self._mac("key", client, user, tool, key)
        fingerprint = self._mac("args", canonical({k: v for k, v in arguments.items() if k != "idempotency_key"}))
        entry = self._entries.get(slot)
        if entry is not None and not entry.running and entry.created + self.ttl <= now:
            del self._entries[slot]
            entry = None
        if entry is None:
            self._entries[slot] = _Entry(fingerprint, now)
            return "new", slot
        if entry.fingerprint != fingerprint:
            raise Mismatch()
        if entry.running:
            raise InProgress()
        return "replay", entry.data

    def finish(self, slot: str, data: Any) -> None:
        entry = self._entries[slot]
        entry.running, entry.data, entry.created = False, data, self.clock()

    def abandon(self, slot: str) -> None:
        self._entries.pop(slot, None)


class CursorInvalid(Exception):
    pass


@dataclass
class Cursors:
    """Opaque page cursors: a base64url position, then an HMAC over that position, the tool, the
    call's filters, the OAuth client and the user. Any change, or any other tool, filter, client
    or user, fails the MAC. The MAC covers the cursor's text, not its decoded bytes, so no two
    spellings of one cursor are accepted."""

    secret: bytes

    def _mac(self, text: str, tool: str, filters: dict, client: str, user: str) -> str:
        message = "\x1f".join([text, tool, canonical(filters), client, user]).encode()
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()[:40]

    def issue(self, position: list, tool: str, filters: dict, client: str, user: str) -> str:
        text = base64.urlsafe_b64encode(canonical(position).encode()).decode().rstrip("=")
        return f"{text}.{self._mac(text, tool, filters, client, user)}"

    def read(self, cursor: str, tool: str, filters: dict, client: str, user: str) -> list:
        text, dot, mac = cursor.partition(".")
        if not dot or not text or not hmac.compare_digest(
            mac.encode(), self._mac(text, tool, filters, client, user).encode()
        ):
            raise CursorInvalid()
        try:
            position = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        except ValueError as exc:  # cannot happen for a cursor we signed
            raise CursorInvalid() from exc
        if not isinstance(position, list):
            raise CursorInvalid()
        return position
