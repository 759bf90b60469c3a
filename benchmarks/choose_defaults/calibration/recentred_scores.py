"""Do the rounds' held-out scores track the final origin's misses, with and without each
round's data re-centred at its own recent level (the final fit's centring leaks the end)?

Scratch diagnosis: fits the M3 yearly and quarterly windows of ``--m3-other QS:10 YS:10``
(seed 0, one origin) with the defaults in this process, records the rounds, and prints per
window the rms score of the final forecast at the held-out training values and the scale
(``smc.calibration_prior = 0``) from the rounds' scores, leaky and re-centred; then the
Spearman correlations over windows. Output: ``recentred_scores.jsonl``.

    python benchmarks/choose_defaults/calibration/recentred_scores.py > OUT.jsonl
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from pathlib import Path

import equinox as eqx
import jax
import numpy as np
from scipy.stats import spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import autogp.inference.smc as smc_module  # noqa: E402
from autogp import AutoGP  # noqa: E402
from autogp.data.seasons import mase_season  # noqa: E402
from autogp.inference import calibration, rounds  # noqa: E402
from lab import choose_defaults as cd  # noqa: E402

RECORDED: list = []
DATA: list = []
_run_rounds = rounds.run_rounds


def recording_rounds(*args, **kwargs):
    """run_rounds, keeping each round's particles and the fit's data."""
    kwargs["record"] = RECORDED
    DATA.append(args[3])
    return _run_rounds(*args, **kwargs)


def main() -> None:
    smc_module.run_rounds = recording_rounds
    series = cd.load_series(0, 0, 0, m3_other={"QS": 10, "YS": 10})
    out = []
    for w in cd.make_windows(series, 1):
        RECORDED.clear()
        DATA.clear()
        model = AutoGP(seed=0, overrides={"smc.workers": 1}, progress=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(w["series"])
        post = model.fits[w["series"].unique_id]
        with jax.enable_x64(True):
            mix = post.mixture(post.series.future_t(w["h"]), True)
            final = calibration.mixture_scores(np.log(mix.weights), mix.means, mix.sds**2,
                                               post.scaler.forward_y(w["target"]))
            data = DATA[-1]
            leaky = calibration.origin_mean_squares(
                calibration.held_out_scores(RECORDED, data, 0))
            n = int(data.length[0])
            season = mase_season(post.series.axis)
            last = season if season > 1 else max(1, math.ceil(0.1 * n))  # as data.center
            y = np.asarray(data.y, np.float64)
            recentred = []
            for counts, state in RECORDED:
                c = int(counts[0])
                if c < calibration.FROM_SHARE * n or c >= n:
                    continue
                shifted = eqx.tree_at(lambda d: d.y, data, y - np.mean(y[0, c - last : c]))
                recentred += calibration.origin_mean_squares(
                    calibration.held_out_scores([(counts, state)], shifted, 0))
        row = {"uid": w["uid"], "season": season, "n": n,
               "rms": float(np.sqrt(np.mean(final**2))),
               "scale_leaky": calibration.predictive_scale(leaky, 0.0),
               "scale_recentred": calibration.predictive_scale(recentred, 0.0),
               "ms_leaky": np.round(leaky, 2).tolist(),
               "ms_recentred": np.round(recentred, 2).tolist()}
        print(json.dumps(row), flush=True)
        out.append(row)
    rms = [r["rms"] for r in out]
    for key in ("scale_leaky", "scale_recentred"):
        print(key, spearmanr(rms, [r[key] for r in out]), file=sys.stderr)


if __name__ == "__main__":
    main()
