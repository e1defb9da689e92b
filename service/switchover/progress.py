"""How a long import shows that it moves: a bar on a terminal, JSON lines otherwise (a CI log,
a Kubernetes Job), both on standard error so that the report on standard output stays clean."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Final

import msgspec

if TYPE_CHECKING:
    from typing import TextIO

WIDTH: Final = 30
EVERY: Final = 1.0  # seconds between JSON lines of one phase (its first and last always shown)


class Progress:
    """`phase(name, total)` starts a phase (reading a kind, writing one); `advance(n)` counts
    what is done; `done()` ends it."""

    def __init__(self, out: TextIO | None = None, *, tty: bool | None = None) -> None:
        self._out = sys.stderr if out is None else out
        self._tty = self._out.isatty() if tty is None else tty
        self._name = ""
        self._total = 0
        self._done = 0
        self._shown = 0.0
        self._started = 0.0

    def phase(self, name: str, total: int) -> None:
        self._name, self._total, self._done = name, total, 0
        self._started = time.monotonic()
        self._shown = 0.0
        self._show(force=True)

    def advance(self, count: int = 1) -> None:
        self._done += count
        self._show(force=False)

    def done(self) -> None:
        self._done = max(self._done, self._total)
        self._show(force=True, last=True)

    def _show(self, *, force: bool, last: bool = False) -> None:
        now = time.monotonic()
        if self._tty:
            if not force and now - self._shown < 0.1:
                return
            share = self._done / self._total if self._total else 1.0
            filled = int(share * WIDTH)
            bar = "#" * filled + "-" * (WIDTH - filled)
            self._out.write(f"\r{self._name:<24} [{bar}] {self._done}/{self._total}")
            if last:
                self._out.write(f" {now - self._started:.1f} s\n")
        else:
            if not force and now - self._shown < EVERY:
                return
            line = {
                "phase": self._name,
                "done": self._done,
                "total": self._total,
                "seconds": round(now - self._started, 2),
            }
            self._out.write(msgspec.json.encode(line).decode() + "\n")
        self._out.flush()
        self._shown = now
