"""Atomic file writes: a reader sees the old file or the complete new one, never a partial one.

The content goes to a temporary file in the destination's directory (same file system), is
flushed and synced, and then ``os.replace``-d over the destination. If writing fails midway the
temporary file is removed and the previous file, if any, is left exactly as it was.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on normal exit it replaces ``path``.

    For writers that want a file name rather than a file object (``savefig``, ``np.savez``).
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with open(tmp, "rb") as fh:  # make the bytes durable before the rename
            os.fsync(fh.fileno())
        # mkstemp creates 0600 files; give the result the usual permissions.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def atomic_write(
    path: str | os.PathLike[str], write: Callable[[IO[Any]], object], *, binary: bool = False
) -> Path:
    """Call ``write(fh)`` on a temporary file, then move it over ``path`` atomically."""
    with atomic_path(path) as tmp:
        mode = "wb" if binary else "w"
        kwargs: dict[str, Any] = {} if binary else {"encoding": "utf-8", "newline": ""}
        with open(tmp, mode, **kwargs) as fh:
            write(fh)
    return Path(path)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write(path, lambda fh: fh.write(text))


__all__ = ["atomic_path", "atomic_write", "atomic_write_text"]
