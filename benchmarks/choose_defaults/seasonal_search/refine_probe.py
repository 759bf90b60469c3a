"""What refinement reaches from a given start: MAP-optimise fixed structures on a series'
TRAINING rows (normalised as the defaults fit it) from several starting periods, and print the
end point's period, log likelihood and log priors.

    PYTHONPATH=. python benchmarks/choose_defaults/seasonal_search/refine_probe.py N722 N1104
    PERIOD_STEP=0.2 STRUCTURES="LIN + PER;LIN * LIN + PER" STEPS=50 python ... N722

(PERIOD_STEP: refine.period_step, the optimiser's step for PER periods as a fraction.)
"""
from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from diagnose import train_rows  # noqa: E402

from autogp._x64 import with_x64  # noqa: E402
from autogp.config import engine_settings, load_config  # noqa: E402
from autogp.evaluator import log_marginal_likelihood  # noqa: E402
from autogp.forecast.reading import read_series  # noqa: E402
from autogp.inference import grammar as gr  # noqa: E402
from autogp.inference import refine, rejuvenation  # noqa: E402
from autogp.kernels import pack, parse, spec  # noqa: E402
from autogp.pipeline.fitting import fitting_window, series_scaler  # noqa: E402

PERIOD = spec.PARAM_NAMES[spec.PER].index("period")
STRUCTURES = tuple(os.environ.get("STRUCTURES", "LIN + BM;LIN * LIN;LIN + PER;LIN * LIN + PER")
                   .split(";"))
STARTS = (2.0, 3.6, 4.0, 4.4, 5.0, 8.0)  # starting periods in quarters
STEPS = tuple(int(v) for v in os.environ.get("STEPS", "50,300").split(","))
PERIOD_STEP = float(os.environ.get("PERIOD_STEP", "1"))


@with_x64
def probe(uid: str) -> None:
    config = load_config(None, {})
    (series,) = read_series(train_rows(uid), config, None, None, None)[:1]
    series = fitting_window(series, config)[0]
    scaler = series_scaler(series, config, 1)
    x = jnp.asarray(scaler.forward_t(series.t))
    y = jnp.asarray(scaler.forward_y(series.y))
    grammar, settings = engine_settings(config)
    q = scaler.time_scale  # quarters per normalised unit
    print(f"== {uid}: n={series.n}, transform {scaler.units}, period_step {PERIOD_STEP}")
    print(f"{'structure':18s} {'start':>5s} {'steps':>5s} {'end period':>10s} {'logp_T':>7s} "
          f"{'logp_th':>7s} {'logp_n':>7s} {'loglik':>7s} {'log joint':>9s}", flush=True)
    for text in STRUCTURES:
        starts = STARTS if "PER" in text else (None,)
        ops, params = pack([parse(text)] * len(starts), max_depth=grammar.max_depth)
        params = np.array(params)
        for i, s in enumerate(starts):
            if s is not None:
                params[i, ops[i] == spec.PER, PERIOD] = math.log(s / q)
        ops, params = jnp.asarray(ops), jnp.asarray(params)
        noise = jnp.full(len(starts), -3.0)

        def loglik(o, p, n):
            return log_marginal_likelihood(o, p, n, x, y)

        post = rejuvenation.log_posterior_fn(grammar, loglik, ops)
        for steps in STEPS:
            r = refine.optimize(post, ops, params, noise, steps=steps,
                                optimizer=refine.make_optimizer("adam", 0.05),
                                period_step=PERIOD_STEP)
            ll = np.asarray(log_marginal_likelihood(ops, r.params, r.noise, x, y))
            lpp = np.asarray(gr.log_prior_params(grammar, ops, r.params))
            lpn = np.asarray(gr.log_prior_noise(grammar, r.noise))
            lps = np.asarray(gr.log_prior_structure(grammar, ops))
            for i, s in enumerate(starts):
                per = np.asarray(r.params[i])[np.asarray(ops[i]) == spec.PER, PERIOD]
                end = ",".join(f"{math.exp(v) * q:.2f}" for v in per)
                row = (text, s, steps, end, lps[i], lpp[i], lpn[i], ll[i],
                     lps[i] + lpp[i] + lpn[i] + ll[i])
                print(f"{row[0]:18s} {str(row[1]):>5s} {row[2]:5d} {row[3]:>10s} {row[4]:7.2f} "
                      f"{row[5]:7.2f} {row[6]:7.2f} {row[7]:7.2f} {row[8]:9.2f}", flush=True)


if __name__ == "__main__":
    jax.config.update("jax_enable_x64", True)
    for uid in sys.argv[1:]:
        probe(uid)
