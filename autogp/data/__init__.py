"""Loading and validating time series.

``read_csv`` / ``from_frame`` / ``from_arrays`` turn user data into :class:`TimeSeries` objects:
float64 numeric times ``t`` (in the unit of a detected :class:`TimeAxis`: months for monthly
data, weeks for weekly, ...) and values ``y``, sorted and finite. :class:`Scaler` normalises them
for fitting and maps results back. Every problem raises :class:`DataError` (a ``ValueError``)
naming the file, column, row and value; silent fixes (dropped missing values) emit an
:class:`AutoGPDataWarning`.
"""

from autogp.data.errors import AutoGPDataWarning, DataError
from autogp.data.io import (
    AGGREGATES,
    DEFAULT_MAX_POINTS,
    MIN_POINTS,
    NA_TOKENS,
    from_arrays,
    from_frame,
    read_csv,
)
from autogp.data.scaling import Scaler
from autogp.data.series import TimeSeries
from autogp.data.timeaxis import TimeAxis

__all__ = [
    "AGGREGATES",
    "DEFAULT_MAX_POINTS",
    "MIN_POINTS",
    "NA_TOKENS",
    "AutoGPDataWarning",
    "DataError",
    "Scaler",
    "TimeAxis",
    "TimeSeries",
    "from_arrays",
    "from_frame",
    "read_csv",
]
