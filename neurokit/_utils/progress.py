"""Progress bars (rich) that stay quiet off the main rank and when disabled."""

from __future__ import annotations

from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")


def progress_bar(
    items: Iterable[T], *, description: str = "", enabled: bool = True, total: int | None = None
) -> Iterator[T]:
    """Iterate ``items`` with a rich progress bar (elapsed and remaining time)."""
    if not enabled:
        yield from items
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    if total is None:
        try:
            total = len(items)  # type: ignore[arg-type]
        except TypeError:
            total = None
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        transient=False,
    ) as prog:
        tid = prog.add_task(description, total=total)
        for it in items:
            yield it
            prog.advance(tid)


class TrainProgress:
    """A step progress bar showing the running loss and learning rate."""

    def __init__(self, total: int, start: int = 0, description: str = "train", enabled: bool = True) -> None:
        self.enabled = enabled
        if not enabled:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.prog = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[info]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
        )
        self.tid = self.prog.add_task(description, total=total, completed=start, info="")
        self.prog.start()

    def update(self, **info) -> None:
        if self.enabled:
            text = " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in info.items())
            self.prog.update(self.tid, advance=1, info=text)

    def close(self) -> None:
        if self.enabled:
            self.prog.stop()
