"""A data-driven proposal for the period of PER leaves, exact inside Metropolis-Hastings.

The GP likelihood of a period is sharply multimodal: a PER leaf drawn from its wide prior almost
never lands near the series' real period, and gradient refinement then polishes a wrong
multiple (36 months instead of 12 on airline). So new PER leaves draw their log period from

    q(v) = (1 - w) N(v; prior) + w sum_k pi_k N(v; c_k, s^2)

where c_k are the log periods of the strongest peaks of a least-squares periodogram of the whole
training series (fixed for a fit, so q is a fixed proposal). Every other choice still comes from
the prior, so a subtree drawn this way has density P_i(S) prod_PER q(v) / p(v); the moves add
``log p(v) - log q(v)`` for each new PER leaf and ``log q(v) - log p(v)`` for each removed one
to their acceptance ratios, and the initial particles carry importance weights p / q. The chain
targets exactly the same posterior; it only finds the right period sooner.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.stats import norm

from autogp.kernels import spec

Array = jax.Array

#: Index of the period among PER's parameters.
PERIOD_INDEX = spec.PARAM_NAMES[spec.PER].index("period")


class PeriodProposal(NamedTuple):
    """Per-particle arrays of the proposal: ``log_centers``/``log_weights`` ``[..., K]``
    (``log_weights`` normalised, ``-inf`` for absent peaks), ``mix`` ``[...]`` the weight w
    (0 when a series has no peak), and ``scale`` ``[...]`` the spread s in log-period."""

    log_centers: Array
    log_weights: Array
    mix: Array
    scale: Array


# --- the periodogram (numpy, once per fit) ------------------------------------------------------
#: Frequencies x points in one block of the direct periodogram: scipy's ``lombscargle`` holds
#: several such arrays at once, so one call over every frequency of a 30,000-point series needs
#: tens of GB (about 2.5 n frequencies by n points).
DIRECT_BLOCK = 1 << 21
#: Longest FFT of the gridded periodogram (beyond it the direct form is used).
MAX_FFT = 1 << 25


def _grid_steps(x: np.ndarray, step: float) -> np.ndarray | None:
    """``x`` as integer multiples of ``step`` from its smallest value, or None when it is not on
    such a grid (gaps are fine: the bank calls' nights and weekends)."""
    k = (x - x.min()) / step
    steps = np.rint(k)
    return steps.astype(np.int64) if np.max(np.abs(k - steps)) <= 1e-6 else None


def _gridded_sums(steps, resid, freqs, step):
    """The periodogram's sums by FFT, for ``x`` on a grid: ``sum r cos(w x)``, ``sum r sin``
    and ``sum cos(2 w x)``, ``sum sin(2 w x)`` over the points, all at once in O(L log L),
    where the direct sums cost O(n x frequencies). The frequencies must be multiples of
    ``1 / (L step)`` (the grid of ``candidate_periods`` is); folding the steps modulo L keeps
    the sums exact for any L. None when they are not or L is too long."""
    if len(freqs) < 2:
        return None
    fft_length = int(round(1.0 / ((freqs[1] - freqs[0]) * step)))
    bins = freqs * fft_length * step
    index = np.rint(bins)
    if not 2 <= fft_length <= MAX_FFT or np.max(np.abs(bins - index)) > 1e-6:
        return None
    index = index.astype(np.int64)
    folded = steps % fft_length
    # For real a, sum a_k exp(+i 2 pi j k / L) = conj(FFT(a)_j).
    ry = np.conj(np.fft.fft(np.bincount(folded, weights=resid, minlength=fft_length))[index])
    count = np.bincount(folded, minlength=fft_length).astype(float)
    twice = np.conj(np.fft.fft(count)[(2 * index) % fft_length])
    return ry.real, ry.imag, twice.real, twice.imag


def _gridded_power(steps, resid, freqs, step):
    """Explained sum of squares of the best ``a cos + b sin`` at each frequency, from the
    FFT sums, by the same phase rotation (tau) and clamping as ``scipy.signal.lombscargle``
    with ``floating_mean=False``, so the two agree to rounding. None off the grid."""
    sums = _gridded_sums(steps, resid, freqs, step)
    if sums is None:
        return None
    yc, ys, cos2, sin2 = sums
    n = float(len(resid))
    cc, ss, cs = (n + cos2) / 2.0, (n - cos2) / 2.0, sin2 / 2.0
    tau = 0.5 * np.arctan2(2.0 * cs, cc - ss)
    c, s = np.cos(tau), np.sin(tau)
    yc_tau, ys_tau = yc * c + ys * s, ys * c - yc * s
    cc_tau = cc * c * c + 2.0 * cs * c * s + ss * s * s
    floor = n * np.finfo(float).epsneg
    ss_tau = np.maximum(n - cc_tau, floor)
    cc_tau = np.maximum(cc_tau, floor)
    return yc_tau**2 / cc_tau + ys_tau**2 / ss_tau


def explained_power(x: np.ndarray, resid: np.ndarray, freqs: np.ndarray,
                    step: float) -> np.ndarray:
    """Sum of squares of ``resid`` explained by the best ``a cos + b sin`` (no mean) at each
    frequency. On a grid of ``step`` (the usual case) by FFT; otherwise by
    ``scipy.signal.lombscargle`` in blocks of frequencies, so memory stays bounded."""
    steps = _grid_steps(x, step)
    if steps is not None:
        power = _gridded_power(steps, resid, freqs, step)
        if power is not None:
            return power
    # Imported here: scipy.signal takes about 0.6 s to import, and regular grids never need it.
    from scipy.signal import lombscargle

    block = max(1, DIRECT_BLOCK // len(x))
    # scipy's power without a floating mean is half the explained sum of squares.
    return np.concatenate([
        2.0 * lombscargle(x, resid, 2.0 * np.pi * freqs[i:i + block], floating_mean=False)
        for i in range(0, len(freqs), block)])


def candidate_periods(
    x: np.ndarray, y: np.ndarray, *, num: int = 3, oversample: int = 5
) -> tuple[np.ndarray, np.ndarray]:
    """The ``num`` strongest periods of ``y`` over ``x`` and their normalised weights.

    The Lomb-Scargle periodogram (least squares of a cos + b sin at each frequency,
    ``explained_power``) of the linearly detrended series, as a share of its variance, on a
    grid of frequencies from two cycles over the span to the Nyquist rate of the median
    spacing; peaks are local maxima of the power, weighted by power. Irregular ``x`` is fine.
    Returns ``(log_periods [k], weights [k])`` with ``k <= num`` (empty when the series is too
    short or flat).
    """
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    n = len(x)
    if n < 8:
        return np.zeros(0), np.zeros(0)
    design = np.stack([np.ones(n), x - x.mean()], axis=1)
    resid = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
    total = float(resid @ resid)
    span = float(x.max() - x.min())
    step = float(np.median(np.diff(np.sort(x))))
    if total <= 1e-12 * n or span <= 0 or step <= 0:
        return np.zeros(0), np.zeros(0)
    f_lo, f_hi = 2.0 / span, 0.5 / step
    freqs = np.arange(f_lo, f_hi, 1.0 / (oversample * span))
    if len(freqs) < 3:
        return np.zeros(0), np.zeros(0)
    power = explained_power(x, resid, freqs, step) / total
    peaks = np.flatnonzero((power[1:-1] > power[:-2]) & (power[1:-1] >= power[2:])) + 1
    if len(peaks) == 0:
        return np.zeros(0), np.zeros(0)
    top = peaks[np.argsort(power[peaks])[::-1][:num]]
    weights = power[top] / power[top].sum()
    return np.log(1.0 / freqs[top]), weights


#: Calendar seasons per series the proposal holds (hourly data: a day and a week).
MAX_SEASONS = 2


def _season_list(entry: float | Sequence[float] | None) -> list[float]:
    if entry is None:
        return []
    if isinstance(entry, int | float | np.floating | np.integer):
        return [float(entry)]
    return [float(v) for v in entry]


def proposal_arrays(
    xs: list[np.ndarray], ys: list[np.ndarray], *, num: int = 3,
    seasonal_periods: list[float | Sequence[float] | None] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``[G, num + MAX_SEASONS]`` log centres and log weights (``-inf`` where a series has
    fewer peaks or seasons).

    The last columns are the calendar seasons of the series' time axis when known
    (``seasonal_periods[g]``: a period, a list of up to ``MAX_SEASONS`` periods or None, in the
    same units as ``x``; e.g. 12 months for monthly data, 24 and 168 hours for hourly data):
    together they get half the proposal's peak weight, shared equally, because short noisy
    series often hide them from the periodogram; the periodogram's peaks share the other half.
    Seasons longer than half the training span are left out (the data cannot show them).
    """
    G = len(xs)
    width = num + MAX_SEASONS
    centers = np.zeros((G, width))
    log_weights = np.full((G, width), -np.inf)
    seasonal_periods = seasonal_periods or [None] * G
    for g, (x, y) in enumerate(zip(xs, ys, strict=True)):
        c, w = candidate_periods(x, y, num=num)
        span = float(np.max(x) - np.min(x)) if len(x) else 0.0
        seasons = [p for p in _season_list(seasonal_periods[g]) if 0 < p <= span / 2]
        seasons = seasons[:MAX_SEASONS]
        share = 0.5 if seasons and len(c) else 1.0
        centers[g, : len(c)] = c
        log_weights[g, : len(c)] = np.log(w * share)
        for k, season in enumerate(seasons):
            centers[g, num + k] = math.log(season)
            rest = (1.0 - share) if len(c) else 1.0
            log_weights[g, num + k] = math.log(rest / len(seasons))
    return centers, log_weights


# --- densities and draws (jax, per tree) --------------------------------------------------------
def log_q_minus_log_p(v: Array, prior_mean, prior_std, proposal: PeriodProposal) -> Array:
    """``log q(v) - log p(v)`` for log periods ``v`` (any shape) of one particle."""
    log_prior = norm.logpdf(v, prior_mean, prior_std)
    log_peaks = jax.nn.logsumexp(
        proposal.log_weights + norm.logpdf(v[..., None], proposal.log_centers, proposal.scale),
        axis=-1,
    )
    has_peaks = proposal.mix > 0
    mix = jnp.where(has_peaks, proposal.mix, 0.5)  # keep logs finite; masked below
    log_q = jnp.logaddexp(jnp.log1p(-mix) + log_prior, jnp.log(mix) + log_peaks)
    return jnp.where(has_peaks, log_q - log_prior, 0.0)


def period_prior(grammar) -> tuple[float, float]:
    """(mean, std) of the grammar's normal prior on PER's log period."""
    return (float(grammar.prior_mean_table[spec.PER, PERIOD_INDEX]),
            float(grammar.prior_std_table[spec.PER, PERIOD_INDEX]))


def _per_slots(ops: Array, region: Array) -> Array:
    return region & (ops == spec.PER)


def region_correction(
    ops: Array, params: Array, region: Array, prior_mean, prior_std, proposal: PeriodProposal
) -> Array:
    """``sum over PER leaves in region of log q(v) - log p(v)`` for one tree ``ops`` [S]."""
    terms = log_q_minus_log_p(params[:, PERIOD_INDEX], prior_mean, prior_std, proposal)
    return jnp.sum(jnp.where(_per_slots(ops, region), terms, 0.0))


def redraw_periods(
    ops: Array, params: Array, region: Array, proposal: PeriodProposal, *, key: Array
) -> Array:
    """Replace the prior-drawn periods of PER leaves in ``region`` by draws from q.

    With probability ``mix`` a leaf's log period is redrawn from the peak mixture; otherwise
    its prior draw stands, so the result is a draw from q. Returns the new params [S, K].
    """
    k_use, k_peak, k_noise = jax.random.split(key, 3)
    num_slots = ops.shape[-1]
    use_peak = jax.random.uniform(k_use, (num_slots,)) < proposal.mix
    peak = jax.random.categorical(k_peak, proposal.log_weights, shape=(num_slots,))
    draw = proposal.log_centers[peak] + proposal.scale * jax.random.normal(
        k_noise, (num_slots,), params.dtype
    )
    replace = _per_slots(ops, region) & use_peak
    return params.at[:, PERIOD_INDEX].set(jnp.where(replace, draw, params[:, PERIOD_INDEX]))


def for_particles(
    log_centers: Array, log_weights: Array, num_particles: int, *, mix: float, scale: float
) -> PeriodProposal:
    """Flattened ``[G * P, ...]`` proposal arrays from per-series ``[G, K]`` peaks."""
    has = jnp.any(jnp.isfinite(log_weights), axis=-1)
    mix_g = jnp.where(has, mix, 0.0)
    rep = lambda a: jnp.repeat(a, num_particles, axis=0)  # noqa: E731
    return PeriodProposal(
        log_centers=rep(log_centers),
        log_weights=rep(log_weights),
        mix=rep(mix_g),
        scale=jnp.full(mix_g.shape, scale, log_centers.dtype).repeat(num_particles),
    )
