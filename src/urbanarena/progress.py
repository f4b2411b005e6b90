"""Progress of long steps: the callback every layer reports to, and the command line's bar (quiet off a terminal).

Any step that can take more than a few seconds (drawing a frozen suite's images, its check panoramas, a city
build's stages, a video's frames, an export's panoramas, downloads) takes an optional ``progress`` argument of
type :data:`Progress`: a callable ``progress(label, done, total)`` meaning "step ``label`` has finished ``done``
of its ``total`` items". A step calls it with ``done = 0`` when it starts, then after each item, and last with
``done = total``; ``done`` never decreases within a step. A step of one indivisible item (a download run by
another program) reports ``(label, 0, 1)`` and ``(label, 1, 1)``. ``None`` means nobody listens.

Lower layers (world, render, env, tasks ...) only call the callback (:func:`report`, :func:`counted`); they
never draw anything. :class:`ConsoleProgress` is the one drawer, used by every command the same way: a
`rich <https://rich.readthedocs.io>`_ bar per step on stderr when stderr is a terminal, nothing at all when it is
not (a pipe, a log file, a test runner), so logs and ``--json`` output stay as they were. ``rich`` is imported
only when a bar is drawn.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Iterable, Iterator, TextIO, TypeVar

#: ``progress(label, done, total)``: step ``label`` has finished ``done`` of ``total`` items (module docstring)
Progress = Callable[[str, int, int], None]

T = TypeVar("T")


def report(progress: Progress | None, label: str, done: int, total: int) -> None:
    """Call ``progress(label, done, total)`` unless ``progress`` is ``None``."""
    if progress is not None:
        progress(label, int(done), int(total))


def counted(progress: Progress | None, label: str, items: Iterable[T], total: int | None = None) -> Iterator[T]:
    """Yield ``items`` reporting step ``label``: ``(0, n)`` before the first, ``(i, n)`` once the caller is done
    with item ``i`` (it asks for the next one), ``(n, n)`` at the end. ``total`` defaults to ``len(items)``;
    a caller that stops early leaves the step unfinished."""
    n = len(items) if total is None else int(total)  # type: ignore[arg-type]
    report(progress, label, 0, n)
    done = 0
    for item in items:
        yield item
        done += 1
        report(progress, label, min(done, n), n)
    if done < n:  # fewer items than announced: the step is over all the same
        report(progress, label, n, n)


def scaled(progress: Progress | None, label: str) -> Callable[[int, int], None] | None:
    """A ``(done, total)`` callback (the render layer's prerender form) reporting as step ``label``."""
    if progress is None:
        return None
    return lambda done, total: progress(label, int(done), int(total))


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class ConsoleProgress:
    """The command line's :data:`Progress` callback: one rich bar per step on ``stream`` (default stderr) when it
    is a terminal, silent when it is not.

    Use it as a context manager around the work (``with ConsoleProgress() as progress: build_city(...,
    progress=progress)``) so the bar is taken down on an error too. Once every step shown has finished the bar
    is stopped (left on screen), so another live display (``run``'s episode bar) can start after it.

    Args:
        stream: where to draw (default ``sys.stderr`` at the first report).
        enabled: force drawing on (``True``) or off (``False``); default: whether ``stream`` is a terminal.
    """

    def __init__(self, stream: TextIO | None = None, *, enabled: bool | None = None):
        self._stream = stream
        self._enabled = enabled
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}
        self._open: set[str] = set()

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stderr

    @property
    def enabled(self) -> bool:
        return _is_terminal(self.stream) if self._enabled is None else bool(self._enabled)

    def __call__(self, label: str, done: int, total: int) -> None:
        total = max(int(total), 0)
        if not self.enabled or (total == 0 and label not in self._open):
            return  # nothing to show: no terminal, or an empty step
        if self._bar is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn

            console = Console(file=self.stream, force_terminal=True if self._enabled else None)
            self._bar = Bar(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=console, transient=False)
            self._bar.start()
            self._tasks = {}
        if label not in self._tasks:
            self._tasks[label] = self._bar.add_task(label, total=total or None)
        self._bar.update(self._tasks[label], completed=min(int(done), total), total=total or None)
        if done >= total:
            self._open.discard(label)
            if not self._open:
                self.close()
        else:
            self._open.add(label)

    def close(self) -> None:
        """Take the bar down (what it showed stays on screen); the next report starts a new one."""
        if self._bar is not None:
            self._bar.stop()
        self._bar = None
        self._tasks = {}
        self._open = set()

    def __enter__(self) -> "ConsoleProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["ConsoleProgress", "Progress", "counted", "report", "scaled"]
