"""Benchmark the two designs of an SMC round's rejuvenation side by side (not a test).

* ``one_call_site``: :func:`autogp.inference.rejuvenation.rejuvenate`, the round's design. The
  structure moves and the optimiser steps are steps of one ``lax.scan`` sharing one evaluation
  of the likelihood (the gradient is pulled back on optimiser steps only).
* ``separate``: a ``lax.scan`` of :func:`autogp.inference.moves.structure_move`, then
  :func:`autogp.inference.refine.optimize`. This is the round's design before 2026-12-03: two
  call sites of the likelihood, each compiled on its own.

Both run on the exact GP likelihood of a synthetic monthly series (trend, season 12, noise) with
the default settings' moves and optimiser steps. For each design the script reports tracing and
lowering, XLA compile time, the size of the lowered program, and the run time of one call
(best of ``--repeats``), plus the ratios one_call_site / separate. Compile times are the best of
two compilations per design in alternating order, with JAX's caches cleared in between (the
machine is noisy; a first compile also warms Python's and LLVM's own caches). The script checks
that the two designs give the same particles.

    python scripts/bench_rejuvenation.py [--n 128] [--particles 8] [--json PATH] [--tiny]

``--tiny`` is a smoke test (20 points, 2 particles, 2 moves, 2 steps, depth-2 grammar, one
compile per design); its figures say nothing about speed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: see bench_evaluator.py

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

from autogp.inference import grammar as gr  # noqa: E402
from autogp.inference import moves, periods, refine, rejuvenation, rounds  # noqa: E402
from autogp.inference.settings import RefineSettings, SMCSettings  # noqa: E402

DESIGNS = ("one_call_site", "separate")


def separate(grammar, settings: SMCSettings, particles, loglik, *, key, period_proposal):
    """The design before: moves with their own likelihood call, then ``refine.optimize`` (also
    the reference of ``tests/test_rejuvenation.py``)."""
    def one_move(state, k):
        return moves.structure_move(
            grammar, state, loglik, key=k, replace_prob=settings.replace_prob,
            pick=settings.pick, period_proposal=period_proposal)

    accepted = jnp.zeros((0, particles.noise.shape[0]), bool)
    if settings.structure_moves > 0:
        particles, accepted = jax.lax.scan(
            one_move, particles, jax.random.split(key, settings.structure_moves))
    r = settings.refine
    if r.mode != "optimize" or r.steps == 0:
        return rejuvenation.Rejuvenated(particles, accepted)

    log_posterior = rejuvenation.log_posterior_fn(grammar, loglik, particles.ops)
    done = refine.optimize(
        log_posterior, particles.ops, particles.params, particles.noise,
        optimizer=refine.make_optimizer(r.optimizer, r.learning_rate), steps=r.steps,
        learn_noise=r.learn_noise)
    particles = particles._replace(params=done.params, noise=done.noise,
                                   log_likelihood=done.log_likelihood)
    return rejuvenation.Rejuvenated(particles, accepted)


def _problem(n: int, num_particles: int, max_depth: int):
    rng = np.random.default_rng(0)
    t = np.arange(float(n))
    y = 0.05 * t + np.sin(2 * np.pi * t / 12) + 0.3 * rng.normal(size=n)
    x = (t - t[0]) / (t[-1] - t[0])
    data = rounds.make_data([x], [(y - y.mean()) / y.std()])
    grammar = gr.Grammar.default(max_depth=max_depth)
    loglik = rounds.likelihood_fn(data, jnp.array([n], jnp.int32), num_particles)
    proposal = periods.for_particles(data.period_centers, data.period_log_weights,
                                     num_particles, mix=0.5, scale=0.05)
    ops, params, noise = gr.sample_prior(grammar, num_particles, key=jax.random.key(1))
    particles = moves.ParticleState(ops, params, noise, loglik(ops, params, noise))
    return grammar, loglik, proposal, particles


def _compile(fn, args) -> dict:
    start = time.perf_counter()
    lowered = jax.jit(fn).lower(*args)
    lowered_at = time.perf_counter()
    compiled = lowered.compile()
    done = time.perf_counter()
    return {"lower_s": lowered_at - start, "compile_s": done - lowered_at,
            "hlo_lines": lowered.as_text().count("\n"), "compiled": compiled}


def run(n: int, num_particles: int, repeats: int, tiny: bool) -> dict:
    settings = SMCSettings(num_particles=num_particles)
    if tiny:
        settings = dataclasses.replace(settings, structure_moves=2,
                                       refine=RefineSettings(steps=2))
    depth = 2 if tiny else gr.DEFAULT_MAX_DEPTH
    grammar, loglik, proposal, particles = _problem(n, num_particles, depth)
    key = jax.random.key(7)
    impl = {"one_call_site": rejuvenation.rejuvenate, "separate": separate}

    def program(name):
        return lambda s, k: impl[name](grammar, settings, s, loglik, key=k,
                                       period_proposal=proposal)

    best: dict[str, dict] = {}
    # Alternate: neither design always compiles first (the smoke run compiles each once).
    for order in (DESIGNS,) if tiny else (DESIGNS, DESIGNS[::-1]):
        for name in order:
            jax.clear_caches()
            got = _compile(program(name), (particles, key))
            if name not in best or got["compile_s"] < best[name]["compile_s"]:
                best[name] = got

    results, outputs = {}, {}
    for name in DESIGNS:
        compiled = best[name].pop("compiled")
        outputs[name] = jax.block_until_ready(compiled(particles, key))
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            jax.block_until_ready(compiled(particles, key))
            times.append(time.perf_counter() - start)
        results[name] = {**best[name], "run_s": min(times)}

    a, b = outputs["one_call_site"], outputs["separate"]
    np.testing.assert_array_equal(a.particles.ops, b.particles.ops)
    np.testing.assert_array_equal(a.accepted, b.accepted)
    np.testing.assert_allclose(a.particles.params, b.particles.params, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(a.particles.log_likelihood, b.particles.log_likelihood,
                               rtol=1e-8, atol=1e-10)

    ratios = {f"{k}_ratio": results["one_call_site"][k] / results["separate"][k]
              for k in ("lower_s", "compile_s", "hlo_lines", "run_s")}
    return {
        "tiny": tiny, "n": n, "particles": num_particles,
        "structure_moves": settings.structure_moves, "optimizer_steps": settings.refine.steps,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "backend": jax.default_backend()},
        "designs": results, **ratios, "same_particles": True,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=128, help="data points")
    parser.add_argument("--particles", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per design")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--tiny", action="store_true", help="smoke test on toy inputs")
    args = parser.parse_args()
    n, particles = (20, 2) if args.tiny else (args.n, args.particles)
    res = run(n, particles, 1 if args.tiny else args.repeats, args.tiny)
    if args.tiny:
        print("TINY smoke run: the figures say nothing about speed")
    print(f"N = {n}, {particles} particles, {res['structure_moves']} moves, "
          f"{res['optimizer_steps']} optimiser steps")
    print(f"{'design':15s} {'lower s':>8s} {'compile s':>10s} {'HLO lines':>10s} {'run s':>8s}")
    for name in DESIGNS:
        r = res["designs"][name]
        print(f"{name:15s} {r['lower_s']:8.2f} {r['compile_s']:10.2f} {r['hlo_lines']:10d} "
              f"{r['run_s']:8.4f}")
    print("one_call_site / separate: " + ", ".join(
        f"{k[:-6]} {res[k]:.3f}" for k in ("lower_s_ratio", "compile_s_ratio",
                                            "hlo_lines_ratio", "run_s_ratio")))
    print("same particles from both designs: yes")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
