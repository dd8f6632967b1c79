"""Progress that a person can follow anywhere, on standard error (standard output stays for results a user may
pipe): rich bars on a terminal; on any other output (a log file, a pipe, CI) a text line when a stage starts, at least every :data:`PLAIN_INTERVAL_S` seconds while it runs (from a
background thread, so one long item is not a silence) and when it ends, each with done / total, the elapsed time
and the estimated time left. Quiet off the main rank and when disabled."""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable, Iterable, Iterator, TextIO, TypeVar

T = TypeVar("T")

#: most seconds between two progress lines when the output is not a terminal
PLAIN_INTERVAL_S = 30.0

#: ``neuro --quiet``: no progress at all (set by :func:`set_quiet`)
_QUIET = {"on": False}


def set_quiet(on: bool) -> None:
    """Silence every progress bar and progress line of this process (``neuro --quiet``)."""
    _QUIET["on"] = bool(on)


def output_is_terminal() -> bool:
    """Whether rich would draw live bars on standard error, where progress goes (a terminal; rich's
    ``FORCE_COLOR``/``TTY_*`` rules)."""
    from rich.console import Console

    return Console(stderr=True).is_terminal


def _clock_text(seconds: float) -> str:
    s = int(round(max(seconds, 0.0)))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class PlainProgress:
    """Progress as text lines: ``"prepare bonn: 3/12 (25 %), elapsed 0:01:30, about 0:04:30 left"``.

    A line is written when it starts, by a background thread every ``interval`` seconds while it runs, and by
    :meth:`close`. The time left is the mean time per item so far times the items left (``unknown`` before the
    first item ends, or without a total).

    Parameters
    ----------
    description : str
        The stage's name, first on each line.
    total : int | None
        Items (steps) in all; ``None``: unknown.
    start : int
        Items already done (a resumed run); they do not count in the rate.
    interval : float, optional
        Most seconds between two lines (default :data:`PLAIN_INTERVAL_S`).
    clock : callable
        Seconds, monotonic (``time.monotonic``; a fake one in tests).
    stream : file, optional
        Where lines go (default ``sys.stderr`` at the time of writing), flushed after each.

    Examples
    --------
    >>> import io
    >>> t = iter([0.0, 0.0, 10.0, 40.0])
    >>> buf = io.StringIO()
    >>> p = PlainProgress("demo", 4, interval=3600, clock=lambda: next(t), stream=buf)
    >>> p.advance()
    >>> p.line()
    'demo: 1/4 (25 %), elapsed 0:00:10, about 0:00:30 left'
    >>> p.advance(3); p.close(); buf.getvalue().splitlines()[-1]
    'demo: 4/4 (100 %), elapsed 0:00:40, done'
    """

    def __init__(
        self,
        description: str,
        total: int | None,
        *,
        start: int = 0,
        interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        stream: TextIO | None = None,
    ) -> None:
        self.description, self.total, self.done, self.first = description, total, start, start
        self.info = ""
        self.clock, self.stream = clock, stream
        self.interval = float(PLAIN_INTERVAL_S if interval is None else interval)
        self.t0 = clock()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.write(self.line())
        self._thread = threading.Thread(target=self._tick, name=f"progress {description}", daemon=True)
        self._thread.start()

    def line(self) -> str:
        """The current state as one line."""
        elapsed = self.clock() - self.t0
        of = f"/{self.total}" if self.total is not None else ""
        pct = f" ({100 * self.done / self.total:.0f} %)" if self.total else ""
        ran = self.done - self.first
        if self.total is not None and self.done >= self.total:
            left = "done"
        elif self.total is not None and ran > 0:
            left = f"about {_clock_text(elapsed / ran * (self.total - self.done))} left"
        else:
            left = "time left unknown"
        info = f" {self.info}" if self.info else ""
        return f"{self.description}: {self.done}{of}{pct}{info}, elapsed {_clock_text(elapsed)}, {left}"

    def write(self, text: str) -> None:
        out = self.stream or sys.stderr
        with self._lock:
            out.write(text + "\n")
            out.flush()

    def advance(self, n: int = 1, info: str = "") -> None:
        self.done += n
        if info:
            self.info = info

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            self.write(self.line())

    def close(self) -> None:
        """Stop the background lines and write the last one."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(timeout=5)
        self.write(self.line())


def progress_bar(
    items: Iterable[T], *, description: str = "", enabled: bool = True, total: int | None = None
) -> Iterator[T]:
    """Iterate ``items`` with a rich progress bar (elapsed and remaining time) on a terminal, or
    :class:`PlainProgress` lines on any other output."""
    if not enabled or _QUIET["on"]:
        yield from items
        return
    if total is None:
        try:
            total = len(items)  # type: ignore[arg-type]
        except TypeError:
            total = None
    if not output_is_terminal():
        plain = PlainProgress(description, total)
        try:
            for it in items:
                yield it
                plain.advance()
        finally:
            plain.close()
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.console import Console

    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        transient=False,
        console=Console(stderr=True),
    ) as prog:
        tid = prog.add_task(description, total=total)
        for it in items:
            yield it
            prog.advance(tid)


class TrainProgress:
    """A step progress bar showing the running loss and learning rate (:class:`PlainProgress` lines when the
    output is not a terminal)."""

    def __init__(self, total: int, start: int = 0, description: str = "train", enabled: bool = True) -> None:
        self.enabled = enabled and not _QUIET["on"]
        self.plain: PlainProgress | None = None
        if not self.enabled:
            return
        if not output_is_terminal():
            self.plain = PlainProgress(description, total, start=start)
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.console import Console

        self.prog = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self.tid = self.prog.add_task(description, total=total, completed=start, info="")
        self.prog.start()

    def update(self, **info) -> None:
        if self.enabled:
            text = " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in info.items())
            if self.plain is not None:
                self.plain.advance(info=text)
            else:
                self.prog.update(self.tid, advance=1, info=text)

    def close(self) -> None:
        if self.enabled:
            if self.plain is not None:
                self.plain.close()
            else:
                self.prog.stop()
