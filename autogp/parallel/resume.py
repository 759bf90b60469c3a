"""Resumable panel fits: each finished chunk of series is written to a folder as it completes.

One file per chunk (``chunk-<hash of its ids>.pkl``), written atomically (a temporary file, then
``os.replace``), so a run stopped at any moment leaves only complete files. A rerun with the same
folder loads the series already there and fits only the others. A stored fit is reused only if
it was made with the same fit settings (seed, grammar, priors, SMC, refinement, data transforms)
and the same data for that series; other settings (workers, backend, forecast, outputs) may
change between runs. Series that failed are not stored, so a rerun tries them again.

The files are Python pickles: load only folders you wrote yourself.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from autogp.config import ConfigError
from autogp.data import AutoGPDataWarning, TimeSeries
from autogp.forecast.atomic import atomic_path
from autogp.inference.posterior import Posterior

FORMAT = "autogp-resume/1"
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


class ResumeStore:
    """The folder of a resumable run (created when missing)."""

    def __init__(self, directory: str | Path, config: Mapping[str, Any], panel: bool) -> None:
        self.directory = Path(directory)
        self.fingerprint = fit_fingerprint(config, panel)
        if self.directory.exists() and not self.directory.is_dir():
            raise ConfigError(f"resume folder {str(self.directory)!r} is a file, not a folder")
        self.directory.mkdir(parents=True, exist_ok=True)

    def files(self) -> list[Path]:
        return sorted(self.directory.glob("chunk-*.pkl"))

    def load(self, wanted: Iterable[TimeSeries]) -> dict[str, Posterior]:
        """The stored fits of ``wanted`` series (same settings, same data)."""
        digests = {s.unique_id: series_digest(s) for s in wanted}
        found: dict[str, Posterior] = {}
        for path in self.files():
            try:
                with open(path, "rb") as fh:
                    stored = pickle.load(fh)
            except Exception as exc:  # noqa: BLE001 - an unreadable file is refitted
                warnings.warn(f"resume: ignoring unreadable {path.name} ({exc})",
                              AutoGPDataWarning, stacklevel=2)
                continue
            if not isinstance(stored, dict) or stored.get("format") != FORMAT:
                continue
            if stored["fingerprint"] != self.fingerprint:
                raise ConfigError(
                    f"resume folder {str(self.directory)!r} holds fits made with other settings "
                    f"({path.name}); resume with the same config or use a new folder"
                )
            for uid, digest, fit in stored["fits"]:
                if digests.get(uid) == digest:
                    found[uid] = fit
        return found

    def save(self, fits: list[Posterior]) -> Path | None:
        """Write one finished chunk (atomically); nothing when it holds no fit."""
        if not fits:
            return None
        ids = "\n".join(sorted(f.unique_id for f in fits))
        name = "chunk-" + hashlib.sha256(ids.encode("utf-8")).hexdigest()[:20] + ".pkl"
        record = {
            "format": FORMAT,
            "fingerprint": self.fingerprint,
            "fits": [(f.unique_id, series_digest(f.series), f) for f in fits],
        }
        target = self.directory / name
        with atomic_path(target) as tmp:
            tmp.write_bytes(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
        return target


__all__ = ["FORMAT", "ResumeStore", "fit_fingerprint", "series_digest"]
