"""Fitting panels on several cores or machines: the per-series unit of work
(:mod:`~autogp.parallel.work`), the ``local`` and ``dask`` backends, resumable runs
(:mod:`~autogp.parallel.resume`) and the driver :func:`fit_panel`."""

from autogp.parallel.inputs import dask_to_pandas, is_dask_frame, read_series_tolerant
from autogp.parallel.local import map_chunks
from autogp.parallel.panel import BACKENDS, PanelFit, fit_panel, resolve_workers
from autogp.parallel.progress import progress_bar
from autogp.parallel.resume import ResumeStore
from autogp.parallel.work import (
    SINGLE_THREAD_ENV,
    AfterFit,
    AfterFitResult,
    SeriesError,
    chunk_ids,
    chunk_series,
    fit_chunk,
    fit_series,
    single_thread_env,
)

__all__ = [
    "BACKENDS",
    "AfterFit",
    "AfterFitResult",
    "SINGLE_THREAD_ENV",
    "PanelFit",
    "ResumeStore",
    "SeriesError",
    "chunk_ids",
    "chunk_series",
    "dask_to_pandas",
    "fit_chunk",
    "fit_panel",
    "fit_series",
    "is_dask_frame",
    "map_chunks",
    "progress_bar",
    "read_series_tolerant",
    "resolve_workers",
    "single_thread_env",
]
