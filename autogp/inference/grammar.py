"""The structure prior over kernel-expression trees, on packed heap arrays.

A tree of maximum depth D lives in ``S = 2**(D+1) - 1`` heap slots (``autogp.kernels.spec``): the
root is slot 0, the children of slot i are slots ``2i+1`` and ``2i+2``, empty slots hold
``spec.EMPTY``. One particle is ``ops`` int32 ``[S]``, ``params`` float ``[S, MAX_PARAMS]``
(unconstrained) and ``noise`` (unconstrained scalar); batches carry leading axes.

The prior p(T) p(theta | T) p(noise) is generated top-down. The node type at a position is drawn
from the production weights of the :class:`Grammar`, restricted by two rules and renormalised:

* a position at depth D can only hold a leaf (atom);
* ``CP`` is allowed only at the root or as a child of another ``CP``.

Every node's parameters are independent ``Normal(mean, std)`` in unconstrained space, one per
``(opcode, parameter)``; the noise has its own normal prior. All functions here are pure, work
under ``jax.jit`` with the maximum depth static (it is read off the array shapes) and under
``jax.vmap``; random ones take an explicit keyword-only ``key``. Python control flow only runs
over the static heap levels.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.stats import norm

from autogp.inference.heap import heap_tables, subtree_slots, tables_of
from autogp.kernels import covariates, spec

Array = jax.Array

#: Production weights of AutoGP.jl: LIN, GE, PER 6 each; + and * 5 each; CP 2; all else 0
#: (the opcodes with a positive ``spec.DEFAULT_WEIGHTS``, which the atom table sets).
DEFAULT_WEIGHTS: Mapping[int, float] = {op: w for op, w in spec.DEFAULT_WEIGHTS.items() if w > 0}
MAX_SUPPORTED_DEPTH = 5
DEFAULT_MAX_DEPTH = 3  # AutoGP.jl's; the config's grammar.max_depth default reads it

IS_OPERATOR = spec.IS_OPERATOR
IS_ATOM = spec.IS_ATOM

# Rows of ``Grammar.path_log_prob_table``: how the on-path operators of an attach are drawn.
PATH_ROW_NO_CP = 0  # uniform over allowed operators, CP not allowed at the position
PATH_ROW_CP_OK = 1  # uniform over allowed operators, CP allowed at the position
PATH_ROW_FORCED_CP = 2  # a CP with probability one


# --- the grammar -----------------------------------------------------------------------------
def _opcode(key: int | str) -> int:
    if isinstance(key, str):
        if key not in spec.OPCODE_OF_NAME:
            raise ValueError(f"unknown opcode name {key!r}")
        return spec.OPCODE_OF_NAME[key]
    op = int(key)
    if not 0 < op < spec.NUM_OPS:
        raise ValueError(f"invalid opcode {key!r}")
    return op


@jax.tree_util.register_static
@dataclasses.dataclass(frozen=True)
class Grammar:
    """Production weights, depth limit and parameter priors of the kernel grammar.

    Immutable and hashable; registered as a static pytree, so it can be passed straight to
    ``jax.jit``-ed functions (it becomes part of the compilation key). Build it with
    :meth:`Grammar.default`.

    Attributes:
      max_depth: D, the deepest level a node may sit at (root depth 0), 1 <= D <= 5.
      weights: unnormalised production weight of each opcode, length ``spec.NUM_OPS``.
      param_prior_mean, param_prior_std: ``[NUM_OPS][MAX_PARAMS]`` normal prior on each
        unconstrained parameter (entries past ``spec.NUM_PARAMS[op]`` are unused).
      noise_prior: ``(mean, std)`` normal prior on the unconstrained noise.
    """

    max_depth: int
    weights: tuple[float, ...]
    param_prior_mean: tuple[tuple[float, ...], ...]
    param_prior_std: tuple[tuple[float, ...], ...]
    noise_prior: tuple[float, float] = tuple(spec.DEFAULT_NOISE_PRIOR)

    def __post_init__(self) -> None:
        weights = tuple(float(w) for w in self.weights)
        mean = tuple(tuple(float(v) for v in row) for row in self.param_prior_mean)
        std = tuple(tuple(float(v) for v in row) for row in self.param_prior_std)
        noise = tuple(float(v) for v in self.noise_prior)
        object.__setattr__(self, "max_depth", int(self.max_depth))
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "param_prior_mean", mean)
        object.__setattr__(self, "param_prior_std", std)
        object.__setattr__(self, "noise_prior", noise)
        if not 1 <= self.max_depth <= MAX_SUPPORTED_DEPTH:
            raise ValueError(f"max_depth must be in [1, {MAX_SUPPORTED_DEPTH}]")
        w = np.asarray(weights)
        if w.shape != (spec.NUM_OPS,) or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("weights must be NUM_OPS finite non-negative numbers")
        if w[spec.EMPTY] != 0:
            raise ValueError("EMPTY cannot have a production weight")
        if not np.sum(w[IS_ATOM]) > 0:
            raise ValueError("at least one atom needs a positive weight")
        shape = (spec.NUM_OPS, spec.MAX_PARAMS)
        if np.shape(mean) != shape or np.shape(std) != shape:
            raise ValueError(f"parameter prior tables must have shape {shape}")
        if not (np.all(np.isfinite(mean)) and np.all(np.asarray(std) > 0)):
            raise ValueError("parameter priors need finite means and positive stds")
        if len(noise) != 2 or not (math.isfinite(noise[0]) and noise[1] > 0):
            raise ValueError("noise_prior must be (finite mean, positive std)")

    @classmethod
    def default(
        cls,
        max_depth: int = DEFAULT_MAX_DEPTH,
        weights: Mapping[int | str, float] | None = None,
        param_priors: Mapping[tuple[int | str, str], tuple[float, float]] | None = None,
        noise_prior: tuple[float, float] | None = None,
    ) -> Grammar:
        """A grammar with AutoGP.jl's defaults, optionally overridden.

        Args:
          max_depth: D.
          weights: production weights by opcode or name (``{"LIN": 1, "+": 2}``); when given it
            *replaces* :data:`DEFAULT_WEIGHTS` (opcodes not mentioned get weight 0).
          param_priors: ``{(opcode or name, parameter name): (mean, std)}`` overriding entries
            of ``spec.default_prior_table()``.
          noise_prior: ``(mean, std)``, default ``spec.DEFAULT_NOISE_PRIOR``.
        """
        table = np.zeros(spec.NUM_OPS)
        for key, weight in (DEFAULT_WEIGHTS if weights is None else weights).items():
            table[_opcode(key)] = weight
        mean, std = spec.default_prior_table()
        for (key, name), (m, s) in (param_priors or {}).items():
            op = _opcode(key)
            if name not in spec.PARAM_NAMES[op]:
                raise ValueError(f"{spec.NAMES[op]} has no parameter {name!r}")
            k = spec.PARAM_NAMES[op].index(name)
            mean[op, k], std[op, k] = m, s
        return cls(
            max_depth=max_depth,
            weights=tuple(table),
            param_prior_mean=tuple(map(tuple, mean)),
            param_prior_std=tuple(map(tuple, std)),
            noise_prior=tuple(spec.DEFAULT_NOISE_PRIOR if noise_prior is None else noise_prior),
        )

    @property
    def num_slots(self) -> int:
        return spec.num_slots(self.max_depth)

    @functools.cached_property
    def node_log_prob_table(self) -> np.ndarray:
        """float ``[D+1, 2, NUM_OPS]``: log p(op | depth, CP allowed) of the production rule."""
        table = np.empty((self.max_depth + 1, 2, spec.NUM_OPS))
        for depth in range(self.max_depth + 1):
            for cp_allowed in (0, 1):
                w = np.asarray(self.weights).copy()
                if depth == self.max_depth:
                    w[IS_OPERATOR] = 0.0
                if not cp_allowed:
                    w[spec.CP] = 0.0
                with np.errstate(divide="ignore"):
                    table[depth, cp_allowed] = np.log(w / w.sum())
        table.setflags(write=False)
        return table

    @functools.cached_property
    def path_log_prob_table(self) -> np.ndarray:
        """float ``[3, NUM_OPS]``: how attach draws an on-path operator (rows ``PATH_ROW_*``).

        Uniform over the operators with positive weight (CP only where allowed), or a CP with
        probability one. A row is all ``-inf`` when no operator is allowed.
        """
        table = np.full((3, spec.NUM_OPS), -np.inf)
        for row, cp_allowed in ((PATH_ROW_NO_CP, False), (PATH_ROW_CP_OK, True)):
            allowed = IS_OPERATOR & (np.asarray(self.weights) > 0)
            if not cp_allowed:
                allowed[spec.CP] = False
            if allowed.any():
                table[row, allowed] = -np.log(allowed.sum())
        table[PATH_ROW_FORCED_CP, spec.CP] = 0.0
        table.setflags(write=False)
        return table

    @functools.cached_property
    def prior_mean_table(self) -> np.ndarray:
        return np.asarray(self.param_prior_mean)

    @functools.cached_property
    def prior_std_table(self) -> np.ndarray:
        return np.asarray(self.param_prior_std)


def with_covariates(grammar: Grammar, count: int, weight: float,
                    shares: Sequence[float] | None = None) -> Grammar:
    """``grammar`` with the atoms of ``count`` covariates switched on: covariate ``k``'s atoms
    get ``weight * shares[k]`` (``shares``: all 1 when None), of which ``LIN[k]`` two thirds
    and ``SE[k]`` one third (a linear effect is the likelier and the easier to read).
    ``count = 0`` returns ``grammar`` itself."""
    if count == 0:
        return grammar
    if not 0 < count <= covariates.MAX_COVARIATES:
        raise ValueError(f"at most {covariates.MAX_COVARIATES} covariates are supported, "
                         f"got {count}")
    shares = (1.0,) * count if shares is None else tuple(float(s) for s in shares)
    if len(shares) != count or min(shares) < 0:
        raise ValueError(f"shares: {count} numbers >= 0 expected, got {shares}")
    weights = list(grammar.weights)
    for k, share in enumerate(shares, start=1):
        weights[covariates.linear_opcode(k)] = 2.0 * weight * share / 3.0
        weights[covariates.smooth_opcode(k)] = weight * share / 3.0
    return dataclasses.replace(grammar, weights=tuple(weights))


# --- per-slot terms of the prior (one tree) --------------------------------------------------
def _check_shape(grammar: Grammar, ops: Array) -> None:
    if ops.shape[-1] != grammar.num_slots:
        raise ValueError(
            f"ops has {ops.shape[-1]} slots, the grammar of depth {grammar.max_depth} "
            f"needs {grammar.num_slots}"
        )


def _parent_ops(ops: Array) -> Array:
    """int32 [S]: the opcode of each slot's parent (EMPTY for the root)."""
    tables = tables_of(ops)
    return jnp.where(tables.is_root, spec.EMPTY, ops[tables.parent])


def cp_allowed_mask(ops: Array) -> Array:
    """bool [S]: whether a CP may sit at each slot given its parent in ``ops``."""
    return tables_of(ops).is_root | (_parent_ops(ops) == spec.CP)


def node_distribution(grammar: Grammar, slot: Array | int, parent_op: Array | int) -> Array:
    """float ``[NUM_OPS]``: log-probabilities of the opcode drawn at ``slot`` under ``parent_op``.

    ``parent_op`` is ignored at the root. Impossible opcodes get ``-inf``.
    """
    tables = heap_tables(grammar.max_depth)
    slot = jnp.asarray(slot)
    cp_allowed = (slot == 0) | (jnp.asarray(parent_op) == spec.CP)
    depth = jnp.asarray(tables.depth)[slot]
    return jnp.asarray(grammar.node_log_prob_table)[depth, cp_allowed.astype(jnp.int32)]


def node_log_probs(grammar: Grammar, ops: Array) -> Array:
    """float [S]: log p(op at slot | position, parent) for each slot (meaningless where empty)."""
    depth = jnp.asarray(tables_of(ops).depth)
    cp_allowed = cp_allowed_mask(ops).astype(jnp.int32)
    return jnp.asarray(grammar.node_log_prob_table)[depth, cp_allowed, ops]


def _well_formed(ops: Array) -> Array:
    """bool [S]: slot s is occupied exactly when it is the root or its parent is an operator."""
    tables = tables_of(ops)
    required = tables.is_root | jnp.asarray(IS_OPERATOR)[_parent_ops(ops)]
    in_range = (ops >= 0) & (ops < spec.NUM_OPS)
    return in_range & ((ops != spec.EMPTY) == required)


def param_log_probs(grammar: Grammar, ops: Array, params: Array) -> Array:
    """float [S]: sum of the normal log-densities of each node's used parameters (0 if empty)."""
    mean = jnp.asarray(grammar.prior_mean_table)[ops]
    std = jnp.asarray(grammar.prior_std_table)[ops]
    used = jnp.arange(spec.MAX_PARAMS) < jnp.asarray(spec.NUM_PARAMS)[ops][:, None]
    log_density = norm.logpdf(params, mean, std)
    return jnp.sum(jnp.where(used, log_density, 0.0), axis=-1)


def _log_prior_structure_one(grammar: Grammar, ops: Array) -> Array:
    _check_shape(grammar, ops)
    present = ops != spec.EMPTY
    total = jnp.sum(jnp.where(present, node_log_probs(grammar, ops), 0.0))
    return jnp.where(jnp.all(_well_formed(ops)), total, -jnp.inf)


def _log_prior_params_one(grammar: Grammar, ops: Array, params: Array) -> Array:
    _check_shape(grammar, ops)
    return jnp.sum(param_log_probs(grammar, ops, params))


def _log_prior_subtree_structure_one(grammar: Grammar, ops: Array, slot: Array) -> Array:
    _check_shape(grammar, ops)
    tables = tables_of(ops)
    region = jnp.asarray(tables.subtree)[slot]
    is_top = jnp.arange(tables.num_slots) == slot
    present = ops != spec.EMPTY
    consistent = jnp.where(is_top, present, _well_formed(ops))
    total = jnp.sum(jnp.where(region & present, node_log_probs(grammar, ops), 0.0))
    return jnp.where(jnp.all(consistent | ~region), total, -jnp.inf)


def _log_prior_subtree_params_one(
    grammar: Grammar, ops: Array, params: Array, slot: Array
) -> Array:
    _check_shape(grammar, ops)
    region = subtree_slots(grammar.max_depth, slot)
    return jnp.sum(jnp.where(region, param_log_probs(grammar, ops, params), 0.0))


# --- public log-priors (leading batch axes broadcast) ----------------------------------------
def log_prior_structure(grammar: Grammar, ops: Array) -> Array:
    """Exact log p(T) of each tree in ``ops`` [..., S]; ``-inf`` for trees the grammar cannot
    produce (malformed heaps, operators at depth D, misplaced CPs, zero-weight opcodes)."""
    fn = functools.partial(_log_prior_structure_one, grammar)
    return jnp.vectorize(fn, signature="(s)->()")(ops)


def log_prior_params(grammar: Grammar, ops: Array, params: Array) -> Array:
    """log p(theta | T): sum of the parameter priors of the nodes of ``ops`` [..., S]."""
    fn = functools.partial(_log_prior_params_one, grammar)
    return jnp.vectorize(fn, signature="(s),(s,k)->()")(ops, params)


def log_prior_noise(grammar: Grammar, noise: Array) -> Array:
    """log p(noise) of the unconstrained noise [...]."""
    mean, std = grammar.noise_prior
    return norm.logpdf(noise, mean, std)


def log_prior(grammar: Grammar, ops: Array, params: Array, noise: Array) -> Array:
    """log p(T) + log p(theta | T) + log p(noise), batched over leading axes."""
    return (
        log_prior_structure(grammar, ops)
        + log_prior_params(grammar, ops, params)
        + log_prior_noise(grammar, noise)
    )


def log_prior_subtree_structure(grammar: Grammar, ops: Array, slot: Array | int) -> Array:
    """log-probability that the subtree of ``ops`` at ``slot`` is drawn there, given its parent
    in ``ops`` (``-inf`` if the slot is empty or the subtree malformed). ``slot`` broadcasts
    against the leading axes of ``ops`` [..., S]."""
    fn = functools.partial(_log_prior_subtree_structure_one, grammar)
    return jnp.vectorize(fn, signature="(s),()->()")(ops, jnp.asarray(slot, jnp.int32))


def log_prior_subtree_params(
    grammar: Grammar, ops: Array, params: Array, slot: Array | int
) -> Array:
    """Parameter log-prior of the nodes in the subtree of ``ops`` at ``slot``."""
    fn = functools.partial(_log_prior_subtree_params_one, grammar)
    return jnp.vectorize(fn, signature="(s),(s,k),()->()")(
        ops, params, jnp.asarray(slot, jnp.int32)
    )


def log_prior_subtree(grammar: Grammar, ops: Array, params: Array, slot: Array | int) -> Array:
    """P_slot(S): structure plus parameter log-prior of the subtree at ``slot``."""
    return log_prior_subtree_structure(grammar, ops, slot) + log_prior_subtree_params(
        grammar, ops, params, slot
    )


# --- sampling --------------------------------------------------------------------------------
def node_type_noise(key: Array, num_slots: int, dtype) -> Array:
    """Gumbel noise ``[num_slots, NUM_OPS]`` for drawing node types (the Gumbel-max trick).

    The first ``spec.BASE_NUM_OPS`` opcodes share one draw; each opcode appended since then
    draws its own column from ``fold_in(key, opcode)``. Appending an atom therefore leaves the
    draws of every grammar that gives it weight 0 unchanged, bit for bit.
    """
    noise = jax.random.gumbel(key, (num_slots, spec.BASE_NUM_OPS), dtype=dtype)
    if spec.NUM_OPS == spec.BASE_NUM_OPS:
        return noise

    def column(op: Array) -> Array:
        return jax.random.gumbel(jax.random.fold_in(key, op), (num_slots,), dtype=dtype)

    appended = jax.vmap(column, out_axes=1)(jnp.arange(spec.BASE_NUM_OPS, spec.NUM_OPS))
    return jnp.concatenate([noise, appended], axis=1)


def fill_top_down(
    grammar: Grammar,
    ops: Array,
    params: Array,
    *,
    free_mask: Array,
    root_mask: Array,
    path_mask: Array | None = None,
    forced_cp: Array | bool = False,
    key: Array,
) -> tuple[Array, Array]:
    """Clear ``free_mask | path_mask`` in one tree and redraw it level by level, top-down.

    * A slot in ``path_mask`` always gets an operator: uniform over the allowed operators at
      its position, or a CP when ``forced_cp`` (the on-path nodes of an attach).
    * A slot in ``free_mask`` gets a node from the prior at its position when it is in
      ``root_mask`` or its (already drawn or untouched) parent is an operator; otherwise it
      stays empty.

    Every new node's parameters are drawn from their priors. Fixed shapes: D+1 vectorised
    steps over the heap levels, one Gumbel noise table for all node types and one normal draw
    for all parameters.
    """
    tables = heap_tables(grammar.max_depth)
    if path_mask is None:
        path_mask = jnp.zeros(tables.num_slots, dtype=bool)
    key_types, key_params = jax.random.split(key)
    float_dtype = params.dtype
    gumbel = node_type_noise(key_types, tables.num_slots, float_dtype)
    normal = jax.random.normal(key_params, (tables.num_slots, spec.MAX_PARAMS), float_dtype)
    region = free_mask | path_mask
    ops = jnp.where(region, spec.EMPTY, ops).astype(jnp.int32)
    node_table = jnp.asarray(grammar.node_log_prob_table, dtype=float_dtype)
    path_table = jnp.asarray(grammar.path_log_prob_table, dtype=float_dtype)
    is_operator = jnp.asarray(IS_OPERATOR)
    for level in range(grammar.max_depth + 1):
        lo, hi = 2**level - 1, 2 ** (level + 1) - 1
        if level == 0:
            parent_op = jnp.full((1,), spec.EMPTY, dtype=jnp.int32)
            cp_allowed = jnp.ones((1,), dtype=jnp.int32)
        else:
            parent_op = ops[tables.parent[lo:hi]]
            cp_allowed = (parent_op == spec.CP).astype(jnp.int32)
        prior_logits = node_table[level][cp_allowed]
        path_row = jnp.where(forced_cp, PATH_ROW_FORCED_CP, cp_allowed)
        path_logits = path_table[path_row]
        on_path = path_mask[lo:hi]
        logits = jnp.where(on_path[:, None], path_logits, prior_logits)
        drawn = jnp.argmax(logits + gumbel[lo:hi], axis=-1).astype(jnp.int32)
        reachable = root_mask[lo:hi] | is_operator[parent_op]
        active = on_path | (free_mask[lo:hi] & reachable)
        ops = ops.at[lo:hi].set(jnp.where(active, drawn, ops[lo:hi]))
    mean = jnp.asarray(grammar.prior_mean_table, dtype=float_dtype)[ops]
    std = jnp.asarray(grammar.prior_std_table, dtype=float_dtype)[ops]
    used = jnp.arange(spec.MAX_PARAMS) < jnp.asarray(spec.NUM_PARAMS)[ops][:, None]
    fresh = jnp.where(used & (ops != spec.EMPTY)[:, None], mean + std * normal, 0.0)
    params = jnp.where(region[:, None], fresh, params)
    return ops, params


def sample_subtree(
    grammar: Grammar, ops: Array, params: Array, root_slot: Array | int, *, key: Array
) -> tuple[Array, Array, Array]:
    """Redraw the subtree of one tree at ``root_slot`` from the prior at that position.

    Args:
      ops: int32 [S]; params: float [S, MAX_PARAMS]; root_slot: int (may be traced). The parent
        of ``root_slot`` in ``ops`` sets the change-point rule; its depth sets the depth limit.

    Returns:
      ``(ops, params, log_prob)``: the new tree, and P_root_slot(S') = the structure plus
      parameter log-prior of the new subtree, i.e. the log-probability of this draw.
    """
    _check_shape(grammar, ops)
    slots = jnp.arange(grammar.num_slots)
    ops, params = fill_top_down(
        grammar,
        ops,
        params,
        free_mask=subtree_slots(grammar.max_depth, root_slot),
        root_mask=slots == root_slot,
        key=key,
    )
    return ops, params, log_prior_subtree(grammar, ops, params, root_slot)


def sample_prior(grammar: Grammar, num_particles: int, *, key: Array) -> tuple[Array, Array, Array]:
    """Draw ``num_particles`` independent (T, theta, noise) from the prior.

    Returns ``ops`` int32 [P, S], ``params`` float [P, S, MAX_PARAMS], ``noise`` float [P].
    """
    num = grammar.num_slots
    key_trees, key_noise = jax.random.split(key)
    empty_ops = jnp.zeros(num, dtype=jnp.int32)
    empty_params = jnp.zeros((num, spec.MAX_PARAMS), dtype=float)

    def one(k: Array) -> tuple[Array, Array]:
        new_ops, new_params, _ = sample_subtree(grammar, empty_ops, empty_params, 0, key=k)
        return new_ops, new_params

    ops, params = jax.vmap(one)(jax.random.split(key_trees, num_particles))
    mean, std = grammar.noise_prior
    noise = mean + std * jax.random.normal(key_noise, (num_particles,), dtype=params.dtype)
    return ops, params, noise
