"""Would a state-space likelihood pay? Kalman filter cost against the dense floor (not a test).

Issue 15 names two routes to a likelihood that scales: sparse variational bounds (built:
``smc.likelihood = "sparse"``) and the state-space form of the grammar, whose Kalman filter gives
the exact likelihood in O(N d^3) for a state of dimension d. This script measures what the second
route would cost before it is built, in three parts:

* ``dims``: the state dimension of kernel expressions in the grammar under the standard finite
  orders (sums stack states, products take Kronecker products, change points keep both sides'
  states), for the structures in a ``structures.csv`` (``unique_id, structure, weight``, as the
  panel runs write) or in a ``bench_scaling.py --json`` report;
* ``cost``: seconds per value-and-gradient of the Kalman filter's log likelihood for a batch of
  P linear-Gaussian models of dimension d on N evenly spaced points (one compiled call, the
  filter as a ``lax.scan`` vmapped over the batch), beside the dense floor of the same N
  (batched Cholesky of K + s I plus the inverse the exact gradient needs), side by side in one
  run, with their ratio;
* a check that the filter is the exact likelihood: Matern-3/2, a sum and a Kronecker product
  of state-space atoms against the dense Gaussian log density of the same kernel (always run);
* ``grammar``: the package's own state-space likelihood (``autogp.statespace``) of the tree
  ``LIN + PER * M32 + WN`` (PER's order chosen at its tolerance), value and gradient per call at
  each ``--long`` size on the cores given (pin one with ``taskset -c 0``): its state dimension,
  milliseconds, peak resident memory, and the likelihood's forms side by side: the Kalman
  filter's sequential ``lax.scan`` (gradient by the adjoint pass or by reverse mode), the
  Chandrasekhar recursions for time-invariant trees (``method="auto"``, with their value's and
  gradient's relative differences to the filter's), and ``lax.associative_scan`` (parallel in
  time) for the same value;
* ``steady``: a frozen (steady-state) gain after K exact Riccati steps against the exact filter
  at each ``--steady`` size: milliseconds, ratios, and the errors of value and gradient;
* ``per_orders``: the exact filter with PER's order at looser tolerances, at each ``--orders``
  size: its state dimension, milliseconds and likelihood error.

    python scripts/bench_statespace.py [--tiny] [--sizes 300 1000 3000] [--dims 4 16 64]
                                       [--long 30000 100000] [--steady 30000] [--heads 2000]
                                       [--orders 30000] [--structures PATH] [--json PATH]
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from jax.scipy.linalg import expm  # noqa: E402
from scipy.stats import multivariate_normal  # noqa: E402

jax.config.update("jax_enable_x64", True)

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the dense floor, and the best of `repeats` calls after a compiling one, as bench_scaling's
from bench_scaling import _timed, dense_floor  # noqa: E402

#: PER's harmonics (Solin & Sarkka 2014: 2 states per cosine term, J + 1 terms) and the order
#: of the finite state-space approximation of SE-like atoms (Hartikainen & Sarkka 2010); RQ as
#: a scale mixture of RQ_COMPONENTS such SE approximations. These are the usual orders for
#: about 1e-3 relative error at moderate length scales; shorter PER length scales need more.
PER_HARMONICS = 7
SE_ORDER = 6
RQ_COMPONENTS = 3
#: States of the atoms that are exact linear-Gaussian state-space models, and of the
#: approximated ones under the orders above. WN has no state (it is observation noise).
ATOM_STATES = {
    "CONST": 1, "LIN": 2, "BM": 1, "IBM": 2, "IOU": 2, "WN": 0,
    "M12": 1, "M32": 2, "M52": 3, "M72": 4,
    "SE": SE_ORDER, "GE": SE_ORDER, "RQ": RQ_COMPONENTS * SE_ORDER,
    "PER": 2 * (PER_HARMONICS + 1),
}


# --- state dimension of an expression -------------------------------------------------------------
def state_dimension(expr) -> int:
    """The state dimension of a kernel expression's state-space form (``ATOM_STATES`` at the
    leaves; ``+`` and ``CP`` add, ``*`` multiplies: the Kronecker product of the two state
    spaces, and a product with WN is white noise again)."""
    from autogp.kernels import spec

    name = spec.NAMES[expr.opcode]
    if name in ATOM_STATES:
        return ATOM_STATES[name]
    left, right = state_dimension(expr.left), state_dimension(expr.right)
    if name == "*":
        return left * right
    return left + right  # "+" and CP


def structure_dims(structures: pd.DataFrame) -> dict:
    """Per structure its state dimension; over the frame, the weighted quantiles of the
    dimension (each series' posterior weights, the series equally)."""
    from autogp.kernels.text import parse

    dims = np.array([state_dimension(parse(s)) for s in structures["structure"]])
    weights = structures["weight"].to_numpy(float)
    per_series = structures.groupby("unique_id")["weight"].transform("sum").to_numpy(float)
    weights = weights / per_series / structures["unique_id"].nunique()
    order = np.argsort(dims)
    cumulative = np.cumsum(weights[order])

    def quantile(q):
        return int(dims[order][np.searchsorted(cumulative, q * cumulative[-1])])

    return {
        "structures": int(len(dims)), "series": int(structures["unique_id"].nunique()),
        "dim_weighted_median": quantile(0.5), "dim_weighted_q90": quantile(0.9),
        "dim_max": int(dims.max()),
        "share_over_64": float(weights[dims > 64].sum() / weights.sum()),
    }


def read_structures(path: Path) -> pd.DataFrame:
    """``unique_id, structure, weight`` rows from a panel run's ``structures.csv``, or from a
    ``bench_scaling.py --json`` report (its fits' heaviest structures, parts fit and long)."""
    if Path(path).suffix != ".json":
        return pd.read_csv(path)
    report = json.loads(Path(path).read_text())
    rows = [{"unique_id": row.get("unique_id", f"{part}_{i}"), **s}
            for part in ("fit", "long") for i, row in enumerate(report.get(part, []))
            for s in row.get("structures", [])]
    if not rows:
        raise SystemExit(f"{path}: no fitted structures (a bench_scaling.py report?)")
    return pd.DataFrame(rows, columns=["unique_id", "structure", "weight"])


# --- the Kalman filter ----------------------------------------------------------------------------
def kalman_log_likelihood(A, Q, H, P0, noise, y):
    """Exact log likelihood of ``y [N]`` under the linear-Gaussian model ``s_0 ~ N(0, P0)``,
    ``s_{t+1} = A s_t + N(0, Q)``, ``y_t = H s_t + N(0, noise)`` (evenly spaced points)."""

    def step(carry, yt):
        m, P, ll = carry
        v = yt - H @ m
        S = H @ P @ H + noise
        K = P @ H / S
        m = m + K * v
        P = P - jnp.outer(K, K) * S
        ll = ll - 0.5 * (jnp.log(2 * jnp.pi * S) + v * v / S)
        return (A @ m, A @ P @ A.T + Q, ll), None

    init = (jnp.zeros(A.shape[0], y.dtype), P0, jnp.zeros((), y.dtype))
    (_, _, ll), _ = jax.lax.scan(step, init, y)
    return ll


def matern32_model(lengthscale: float, variance: float, dt: float):
    """Matern-3/2 as a 2-state model at spacing ``dt``: (A, Q, H, P_inf)."""
    lam = math.sqrt(3.0) / lengthscale
    F = jnp.array([[0.0, 1.0], [-lam**2, -2 * lam]])
    P_inf = jnp.diag(jnp.array([variance, lam**2 * variance]))
    A = expm(F * dt)
    return A, P_inf - A @ P_inf @ A.T, jnp.array([1.0, 0.0]), P_inf


def ou_model(lengthscale: float, variance: float, dt: float):
    """Matern-1/2 (Ornstein-Uhlenbeck) as a 1-state model."""
    a = math.exp(-dt / lengthscale)
    return (jnp.array([[a]]), jnp.array([[variance * (1 - a * a)]]), jnp.array([1.0]),
            jnp.array([[variance]]))


def _sum_model(m1, m2):
    (A1, Q1, H1, P1), (A2, Q2, H2, P2) = m1, m2
    block = jax.scipy.linalg.block_diag
    return block(A1, A2), block(Q1, Q2), jnp.concatenate([H1, H2]), block(P1, P2)


def _product_model(m1, m2):
    (A1, _, H1, P1), (A2, _, H2, P2) = m1, m2
    A, P_inf = jnp.kron(A1, A2), jnp.kron(P1, P2)
    return A, P_inf - A @ P_inf @ A.T, jnp.kron(H1, H2), P_inf


def exactness_check(n: int = 60, seed: int = 0) -> dict:
    """Kalman against the dense Gaussian density (scipy) for M32, M12 + M32 and M12 * M12."""
    rng = np.random.default_rng(seed)
    x = np.arange(n) * 0.1
    y = rng.normal(size=n)
    noise = 0.3
    r = np.abs(x[:, None] - x[None, :])
    dense = {
        "M32": 1.5 * (1 + math.sqrt(3) * r / 0.7) * np.exp(-math.sqrt(3) * r / 0.7),
        "M12 + M32": 0.8 * np.exp(-r / 2.0) + 1.5 * (1 + math.sqrt(3) * r / 0.7)
        * np.exp(-math.sqrt(3) * r / 0.7),
        "M12 * M12": 0.8 * np.exp(-r / 2.0) * 2.0 * np.exp(-r / 0.5),
    }
    models = {
        "M32": matern32_model(0.7, 1.5, 0.1),
        "M12 + M32": _sum_model(ou_model(2.0, 0.8, 0.1), matern32_model(0.7, 1.5, 0.1)),
        "M12 * M12": _product_model(ou_model(2.0, 0.8, 0.1), ou_model(0.5, 2.0, 0.1)),
    }
    out = {}
    for name, K in dense.items():
        A, Q, H, P0 = models[name]
        kalman = float(kalman_log_likelihood(A, Q, H, P0, noise, jnp.asarray(y)))
        reference = float(multivariate_normal(np.zeros(n), K + noise * np.eye(n)).logpdf(y))
        out[name] = {"kalman": kalman, "dense": reference, "abs_diff": abs(kalman - reference)}
    return out


# --- cost per value-and-gradient ----------------------------------------------------------------
def random_models(P: int, d: int, seed: int):
    """A batch of P stable d-state models (random rotations damped below 1) with stationary
    covariances: costs are what matter here, the models only need to be valid."""
    rng = np.random.default_rng(seed)
    A = np.empty((P, d, d))
    for p in range(P):
        q, _ = np.linalg.qr(rng.normal(size=(d, d)))
        A[p] = 0.97 * q
    Q = np.broadcast_to(0.06 * np.eye(d), (P, d, d)).copy()  # P_inf = I for 0.97 * orthogonal
    H = rng.normal(size=(P, d)) / math.sqrt(d)
    P0 = np.broadcast_to(np.eye(d), (P, d, d)).copy()
    return jnp.asarray(A), jnp.asarray(Q), jnp.asarray(H), jnp.asarray(P0)


def kalman_cost(n: int, d: int, particles: int, repeats: int, seed: int) -> float:
    A, Q, H, P0 = random_models(particles, d, seed)
    y = jnp.asarray(np.random.default_rng(seed).normal(size=n))
    log_noise = jnp.full((particles,), math.log(0.1))

    def total(A, Q, log_noise):
        lls = jax.vmap(kalman_log_likelihood, in_axes=(0, 0, 0, 0, 0, None))(
            A, Q, H, P0, jnp.exp(log_noise), y)
        return jnp.sum(lls)

    fn = jax.jit(jax.value_and_grad(total, argnums=(0, 1, 2)))
    return _timed(fn, A, Q, log_noise, repeats=repeats)


def dense_floor_cost(n: int, particles: int, repeats: int, seed: int) -> float:
    """``bench_scaling.dense_floor`` (batched Cholesky of K + s I plus the inverse the exact
    gradient needs) on a Matern-3/2 Gram matrix."""
    x = np.arange(n) / n
    r = np.abs(x[:, None] - x[None, :]) / 0.1
    K = (1 + math.sqrt(3) * r) * np.exp(-math.sqrt(3) * r)
    K = jnp.asarray(np.broadcast_to(K, (particles, n, n)).copy())
    s = jnp.full((particles,), math.log(0.1))
    return _timed(dense_floor, K, s, repeats=repeats)


def cost_table(sizes, dims, particles: int, repeats: int, seed: int, dense_max: int) -> list:
    rows = []
    for n in sizes:
        floor = dense_floor_cost(n, particles, repeats, seed) if n <= dense_max else None
        for d in dims:
            kalman = kalman_cost(n, d, particles, repeats, seed)
            row = {"n": n, "d": d, "particles": particles, "kalman_s": kalman,
                   "dense_floor_s": floor,
                   "kalman_over_floor": None if floor is None else kalman / floor}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


# --- the package's state-space likelihood on a grammar tree -------------------------------------
GRAMMAR_TREE = ("LIN(intercept=0.5; bias=0.5, amp=1.0) + PER(l=1.0, period=0.05; amp=1.0)"
                " * M32(l=0.5; amp=1.0) + WN(v=0.1)")


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def grammar_cost(sizes, repeats: int, tolerance: float, seed: int,
                 gradients=("adjoint", "autodiff"), associative_max: int = 30000) -> list:
    """Value and gradient of :data:`GRAMMAR_TREE` by ``autogp.statespace`` per size (one tree,
    regular grid; the gradient by the adjoint pass and by reverse mode through the scan), and
    the same value by a parallel-in-time associative scan (sizes up to ``associative_max``)."""
    from autogp.kernels.packing import pack
    from autogp.kernels.text import parse
    from autogp.statespace import state_space_log_likelihood, support

    ops, params = pack([parse(GRAMMAR_TREE)])
    noise = jnp.array([math.log(0.01)])
    dim = int(support(ops, params, dim=256, tolerance=tolerance).used[0])
    rows = []
    for size in sizes:
        x = np.linspace(0.0, 1.0, size)
        noise_draw = 0.1 * np.random.default_rng(seed).normal(size=size)
        y = jnp.asarray(np.sin(40 * np.pi * x) + x + noise_draw)

        def total(p, s, x=x, y=y, gradient="adjoint", method="kalman"):
            return jnp.sum(state_space_log_likelihood(ops, p, s, x, y, dim=dim, regular_grid=True,
                                                      tolerance=tolerance, gradient=gradient,
                                                      method=method))

        row = {"n": size, "tree": GRAMMAR_TREE, "state_dim": dim, "per_tolerance": tolerance,
               "value_ms": 1e3 * _timed(jax.jit(total), params, noise, repeats=repeats)}
        compiled = {}  # the timed programs, reused for the comparison (op by op takes minutes)
        for gradient in gradients:
            compiled[gradient] = jax.jit(jax.value_and_grad(
                functools.partial(total, gradient=gradient), argnums=(0, 1)))
            row[f"value_and_grad_{gradient}_ms"] = 1e3 * _timed(compiled[gradient], params, noise,
                                                                repeats=repeats)
            row[f"peak_rss_mb_after_{gradient}"] = _peak_rss_mb()
        fast = functools.partial(total, method="auto")
        row["chandrasekhar_value_ms"] = 1e3 * _timed(jax.jit(fast), params, noise, repeats=repeats)
        fast_value_and_grad = jax.jit(jax.value_and_grad(fast, argnums=(0, 1)))
        row["chandrasekhar_value_and_grad_ms"] = 1e3 * _timed(fast_value_and_grad, params, noise,
                                                              repeats=repeats)
        row["peak_rss_mb_after_chandrasekhar"] = _peak_rss_mb()
        filter_value_and_grad = compiled.get("adjoint") or jax.jit(
            jax.value_and_grad(total, argnums=(0, 1)))
        (v_fast, g_fast), (v_filter, g_filter) = (
            f(params, noise) for f in (fast_value_and_grad, filter_value_and_grad))
        row["chandrasekhar_value_rel_diff"] = abs(float(v_fast - v_filter)) / abs(float(v_filter))
        row["chandrasekhar_grad_rel_diff"] = max(
            float(jnp.max(jnp.abs(a - b)) / jnp.max(jnp.abs(b)))
            for a, b in zip(jax.tree.leaves(g_fast), jax.tree.leaves(g_filter), strict=True))
        if size <= associative_max:
            row["associative_value_ms"] = 1e3 * associative_cost(ops, params, noise, x, y, dim,
                                                                 tolerance, repeats)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def associative_cost(ops, params, noise, x, y, dim, tolerance, repeats) -> float:
    """Seconds per log-likelihood value of the same model by ``lax.associative_scan``: the
    filter as a composition of affine Gaussian elements (Sarkka and Garcia-Fernandez 2021)."""
    from autogp.statespace.compose import dense
    from autogp.statespace.filter import (
        Options,
        marginal,
        model,
        observation,
        observed,
        transition,
    )

    options = Options(dim, tolerance)

    def value(p, s):
        mod = model(jnp.asarray(ops[0]), p[0], s[0], options)
        yv, _ = observed(y, None)
        t = jnp.asarray(x)
        A = dense(transition(mod, t[1] - t[0], options.harmonics))
        Pt = jax.vmap(lambda ti: dense(marginal(mod, ti)))(t)
        H, r = jax.vmap(lambda ti: observation(mod, ti))(t)
        return parallel_filter(A, Pt, H, r, yv)

    return _timed(jax.jit(value), params, noise, repeats=repeats)


def parallel_filter(A, Pt, H, r, y):
    """The Kalman filter's log likelihood by an associative scan (Sarkka and Garcia-Fernandez
    2021, the filtering elements (A, b, C, eta, J)); ``Pt`` the prior marginal per step, process
    noise ``Q_k = Pt_k - A Pt_(k-1) A^T``."""
    from autogp.evaluator.linalg import inverse

    D = A.shape[0]
    eye = jnp.eye(D)
    Q = Pt.at[1:].add(-jnp.einsum("ij,njk,lk->nil", A, Pt[:-1], A))
    As = jnp.broadcast_to(A, Pt.shape).at[0].set(jnp.zeros((D, D)))
    # element k: x_k | x_(k-1), y_k  (first: the prior at t_0 conditioned on y_0)
    S = jnp.einsum("ni,nij,nj->n", H, Q, H) + r
    K = jnp.einsum("nij,nj->ni", Q, H) / S[:, None]
    I_KH = eye - K[:, :, None] * H[:, None, :]
    elem_A = jnp.einsum("nij,njk->nik", I_KH, As)
    elem_b = K * y[:, None]
    elem_C = jnp.einsum("nij,njk->nik", I_KH, Q)
    HF = jnp.einsum("ni,nij->nj", H, As)
    elem_eta = HF * (y / S)[:, None]
    elem_J = HF[:, :, None] * HF[:, None, :] / S[:, None, None]

    def matvec(Mx, v):
        return jnp.einsum("...ij,...j->...i", Mx, v)

    def combine_batched(a, b):
        A1, b1, C1, e1, J1 = a
        A2, b2, C2, e2, J2 = b
        # One LAPACK call per matrix on CPU: two independent batched inverses can deadlock
        # XLA:CPU's intra-op pool (``autogp.evaluator.linalg``).
        M = inverse(eye + C1 @ J2)
        A2M = A2 @ M
        N = inverse(eye + J2 @ C1)
        A1T = jnp.swapaxes(A1, -1, -2)
        return (A2M @ A1, matvec(A2M, b1 + matvec(C1, e2)) + b2,
                A2M @ C1 @ jnp.swapaxes(A2, -1, -2) + C2,
                matvec(A1T @ N, e2 - matvec(J2, b1)) + e1, A1T @ N @ J2 @ A1 + J1)

    _, means, covs, _, _ = jax.lax.associative_scan(
        combine_batched, (elem_A, elem_b, elem_C, elem_eta, elem_J))
    # predictive of y_k from the filtered state at k - 1
    m_prev = jnp.concatenate([jnp.zeros((1, D)), means[:-1]])
    P_prev = jnp.concatenate([jnp.zeros((1, D, D)), covs[:-1]])
    m_pred = jnp.einsum("nij,nj->ni", As, m_prev)
    P_pred = jnp.einsum("nij,njk,nlk->nil", As, P_prev, As) + Q
    S = jnp.einsum("ni,nij,nj->n", H, P_pred, H) + r
    v = y - jnp.einsum("ni,ni->n", H, m_pred)
    return jnp.sum(-0.5 * (jnp.log(2 * jnp.pi * S) + v * v / S))


# --- a frozen (steady-state) gain after K steps ---------------------------------------------------
def frozen_gain_log_likelihood(mod, t, y, options, K: int, with_convergence: bool = False):
    """The filter's log likelihood with the exact covariance recursion for the first ``K`` points
    and the gain and innovation variance of step ``K`` frozen after it (a steady-state filter:
    only the mean, a matrix-vector recursion, for the rest). Regular grid, all points observed,
    ``H`` and the noise constant. Exact only once the Riccati recursion has converged by step
    ``K``; with ``with_convergence`` also each step's relative change of the gain ``[K]``."""
    from autogp.statespace import compose
    from autogp.statespace.filter import marginal, observation, transition

    A = transition(mod, t[1] - t[0], options.harmonics)
    H, r = observation(mod, t[0])

    def cov_step(E, tk):
        AE = compose.block_sandwich(A, E)
        PH = compose.add_blocks(AE, marginal(mod, tk)) @ H
        S = H @ PH + r
        E_new = AE - jnp.outer(PH, PH) / S
        return 0.5 * (E_new + E_new.T), (PH / S, S)

    D = options.dim
    E0 = jnp.zeros((D, D), t.dtype)
    _, (gains, S) = jax.lax.scan(cov_step, E0, t[:K + 1])

    def mean_step(m, inp):
        g, s, yk = inp
        v = yk - H @ m
        return compose.block_matvec(A, m + g * v), -0.5 * (jnp.log(s) + v * v / s)

    m, ll_head = jax.lax.scan(mean_step, jnp.zeros(D, t.dtype), (gains[:K], S[:K], y[:K]))
    g_inf, s_inf = gains[K], S[K]

    def steady_step(m, yk):
        v = yk - H @ m
        return compose.block_matvec(A, m + g_inf * v), v

    _, v_tail = jax.lax.scan(steady_step, m, y[K:])
    n = y.shape[0]
    ll = (-0.5 * n * math.log(2 * math.pi) + jnp.sum(ll_head)
          - 0.5 * ((n - K) * jnp.log(s_inf) + jnp.sum(v_tail * v_tail) / s_inf))
    if not with_convergence:
        return ll
    change = jnp.linalg.norm(jnp.diff(gains, axis=0), axis=1) / jnp.linalg.norm(gains[1:], axis=1)
    return ll, change


def steady_state_cost(sizes, heads, repeats: int, tolerance: float, seed: int,
                      tree: str = GRAMMAR_TREE) -> list:
    """The frozen-gain filter (:func:`frozen_gain_log_likelihood`, exact Riccati steps ``heads``)
    against the exact filter (value, and value and gradient by the adjoint) for ``tree`` on the
    grid of :func:`grammar_cost`, in one run: milliseconds, their ratios, the errors of the value
    and gradient, and the gain's relative change at step K."""
    from autogp.kernels.packing import pack
    from autogp.kernels.text import parse
    from autogp.statespace import state_space_log_likelihood, support
    from autogp.statespace.filter import Options, model

    ops, params = pack([parse(tree)])
    noise = jnp.array([math.log(0.01)])
    dim = int(support(ops, params, dim=256, tolerance=tolerance).used[0])
    options = Options(dim, tolerance)
    rows = []
    for size in sizes:
        x = np.linspace(0.0, 1.0, size)
        y = jnp.asarray(np.sin(40 * np.pi * x) + x
                        + 0.1 * np.random.default_rng(seed).normal(size=size))
        t = jnp.asarray(x)

        def exact(p, s, x=x, y=y):
            return jnp.sum(state_space_log_likelihood(ops, p, s, x, y, dim=dim, regular_grid=True,
                                                      tolerance=tolerance, method="kalman"))

        exact_vg = jax.jit(jax.value_and_grad(exact, argnums=(0, 1)))
        ll0, (gp0, gs0) = exact_vg(params, noise)
        grad0 = np.concatenate([np.ravel(gp0), np.ravel(gs0)])
        exact_ms = 1e3 * _timed(jax.jit(exact), params, noise, repeats=repeats)
        exact_vg_ms = 1e3 * _timed(exact_vg, params, noise, repeats=repeats)
        for K in [k for k in heads if k < size]:
            def frozen(p, s, K=K, t=t, y=y):
                mod = model(jnp.asarray(ops[0]), p[0], s[0], options)
                return frozen_gain_log_likelihood(mod, t, y, options, K)

            frozen_vg = jax.jit(jax.value_and_grad(frozen, argnums=(0, 1)))
            ll1, (gp1, gs1) = frozen_vg(params, noise)
            grad1 = np.concatenate([np.ravel(gp1), np.ravel(gs1)])
            mod = model(jnp.asarray(ops[0]), params[0], noise[0], options)
            _, change = jax.jit(functools.partial(
                frozen_gain_log_likelihood, options=options, K=K, with_convergence=True))(
                mod, t, y)
            row = {"n": size, "tree": tree, "head_steps": K, "state_dim": dim,
                   "per_tolerance": tolerance,
                   "exact_value_ms": exact_ms, "exact_value_and_grad_ms": exact_vg_ms,
                   "frozen_value_ms": 1e3 * _timed(jax.jit(frozen), params, noise,
                                                   repeats=repeats),
                   "frozen_value_and_grad_ms": 1e3 * _timed(frozen_vg, params, noise,
                                                            repeats=repeats),
                   "gain_change_at_k": float(change[-1]),
                   "value_error": float(abs(ll1 - ll0)),
                   "value_relative_error": float(abs(ll1 - ll0) / abs(ll0)),
                   "gradient_relative_error": float(np.linalg.norm(grad1 - grad0)
                                                    / np.linalg.norm(grad0))}
            row["value_speedup"] = row["exact_value_ms"] / row["frozen_value_ms"]
            row["value_and_grad_speedup"] = (row["exact_value_and_grad_ms"]
                                             / row["frozen_value_and_grad_ms"])
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def per_order_cost(sizes, tolerances, repeats: int, seed: int) -> list:
    """:data:`GRAMMAR_TREE`'s exact filter with PER's order from each of ``tolerances`` (looser:
    fewer harmonics, a smaller state): state dimension, milliseconds of the value and of the value
    and adjoint gradient, and the value's and gradient's error against the first tolerance's."""
    from autogp.kernels.packing import pack
    from autogp.kernels.text import parse
    from autogp.statespace import state_space_log_likelihood, support

    ops, params = pack([parse(GRAMMAR_TREE)])
    noise = jnp.array([math.log(0.01)])
    rows = []
    for size in sizes:
        x = np.linspace(0.0, 1.0, size)
        y = jnp.asarray(np.sin(40 * np.pi * x) + x
                        + 0.1 * np.random.default_rng(seed).normal(size=size))
        reference = None
        for tolerance in tolerances:
            dim = int(support(ops, params, dim=256, tolerance=tolerance).used[0])

            def total(p, s, x=x, y=y, dim=dim, tolerance=tolerance):
                return jnp.sum(state_space_log_likelihood(
                    ops, p, s, x, y, dim=dim, regular_grid=True, tolerance=tolerance,
                    method="kalman"))

            value_and_grad = jax.jit(jax.value_and_grad(total, argnums=(0, 1)))
            value, (gp, gs) = value_and_grad(params, noise)
            grad = np.concatenate([np.ravel(gp), np.ravel(gs)])
            reference = reference or (float(value), grad)
            row = {"n": size, "per_tolerance": tolerance, "state_dim": dim,
                   "value_ms": 1e3 * _timed(jax.jit(total), params, noise, repeats=repeats),
                   "value_and_grad_ms": 1e3 * _timed(value_and_grad, params, noise,
                                                     repeats=repeats),
                   "value_error": abs(float(value) - reference[0]),
                   "gradient_relative_error": float(np.linalg.norm(grad - reference[1])
                                                    / np.linalg.norm(reference[1]))}
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


# --- main -----------------------------------------------------------------------------------------
def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[300, 1000, 3000])
    ap.add_argument("--dims", type=int, nargs="+", default=[4, 16, 32, 64, 128])
    ap.add_argument("--particles", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dense-max", type=int, default=3000, help="largest N of the dense floor")
    ap.add_argument("--structures", type=Path, action="append", default=[],
                    help="structures.csv of a panel run (repeatable)")
    ap.add_argument("--long", type=int, nargs="*", default=[30000, 100000],
                    help="sizes of the grammar-tree part (none: skip it)")
    ap.add_argument("--per-tolerance", type=float, default=1e-10)
    ap.add_argument("--gradients", nargs="+", default=["adjoint", "autodiff"],
                    choices=["adjoint", "autodiff"])
    ap.add_argument("--associative-max", type=int, default=30000,
                    help="largest --long size the associative scan is timed at")
    ap.add_argument("--steady", type=int, nargs="*", default=[],
                    help="sizes of the frozen-gain (steady-state) part (none: skip it)")
    ap.add_argument("--heads", type=int, nargs="+", default=[2000, 10000],
                    help="exact Riccati steps before the gain is frozen")
    ap.add_argument("--steady-tree", default=GRAMMAR_TREE, help="the frozen-gain part's tree")
    ap.add_argument("--orders", type=int, nargs="*", default=[],
                    help="sizes of the PER-order part (none: skip it)")
    ap.add_argument("--order-tolerances", type=float, nargs="+", default=[1e-10, 1e-6, 1e-4])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tiny", action="store_true", help="smoke test: tiny sizes")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    if args.tiny:
        args.sizes, args.dims, args.particles, args.repeats = [50], [2, 4], 2, 1
        args.long = [64]
        # no gain frozen (a head of n - 1 steps): the frozen-gain filter must be the exact one
        args.steady, args.heads, args.orders = [64], [63], [64]
        args.order_tolerances = [args.order_tolerances[0], args.order_tolerances[-1]]

    report = {
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "jax": jax.__version__, "backend": jax.default_backend()},
        "orders": {"per_harmonics": PER_HARMONICS, "se_order": SE_ORDER,
                   "rq_components": RQ_COMPONENTS},
        "exactness": exactness_check(),
        "dims": {str(p): structure_dims(read_structures(p)) for p in args.structures},
        "cost": cost_table(args.sizes, args.dims, args.particles, args.repeats, args.seed,
                           args.dense_max),
        "grammar": grammar_cost(args.long, args.repeats, args.per_tolerance, args.seed,
                                args.gradients, args.associative_max),
        "steady": steady_state_cost(args.steady, args.heads, args.repeats, args.per_tolerance,
                                    args.seed, args.steady_tree),
        "per_orders": per_order_cost(args.orders, args.order_tolerances, args.repeats, args.seed),
    }
    print(json.dumps({"exactness": report["exactness"], "dims": report["dims"]}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
