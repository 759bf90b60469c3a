"""Shared test helpers: dtype-aware closeness checks and random kernel expressions."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import numpy as np

from autogp.kernels import spec
from autogp.kernels.base import Kernel, kernel_class

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"

# ``jax.jit(..., compiler_options=LONG_RUNNING)``: XLA's usual optimisation for the few test
# programs that run much longer than they compile (Markov chains over thousands of draws). The
# session turns the backend optimisation and the fusion emitters off (conftest: most tests are
# bound by compile time), which makes such loops two to four times slower: a detach-attach
# chain of tests/test_moves.py compiled in 5.7 s and ran in 20.2 s that way, 10.5 s and 4.7 s
# with these options. (Backend optimisation without the fusion emitters is not an option:
# LLVM's vectoriser did not finish compiling the subtree-replace chain that way.)
LONG_RUNNING = {"xla_backend_optimization_level": 2, "xla_cpu_use_fusion_emitters": True}


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` as a module (scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Default (rtol, atol) by the precision of the arrays compared (tinygp's test helper does the
# same): float64 results of the same formulas agree to ~1e-12, float32 ones to ~1e-6.
_TOLERANCES = {
    np.dtype(np.float64): (1e-10, 1e-12),
    np.dtype(np.float32): (1e-5, 1e-6),
}


def assert_allclose(
    actual: object,
    desired: object,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    err_msg: str = "",
) -> None:
    """``np.testing.assert_allclose`` with tolerances chosen by the less precise dtype."""
    actual_array, desired_array = np.asarray(actual), np.asarray(desired)
    dtypes = [a.dtype for a in (actual_array, desired_array) if np.issubdtype(a.dtype, np.floating)]
    loosest = min(dtypes, key=lambda d: np.finfo(d).bits, default=np.dtype(np.float64))
    default_rtol, default_atol = _TOLERANCES.get(loosest, (1e-10, 1e-12))
    np.testing.assert_allclose(
        actual_array,
        desired_array,
        rtol=default_rtol if rtol is None else rtol,
        atol=default_atol if atol is None else atol,
        err_msg=err_msg,
    )


# Natural-value ranges of random parameters, by parameter name.
PARAM_RANGES: dict[str, tuple[float, float]] = {
    "l": (0.05, 2.0),
    "period": (0.05, 1.0),
    "gamma": (0.2, 2.0),
    "amp": (0.1, 2.0),
    "intercept": (-0.5, 1.5),
    "location": (-0.5, 1.5),
    "origin": (-0.5, 0.5),
    "scale": (0.01, 0.5),
    "alpha": (0.2, 5.0),
    "c": (0.05, 2.0),
    "v": (0.05, 2.0),
    "bias": (0.05, 2.0),
}
assert set(PARAM_RANGES) == set(spec.PARAM_OF_NAME)


def random_params(rng: np.random.Generator, op: int) -> tuple[float, ...]:
    """Uniform natural values in ``PARAM_RANGES``; gamma is exactly 2 one time in four (the
    boundary value, whose unconstrained form is clipped)."""
    values = []
    for name in spec.PARAM_NAMES[op]:
        low, high = PARAM_RANGES[name]
        if name == "gamma" and rng.random() < 0.25:
            values.append(2.0)
        else:
            values.append(float(rng.uniform(low, high)))
    return tuple(values)


#: The atoms on time (covariate atoms read inputs these helpers' 1-D times do not have).
TIME_ATOMS = tuple(op for op in spec.ATOMS if op not in spec.COVARIATE_ATOMS)


def random_expression(
    rng: np.random.Generator,
    max_depth: int,
    atoms: Sequence[int] = TIME_ATOMS,
    ops: Sequence[int] = (spec.PLUS, spec.TIMES, spec.CP),
    operator_probability: float = 0.6,
) -> Kernel:
    """A random expression of depth <= ``max_depth`` with random natural parameters.

    Each node above the depth limit is an operator with ``operator_probability`` (if ``ops`` is
    non-empty), otherwise an atom; opcodes are drawn uniformly from ``atoms`` / ``ops``.
    """
    if max_depth > 0 and ops and rng.random() < operator_probability:
        op = int(rng.choice(ops))
        children = (
            random_expression(rng, max_depth - 1, atoms, ops, operator_probability),
            random_expression(rng, max_depth - 1, atoms, ops, operator_probability),
        )
    else:
        op = int(rng.choice(atoms))
        children = ()
    return kernel_class(op).from_parts(children, random_params(rng, op))


def assert_atom_vjp_matches_finite_differences(opcode: int, u: np.ndarray, x: np.ndarray,
                                               cot: np.ndarray, reference) -> None:
    """An atom's custom VJP (through ``gram`` on a one-atom heap) against central differences of
    ``reference(u) = sum(cot * K(u))``, an independent numpy formula in the atom's unconstrained
    parameters ``u``; unused parameter slots get zero gradient."""
    import jax
    import jax.numpy as jnp

    from autogp.evaluator import gram

    ops = np.array([[opcode, spec.EMPTY, spec.EMPTY]], np.int32)  # a depth-1 heap, one atom
    params = np.zeros((1, 3, spec.MAX_PARAMS))
    params[0, 0, : u.size] = u
    grad = jax.grad(lambda p: jnp.sum(cot * gram(ops, p, x)[0]))(jnp.asarray(params))[0, 0]
    h = 1e-6
    for k in range(u.size):
        step = np.eye(u.size)[k] * h
        fd = (reference(u + step) - reference(u - step)) / (2 * h)
        assert_allclose(grad[k], fd, rtol=1e-6, atol=1e-8)
    assert np.all(np.asarray(grad[u.size:]) == 0.0) and np.all(np.isfinite(np.asarray(grad)))


def assert_atom_off_by_default_and_on_when_configured(name: str):
    """An optional atom: weight 0 in the default config, never drawn by the default grammar's
    prior; with ``grammar.weights.<name> = 3`` the engine's grammar has that weight, draws it,
    and the drawn trees' prior is finite. Returns the key and that grammar, for more checks."""
    import jax
    import jax.numpy as jnp

    from autogp.config import engine_settings, load_config
    from autogp.inference import grammar as gr

    opcode = spec.OPCODE_OF_NAME[name]
    assert getattr(load_config().grammar.weights, name) == 0.0
    key = jax.random.key(5)
    # compiled, as the engine runs it: op by op, each draw compiles hundreds of small programs
    sample_prior = jax.jit(gr.sample_prior, static_argnums=(0, 1))
    default_ops, _, _ = sample_prior(gr.Grammar.default(), 256, key=key)
    assert not np.any(np.asarray(default_ops) == opcode)
    grammar = engine_settings(load_config(None, {f"grammar.weights.{name}": 3.0})).grammar
    assert grammar.weights[opcode] == 3.0
    ops, _, _ = sample_prior(grammar, 256, key=key)
    assert np.any(np.asarray(ops) == opcode)
    assert np.all(np.isfinite(gr.log_prior_structure(grammar, jnp.asarray(ops))))
    return key, grammar


def small_smc_problem(lengths: Sequence[int], particles: int, *, regular: bool,
                      moves: int = 1, steps: int = 2):
    """``(grammar, settings, data, state)`` of a small SMC run on noisy sines (depth-2 grammar,
    4 rounds), on evenly spaced or on random time points."""
    import jax

    from autogp.config import engine_settings, load_config
    from autogp.inference import rounds

    cfg = load_config({"grammar": {"max_depth": 2},
                       "smc": {"num_particles": particles, "num_rounds": 4,
                               "structure_moves": moves}, "refine": {"steps": steps}})
    grammar, settings = engine_settings(cfg)
    rng = np.random.default_rng(0 if regular else 3)
    xs = [np.linspace(0, 1, k) if regular else np.sort(rng.uniform(0, 1, k)) for k in lengths]
    ys = [np.sin(9 * x) + 0.5 * x + 0.1 * rng.normal(size=x.size) for x in xs]
    data = rounds.make_data(xs, ys)
    state = rounds.init_state(grammar, len(lengths), particles,
                              key=jax.random.key(1 if regular else 2))
    return grammar, settings, data, state


def kalman_first_state(x, y, step, m0, P0, origin, noise_var, x_new):
    """A Kalman filter whose first state is observed with noise ``noise_var`` at the sorted times
    ``x``: the state starts at ``(m0, P0)`` at ``origin`` and ``step(m, P, d)`` moves its mean and
    covariance over a time step ``d``. Returns the log likelihood of ``y`` and the first state's
    forecast mean and variance at ``x_new`` (beyond the data)."""
    m, P, t_prev, loglik = np.asarray(m0, float), np.asarray(P0, float), origin, 0.0
    for t, obs in zip(x, y, strict=True):
        m, P = step(m, P, t - t_prev)
        t_prev = t
        s = P[0, 0] + noise_var
        loglik += -0.5 * (math.log(2 * math.pi * s) + (obs - m[0]) ** 2 / s)
        gain = P[:, 0] / s
        m, P = m + gain * (obs - m[0]), P - np.outer(gain, P[0, :])
    means, variances = [], []
    for t in x_new:
        mf, Pf = step(m, P, t - x[-1])
        means.append(mf[0])
        variances.append(Pf[0, 0])
    return loglik, np.array(means), np.array(variances)


def temperature_frame(n: int, seed: int = 0):
    """A daily series driven by a trend and a noisy temperature covariate (``temp``): the
    covariate tests' shared data."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    t = np.arange(n)
    temp = 20 + 5 * np.sin(t / 4.0) + rng.standard_normal(n)
    y = 0.1 * t + 3.0 * temp + 0.5 * rng.standard_normal(n)
    return pd.DataFrame({"ds": pd.date_range("2020-01-01", periods=n, freq="D"), "y": y,
                         "temp": temp})


def dense_gaussian_log_likelihood(ops, params, noise, x, y):
    """Value ``[P]`` (numpy) and gradient (``params``, ``noise``) of log N(y | 0, K + s I) per
    tree by a plain Cholesky, no jitter: ``K`` from the dense evaluator's ``gram``, the density
    and its autodiff gradient from scratch. The reference for the state-space likelihoods."""
    import jax.numpy as jnp

    from autogp.evaluator import gram
    from autogp.evaluator.linalg import cho_solve, cholesky

    def total(p, s):
        C = gram(ops, p, x) + jnp.exp(s)[:, None, None] * jnp.eye(len(x))
        # One LAPACK call per tree: batched calls in one program can deadlock XLA:CPU's pool.
        L = cholesky(C)
        b = jnp.broadcast_to(y, (len(ops), len(y)))[..., None]
        alpha = cho_solve(L, b)[..., 0]
        logdet = 2 * jnp.sum(jnp.log(jnp.diagonal(L, axis1=-2, axis2=-1)), -1)
        return -0.5 * (jnp.sum(y * alpha, -1) + logdet + len(y) * np.log(2 * np.pi))

    return values_and_sum_grads(total, params, noise)


def values_and_sum_grads(per_tree, params, noise):
    """Per-tree values ``[P]`` (numpy) of ``per_tree(params, noise)`` and the gradient of their
    sum in ``params`` and ``noise``, from one compiled program: run op by op, a likelihood
    compiles hundreds of small ones."""
    import jax
    import jax.numpy as jnp

    def summed(p, s):
        values = per_tree(p, s)
        return jnp.sum(values), values

    (_, values), grads = jax.jit(jax.value_and_grad(summed, argnums=(0, 1), has_aux=True))(
        params, noise)
    return np.asarray(values), grads


def assert_grads_close(got, want, rtol: float):
    """Each gradient array of ``got`` within ``rtol`` of its ``want``'s largest entry."""
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert np.max(np.abs(g - w)) <= rtol * np.max(np.abs(w)), (g - w, w)
