"""What a command shows while it polls something running (`submit --wait`, `experiment submit --wait`): rich
progress bars on stderr when it is a terminal, otherwise a plain line each time a status or step changes, which
reads well in a log or CI."""

from __future__ import annotations

from typing import Self

from rich.progress import Progress, ProgressColumn, TaskID

from sfumato.cli.common import err


class ProgressFollower:
    """Bars with the given columns, shown for the length of a `with` block; each bar reads `status` among its
    fields and counts steps."""

    def __init__(self, *columns: ProgressColumn) -> None:
        self.live = err.is_terminal
        self.seen: dict[TaskID, tuple[str, int]] = {}
        self.progress = Progress(*columns, console=err)

    def __enter__(self) -> Self:
        if self.live:
            self.progress.start()
        return self

    def __exit__(self, *_: object) -> None:
        if self.live:
            self.progress.stop()

    def add(self, total_steps: int, **fields: object) -> TaskID:
        return self.progress.add_task("", total=max(total_steps, 1), **fields)

    def show(self, task: TaskID, step: int, total_steps: int, status: str, line: str, **fields: object) -> None:
        """Move `task`'s bar (an unknown total stays open); off a terminal, print `line` when status or step moved."""
        total = max(total_steps, 1) if total_steps else None
        self.progress.update(task, completed=step, total=total, status=status, **fields)
        if not self.live and self.seen.get(task) != (status, step):
            err.print(line, markup=False)
        self.seen[task] = (status, step)
