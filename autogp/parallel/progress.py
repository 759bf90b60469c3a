"""The progress display of fits: a rich progress bar on stderr, or nothing; the count of a
panel's finished series with the failed ones and the time left (:class:`SeriesProgress`, in
the bar or, where stderr is not a terminal, as a plain line every few series); and the compile
phase of a first run (:class:`CompilePhase`), shown in the bar or as lines on stderr."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from autogp.inference import exported


def time_left(done: int, total: int, elapsed: float) -> float | None:
    """Seconds left to finish ``total`` items when ``done`` of them took ``elapsed`` seconds,
    at the same pace: None before the first one is done (no pace yet), 0 once all are."""
    if done <= 0 or total <= 0:
        return None
    return max(0.0, float(elapsed) / done * (total - done))


def duration_text(seconds: float) -> str:
    """A time spent, to the second: ``45s``, ``3m12s``, ``1h05m``."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def estimate_text(seconds: float) -> str:
    """An estimate of the time left, as coarse as it is: ``about 40s``, ``about 6m``,
    ``about 1h20m``."""
    if seconds < 10:
        return f"about {max(1, round(seconds))}s"
    if seconds < 55:
        return f"about {round(seconds / 10) * 10}s"
    minutes = max(1, round(seconds / 60))
    if minutes < 60:
        return f"about {minutes}m"
    return f"about {minutes // 60}h{minutes % 60:02d}m"


def animated(console: Console) -> bool:
    """Whether rich redraws a live bar on ``console`` (a terminal, or Jupyter); elsewhere (a
    file, a pipe, a dumb terminal) the bar is drawn once, when it stops."""
    return console.is_jupyter or (console.is_terminal and not console.is_dumb_terminal)


class SeriesStatusColumn(ProgressColumn):
    """The failed series and the time left of the task a :class:`SeriesProgress` keeps
    (``2 failed, about 6m left``); nothing for the bar's other tasks."""

    def render(self, task: Task) -> Text:
        if "failed" not in task.fields:
            return Text("")
        text = f"{task.fields['failed']} failed"
        left = task.fields.get("left")
        if left is not None and not task.finished:
            text += f", {estimate_text(left)} left"
        return Text(text, style="progress.remaining")


def progress_bar(enabled: bool, console: Console | None = None) -> Any:
    """A rich progress bar on stderr (or ``console``), or a no-op."""
    if not enabled:
        return NoProgress()
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        SeriesStatusColumn(),
        console=console or Console(stderr=True),
        transient=False,
    )


def line_every(total: int) -> int:
    """How many finished series a plain progress line stands for: about a tenth of the
    panel, at most 10."""
    return max(1, min(10, math.ceil(total / 10)))


class SeriesProgress:
    """A panel's finished series on the progress ``bar``: done of ``total`` (``resumed`` of
    them loaded from a resume folder), how many failed, the time spent and an estimate of the
    time left (:func:`time_left` at the pace of the series this run fitted: loaded ones took no
    time). Where the bar is not redrawn (stderr is a file or a pipe: :func:`animated`) a plain
    line says the same every :func:`line_every` series and at the end::

        autogp: 40/120 series, 2 failed, 3m12s spent, about 6m left

    With a :class:`NoProgress` bar (``--quiet``) nothing is shown. ``unit`` names what is
    counted (``windows`` for cross-validation); ``clock`` gives the time in seconds."""

    def __init__(
        self,
        bar: Any,
        total: int,
        *,
        resumed: int = 0,
        unit: str = "series",
        clock: Callable[[], float] = time.perf_counter,
        every: int | None = None,
    ) -> None:
        self.bar = bar
        self.total = total
        self.resumed = resumed
        self.unit = unit
        self.clock = clock
        self.every = every or line_every(total)
        self.done = resumed
        self.failed = 0
        self.started = clock()
        self.enabled = not isinstance(bar, NoProgress)
        self.console: Console | None = getattr(bar, "console", None)
        self.plain = self.enabled and self.console is not None and not animated(self.console)
        self.task = bar.add_task(unit, total=total, completed=resumed, failed=0, left=None)
        self._last_line = resumed

    def elapsed(self) -> float:
        """Seconds since the count started."""
        return self.clock() - self.started

    def left(self) -> float | None:
        """The estimated seconds left (None before this run finished a series)."""
        return time_left(self.done - self.resumed, self.total - self.resumed, self.elapsed())

    def advance(self, finished: int, failed: int = 0) -> None:
        """``finished`` more series are done, ``failed`` of them without a fit."""
        self.done += finished
        self.failed += failed
        self.bar.update(self.task, advance=finished, failed=self.failed, left=self.left())
        if not self.plain or self.console is None or self.done <= self._last_line:
            return
        if self.done // self.every > self._last_line // self.every or self.done >= self.total:
            self._last_line = self.done
            self.console.print(self.line(), markup=False, highlight=False, soft_wrap=True)

    def line(self) -> str:
        """The plain progress line: ``autogp: 40/120 series, 2 failed, 3m12s spent, about 6m
        left`` (no estimate before the first series this run fitted, nor at the end)."""
        parts = [f"autogp: {self.done}/{self.total} {self.unit}", f"{self.failed} failed",
                 f"{duration_text(self.elapsed())} spent"]
        left = self.left()
        if left is not None and self.done < self.total:
            parts.append(f"{estimate_text(left)} left")
        return ", ".join(parts)


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


__all__ = [
    "CompilePhase",
    "NoProgress",
    "SeriesProgress",
    "SeriesStatusColumn",
    "animated",
    "compiling_text",
    "duration_text",
    "estimate_text",
    "line_every",
    "progress_bar",
    "time_left",
]
