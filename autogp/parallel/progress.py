"""The progress display of panel fits: a rich progress bar on stderr, or nothing."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def progress_bar(enabled: bool) -> Any:
    """A rich progress bar on stderr, or a no-op."""
    if not enabled:
        return NoProgress()
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    )


class NoProgress:
    """The progress bar's interface, doing nothing."""

    def __enter__(self) -> NoProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, *args: Any, **kwargs: Any) -> int:
        return 0

    def update(self, *args: Any, **kwargs: Any) -> None:
        return None

    def remove_task(self, *args: Any) -> None:
        return None


__all__ = ["NoProgress", "progress_bar"]
