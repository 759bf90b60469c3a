"""The ``.autogp`` model file: a versioned zip archive, no pickle.

Layout (format version 1)::

    model.autogp                      a zip archive (deflate), members:
      model.json                      everything but the big arrays, human readable
      arrays.npz                      a numpy .npz (itself a zip of .npy files, no pickle)

``model.json``::

    {
      "format": "autogp-model",
      "format_version": 1,            readers refuse newer versions with a clear message
      "autogp_version": "0.1.0",      the writer (informative)
      "config": {...},                Config.to_dict(): the complete configuration, seed included
      "series": [                     one entry per fitted series, in fitting order
        {
          "unique_id": "airline",
          "n": 144,                   training observations
          "axis": {...},              TimeAxis.to_dict(): unit, origin, step, freq, ...
          "stamps": "datetime64[us]", how the exact time stamps are stored (or "float64")
          "end_t": 19.0,              optional: the last time stamp's numeric time when the
                                      last values were missing (forecasts start after it)
          "scaler": {...},            Scaler.to_dict(): time_offset/scale, value_offset/scale,
                                      boxcox_lambda (0: log), transform_reason, log
          "log_marginal_likelihood": -12.3,
          "updates": 0,               online updates applied since the fit
          "num_inducing": 0,          0: exact GP; else the sparse likelihood's inducing points
          "left_out": 0,              earlier training points outside data.window (not stored)
          "stride": 1,                the window kept every stride-th training point
          "ge_weight_to": "",         the atom that took GE's prior weight in the search
                                      (data.full_resolution_ge; "": none)
          "prior": "...",             the learned prior group the fit ran under (absent: none)
          "added": 0,                 observations online updates appended (all fitted)
          "history": {...},           the SMC's per-round diagnostics
          "particles": [              documentation of the particles (the arrays are authoritative)
            {"structure": "LIN + PER",
             "expression": "LIN(intercept=0.49...; ...) + PER(...)",   normalised units, repr floats
             "noise_variance": 0.0123...,                              normalised units
             "weight": 0.25}
          ]
        }
      ]
    }

An optional third member, ``notes.json``, holds a JSON object a writer adds for its own use
(resumable runs keep their fingerprint and data digests there, see
:mod:`autogp.parallel.resume`); readers that do not know it ignore it.

``arrays.npz`` holds, for series number ``i`` (0-based), ``s{i}_ops`` int32 ``[P, S]``,
``s{i}_params`` float64 ``[P, S, 3]`` (unconstrained), ``s{i}_noise`` ``[P]`` (unconstrained log
variance), ``s{i}_log_weights`` ``[P]``, ``s{i}_t`` and ``s{i}_y`` (training times on the axis
and values in data units) and ``s{i}_stamps`` (int64 microseconds since 1970 for dates, float64
for numeric time), and ``s{i}_noise_sd`` where the series has known observation noise. Floats
are stored bit for bit, so a loaded model predicts exactly what the
saved one did. Archive members carry a fixed time stamp, so equal models give equal files.

Any problem reading a file raises :class:`ModelFileError` (a ``ValueError``) naming the file.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
import pandas as pd

from autogp.config import Config, ConfigError, load_config
from autogp.data import Scaler, TimeAxis, TimeSeries
from autogp.data.covariates import CovariateScaling
from autogp.inference.full_resolution import FullResolution
from autogp.inference.posterior import Posterior
from autogp.kernels import structure, to_text, unpack
from autogp.pipeline.atomic import atomic_path
from autogp.version import __version__

FORMAT = "autogp-model"
FORMAT_VERSION = 1
_FIXED_DATE = (1980, 1, 1, 0, 0, 0)
_ARRAY_NAMES = ("ops", "params", "noise", "log_weights", "t", "y", "stamps")
_FULL_RESOLUTION_ARRAYS = ("t", "y", "state_space", "reason", "log_likelihood")


class ModelFileError(ValueError):
    """A model file cannot be read: missing, corrupted, not an autogp model, or too new."""


class FittedModel(Protocol):
    """What is saved of a model (:class:`autogp.AutoGP` is one): its configuration and its
    fitted series' posteriors by id, in fitting order."""

    config: Config

    @property
    def fits(self) -> dict[str, Posterior]: ...


class SavedModel(NamedTuple):
    """What a model file holds: the configuration, the posteriors in fitting order and the
    writer's notes (``notes.json``; empty when there are none)."""

    config: Config
    fits: list[Posterior]
    notes: dict[str, Any] = {}


def _member(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_FIXED_DATE)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, arr in arrays.items():
            with zf.open(_member(f"{name}.npy"), "w") as fh:
                np.lib.format.write_array(fh, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def _jsonable(obj: Any) -> Any:
    """History and config values as plain JSON (numpy scalars/arrays to Python)."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj


def _stamps_array(series: TimeSeries) -> tuple[str, np.ndarray]:
    ds = series.ds
    if isinstance(ds, pd.DatetimeIndex):
        return "datetime64[us]", ds.as_unit("us").asi8.astype(np.int64)
    return "float64", np.asarray(ds, dtype=np.float64)


def model_to_bytes(model: FittedModel, *, notes: dict[str, Any] | None = None) -> bytes:
    """The ``.autogp`` file content of a fitted model (with ``notes.json`` when ``notes`` is
    given: a JSON object)."""
    fits = model.fits
    if not fits:
        raise RuntimeError("the model is not fitted yet: call fit(...) first")
    entries, arrays = [], {}
    for i, fit in enumerate(fits.values()):
        exprs = unpack(fit.ops, fit.params)
        w = fit.weights()
        kind, stamps = _stamps_array(fit.series)
        entries.append(
            {
                "unique_id": fit.unique_id,
                "n": fit.series.n,
                "axis": fit.series.axis.to_dict(),
                "stamps": kind,
                **({} if fit.series.end_t is None else {"end_t": fit.series.end_t}),
                "scaler": fit.scaler.to_dict(),
                "log_marginal_likelihood": _jsonable(float(fit.log_marginal_likelihood)),
                "updates": fit.updates,
                "num_inducing": fit.num_inducing,
                "left_out": fit.left_out,
                "stride": fit.stride,
                "ge_weight_to": fit.ge_weight_to,
                **({"prior": fit.prior} if fit.prior else {}),
                "added": fit.added,
                **({} if fit.covariate_scaling is None
                   else {"covariates": fit.covariate_scaling.to_dict()}),
                "history": _jsonable(fit.history),
                "particles": [
                    {
                        "structure": structure(e),
                        "expression": to_text(e, params=True, precision=None),
                        "noise_variance": float(np.exp(fit.noise[p])),
                        "weight": float(w[p]),
                    }
                    for p, e in enumerate(exprs)
                ],
            }
        )
        arrays.update(
            {
                f"s{i}_ops": np.asarray(fit.ops, dtype=np.int32),
                f"s{i}_params": np.asarray(fit.params, dtype=np.float64),
                f"s{i}_noise": np.asarray(fit.noise, dtype=np.float64),
                f"s{i}_log_weights": np.asarray(fit.log_weights, dtype=np.float64),
                f"s{i}_t": np.asarray(fit.series.t, dtype=np.float64),
                f"s{i}_y": np.asarray(fit.series.y, dtype=np.float64),
                f"s{i}_stamps": stamps,
            }
        )
        if fit.series.noise_sd is not None:  # optional: known noise sds, data units
            arrays[f"s{i}_noise_sd"] = np.asarray(fit.series.noise_sd, dtype=np.float64)
        if fit.series.covariates is not None:
            arrays[f"s{i}_covariates"] = fit.series.covariates.to_numpy(dtype=np.float64)
        fr = fit.full_resolution
        if fr is not None:  # optional: the full-resolution stage's points and verdicts
            entries[-1]["full_resolution"] = {"dim": fr.dim, "note": fr.note}
            arrays.update({f"s{i}_fr_{name}": np.asarray(getattr(fr, name))
                           for name in _FULL_RESOLUTION_ARRAYS})
    doc = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "autogp_version": __version__,
        "config": model.config.to_dict(),
        "series": entries,
    }
    text = json.dumps(doc, indent=1, allow_nan=False)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(_member("model.json"), text.encode("utf-8"))
        zf.writestr(_member("arrays.npz"), _npz_bytes(arrays))
        if notes is not None:
            note_text = json.dumps(_jsonable(notes), indent=1, sort_keys=True, allow_nan=False)
            zf.writestr(_member("notes.json"), note_text.encode("utf-8"))
    return buf.getvalue()


def save_model(model: FittedModel, path: str | Path, *,
               notes: dict[str, Any] | None = None) -> Path:
    """Write ``model`` (and ``notes``, see :func:`model_to_bytes`) to ``path`` atomically (the
    previous file survives a failed write)."""
    content = model_to_bytes(model, notes=notes)
    with atomic_path(path) as tmp:
        tmp.write_bytes(content)
    return Path(path)


def _bad(path: Any, why: str) -> ModelFileError:
    return ModelFileError(f"{path}: not a valid autogp model file ({why})")


def load_model(path: str | Path) -> SavedModel:
    """Read a ``.autogp`` file; raises :class:`ModelFileError` on any problem."""
    p = Path(path)
    try:
        content = p.read_bytes()
    except FileNotFoundError:
        raise ModelFileError(f"{path}: model file not found") from None
    except OSError as exc:
        raise ModelFileError(f"{path}: cannot read the model file ({exc})") from None
    return model_from_bytes(content, source=str(path))


def model_from_bytes(content: bytes, source: str = "<bytes>") -> SavedModel:
    """Inverse of :func:`model_to_bytes`."""
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as zf:
            names = set(zf.namelist())
            if "model.json" not in names:
                raise _bad(source, "no model.json inside; is it an autogp model?")
            doc = json.loads(zf.read("model.json").decode("utf-8"))
            if not isinstance(doc, dict) or doc.get("format") != FORMAT:
                raise _bad(source, "model.json does not describe an autogp model")
            _check_version(doc.get("format_version"), source)
            if "arrays.npz" not in names:
                raise _bad(source, "no arrays.npz inside")
            npz_bytes = zf.read("arrays.npz")
            notes = (json.loads(zf.read("notes.json").decode("utf-8"))
                     if "notes.json" in names else {})
            if not isinstance(notes, dict):
                raise _bad(source, "notes.json is not a JSON object")
        with np.load(io.BytesIO(npz_bytes), allow_pickle=False) as npz:
            arrays = {k: np.asarray(npz[k]) for k in npz.files}
    except ModelFileError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError) as exc:
        raise _bad(source, f"damaged archive: {exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad(source, f"unreadable model.json: {exc}") from None
    except (ValueError, KeyError) as exc:  # np.load on damaged .npy data
        raise _bad(source, f"unreadable arrays: {exc}") from None
    try:
        return _build_model(doc, arrays, source)._replace(notes=notes)
    except ModelFileError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise _bad(source, f"inconsistent content: {type(exc).__name__}: {exc}") from None


def _check_version(version: Any, source: str) -> None:
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _bad(source, f"format_version {version!r} is not a positive integer")
    if version > FORMAT_VERSION:
        raise ModelFileError(
            f"{source}: written by a newer autogp (model format version {version}); this "
            f"autogp {__version__} reads format versions up to {FORMAT_VERSION}. Upgrade "
            f"autogp to load it."
        )


def _build_model(doc: dict[str, Any], arrays: dict[str, np.ndarray], source: str) -> SavedModel:
    try:
        config = load_config(doc["config"])
    except ConfigError as exc:
        raise _bad(source, f"invalid config: {exc}") from None
    fits = {}
    for i, entry in enumerate(doc["series"]):
        a = {name: arrays[f"s{i}_{name}"] for name in _ARRAY_NAMES}
        ops = a["ops"].astype(np.int32)
        P = ops.shape[0]
        if a["params"].shape != ops.shape + (3,) or a["noise"].shape != (P,):
            raise _bad(source, f"series {i}: particle arrays have inconsistent shapes")
        if a["log_weights"].shape != (P,) or len(entry["particles"]) != P:
            raise _bad(source, f"series {i}: particle counts disagree")
        exprs = unpack(ops, a["params"])
        for p, (e, doc_p) in enumerate(zip(exprs, entry["particles"], strict=True)):
            if structure(e) != doc_p["structure"]:
                raise _bad(
                    source,
                    f"series {i} particle {p}: arrays hold {structure(e)!r} but model.json "
                    f"says {doc_p['structure']!r}",
                )
        axis = TimeAxis.from_dict(entry["axis"])
        if entry["stamps"] == "datetime64[us]":
            stamps = pd.DatetimeIndex(a["stamps"].astype(np.int64).astype("datetime64[us]"))
        else:
            stamps = pd.Index(a["stamps"].astype(np.float64))
        scaling = entry.get("covariates")
        scaling = None if scaling is None else CovariateScaling.from_dict(scaling)
        covariates = None
        if scaling is not None:
            if f"s{i}_covariates" not in arrays:
                raise _bad(source, f"series {i}: covariates {list(scaling.names)} are missing")
            covariates = pd.DataFrame(arrays[f"s{i}_covariates"], columns=list(scaling.names))
        series = TimeSeries(a["t"], a["y"], entry["unique_id"], axis, None, stamps,
                            entry.get("end_t"), noise_sd=arrays.get(f"s{i}_noise_sd"),
                            covariates=covariates)
        if series.n != entry["n"]:
            raise _bad(source, f"series {i}: {series.n} observations but model.json says "
                               f"{entry['n']}")  # fmt: skip
        lml = entry.get("log_marginal_likelihood")
        fits[series.unique_id] = Posterior(
            series=series,
            scaler=Scaler.from_dict(entry["scaler"]),
            ops=ops,
            params=a["params"].astype(np.float64),
            noise=a["noise"].astype(np.float64),
            log_weights=a["log_weights"].astype(np.float64),
            log_marginal_likelihood=float("nan") if lml is None else float(lml),
            history=dict(entry.get("history") or {}),
            updates=int(entry.get("updates", 0)),
            num_inducing=int(entry.get("num_inducing", 0)),
            left_out=int(entry.get("left_out", 0)),
            stride=int(entry.get("stride", 1)),
            ge_weight_to=str(entry.get("ge_weight_to", "")),
            prior=str(entry.get("prior", "")),
            added=int(entry.get("added", 0)),
            covariate_scaling=scaling,
            full_resolution=_full_resolution(entry, arrays, i, P),
        )
    if not fits:
        raise _bad(source, "no fitted series")
    return SavedModel(config, list(fits.values()))


def _full_resolution(entry: dict[str, Any], arrays: dict[str, np.ndarray], i: int,
                     P: int) -> FullResolution | None:
    doc = entry.get("full_resolution")
    if doc is None:
        return None
    a = {name: arrays[f"s{i}_fr_{name}"] for name in _FULL_RESOLUTION_ARRAYS}
    if a["state_space"].shape != (P,) or a["t"].shape != a["y"].shape:
        raise ValueError(f"series {i}: full-resolution arrays have inconsistent shapes")
    return FullResolution(a["t"].astype(np.float64), a["y"].astype(np.float64),
                          a["state_space"].astype(bool), a["reason"].astype(np.int64),
                          a["log_likelihood"].astype(np.float64), int(doc["dim"]),
                          str(doc.get("note", "")))


__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "FittedModel",
    "ModelFileError",
    "SavedModel",
    "load_model",
    "model_from_bytes",
    "model_to_bytes",
    "save_model",
]
