#!/usr/bin/env python
"""Benchmark the compiled tree evaluator against two competing designs, side by side.

Designs, all computing the batched GP log marginal likelihood (sum over P particles) and its
gradient with respect to the unconstrained parameters and noise, all jitted:

(a) ``autogp.evaluator.log_marginal_likelihood``: one compiled program for every structure; the
    tree (``ops``), ``params`` and ``noise`` are traced jit arguments.
(b) The naive design: for each pair of points (t, t'), a stack machine over the tree's post-order
    array (``lax.cond`` leaf/operator, ``lax.switch`` over atoms/operators, ``.at[].set`` stack
    updates) inside ``equinox.internal.while_loop(kind="checkpointed")``, vmapped over both points
    and over particles; then a plain Cholesky log marginal likelihood, JAX autodiff for gradients.
    One compiled program for every structure too (the post-order arrays are jit arguments).
(c) Per-structure specialised code: each tree becomes its own Python closure building K with
    whole-matrix jnp formulas, jitted separately (P compiled functions); same plain likelihood,
    JAX autodiff. Its time is the sum over the P functions.
(a') For reference (full run only): (a) with ``regular_grid=True``, the evaluator's fast path for
    evenly spaced inputs (stationary atoms evaluated on the N lags, then expanded).

Workloads: P trees from the structure prior at depth D (``sample_prior``, fixed seed), parameters
and noise from their priors, x evenly spaced on [0, 1]; N = 144 with y the normalised airline
series, and N = 512 synthetic (a smooth trend + seasonality + noise, normalised).

Before timing, the three designs are checked to agree (values rtol 1e-8, gradients rtol 1e-6) on
every workload and (full run) on an extra batch that uses every atom of ``spec.ATOMS``.

Also reported for (a): compile time (first call minus steady state), the number of traces over
200 distinct prior batches with varying masks (value on all of them, value_and_grad on all in the
full run and on 40 with ``--quick``), and a scaling table over N with the share of time spent
outside the Cholesky factorisation (value) and outside Cholesky + inverse (gradient).

``over_dense_floor`` (JSON and text, per N): (a)'s value-and-gradient time over the dense floor,
a batched Cholesky of the same K + noise I plus the inverse (K + noise I)^-1 that the exact
gradient needs, timed side by side in the same run; at N = 144 and 512 in every run (with
``--quick`` the 512 row comes from a one-N scaling table). ``over_dense_floor_regular_grid``: the
same for (a'), the path fits take on evenly spaced data. ``over_looped_floor``: (a) over the
floor computed one matrix at a time (``autogp.evaluator.linalg``, the evaluator's own way on CPU,
where jaxlib's batched LAPACK kernels can deadlock): how much of the gap is the evaluator's
work rather than the loop.

Timings are medians over repetitions; the designs are interleaved within each repetition (and
their order rotated) so that background load hits all of them alike. Repetition counts adapt to
a per-measurement time budget (``--budget``), with a floor that is lower at large N and for (b).

OpenBLAS (which jaxlib's CPU Cholesky and triangular solves call) is pinned to one thread unless
``--blas-threads`` or ``OPENBLAS_NUM_THREADS`` says otherwise: with its default thread pool on a
small shared machine, calls intermittently stall for seconds.

Usage::

    python scripts/bench_evaluator.py --quick --json /tmp/bench_quick.json   # N = 144 only, < 1 min
    python scripts/bench_evaluator.py --json /tmp/bench.json                  # everything, ~8 min
    python scripts/bench_evaluator.py --tiny --json /tmp/bench_tiny.json     # smoke test, seconds

``--tiny`` is ``--quick`` on toy sizes (3 trees of depth 2, the first 24 airline points, the dense
floor at N = 24 only, 3 trace-count batches) plus the every-atom check: its figures mean
nothing, it only shows that every part runs.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import functools
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path


def blas_threads_wanted(argv=None) -> str:
    """``--blas-threads``, else the environment's OPENBLAS_NUM_THREADS, else 1."""
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--blas-threads")
    requested = early.parse_known_args(argv)[0].blas_threads
    return requested or os.environ.get("OPENBLAS_NUM_THREADS") or "1"


# Before numpy, jax and autogp (which imports scipy) load OpenBLAS: see set_blas_threads.
if __name__ == "__main__":
    os.environ["OPENBLAS_NUM_THREADS"] = blas_threads_wanted()

import equinox.internal as eqxi  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.scipy.linalg import solve_triangular  # noqa: E402

from autogp.evaluator import gram, leaves, linalg, log_marginal_likelihood  # noqa: E402
from autogp.evaluator.likelihood import BASE_JITTER  # noqa: E402
from autogp.inference.grammar import DEFAULT_WEIGHTS, Grammar, sample_prior  # noqa: E402
from autogp.kernels import spec  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the batched dense floor (Cholesky + inverse), shared with bench_scaling and bench_statespace
from bench_scaling import dense_floor  # noqa: E402

jax.config.update("jax_enable_x64", True)

# The bundled airline series, found from the script's own location (works from any checkout).
DEFAULT_DATA = Path(__file__).resolve().parents[1] / "examples" / "data" / "airline.csv"
LOG_2PI = math.log(2.0 * math.pi)
SCALING_NS = (128, 256, 512, 1024, 2048)
FLOOR_NS = (144, 512)  # where the over_dense_floor target is set; --quick measures both
# --tiny: toy sizes that still run every part; 3 trees, so that the every-atom batch has the
# workload's shapes and reuses its compiled programs
TINY_DEFAULTS = {
    "particles": 3,
    "depth": 2,
    "structures": 3,
    "airline_n": 24,
    "floor_ns": (24,),
    "budget": 0.02,
    "max_reps": 2,
}
VALUE_RTOL, GRAD_RTOL = 1e-8, 1e-6


# =============================================================================================
# Shared pieces
# =============================================================================================
def constrain_static(op: int, u: jax.Array) -> list[jax.Array]:
    """Natural parameters of a node whose opcode ``op`` is known in Python (spec.TRANSFORMS)."""
    out = []
    for k in range(int(spec.NUM_PARAMS[op])):
        kind = int(spec.TRANSFORMS[op, k])
        if kind == spec.T_LOG:
            out.append(jnp.exp(u[k]))
        elif kind == spec.T_GAMMA:
            out.append(2.0 * jax.nn.sigmoid(u[k]))
        else:
            out.append(u[k])
    return out


def plain_log_marginal(K: jax.Array, noise_u: jax.Array, y: jax.Array) -> jax.Array:
    """log N(y | 0, K + noise I) written plainly: cholesky, solve_triangular, logdet.

    Adds the evaluator's always-applied first jitter rung (``BASE_JITTER`` times the mean of the
    diagonal, as a constant) so that values agree to rounding; gradients by JAX autodiff.
    """
    n = K.shape[-1]
    scale = jax.lax.stop_gradient(jnp.abs(jnp.mean(jnp.diagonal(K))))
    A = K + (jnp.exp(noise_u) + BASE_JITTER * scale) * jnp.eye(n, dtype=K.dtype)
    L = jnp.linalg.cholesky(A)
    w = solve_triangular(L, y, lower=True)
    return -0.5 * jnp.dot(w, w) - jnp.sum(jnp.log(jnp.diagonal(L))) - 0.5 * n * LOG_2PI


# =============================================================================================
# (a) the compiled evaluator
# =============================================================================================
def make_evaluator(
    counter: list[int] | None = None, regular_grid: bool = False
) -> tuple[Callable, Callable]:
    """Jitted (value, value_and_grad) of design (a).

    ``counter[0]`` / ``counter[1]`` count how often the value / value_and_grad function's body
    is traced (a Python side effect, so it only runs while tracing). ``regular_grid`` turns on
    the evaluator's fast path for evenly spaced inputs (reported as (a'), not part of (a)).
    """
    counters = [0, 0] if counter is None else counter
    kwargs = {"regular_grid": True} if regular_grid else {}

    def body(slot: int):
        def total(ops, params, noise, x, y, mask):
            counters[slot] += 1  # runs only while tracing
            return jnp.sum(log_marginal_likelihood(ops, params, noise, x, y, mask, **kwargs))

        return total

    value = jax.jit(body(0))
    value_and_grad = jax.jit(jax.value_and_grad(body(1), argnums=(1, 2)))
    return value, value_and_grad


# =============================================================================================
# (b) the naive design: a per-pair stack machine over the post-order array
# =============================================================================================
def _atom_scalar(op: int) -> Callable:
    """Scalar k(t1, t2) of atom ``op`` from unconstrained ``u``: its formula in the atom table
    (``spec.ROW_OF_OPCODE[op].value``) on 1 x 1 inputs.

    Each branch constrains ``u`` with its *own* transforms: under a batched ``lax.switch`` every
    branch runs on every node's parameters, and this keeps unselected branches finite (a NaN
    there would poison the gradient through ``select``).
    """
    value = spec.ROW_OF_OPCODE[op].value

    def k(u, t1, t2):
        theta = jnp.stack(constrain_static(op, u))
        return value(theta, t1[None], t2[None])[0, 0]

    return k


def _cp_scalar(u, t1, t2, left, right):
    location, scale = constrain_static(spec.CP, u)
    s1 = 0.5 * (1.0 + jnp.tanh((location - t1) / scale))
    s2 = 0.5 * (1.0 + jnp.tanh((location - t2) / scale))
    return s1 * s2 * left + (1.0 - s1) * (1.0 - s2) * right


assert spec.OPERATORS == (spec.PLUS, spec.TIMES, spec.CP)
_ATOM_BRANCHES = [_atom_scalar(op) for op in spec.ATOMS]
_ATOM_INDEX = np.zeros(spec.NUM_OPS, np.int32)  # opcode -> its branch (atoms need not be adjacent)
_ATOM_INDEX[list(spec.ATOMS)] = np.arange(len(spec.ATOMS))
_OPERATOR_BRANCHES = [
    lambda u, t1, t2, a, b: a + b,
    lambda u, t1, t2, a, b: a * b,
    _cp_scalar,
]


def _postorder_slots(row: np.ndarray, slot: int = 0) -> list[int]:
    """Heap slots of the subtree at ``slot`` in post-order (children before their parent)."""
    if int(row[slot]) in spec.OPERATORS:
        return _postorder_slots(row, 2 * slot + 1) + _postorder_slots(row, 2 * slot + 2) + [slot]
    return [slot]


def heap_to_postorder(ops: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Post-order opcodes ``[P, S]``, their heap slots ``[P, S]`` and node counts ``[P]``.

    Padded to S entries with EMPTY (slot 0); done in numpy, outside the timed functions.
    """
    P, S = ops.shape
    post_ops = np.zeros((P, S), np.int32)
    post_slot = np.zeros((P, S), np.int32)
    count = np.zeros(P, np.int32)
    for p in range(P):
        order = _postorder_slots(ops[p])
        post_ops[p, : len(order)] = ops[p, order]
        post_slot[p, : len(order)] = order
        count[p] = len(order)
    return post_ops, post_slot, count


def naive_pair(post_ops, post_u, count, t1, t2, checkpoints: int = 5):
    """k(t1, t2) of one tree: a stack machine over its post-order array."""
    S = post_ops.shape[0]

    def cond(carry):
        i, _, _ = carry
        return i < count

    def body(carry):
        i, sp, stack = carry
        op, u = post_ops[i], post_u[i]

        def leaf(sp, stack):
            v = jax.lax.switch(jnp.asarray(_ATOM_INDEX)[op], _ATOM_BRANCHES, u, t1, t2)
            return sp + 1, stack.at[sp].set(v)

        def operator(sp, stack):
            left, right = stack[sp - 2], stack[sp - 1]
            v = jax.lax.switch(op - spec.PLUS, _OPERATOR_BRANCHES, u, t1, t2, left, right)
            return sp - 1, stack.at[sp - 2].set(v)

        sp, stack = jax.lax.cond(jnp.asarray(spec.IS_ATOM)[op], leaf, operator, sp, stack)
        return i + 1, sp, stack

    init = (jnp.asarray(0, jnp.int32), jnp.asarray(0, jnp.int32), jnp.zeros(S, t1.dtype))
    _, _, stack = eqxi.while_loop(
        cond, body, init, max_steps=S, kind="checkpointed", checkpoints=checkpoints
    )
    return stack[0]


def naive_gram_one(post_ops, post_u, count, x):
    row = jax.vmap(naive_pair, in_axes=(None, None, None, None, 0))
    return jax.vmap(row, in_axes=(None, None, None, 0, None))(post_ops, post_u, count, x, x)


def naive_total(post_ops, post_slot, count, params, noise, x, y):
    """Sum over particles of the log marginal likelihood, design (b)."""
    post_u = jnp.take_along_axis(params, post_slot[:, :, None], axis=1)  # heap -> post-order
    K = jax.vmap(naive_gram_one, in_axes=(0, 0, 0, None))(post_ops, post_u, count, x)
    return jnp.sum(jax.vmap(plain_log_marginal, in_axes=(0, 0, None))(K, noise, y))


def make_naive() -> tuple[Callable, Callable]:
    return jax.jit(naive_total), jax.jit(jax.value_and_grad(naive_total, argnums=(3, 4)))


# =============================================================================================
# (c) per-structure specialised code
# =============================================================================================
def specialised_kernel(ops_row: np.ndarray) -> Callable:
    """``K(params [S, MAX_PARAMS], x [N]) -> [N, N]`` for this one structure, built recursively."""
    ops_row = [int(o) for o in ops_row]

    def node(slot: int) -> Callable:
        op = ops_row[slot]
        if op in spec.ATOMS:
            formula = leaves.VALUE[op]
            return lambda params, x: formula(constrain_static(op, params[slot]), x, x)
        left, right = node(2 * slot + 1), node(2 * slot + 2)
        if op == spec.PLUS:
            return lambda params, x: left(params, x) + right(params, x)
        if op == spec.TIMES:
            return lambda params, x: left(params, x) * right(params, x)
        if op == spec.CP:

            def cp(params, x):
                s, _, _ = leaves.cp_sigmoid(constrain_static(op, params[slot]), x)
                before = s[:, None] * s[None, :]
                after = (1.0 - s)[:, None] * (1.0 - s)[None, :]
                return before * left(params, x) + after * right(params, x)

            return cp
        raise ValueError(f"unexpected opcode {op} at slot {slot}")

    return node(0)


def make_specialised(ops: np.ndarray, share: bool = False) -> list[tuple[Callable, Callable]]:
    """One jitted (value, value_and_grad) pair per tree; args ``(params [S, K], noise, x, y)``.

    With ``share``, trees of identical structure share one pair (only used to save compilation
    in the every-atom correctness check; the timed design compiles every tree separately).
    """
    out, cache = [], {}
    for row in ops:
        key = tuple(int(o) for o in row)
        if not share or key not in cache:
            kernel = specialised_kernel(row)

            def total(params, noise, x, y, kernel=kernel):
                return plain_log_marginal(kernel(params, x), noise, y)

            cache[key] = (jax.jit(total), jax.jit(jax.value_and_grad(total, argnums=(0, 1))))
        out.append(cache[key])
    return out


# =============================================================================================
# Workloads
# =============================================================================================
@dataclasses.dataclass
class Workload:
    name: str
    x: np.ndarray  # [N]
    y: np.ndarray  # [N], zero mean, unit variance
    ops: np.ndarray  # [P, S]
    params: np.ndarray  # [P, S, MAX_PARAMS]
    noise: np.ndarray  # [P]

    @property
    def n(self) -> int:
        return int(self.x.shape[0])


def normalise(y: np.ndarray) -> np.ndarray:
    return (y - y.mean()) / y.std()


def load_airline(path: Path, n: int | None = None) -> np.ndarray:
    """The airline series (its first ``n`` points when given), normalised."""
    with open(path, newline="") as f:
        y = np.asarray([float(row["y"]) for row in csv.DictReader(f)])
    return normalise(y[:n])


def synthetic_series(n: int, seed: int = 1) -> np.ndarray:
    """A smooth trend, a seasonal component and a slow wiggle plus 10% noise, normalised."""
    x = np.linspace(0.0, 1.0, n)
    rng = np.random.default_rng(seed)
    f = 2.0 * x + 0.6 * np.sin(2 * np.pi * 12 * x) * (1 + x) + 0.4 * np.sin(2 * np.pi * 1.5 * x)
    return normalise(f + 0.1 * rng.standard_normal(n))


def atom_weights(atoms: str) -> tuple[tuple[int, float], ...] | None:
    """``--atoms``: None for the default grammar's weights; ``stationary`` (the stationary atoms
    with a default weight) or a comma-separated list of atom names: those atoms, ``+`` and ``*``
    only (no change points), e.g. to time the regular grid's lag-space path on trees it covers
    wholly."""
    if atoms == "default":
        return None
    names = ([spec.NAMES[op] for op in spec.STATIONARY] if atoms == "stationary"
             else [a.strip() for a in atoms.split(",")])
    unknown = [a for a in names if spec.OPCODE_OF_NAME.get(a) not in spec.ATOMS]
    if unknown:
        known = ", ".join(spec.NAMES[op] for op in spec.ATOMS)
        raise SystemExit(f"--atoms: {', '.join(unknown)}: not atom names ({known})")
    chosen = [spec.OPCODE_OF_NAME[a] for a in names]
    if atoms == "stationary":  # the stationary atoms that fits propose (default weight > 0)
        chosen = [op for op in chosen if op in DEFAULT_WEIGHTS]
    # a named atom the default grammar leaves out gets the default atoms' mean weight
    mean = np.mean([w for op, w in DEFAULT_WEIGHTS.items() if op in spec.ATOMS])
    weights = {op: float(DEFAULT_WEIGHTS.get(op, mean)) for op in chosen}
    return tuple(sorted({**weights, spec.PLUS: DEFAULT_WEIGHTS[spec.PLUS],
                         spec.TIMES: DEFAULT_WEIGHTS[spec.TIMES]}.items()))


@functools.cache
def prior_sampler(
    depth: int, particles: int, weights: tuple[tuple[int, float], ...] | None = None
) -> Callable:
    """Jitted ``key -> (ops, params, noise)``: ``particles`` draws from the default prior (with
    ``weights``, from :func:`atom_weights`, instead of the default production weights)."""
    grammar = Grammar.default(depth, weights=None if weights is None else dict(weights))
    return jax.jit(lambda key: sample_prior(grammar, particles, key=key))


def prior_batch(depth: int, particles: int, seed: int, weights=None):
    ops, params, noise = prior_sampler(depth, particles, weights)(jax.random.PRNGKey(seed))
    return np.asarray(ops), np.asarray(params), np.asarray(noise)


def all_atoms_batch(depth: int, particles: int, seed: int):
    """Trees CP(*(a, b), +(c, d)) whose four atoms run through ``spec.ATOMS`` in turn, with
    parameters from their priors: every formula of the naive and specialised designs runs (the
    default prior draws only some atoms). ``max(particles, ceil(len(ATOMS) / 4))`` trees, so
    that with enough particles the batch has the workload's shapes; needs depth >= 2."""
    S = spec.num_slots(depth)
    atoms = spec.ATOMS
    P = max(particles, -(-len(atoms) // 4))
    ops = np.zeros((P, S), np.int32)
    for i in range(P):
        ops[i, [0, 1, 2]] = [spec.CP, spec.TIMES, spec.PLUS]
        ops[i, [3, 4, 5, 6]] = [atoms[(4 * i + k) % len(atoms)] for k in range(4)]
    mean, std = spec.default_prior_table()
    rng = np.random.default_rng(seed)
    used = np.arange(spec.MAX_PARAMS) < spec.NUM_PARAMS[ops][..., None]
    params = np.where(used, mean[ops] + std[ops] * rng.standard_normal(ops.shape + (3,)), 0.0)
    noise = spec.DEFAULT_NOISE_PRIOR[0] + rng.standard_normal(P) * 0.5
    return ops, params, noise


# =============================================================================================
# Timing helpers
# =============================================================================================
def wall(fn: Callable, *args) -> float:
    """Seconds for one call, waiting for the result."""
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - t0


def aot_compile(fn: Callable, *args) -> float:
    """Compile ``fn`` for ``args`` ahead of time (later calls reuse it); returns the seconds."""
    t0 = time.perf_counter()
    fn.lower(*args).compile()
    return time.perf_counter() - t0


def mem_available_bytes() -> int | None:
    """Free physical memory in bytes, from POSIX ``sysconf`` (None where it is not offered).
    Free pages exclude reclaimable caches, so this errs low: the guard skips a size sooner."""
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


@dataclasses.dataclass
class Item:
    """One timed measurement; ``run()`` performs one repetition and returns its seconds.

    ``first_s`` is the first call (compilation included) when the item was compiled by calling
    it; ``aot_compile_s`` the lower+compile time when it was compiled ahead of time (then every
    call, including the correctness check's, is a steady-state repetition).
    """

    name: str
    run: Callable[[], float]
    min_reps: int
    first_s: float | None = None
    aot_compile_s: float | None = None
    times: list[float] = dataclasses.field(default_factory=list)
    reps: int = 0

    @property
    def median(self) -> float:
        return float(np.median(self.times))

    @property
    def compile_s(self) -> float | None:
        if self.aot_compile_s is not None:
            return self.aot_compile_s
        if self.first_s is None:
            return None
        return max(self.first_s - self.median, 0.0)


def run_interleaved(items: list[Item], budget_s: float, max_reps: int) -> None:
    """Warm up (first call, if not done yet) and probe each item, choose its repetition count
    from the time budget (at least ``min_reps``, at most ``max_reps``), then repeat round-robin,
    rotating the order every round so that background load spreads over all items alike."""
    for it in items:
        if it.first_s is None and it.aot_compile_s is None and not it.times:
            it.first_s = it.run()
        if not it.times:
            it.times.append(it.run())
        reps = int(min(max_reps, max(it.min_reps, budget_s // max(min(it.times), 1e-9))))
        it.reps = max(reps, len(it.times))
    for r in range(max(it.reps for it in items)):
        k = r % len(items)
        for it in items[k:] + items[:k]:
            if len(it.times) < it.reps:
                it.times.append(it.run())


# =============================================================================================
# The benchmark
# =============================================================================================
def _batched_cov(K, noise_u):
    return K + jnp.exp(noise_u)[:, None, None] * jnp.eye(K.shape[-1], dtype=K.dtype)


def _chol(K, noise_u):
    return jnp.linalg.cholesky(_batched_cov(K, noise_u))


def _chol_inv_wtw(K, noise_u):
    """The batched floor used until 2026-12-04 (the evaluator's inverse then): W = L^-1 by one
    solve against the whole identity, then the plain matrix product W^T W (3 n^3 flops)."""
    L = jnp.linalg.cholesky(_batched_cov(K, noise_u))
    eye = jnp.broadcast_to(jnp.eye(K.shape[-1], dtype=K.dtype), K.shape)
    W = solve_triangular(L, eye, lower=True)
    return jnp.swapaxes(W, -1, -2) @ W


def _chol_inv_looped(K, noise_u):
    """The evaluator's own algebra (``autogp.evaluator.linalg``): one LAPACK call per matrix on
    CPU, where jaxlib's batched kernels can deadlock a small thread pool, and the inverse from
    the Cholesky factor by 2 x 2 blocks (about n^3 flops against 2 n^3 for two solves)."""
    return linalg.inverse_from_cholesky(linalg.cholesky(_batched_cov(K, noise_u)))


@dataclasses.dataclass
class Naive:
    """Design (b) compiled ahead of time for one workload's shapes."""

    value: Callable
    grad: Callable
    compile_s: dict[str, float]
    temp_bytes: dict[str, int]


class Bench:
    def __init__(self, memory_fraction: float = 0.7):
        self.memory_fraction = memory_fraction
        self._naive: dict[tuple, Naive | str] = {}
        self.a_traces = [0, 0]  # traces of (a)'s value / value_and_grad bodies
        self.a_value, self.a_grad = make_evaluator(self.a_traces)
        self.grid_value, self.grid_grad = make_evaluator(regular_grid=True)
        self.b_value, self.b_grad = make_naive()
        self.chol = jax.jit(_chol)
        self.chol_inv = dense_floor
        self.chol_inv_looped = jax.jit(_chol_inv_looped)
        self.chol_inv_wtw = jax.jit(_chol_inv_wtw)
        self.gram = jax.jit(gram)
        self.gram_vjp = jax.jit(
            jax.grad(lambda params, ops, x, cot: jnp.sum(gram(ops, params, x) * cot))
        )

    # --- inputs per design --------------------------------------------------------------
    @staticmethod
    def a_args(w: Workload):
        return (
            jnp.asarray(w.ops),
            jnp.asarray(w.params),
            jnp.asarray(w.noise),
            jnp.asarray(w.x),
            jnp.asarray(w.y),
            jnp.ones(w.n, bool),
        )

    @staticmethod
    def b_args(w: Workload):
        post_ops, post_slot, count = heap_to_postorder(w.ops)
        structure = (jnp.asarray(post_ops), jnp.asarray(post_slot), jnp.asarray(count))
        return structure + (
            jnp.asarray(w.params),
            jnp.asarray(w.noise),
            jnp.asarray(w.x),
            jnp.asarray(w.y),
        )

    @staticmethod
    def c_args(w: Workload):
        x, y = jnp.asarray(w.x), jnp.asarray(w.y)
        return [
            (jnp.asarray(w.params[p]), jnp.asarray(w.noise[p]), x, y) for p in range(len(w.ops))
        ]

    # --- (b), compiled ahead of time with a memory guard ------------------------------------------
    def compile_naive(self, w: Workload) -> Naive | str:
        """AOT-compile design (b) for ``w``'s shapes (cached); a reason string instead if it
        would not fit in memory (its vmapped checkpointed loop keeps [P, N, N, S] arrays)."""
        key = (w.ops.shape, w.n)
        if key not in self._naive:
            self._naive[key] = self._compile_naive(w)
        return self._naive[key]

    def _compile_naive(self, w: Workload) -> Naive | str:
        args = self.b_args(w)
        compiled, seconds, temp = {}, {}, {}
        for kind, fn in (("value", self.b_value), ("grad", self.b_grad)):
            t0 = time.perf_counter()
            compiled[kind] = fn.lower(*args).compile()
            seconds[kind] = time.perf_counter() - t0
            analysis = compiled[kind].memory_analysis()
            temp[kind] = int(getattr(analysis, "temp_size_in_bytes", 0) or 0)
        available = mem_available_bytes()
        if available is not None and max(temp.values()) > self.memory_fraction * available:
            return (
                f"skipped: needs {max(temp.values()) / 2**30:.1f} GiB of scratch, "
                f"{available / 2**30:.1f} GiB available"
            )
        return Naive(compiled["value"], compiled["grad"], seconds, temp)

    # --- correctness ----------------------------------------------------------------------
    def check_agreement(
        self, w: Workload, c_fns, naive: Naive | None, grid: bool = False
    ) -> dict[str, float]:
        """Assert (a) == (b) == (c) (and (a') with ``grid``) on the summed value (rtol 1e-8) and
        on the gradients with respect to params and noise (rtol 1e-6, entrywise). Returns each
        function's first-call wall time, so that these calls double as compile measurements."""
        first: dict[str, float] = {}

        def call(name, fn, *args):
            t0 = time.perf_counter()
            out = jax.block_until_ready(fn(*args))
            first[name] = first.get(name, 0.0) + time.perf_counter() - t0
            return out

        a_args = self.a_args(w)
        values = {"a": float(call("a_value", self.a_value, *a_args))}
        va, (ga, gna) = call("a_grad", self.a_grad, *a_args)
        values["a (value_and_grad)"] = float(va)
        grads = {"a": (np.asarray(ga), np.asarray(gna))}
        if grid:
            values["a'"] = float(call("g_value", self.grid_value, *a_args))
            _, (gg, gng) = call("g_grad", self.grid_grad, *a_args)
            grads["a'"] = (np.asarray(gg), np.asarray(gng))
        if naive is not None:
            b_args = self.b_args(w)
            values["b"] = float(call("b_value", naive.value, *b_args))
            vb, (gb, gnb) = call("b_grad", naive.grad, *b_args)
            values["b (value_and_grad)"] = float(vb)
            grads["b"] = (np.asarray(gb), np.asarray(gnb))
        vc, gc, gnc = 0.0, [], []
        for (fv, fg), args in zip(c_fns, self.c_args(w), strict=True):
            v, (g, gn) = call("c_grad", fg, *args)
            vc += float(v) if fv is None else float(call("c_value", fv, *args))
            gc.append(np.asarray(g))
            gnc.append(float(gn))
        values["c"] = vc
        grads["c"] = (np.stack(gc), np.asarray(gnc))

        for name, v in values.items():
            assert np.isfinite(v), f"{w.name}: non-finite value from {name}"
            np.testing.assert_allclose(v, values["a"], rtol=VALUE_RTOL, err_msg=f"{w.name}: {name}")
        worst = {}
        for design in grads.keys() - {"a"}:
            for k, label in enumerate(("params", "noise")):
                ref, got = grads["a"][k], grads[design][k]
                assert np.all(np.isfinite(got)), f"{w.name}: non-finite {label} grad from {design}"
                # rtol entrywise; the tiny atol only covers entries that are (nearly) zero, such
                # as the gradients of a saturated change point (~1e-12 against a max of ~1e3).
                atol = 1e-9 * max(1.0, float(np.max(np.abs(ref))))
                np.testing.assert_allclose(
                    got,
                    ref,
                    rtol=GRAD_RTOL,
                    atol=atol,
                    err_msg=f"{w.name}: {label} gradient of ({design}) vs (a)",
                )
            scale = max(float(np.max(np.abs(grads["a"][0]))), 1e-300)
            worst[design] = float(np.max(np.abs(grads[design][0] - grads["a"][0]))) / scale
        rel = {d: abs(values[d] - values["a"]) / abs(values["a"]) for d in grads.keys() - {"a"}}
        print(
            f"  agreement on {w.name}: sum of log ML = {values['a']:.10g}; "
            + "; ".join(
                f"({d}) value rel. diff {rel[d]:.1e}, grad max abs diff / max|grad| {worst[d]:.1e}"
                for d in sorted(rel)
            ),
            flush=True,
        )
        return first

    # --- one workload, three designs ---------------------------------------------------------
    def compare(
        self,
        w: Workload,
        budget_s: float,
        max_reps: int,
        min_reps: int,
        naive_min_reps: tuple[int, int],
        breakdown: bool = True,
        grid: bool = True,
    ) -> dict:
        """Agreement check, then interleaved timing of (a), (b), (c) and of the dense floor
        (the batched Cholesky + inverse on (a)'s covariance matrices); with ``breakdown`` also
        (a)'s covariance matrices alone and with their VJP; with ``grid`` (or ``breakdown``)
        also (a')."""
        grid = grid or breakdown
        naive = self.compile_naive(w)
        skipped = naive if isinstance(naive, str) else None
        naive = None if skipped else naive
        if skipped:
            print(f"  (b) {skipped}", flush=True)
        t0 = time.perf_counter()
        c_fns = make_specialised(w.ops)
        c_build_s = time.perf_counter() - t0
        first = self.check_agreement(w, c_fns, naive, grid=grid)
        a_args, c_args = self.a_args(w), self.c_args(w)
        ops_j, params_j, noise_j, x_j = a_args[:4]
        K = jax.block_until_ready(self.gram(ops_j, params_j, x_j))
        cot = jnp.ones_like(K)

        def c_run(kind: int) -> Callable[[], float]:
            pairs = list(zip(c_fns, c_args, strict=True))
            return lambda: sum(wall(fns[kind], *args) for fns, args in pairs)

        items = [
            Item("a_value", lambda: wall(self.a_value, *a_args), min_reps, first["a_value"]),
            Item("a_grad", lambda: wall(self.a_grad, *a_args), min_reps, first["a_grad"]),
            Item("c_value", c_run(0), min_reps, first["c_value"]),
            Item("c_grad", c_run(1), min_reps, first["c_grad"]),
        ]
        if grid:
            items += [
                Item("g_value", lambda: wall(self.grid_value, *a_args), min_reps, first["g_value"]),
                Item("g_grad", lambda: wall(self.grid_grad, *a_args), min_reps, first["g_grad"]),
            ]
        if breakdown:
            items += self.breakdown_items(self.gram, self.gram_vjp, K, cot, a_args, min_reps)
        else:
            items += self.floor_items(K, noise_j, min_reps)
        if naive is not None:
            b_args = self.b_args(w)
            for kind, fn, mr in (
                ("value", naive.value, naive_min_reps[0]),
                ("grad", naive.grad, naive_min_reps[1]),
            ):
                items.append(
                    Item(
                        f"b_{kind}",
                        lambda fn=fn: wall(fn, *b_args),
                        mr,
                        aot_compile_s=naive.compile_s[kind],
                        times=[first[f"b_{kind}"]],
                    )
                )
        run_interleaved(items, budget_s, max_reps)
        by = {it.name: it for it in items}
        med = {k: it.median for k, it in by.items()}

        def ratio(num: str, den: str) -> float | None:
            return med[num] / med[den] if num in med and den in med else None

        return {
            "n": w.n,
            "particles": int(w.ops.shape[0]),
            "nodes": int(np.sum(w.ops != spec.EMPTY)),
            "median_s": med,
            "reps": {k: it.reps for k, it in by.items()},
            "compile_s": {k: it.compile_s for k, it in by.items() if it.compile_s is not None},
            "c_trace_and_build_s": c_build_s,
            "naive": skipped or {"scratch_bytes": naive.temp_bytes},
            "grad_over_value": ratio("a_grad", "a_value"),
            "over_dense_floor": ratio("a_grad", "chol_inv"),
            "over_dense_floor_regular_grid": ratio("g_grad", "chol_inv"),
            "over_looped_floor": ratio("a_grad", "chol_inv_looped"),
            "wtw_over_two_solves": ratio("chol_inv_wtw", "chol_inv"),
            "speedup_vs_naive": {
                "value": ratio("b_value", "a_value"),
                "value_and_grad": ratio("b_grad", "a_grad"),
            },
            "over_specialized": {
                "value": ratio("a_value", "c_value"),
                "value_and_grad": ratio("a_grad", "c_grad"),
            },
            "regular_grid_speedup": {
                "value": ratio("a_value", "g_value"),
                "value_and_grad": ratio("a_grad", "g_grad"),
            },
            "outside_cholesky": {
                "value": None if ratio("chol", "a_value") is None else 1 - ratio("chol", "a_value"),
                "value_and_grad": (
                    None if ratio("chol_inv", "a_grad") is None else 1 - ratio("chol_inv", "a_grad")
                ),
            },
        }

    def breakdown_items(self, gram_fn, gram_vjp_fn, K, cot, a_args, min_reps) -> list[Item]:
        """The batched Cholesky (+ inverse) of K + noise I, and (a)'s K alone and K's VJP."""
        ops_j, params_j, noise_j, x_j = a_args[:4]
        specs = [
            ("gram", gram_fn, (ops_j, params_j, x_j)),
            ("gram_vjp", gram_vjp_fn, (params_j, ops_j, x_j, cot)),
        ]
        return self.floor_items(K, noise_j, min_reps) + self.aot_items(specs, min_reps)

    def floor_items(self, K, noise_j, min_reps) -> list[Item]:
        """The dense floor on covariance matrices K: the batched Cholesky of K + noise I alone
        ("chol") and with the inverse that the exact gradient needs ("chol_inv": two solves;
        "chol_inv_looped": the evaluator's per-matrix algebra, the inverse by blocks;
        "chol_inv_wtw": by L^-1 and a matrix product, the floor until 2026-12-04)."""
        specs = [("chol", self.chol, (K, noise_j)), ("chol_inv", self.chol_inv, (K, noise_j)),
                 ("chol_inv_looped", self.chol_inv_looped, (K, noise_j)),
                 ("chol_inv_wtw", self.chol_inv_wtw, (K, noise_j))]
        return self.aot_items(specs, min_reps)

    @staticmethod
    def aot_items(specs, min_reps) -> list[Item]:
        """Items for ``(name, jitted fn, args)``, compiled ahead of time so that no repetition is
        spent on warming up."""
        return [
            Item(
                name,
                lambda fn=fn, args=args: wall(fn, *args),
                min_reps,
                aot_compile_s=aot_compile(fn, *args),
            )
            for name, fn, args in specs
        ]

    # --- (a) over N ----------------------------------------------------------------------------
    def scaling(self, ops, params, noise, ns, budget_s, max_reps, reuse=None) -> list[dict]:
        """(a) over N; ``reuse`` maps N to a :meth:`compare` result already measured there."""
        rows = []
        for n in ns:
            if reuse and n in reuse:
                rows.append(self.row_from_comparison(reuse[n]))
            else:
                rows.append(self.scaling_row(ops, params, noise, n, budget_s, max_reps))
            m = rows[-1]["median_s"]
            print(
                f"  N={n:5d}: value {fmt_s(m['a_value'])}, value+grad {fmt_s(m['a_grad'])}",
                flush=True,
            )
        return rows

    @staticmethod
    def row_from_comparison(res: dict) -> dict:
        keys = ("a_value", "a_grad", "g_grad", "chol", "chol_inv", "chol_inv_looped",
                "chol_inv_wtw", "gram", "gram_vjp")
        return {
            "n": res["n"],
            "median_s": {k: res["median_s"][k] for k in keys if k in res["median_s"]},
            "reps": {k: res["reps"][k] for k in keys if k in res["reps"]},
            "compile_s": {k: res["compile_s"][k] for k in ("a_value", "a_grad")},
            "grad_over_value": res["grad_over_value"],
            "over_dense_floor": res["over_dense_floor"],
            "over_dense_floor_regular_grid": res["over_dense_floor_regular_grid"],
            "over_looped_floor": res["over_looped_floor"],
            "outside_cholesky": res["outside_cholesky"],
            "from_comparison": True,
        }

    def scaling_row(self, ops, params, noise, n, budget_s, max_reps) -> dict:
        w = Workload(
            f"synthetic_{n}", np.linspace(0.0, 1.0, n), synthetic_series(n), ops, params, noise
        )
        a_args = self.a_args(w)
        ops_j, params_j, x_j = a_args[0], a_args[1], a_args[3]
        K = jax.block_until_ready(self.gram(ops_j, params_j, x_j))
        cot = jnp.ones_like(K)
        mr = 3 if n <= 512 else (2 if n <= 1024 else 1)
        # Fresh jitted functions, so that every N pays (and reports) its own compilation.
        value, grad = make_evaluator()
        _, grid_grad = make_evaluator(regular_grid=True)
        items = [
            Item(
                "a_value",
                lambda: wall(value, *a_args),
                mr,
                aot_compile_s=aot_compile(value, *a_args),
            ),
            Item(
                "a_grad", lambda: wall(grad, *a_args), mr, aot_compile_s=aot_compile(grad, *a_args)
            ),
            Item(
                "g_grad",
                lambda: wall(grid_grad, *a_args),
                mr,
                aot_compile_s=aot_compile(grid_grad, *a_args),
            ),
        ]
        items += self.breakdown_items(self.gram, self.gram_vjp, K, cot, a_args, mr)
        run_interleaved(items, budget_s, max_reps)
        by = {it.name: it for it in items}
        med = {k: it.median for k, it in by.items()}
        return {
            "n": n,
            "median_s": med,
            "reps": {k: it.reps for k, it in by.items()},
            "compile_s": {k: by[k].compile_s for k in ("a_value", "a_grad")},
            "grad_over_value": med["a_grad"] / med["a_value"],
            "over_dense_floor": med["a_grad"] / med["chol_inv"],
            "over_dense_floor_regular_grid": med["g_grad"] / med["chol_inv"],
            "over_looped_floor": med["a_grad"] / med["chol_inv_looped"],
            "outside_cholesky": {
                "value": 1.0 - med["chol"] / med["a_value"],
                "value_and_grad": 1.0 - med["chol_inv"] / med["a_grad"],
            },
        }

    # --- trace count -----------------------------------------------------------------------------
    def trace_count(
        self, x, y, num_structures: int, particles: int, depth: int, seed: int, grad_calls: int,
        weights=None,
    ) -> dict:
        """Call (a) on ``num_structures`` fresh prior batches, each with its own random mask of
        the same padded length, and read how often JAX traced its body, counting from the
        benchmark's start: run it before (a) sees any other input shape, so that the counts
        cover exactly this padded length. The value function gets every batch, the
        value_and_grad function the first ``grad_calls`` (it costs ~3x as much to run)."""
        before = list(self.a_traces)
        value, grad = self.a_value, self.a_grad
        draw = prior_sampler(depth, particles, weights)
        rng = np.random.default_rng(seed)
        xj, yj = jnp.asarray(x), jnp.asarray(y)
        t0 = time.perf_counter()
        drawn, outputs = [], []
        for i in range(num_structures):  # no blocking inside: dispatch overlaps execution
            ops, params, noise = draw(jax.random.fold_in(jax.random.PRNGKey(seed), 1_000_000 + i))
            mask = rng.random(len(x)) < rng.uniform(0.5, 1.0)
            mask[0] = True
            mask = jnp.asarray(mask)
            drawn.append(ops)
            outputs.append(value(ops, params, noise, xj, yj, mask))
            if i < grad_calls:
                outputs.append(grad(ops, params, noise, xj, yj, mask)[0])
        outputs = np.asarray(jax.block_until_ready(outputs))
        seconds = time.perf_counter() - t0
        assert np.all(np.isfinite(outputs)), "non-finite log likelihood in the trace-count batches"
        drawn = np.asarray(drawn)
        batches = {b.tobytes() for b in drawn}
        trees = {row.tobytes() for b in drawn for row in b}
        return {
            "calls": num_structures,
            "value_and_grad_calls": min(grad_calls, num_structures),
            "distinct_batches": len(batches),
            "distinct_trees": len(trees),
            "value": self.a_traces[0],
            "value_and_grad": self.a_traces[1],
            "new_during_calls": [a - b for a, b in zip(self.a_traces, before, strict=True)],
            "seconds": seconds,
        }


# =============================================================================================
# Reporting
# =============================================================================================
def fmt_s(s: float | None) -> str:
    if s is None:
        return "-"
    if s >= 1.0:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} us"


def fmt_x(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def fmt_pct(r: float | None) -> str:
    return "-" if r is None else f"{r:.1%}"


def table(header: list[str], rows: list[list[str]]) -> str:
    """Plain-text table: first column left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row: list[str]) -> str:
        pairs = enumerate(zip(row, widths, strict=True))
        cells = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in pairs]
        return "  ".join(cells).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def print_comparison(res: dict, name: str) -> None:
    med, reps, comp = res["median_s"], res["reps"], res["compile_s"]
    P = res["particles"]
    print(f"\n== {name}: N = {res['n']}, P = {P} ({res['nodes']} nodes in all) ==")
    rows = []
    labels = {
        "a": "(a) evaluator, structure traced",
        "g": "(a') same, regular_grid=True",
        "b": "(b) naive per-pair stack machine",
        "c": f"(c) specialised, sum of {P} fns",
    }
    for d, label in labels.items():
        if f"{d}_value" not in med:
            if d != "g":
                rows.append([label, "-", "-", "-", "-", "-"])
            continue
        rows.append(
            [
                label,
                fmt_s(med[f"{d}_value"]),
                fmt_s(med[f"{d}_grad"]),
                f"{reps[f'{d}_value']}/{reps[f'{d}_grad']}",
                fmt_s(comp.get(f"{d}_value")),
                fmt_s(comp.get(f"{d}_grad")),
            ]
        )
    for label, v, g in (
        ("(a) part: K alone / K + its VJP", "gram", "gram_vjp"),
        ("batched Cholesky / Cholesky + inv", "chol", "chol_inv"),
    ):
        if v not in med:
            continue
        rows.append([label, fmt_s(med[v]), fmt_s(med[g]), f"{reps[v]}/{reps[g]}", "", ""])
    print(table(["design", "value", "value+grad", "reps", "compile v", "compile v+g"], rows))
    if isinstance(res["naive"], str):
        print(f"  (b) {res['naive']}")
    sv, so, oc = res["speedup_vs_naive"], res["over_specialized"], res["outside_cholesky"]
    rg = res["regular_grid_speedup"]
    ratio_rows = [
        ["(a) value+grad / value", fmt_x(res["grad_over_value"]), ""],
        ["(a) / dense floor (Chol + inv)", "", fmt_x(res["over_dense_floor"])],
        ["(a') / dense floor (Chol + inv)", "", fmt_x(res["over_dense_floor_regular_grid"])],
        ["(a) / looped floor (per-matrix Chol + inv)", "", fmt_x(res["over_looped_floor"])],
        ["floor with the inverse by L^-1 and W^T W / by two solves", "",
         fmt_x(res.get("wtw_over_two_solves"))],
        ["speedup vs naive: (b) / (a)", fmt_x(sv["value"]), fmt_x(sv["value_and_grad"])],
        ["(a) / specialised sum (c)", fmt_x(so["value"]), fmt_x(so["value_and_grad"])],
    ]
    if rg["value"] is not None:
        ratio_rows.append(
            ["(a) / (a') regular grid", fmt_x(rg["value"]), fmt_x(rg["value_and_grad"])]
        )
    if oc["value"] is not None:
        ratio_rows.append(
            [
                "(a) share outside Cholesky [+inv]",
                fmt_pct(oc["value"]),
                fmt_pct(oc["value_and_grad"]),
            ]
        )
    print(table(["ratio", "value", "value+grad"], ratio_rows))
    print(
        f"  compile: (a), (a') first call minus steady state; (b) ahead of time (lower + compile); "
        f"(c) summed over its {P} functions' first calls, plus "
        f"{fmt_s(res['c_trace_and_build_s'])} to build the closures"
    )


def print_scaling(rows: list[dict], particles: int) -> None:
    print(f"\n== (a) over N: P = {particles}, synthetic data ==")
    header = [
        "N",
        "value",
        "value+grad",
        "vg/v",
        "vg/floor",
        "(a') vg/floor",
        "vg/looped",
        "Cholesky",
        "Chol+inv",
        "out-chol v",
        "out-chol vg",
        "K alone",
        "K + VJP",
        "compile v",
        "compile vg",
        "reps",
    ]
    body = []
    for r in rows:
        m, oc, c = r["median_s"], r["outside_cholesky"], r["compile_s"]
        body.append(
            [
                f"{r['n']}{'*' if r.get('from_comparison') else ''}",
                fmt_s(m["a_value"]),
                fmt_s(m["a_grad"]),
                f"{r['grad_over_value']:.2f}",
                f"{r['over_dense_floor']:.2f}",
                fmt_x(r["over_dense_floor_regular_grid"]),
                fmt_x(r["over_looped_floor"]),
                fmt_s(m["chol"]),
                fmt_s(m["chol_inv"]),
                fmt_pct(oc["value"]),
                fmt_pct(oc["value_and_grad"]),
                fmt_s(m["gram"]),
                fmt_s(m["gram_vjp"]),
                fmt_s(c["a_value"]),
                fmt_s(c["a_grad"]),
                f"{r['reps']['a_value']}/{r['reps']['a_grad']}",
            ]
        )
    print(table(header, body))
    print("  vg/floor = value+grad / (Cholesky + inverse), the dense floor on the same matrices;")
    print("  (a') vg/floor: the same for the regular-grid path (the fits' path on even spacing)")
    print("  vg/looped: over the same floor computed one matrix at a time, as the evaluator does")
    print(
        "  out-chol v = 1 - Cholesky / value; out-chol vg = 1 - (Cholesky + inverse) / (value+grad)"
    )
    print("  K alone = gram() forward; K + VJP = grad of sum(cot * gram()) (its forward included)")
    print("  compile = lower + compile ahead of time, fresh jitted functions for every N;")
    print("  rows marked * are the three-way comparison's (a) figures at that N (compile there:")
    print("  first call minus steady state)")


# =============================================================================================
def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="N = 144 only, few reps (< 1 minute)")
    p.add_argument(
        "--tiny", action="store_true", help="smoke test: --quick on toy sizes, seconds"
    )
    p.add_argument(
        "--airline-n", type=int, help="use only the first N airline points (default: all 144)"
    )
    p.add_argument(
        "--floor-ns",
        type=lambda text: tuple(int(n) for n in text.split(",")),
        default=FLOOR_NS,
        help="comma-separated N at which --quick reports over_dense_floor (default 144,512)",
    )
    p.add_argument("--json", type=Path, help="write every figure to this JSON file")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="airline CSV (columns ds, y)")
    p.add_argument("--particles", type=int, default=16)
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--seed", type=int, default=3, help="prior seed (3: 50 nodes, 3 CP trees)")
    p.add_argument(
        "--atoms", default="default",
        help="atoms of the workload's prior: default (the grammar's), stationary, or names "
             "such as SE,PER (with + and *, no change points)",
    )
    p.add_argument("--synthetic-n", type=int, default=512)
    p.add_argument("--structures", type=int, default=200, help="prior batches for the trace count")
    p.add_argument("--budget", type=float, help="seconds per measurement at N = 144")
    p.add_argument("--max-reps", type=int, help="cap on repetitions per measurement")
    p.add_argument("--no-scaling", action="store_true", help="skip the (a)-over-N table")
    p.add_argument(
        "--no-atoms-check", action="store_true", help="skip the every-atom agreement check"
    )
    p.add_argument(
        "--blas-threads",
        help="OPENBLAS_NUM_THREADS for jaxlib's LAPACK calls (default: the environment's, else 1)",
    )
    args = p.parse_args(argv)
    if args.tiny:
        args.quick = True
        for name, value in TINY_DEFAULTS.items():
            if getattr(args, name) == p.get_default(name):
                setattr(args, name, value)
    return args


def set_blas_threads(requested: str | None) -> str:
    """Pin OpenBLAS's thread count before scipy loads it (run as a script, the top of this file
    already did, as autogp imports scipy).

    jaxlib's CPU Cholesky and triangular solves call scipy's OpenBLAS. With its default thread
    pool on a small, shared machine, calls intermittently stall for seconds (measured here:
    ~6.6 s on 2 cores at load ~7, against ~15 ms normally), which swamps every median.
    """
    value = requested or os.environ.get("OPENBLAS_NUM_THREADS") or "1"
    if "scipy" in sys.modules and os.environ.get("OPENBLAS_NUM_THREADS") != value:
        print("warning: scipy is already loaded; OPENBLAS_NUM_THREADS cannot take effect")
    os.environ["OPENBLAS_NUM_THREADS"] = value
    return value


@contextlib.contextmanager
def phase(report: dict, name: str):
    """Record a phase's wall and CPU (this process, all threads) seconds in ``report``."""
    wall0, cpu0 = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        report.setdefault("phases", {})[name] = {
            "wall_s": time.perf_counter() - wall0,
            "cpu_s": time.process_time() - cpu0,
        }


def main(argv=None) -> dict:
    args = parse_args(argv)
    blas_threads = set_blas_threads(args.blas_threads)
    t_start = time.perf_counter()
    quick = args.quick
    budget = args.budget if args.budget is not None else (0.5 if quick else 1.5)
    max_reps = args.max_reps if args.max_reps is not None else (7 if quick else 31)
    print(
        f"bench_evaluator: jax {jax.__version__}, {jax.devices()[0].platform} "
        f"({platform.machine()}, {os.cpu_count()} cores, load avg {os.getloadavg()[0]:.1f}), "
        f"float64, OPENBLAS_NUM_THREADS={blas_threads}; P = {args.particles}, D = {args.depth}, "
        f"seed {args.seed}; {'tiny' if args.tiny else 'quick' if quick else 'full'} run",
        flush=True,
    )
    report: dict = {"config": {}, "workloads": {}}
    with phase(report, "setup"):
        bench = Bench()
        ops, params, noise = prior_batch(args.depth, args.particles, args.seed,
                                         atom_weights(args.atoms))
    nodes = np.sum(ops != spec.EMPTY, axis=1)
    print(f"workload trees: {', '.join(map(str, nodes))} nodes ({int(nodes.sum())} in all)")
    report["config"] = {
        "quick": quick,
        "tiny": args.tiny,
        "particles": args.particles,
        "depth": args.depth,
        "seed": args.seed,
        "atoms": args.atoms,
        "nodes_per_tree": nodes.tolist(),
        "budget_s": budget,
        "max_reps": max_reps,
        "jax": jax.__version__,
        "platform": jax.devices()[0].platform,
        "cpu_count": os.cpu_count(),
        "openblas_num_threads": blas_threads,
        "load_avg_start": os.getloadavg()[0],
    }

    airline = load_airline(args.data, args.airline_n)
    n_air = len(airline)
    workloads = [
        Workload(f"airline_{n_air}", np.linspace(0, 1, n_air), airline, ops, params, noise)
    ]
    if not quick:
        n = args.synthetic_n
        x = np.linspace(0, 1, n)
        workloads.append(Workload(f"synthetic_{n}", x, synthetic_series(n), ops, params, noise))
    for w in workloads:
        print(f"\n[{w.name}] agreement, then timing (a), (b), (c) interleaved", flush=True)
        small = w.n <= 256
        with phase(report, w.name):
            res = bench.compare(
                w,
                budget_s=budget if small else 2 * budget,
                max_reps=max_reps,
                min_reps=(3 if quick else 7) if small else 3,
                # (b) compiles ahead of time, so its agreement-check calls count as repetitions;
                # its gradient costs seconds at N = 144 and minutes at N = 512.
                naive_min_reps=(1, 1) if quick else ((3, 2) if small else (1, 1)),
                breakdown=not quick,
                # tiny runs skip (a') (compile time) unless the trees were chosen for it
                grid=not args.tiny or args.atoms != "default",
            )
        report["workloads"][w.name] = res
        print_comparison(res, w.name)
        if w is workloads[0]:
            # Right after the first workload, while (a) has seen no other padded length.
            with phase(report, "trace_count"):
                trace_count_section(bench, w, args, report)
            if (args.tiny or not quick) and not args.no_atoms_check and args.depth >= 2:
                with phase(report, "every_atom_check"):
                    every_atom_section(bench, w, args)

    main_res = report["workloads"][workloads[0].name]
    for key in ("grad_over_value", "speedup_vs_naive", "over_specialized", "outside_cholesky"):
        report[key] = main_res[key]
    floor = {res["n"]: res["over_dense_floor"] for res in report["workloads"].values()}
    floor_grid = {
        res["n"]: res["over_dense_floor_regular_grid"] for res in report["workloads"].values()
    }
    floor_looped = {res["n"]: res["over_looped_floor"] for res in report["workloads"].values()}
    report["compile_s_evaluator"] = {
        "value": main_res["compile_s"]["a_value"],
        "value_and_grad": main_res["compile_s"]["a_grad"],
    }

    scaling_ns = [] if args.no_scaling else SCALING_NS
    if quick:  # the dense-floor ratio at the other N the targets name, without the comparison
        scaling_ns = [n for n in args.floor_ns if n not in floor]
    if scaling_ns:
        print(f"\n[scaling of (a)] N = {', '.join(map(str, scaling_ns))}", flush=True)
        with phase(report, "scaling"):
            reuse = {res["n"]: res for res in report["workloads"].values()}
            rows = bench.scaling(ops, params, noise, scaling_ns, 2 * budget, max_reps, reuse)
        report["scaling"] = rows
        print_scaling(rows, args.particles)
        floor.update({r["n"]: r["over_dense_floor"] for r in rows})
        floor_grid.update({r["n"]: r["over_dense_floor_regular_grid"] for r in rows})
        floor_looped.update({r["n"]: r["over_looped_floor"] for r in rows})
    report["over_dense_floor"] = {str(n): floor[n] for n in sorted(floor)}
    report["over_dense_floor_regular_grid"] = {
        str(n): floor_grid[n] for n in sorted(floor_grid) if floor_grid[n] is not None
    }
    report["over_looped_floor"] = {str(n): floor_looped[n] for n in sorted(floor_looped)}
    print(
        "\nover_dense_floor, value+grad / (batched Cholesky + inverse) on the same K: (a) "
        + ", ".join(f"N={n} {floor[n]:.2f}x" for n in sorted(floor))
        + "; (a') regular grid "
        + ", ".join(f"N={n} {fmt_x(floor_grid[n])}" for n in sorted(floor_grid))
        + "; (a) over the per-matrix floor "
        + ", ".join(f"N={n} {fmt_x(floor_looped[n])}" for n in sorted(floor_looped))
    )

    report["total_s"] = time.perf_counter() - t_start
    report["config"]["load_avg_end"] = os.getloadavg()[0]
    phases = ", ".join(
        f"{k} {v['wall_s']:.0f}/{v['cpu_s']:.0f}" for k, v in report["phases"].items()
    )
    print(f"\nphases, wall/CPU seconds: {phases}")
    print(f"total {report['total_s']:.1f} s (load avg now {os.getloadavg()[0]:.1f})")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
        print(f"wrote {args.json}")
    return report


def trace_count_section(bench: Bench, w: Workload, args: argparse.Namespace, report: dict) -> None:
    print(f"\n[trace count] (a) on {args.structures} prior batches, random masks", flush=True)
    grad_calls = min(40, args.structures) if args.quick else args.structures
    tc = bench.trace_count(
        w.x, w.y, args.structures, args.particles, args.depth, args.seed, grad_calls,
        atom_weights(args.atoms),
    )
    report["traces"] = max(tc["value"], tc["value_and_grad"])
    report["traces_detail"] = tc
    print(
        f"  N = {w.n}: {tc['calls']} calls ({tc['distinct_batches']} distinct batches, "
        f"{tc['distinct_trees']} distinct trees, a new mask each) after the workload's; "
        f"traces in all: value {tc['value']}, value+grad {tc['value_and_grad']} (called on "
        f"{tc['value_and_grad_calls']} of the batches); new during these calls: "
        f"{tc['new_during_calls']} ({tc['seconds']:.1f} s)"
    )


def every_atom_section(bench: Bench, w: Workload, args: argparse.Namespace) -> None:
    """(a) == (b) == (c) on trees that use every atom; same shapes as ``w``, so (a) and (b)
    reuse their compiled programs."""
    print("\n[every atom] agreement of (a), (b), (c) on trees using every atom", flush=True)
    a_ops, a_params, a_noise = all_atoms_batch(args.depth, args.particles, args.seed)
    wa = Workload("all_atoms", w.x, w.y, a_ops, a_params, a_noise)
    naive = bench.compile_naive(wa)
    # (c) through its value_and_grad functions only, one per distinct structure: half the
    # compilations of the timed design.
    c_fns = [(None, fg) for _, fg in make_specialised(a_ops, share=True)]
    bench.check_agreement(wa, c_fns, None if isinstance(naive, str) else naive)


if __name__ == "__main__":
    main()
