"""Exceptions and warnings raised while loading time series."""

from __future__ import annotations

from typing import Any


class DataError(ValueError):
    """A time series could not be loaded or fails validation.

    The message names where the problem is (file, column, row, value) so it can be shown to a
    user as is. The same facts are kept as attributes for programs: ``source`` (file path or
    ``"DataFrame"``/``"arrays"``), ``column``, ``row`` (1-based line in the file, header
    included, or the DataFrame index label) and ``value`` (the offending raw value); each is
    ``None`` when it does not apply.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        column: str | None = None,
        row: Any = None,
        value: Any = None,
    ) -> None:
        super().__init__(message)
        self.source = source
        self.column = column
        self.row = row
        self.value = value


class AutoGPDataWarning(UserWarning):
    """Data were changed while loading (rows dropped, encoding guessed, ...); see the message."""
