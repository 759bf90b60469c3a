"""The SMC round as compiled programs, and the rounds of a fit.

The round's mathematics are pure functions (:mod:`autogp.inference.smc_round`); this module
names the programs a fit needs (its initial particles, one round per round size, the posterior
draws) and runs them through the one compilation wrapper, :mod:`autogp.inference.exported`
(exported programs kept beside JAX's persistent cache, compiled side by side, or plain
``jax.jit`` where ``AUTOGP_EXPORTED_ROUNDS=0``). Programs take PRNG keys as key data (exported
programs cannot take typed key arrays) and wrap them again inside.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from autogp.inference import exported
from autogp.inference import grammar as gr
from autogp.inference.padding import (
    PAD_MULTIPLE,
    ROUND_SIZE_STEPS,
    data_prefix,
    make_data,
    padded_length,
    round_size,
    round_sizes,
)
from autogp.inference.settings import SMCSettings
from autogp.inference.smc_round import (
    Data,
    SMCState,
    check_finite,
    draw_parameters,
    gradient_probes,
    late_step_counts,
    likelihood_fn,
    prior_state,
    proposal_state,
    smc_round,
    state_shapes,
)

Array = jax.Array
_DIAGNOSTICS = {"ess": 0, "resampled": 0, "acceptance": 0}  # smc_round's second result's keys


def _smc_round_on_key_data(grammar, settings, num_inducing, state, data, count, key_data):
    return smc_round(grammar, settings, state, data, count,
                     key=jax.random.wrap_key_data(key_data), num_inducing=num_inducing)


def _init_prior_on_key_data(grammar, G, P, key_data):
    return prior_state(grammar, G, P, jax.random.wrap_key_data(key_data))


def _init_proposal_on_key_data(grammar, settings, G, P, key_data, data):
    return proposal_state(grammar, settings, G, P, jax.random.wrap_key_data(key_data), data)


def _draws_on_key_data(grammar, settings, draws, num_inducing, state, data, key_data):
    return draw_parameters(grammar, settings, draws, state, data,
                           key=jax.random.wrap_key_data(key_data), num_inducing=num_inducing)


def _key_data_shape():
    return exported.shapes(jax.random.key_data(jax.random.key(0)))


def _init_program(grammar: gr.Grammar, settings: SMCSettings | None, G: int, P: int,
                  data: Data | None, key_data) -> exported.Program:
    """The program of :func:`init_state` (with the period proposal when ``settings`` is
    given)."""
    if settings is None:
        return exported.Program("init_prior", _init_prior_on_key_data, (grammar, G, P),
                                (key_data,))
    return exported.Program("init_proposal", _init_proposal_on_key_data,
                            (grammar, settings.for_programs(), G, P), (key_data, data))


def _round_program(grammar: gr.Grammar, settings: SMCSettings, num_inducing: int, state, data,
                   count, key_data) -> exported.Program:
    return exported.Program("smc_round", _smc_round_on_key_data,
                            (grammar, settings.for_programs(), num_inducing),
                            (state, data, count, key_data))


def run_round(grammar: gr.Grammar, settings: SMCSettings, state: SMCState, data: Data,
              count: Array, *, key: Array, num_inducing: int = 0):
    """One compiled round (:func:`autogp.inference.smc_round.smc_round`)."""
    program = _round_program(grammar, settings, num_inducing, state, data, count,
                             jax.random.key_data(key))
    out_treedef = jax.tree_util.tree_structure((state, _DIAGNOSTICS))
    return exported.call(exported.directory(), program, out_treedef)


def prepare_programs(grammar: gr.Grammar, settings: SMCSettings, data: Data, counts: np.ndarray,
                     *, num_particles: int, num_inducing: int = 0, init: bool = True) -> None:
    """Where rounds run through exported programs, get every program a fit needs (its initial
    particles when ``init``, one round per round size of ``counts``) before it starts, compiled
    side by side (``exported.prepare``)."""
    if not exported.enabled():
        return
    G = data.x.shape[0]
    state = state_shapes(grammar, G, num_particles)
    count = jax.ShapeDtypeStruct((G,), jnp.int32)
    key_data = _key_data_shape()
    programs = []
    if init:
        proposal = settings.period_proposal > 0
        programs.append(_init_program(grammar, settings if proposal else None, G, num_particles,
                                      exported.shapes(data) if proposal else None, key_data))
    for size in sorted(set(round_sizes(settings, counts, data.x.shape[1]))):
        programs.append(_round_program(grammar, settings, num_inducing, state,
                                       exported.shapes(data_prefix(data, size)), count, key_data))
    exported.prepare(exported.directory(), programs)


def run_draws(
    grammar: gr.Grammar, settings: SMCSettings, draws: int, state: SMCState, data: Data, *,
    key: Array, num_inducing: int = 0,
) -> SMCState:
    """:func:`~autogp.inference.smc_round.draw_parameters`, compiled once per grammar,
    settings and draw count (always ``jax.jit``: it runs once per fit, after the rounds)."""
    program = exported.Program("draws", _draws_on_key_data,
                               (grammar, settings.for_programs(), draws, num_inducing),
                               (state, data, jax.random.key_data(key)))
    return exported.call_jitted(program, jax.tree_util.tree_structure(state))


def compilation_counts() -> dict[str, int]:
    """Programs compiled (or loaded) by this process for the round and the posterior draws, one
    per distinct key: a fit that reuses the compiled round leaves the counts unchanged."""
    return {"round": exported.programs("smc_round"), "draws": exported.programs("draws")}


def init_state(
    grammar: gr.Grammar, num_series: int, num_particles: int, *, key: Array,
    data: Data | None = None, settings: SMCSettings | None = None,
) -> SMCState:
    """Particles drawn from the prior for ``num_series`` series, as one compiled program (run
    eagerly, the tree sampler dispatches hundreds of small computations).

    With ``data`` and ``settings`` whose ``period_proposal`` is positive, PER periods are drawn
    from the period proposal q instead and the particles start with importance weights
    ``p / q``; the evidence estimate starts at ``log mean(p / q)`` (unbiased, as before).
    """
    use_proposal = data is not None and settings is not None and settings.period_proposal > 0
    program = _init_program(grammar, settings if use_proposal else None, num_series,
                            num_particles, data if use_proposal else None,
                            jax.random.key_data(key))
    out_treedef = jax.tree_util.tree_structure(state_shapes(grammar, 1, 1))
    return exported.call(exported.directory(), program, out_treedef)


def run_rounds(
    grammar: gr.Grammar,
    settings: SMCSettings,
    state: SMCState,
    data: Data,
    counts: np.ndarray,
    *,
    key: Array,
    num_inducing: int = 0,
    callback: Callable[[int, int], None] | None = None,
    debug: bool = False,
    record: list | None = None,
) -> tuple[SMCState, dict[str, list]]:
    """Run the rounds given by ``counts`` ``[R, G]`` (absolute counts per series).
    ``record``: a list to append ``(counts [G], state)`` to after each round (host copies)."""
    counts = np.asarray(counts, dtype=np.int32)
    history: dict[str, list] = {name: [] for name in (*_DIAGNOSTICS, "count", "log_evidence")}
    sizes = round_sizes(settings, counts, data.x.shape[1])
    prepare_programs(grammar, settings, data, counts, num_particles=state.noise.shape[1],
                     num_inducing=num_inducing, init=False)
    for r, k in enumerate(jax.random.split(key, len(counts))):
        size = sizes[r]
        state, diag = run_round(grammar, settings, state, data_prefix(data, size),
                                jnp.asarray(counts[r]), key=k, num_inducing=num_inducing)
        if debug:
            check_finite(state)
        for name, value in diag.items():
            history[name].append(np.asarray(value).tolist())
        history["count"].append(counts[r].tolist())
        if record is not None:
            record.append((counts[r], jax.tree_util.tree_map(np.asarray, state)))
        # the running log evidence: its differences are the rounds' predictive log scores
        history["log_evidence"].append(np.asarray(state.log_evidence).tolist())
        if callback is not None:
            callback(r + 1, len(counts))
    return state, history


__all__ = [
    "PAD_MULTIPLE",
    "ROUND_SIZE_STEPS",
    "Data",
    "SMCState",
    "check_finite",
    "compilation_counts",
    "data_prefix",
    "draw_parameters",
    "gradient_probes",
    "init_state",
    "late_step_counts",
    "likelihood_fn",
    "make_data",
    "padded_length",
    "prepare_programs",
    "round_size",
    "round_sizes",
    "run_draws",
    "run_round",
    "run_rounds",
    "smc_round",
    "state_shapes",
]
