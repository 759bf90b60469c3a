"""The SMC round as compiled programs, and the rounds of a fit.

The round's mathematics are pure functions (:mod:`autogp.inference.smc_round`); this module
names the programs a fit needs (its initial particles, one round per round size, the posterior
draws) and runs them through the one compilation wrapper, :mod:`autogp.inference.exported`
(exported programs kept beside JAX's persistent cache, compiled side by side, or plain
``jax.jit`` where ``AUTOGP_EXPORTED_ROUNDS=0``). Programs take PRNG keys as key data (exported
programs cannot take typed key arrays) and wrap them again inside.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from autogp.inference import exported, moves, rejuvenation, round_steps
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


def _score_on(num_inducing, data, count, ops, params, noise):
    P = ops.shape[0] // data.y.shape[0]
    return round_steps.score(likelihood_fn(data, count, P, num_inducing), ops, params, noise)


def _resample_on_key_data(settings, state, new_ll, key_data):
    return round_steps.reweight_resample(settings, state, new_ll,
                                         key=jax.random.wrap_key_data(key_data))


def _propose_on_key_data(grammar, settings, particles, centers, log_weights, key_data):
    proposal, key_accept = round_steps.propose(grammar, settings, particles, centers,
                                               log_weights, key=jax.random.wrap_key_data(key_data))
    return proposal, jax.random.key_data(key_accept)


def _accept_on_key_data(particles, proposal, ll, key_data):
    return round_steps.accept(particles, proposal, ll, key=jax.random.wrap_key_data(key_data))


def _refine_on_key_data(grammar, settings, num_inducing, particles, data, count, key_data):
    P = particles.noise.shape[0] // data.y.shape[0]
    probes = 0 if num_inducing > 0 else gradient_probes(settings, data.y.shape[-1])
    loglik = likelihood_fn(data, count, P, num_inducing, probes)
    return round_steps.refine(
        grammar, settings, particles, loglik, late_step_counts(settings, data, count, P),
        probe_key=jax.random.wrap_key_data(key_data) if probes > 0 else None)


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


def split_rounds(settings: SMCSettings) -> bool:
    """Whether rounds run as steps split by what depends on the data size
    (:mod:`autogp.inference.round_steps`): where the parameters are optimised; HMC rounds run
    as one program, and so does every round where ``AUTOGP_SPLIT_ROUNDS=0`` (the benchmarks'
    other design; the particles are the same)."""
    return settings.refine.mode == "optimize" and os.environ.get("AUTOGP_SPLIT_ROUNDS") != "0"


def _step_programs(grammar: gr.Grammar, settings: SMCSettings, num_inducing: int, state, data,
                   count, key_data) -> dict[str, exported.Program]:
    """The programs of a split round on ``data`` (already cut to the round's size)."""
    settings = settings.for_programs()
    flat = moves.ParticleState(*(_flat_shape(a) for a in (
        state.ops, state.params, state.noise, state.log_likelihood)))
    proposal = moves.Proposal(flat.ops, flat.params, flat.log_likelihood)
    return {
        "score": exported.Program("round_score", _score_on, (num_inducing,),
                                  (data, count, flat.ops, flat.params, flat.noise)),
        "resample": exported.Program("round_resample", _resample_on_key_data, (settings,),
                                     (state, state.log_likelihood, key_data)),
        "propose": exported.Program("round_propose", _propose_on_key_data, (grammar, settings),
                                    (flat, data.period_centers, data.period_log_weights,
                                     key_data)),
        "accept": exported.Program("round_accept", _accept_on_key_data, (),
                                   (flat, proposal, flat.log_likelihood, key_data)),
        "refine": exported.Program("round_refine", _refine_on_key_data,
                                   (grammar, settings, num_inducing),
                                   (flat, data, count, key_data)),
    }


def _flat_shape(a):
    """``[G, P, ...]`` as ``[G * P, ...]``, for arrays and shapes alike."""
    shape = (a.shape[0] * a.shape[1],) + tuple(a.shape[2:])
    if isinstance(a, jax.ShapeDtypeStruct):
        return jax.ShapeDtypeStruct(shape, a.dtype)
    return a.reshape(shape)


def run_round_steps(grammar: gr.Grammar, settings: SMCSettings, state: SMCState, data: Data,
                    count: Array, *, key: Array, num_inducing: int = 0):
    """One round as its steps (:mod:`autogp.inference.round_steps`): the particles of
    :func:`run_round`, with the structure moves compiled once for every data size."""
    G, P = state.noise.shape
    shapes = exported.shapes((state, data, count, jax.random.key_data(key)))
    programs = _step_programs(grammar, settings, num_inducing, *shapes)
    k_resample, k_moves, k_refine = round_steps.round_keys(key)

    where = exported.directory()
    bound = {}

    def run(name, *args):
        if name not in bound:
            bound[name] = exported.bind(where, programs[name],
                                        jax.tree_util.tree_structure(_OUTPUTS[name]))
        return bound[name](*args)

    flat = [_flat_shape(a) for a in (state.ops, state.params, state.noise)]
    new_ll = run("score", data, count, *flat).reshape(G, P)
    state, ess, resampled = run("resample", state, new_ll, jax.random.key_data(k_resample))
    rejuvenated = (np.ones(G, bool) if settings.rejuvenate == "always"
                   else np.asarray(resampled))
    diagnostics = {"ess": ess, "resampled": resampled, "acceptance": np.zeros(())}
    if not rejuvenated.any():  # nothing would be kept
        return state, diagnostics
    before = moves.ParticleState(*(_flat_shape(a) for a in (
        state.ops, state.params, state.noise, state.log_likelihood)))
    particles = before
    accepted = []
    for k in rejuvenation.move_keys(settings, k_moves)[:settings.structure_moves]:
        proposal, key_accept = run("propose", particles, data.period_centers,
                                   data.period_log_weights, jax.random.key_data(k))
        ll = run("score", data, count, proposal.ops, proposal.params, particles.noise)
        particles, flags = run("accept", particles, proposal, ll, key_accept)
        accepted.append(flags)
    if settings.refine.steps > 0:
        particles = run("refine", particles, data, count, jax.random.key_data(k_refine))
    if accepted:
        diagnostics["acceptance"] = jnp.mean(jnp.stack(accepted).astype(float))
    if not rejuvenated.all():
        particles = round_steps.kept(jnp.asarray(rejuvenated), particles, before)
    unflat = jax.tree_util.tree_map(lambda a: a.reshape((G, P) + a.shape[1:]), particles)
    return state._replace(**unflat._asdict()), diagnostics


#: The structure of each step program's result (``exported.bind`` needs it without tracing).
_OUTPUTS = {
    "score": 0,
    "resample": (SMCState(*range(6)), 0, 0),
    "propose": (moves.Proposal(0, 0, 0), 0),
    "accept": (moves.ParticleState(0, 0, 0, 0), 0),
    "refine": moves.ParticleState(0, 0, 0, 0),
}


def run_round(grammar: gr.Grammar, settings: SMCSettings, state: SMCState, data: Data,
              count: Array, *, key: Array, num_inducing: int = 0):
    """One compiled round (:func:`autogp.inference.smc_round.smc_round`), as its steps where
    :func:`split_rounds`."""
    if split_rounds(settings):
        return run_round_steps(grammar, settings, state, data, count, key=key,
                               num_inducing=num_inducing)
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
    sizes = sorted(set(round_sizes(settings, counts, data.x.shape[1])))
    if split_rounds(settings):
        # In the order the first round needs them (the proposals, the largest, second, so that
        # they compile beside the others), then the later sizes' likelihood and optimiser.
        steps = [_step_programs(grammar, settings, num_inducing, state,
                                exported.shapes(data_prefix(data, size)), count, key_data)
                 for size in sizes]
        first = (["score", "propose", "resample", "accept"] if settings.structure_moves > 0
                 else ["score", "resample"])
        per_size = ["score", "refine"] if settings.refine.steps > 0 else ["score"]
        programs += [steps[0][name] for name in first + per_size[1:]]
        programs += [size_steps[name] for size_steps in steps[1:] for name in per_size]
    else:
        programs += [_round_program(grammar, settings, num_inducing, state,
                                    exported.shapes(data_prefix(data, size)), count, key_data)
                     for size in sizes]
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
    """Programs compiled (or loaded) by this process, one per distinct key: ``round`` those that
    depend on a round's data size (a whole round, or a split round's optimiser), ``moves`` the
    split rounds' structure proposals (one for every size), ``draws`` the posterior draws. A
    fit that reuses the compiled programs leaves the counts unchanged."""
    return {"round": exported.programs("smc_round") + exported.programs("round_refine"),
            "moves": exported.programs("round_propose"), "draws": exported.programs("draws")}


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
    "run_round_steps",
    "smc_round",
    "split_rounds",
    "state_shapes",
]
