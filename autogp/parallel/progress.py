"""The progress display of fits: a rich progress bar on stderr, or nothing; and the compile
phase of a first run (:class:`CompilePhase`), shown in the bar or as lines on stderr."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from autogp.inference import exported


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

    def advance(self, *args: Any, **kwargs: Any) -> None:
        return None

    def remove_task(self, *args: Any) -> None:
        return None


def compiling_text(cache: Path | None, where: str = "") -> str:
    """What a first run says while it compiles: that it happens once, and where the compiled
    programs are kept (``cache``: JAX's persistent compilation cache; None: nowhere)."""
    if cache is None:
        return (f"compiling{where} (no compilation cache: AUTOGP_CACHE_DIR is off or cannot "
                "be written, so every new process compiles again)")
    return f"compiling{where} (first run on this machine only; cache: {cache})"


class CompilePhase:
    """Shows a fit's compilation as its own phase: a line on stderr when compiling starts (what
    and where the cache is), then a task of the progress ``bar`` that counts the programs
    compiled, or, where no bar is shown, a line when the fit ends (:meth:`finish`).
    ``enabled=False`` shows nothing. Use as the listener of
    :func:`autogp.inference.exported.on_compiling`."""

    def __init__(self, bar: Any, enabled: bool) -> None:
        self.bar = bar
        self.enabled = enabled
        self.shown = False
        self.task: Any = None
        self.total = 0
        self.workers = False

    def _console(self) -> Console:
        return getattr(self.bar, "console", None) or Console(stderr=True, highlight=False)

    def _start(self, text: str, total: int | None) -> None:
        # The whole text on a line of its own (a bar's description column would cut the
        # cache's path short), then, with a bar, a task counting the programs.
        self.shown = True
        self._console().print(f"autogp: {text}", markup=False, soft_wrap=True)
        if not isinstance(self.bar, NoProgress):
            self.task = self.bar.add_task("compiling", total=total)

    def __call__(self, notice: exported.Compiling) -> None:
        if not self.enabled:
            return
        cache = None if notice.cache is None else notice.cache.parent
        self.total += notice.programs
        if not self.shown:
            self._start(compiling_text(cache), self.total)
        elif self.task is not None:
            self.bar.update(self.task, total=self.total)
        if self.task is not None:
            notice.on_each_done.append(lambda: self.bar.advance(self.task))

    def in_workers(self, cache: Path | None) -> None:
        """Workers compile on their first run (the cache at ``cache`` has not seen one)."""
        self.workers = True
        if self.enabled and not self.shown:
            self._start(compiling_text(cache, " in the workers"), None)

    def finish(self, fit_seconds: float, compile_seconds: float) -> None:
        """The fit is over: close the bar's task, or say how long compiling took."""
        if not self.shown:
            return
        if self.task is not None:
            if not self.total:  # workers compiled: the task had no count
                self.bar.update(self.task, total=1, completed=1)
            return
        spent = (f"compiling: {compile_seconds:.1f} s summed over the workers" if self.workers
                 else f"{compile_seconds:.1f} s of it compiling")
        self._console().print(f"autogp: fitted in {fit_seconds:.1f} s, {spent}",
                              markup=False, soft_wrap=True)


__all__ = ["CompilePhase", "NoProgress", "compiling_text", "progress_bar"]
