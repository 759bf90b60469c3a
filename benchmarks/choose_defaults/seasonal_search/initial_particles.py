"""The period prior at the season, and the initial particles with a PER leaf at the season
under smc.seasonal_start = 0, 0.25, 0.5 (default grammar, a synthetic 38-point quarterly
series with a trend and a season of 4): their share of particles and of the weights.

    PYTHONPATH=. python benchmarks/choose_defaults/seasonal_search/initial_particles.py
"""
import jax; jax.config.update("jax_enable_x64", True)
import math, numpy as np
from scipy.stats import norm
from autogp.inference import grammar as gr, rounds, smc_round
from autogp.inference.settings import SMCSettings
from autogp.kernels import spec
PERIOD = spec.PARAM_NAMES[spec.PER].index("period")
for n, season in ((16,4),(38,4),(44,4),(63,4),(126,12)):
    v = math.log(season/(n-1))
    print(f"n={n} season={season}: normalised period {season/(n-1):.4f}, log prior density of log period {norm.logpdf(v,-1.5,1):.2f}, prior mass within 3% {norm.cdf(v+0.03,-1.5,1)-norm.cdf(v-0.03,-1.5,1):.4f}")
g = gr.Grammar.default()
rng = np.random.default_rng(0)
n = 38; x = np.linspace(0, 1, n); s = np.arange(n)
y = np.array([1.0, -0.5, 0.8, -1.3])[s % 4] + 2 * x + 0.3 * rng.normal(size=n)
data = rounds.make_data([x], [y], seasonal_periods=[4 / (n - 1)])
print("peaks (periods in quarters):", np.exp(np.asarray(data.period_centers[0])) * (n - 1), np.exp(np.asarray(data.period_log_weights[0])))
for share in (0.0, 0.25, 0.5):
    st = SMCSettings(seasonal_start=share)
    P = 4000
    state = smc_round.proposal_state(g, st, 1, P, jax.random.key(0), data)
    ops = np.asarray(state.ops[0]); per = np.exp(np.asarray(state.params[0][:, :, PERIOD])) * (n - 1)
    at = np.any((ops == spec.PER) & (np.abs(per / 4 - 1) < 0.03), axis=1)
    has = np.any(ops == spec.PER, axis=1)
    w = np.exp(np.asarray(state.log_weights[0]))
    print(f"seasonal_start={share}: share of initial particles with PER {has.mean():.3f}, with PER at 4 quarters (3%) {at.mean():.3f}; their total weight {w[at].sum():.3f}; ESS {1/np.sum(w**2):.0f} of {P}")
