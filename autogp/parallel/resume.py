"""Resumable panel fits: each finished chunk of series is written to a folder as it completes.

One file per chunk (``chunk-<hash of its ids>.autogp``), written atomically (a temporary file,
then ``os.replace``), so a run stopped at any moment leaves only complete files. Each is an
ordinary ``.autogp`` model file (:mod:`autogp.pipeline.saveload`: JSON and ``.npy`` arrays, no
pickle; ``autogp.load`` opens it) whose ``notes.json`` holds the run's fit fingerprint and a
digest of each series' data. A rerun with the same folder loads the series already there and
fits only the others. A stored fit is reused only if it was made with the same fit settings
(seed, grammar, priors, SMC, refinement, data transforms) and the same data for that series;
other settings (workers, backend, forecast, outputs) may change between runs. Series that
failed are not stored, so a rerun tries them again.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from autogp.config import Config, ConfigError, load_config
from autogp.data import AutoGPDataWarning, TimeSeries
from autogp.inference.posterior import Posterior
from autogp.pipeline.saveload import ModelFileError, load_model, save_model

FORMAT = "autogp-resume/2"
# Settings that do not change a series' fit (where it runs, what is written afterwards).
_NOT_FIT_SETTINGS = {
    "smc": ("workers", "backend", "scheduler"),
    "data": ("path",),
}
_NOT_FIT_SECTIONS = ("forecast", "output", "experiment")


def fit_fingerprint(config: Mapping[str, Any], panel: bool) -> str:
    """A hash of the settings a series' fit depends on."""
    kept = {k: v for k, v in config.items() if k not in _NOT_FIT_SECTIONS}
    for section, names in _NOT_FIT_SETTINGS.items():
        if isinstance(kept.get(section), Mapping):
            kept[section] = {k: v for k, v in kept[section].items() if k not in names}
    text = json.dumps({"config": kept, "panel": panel}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def series_digest(series: TimeSeries) -> str:
    """A hash of a series' data (id, times, values, time axis)."""
    h = hashlib.sha256(series.unique_id.encode("utf-8"))
    h.update(np.ascontiguousarray(series.t, dtype=np.float64).tobytes())
    h.update(np.ascontiguousarray(series.y, dtype=np.float64).tobytes())
    h.update(repr(series.axis).encode("utf-8"))
    return h.hexdigest()


class _Chunk(NamedTuple):
    """A chunk's fits as a model to save (:class:`autogp.pipeline.saveload.FittedModel`)."""

    config: Config
    fits: dict[str, Posterior]


class ResumeStore:
    """The folder of a resumable run (created when missing)."""

    def __init__(self, directory: str | Path, config: Config | Mapping[str, Any],
                 panel: bool) -> None:
        self.directory = Path(directory)
        self.config = config if isinstance(config, Config) else load_config(dict(config))
        self.fingerprint = fit_fingerprint(self.config.to_dict(), panel)
        if self.directory.exists() and not self.directory.is_dir():
            raise ConfigError(f"resume folder {str(self.directory)!r} is a file, not a folder")
        self.directory.mkdir(parents=True, exist_ok=True)

    def files(self) -> list[Path]:
        return sorted(self.directory.glob("chunk-*.autogp"))

    def load(self, wanted: Iterable[TimeSeries]) -> dict[str, Posterior]:
        """The stored fits of ``wanted`` series (same settings, same data)."""
        digests = {s.unique_id: series_digest(s) for s in wanted}
        older = sorted(self.directory.glob("chunk-*.pkl"))
        if older:
            warnings.warn(f"resume: ignoring {len(older)} chunk files of an older autogp "
                          f"({older[0].name}, ...); their series are fitted again",
                          AutoGPDataWarning, stacklevel=2)
        found: dict[str, Posterior] = {}
        for path in self.files():
            try:
                saved = load_model(path)
            except ModelFileError as exc:  # an unreadable file is refitted
                warnings.warn(f"resume: ignoring unreadable {path.name} ({exc})",
                              AutoGPDataWarning, stacklevel=2)
                continue
            if saved.notes.get("format") != FORMAT:
                continue
            if saved.notes.get("fingerprint") != self.fingerprint:
                raise ConfigError(
                    f"resume folder {str(self.directory)!r} holds fits made with other settings "
                    f"({path.name}); resume with the same config or use a new folder"
                )
            stored = saved.notes.get("digests", {})
            for fit in saved.fits:
                if digests.get(fit.unique_id) == stored.get(fit.unique_id):
                    found[fit.unique_id] = fit
        return found

    def save(self, fits: Sequence[Posterior],
             inputs: Mapping[str, TimeSeries] | None = None) -> Path | None:
        """Write one finished chunk (atomically); nothing when it holds no fit. ``inputs``: the
        series each fit was made from, by id (default: the fit's own series, which for a
        windowed fit holds only the window)."""
        if not fits:
            return None
        ids = "\n".join(sorted(f.unique_id for f in fits))
        name = "chunk-" + hashlib.sha256(ids.encode("utf-8")).hexdigest()[:20] + ".autogp"
        inputs = inputs or {}
        notes = {
            "format": FORMAT,
            "fingerprint": self.fingerprint,
            "digests": {f.unique_id: series_digest(inputs.get(f.unique_id, f.series))
                        for f in fits},
        }
        chunk = _Chunk(self.config, {f.unique_id: f for f in fits})
        return save_model(chunk, self.directory / name, notes=notes)


__all__ = ["FORMAT", "ResumeStore", "fit_fingerprint", "series_digest"]
