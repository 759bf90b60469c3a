"""Benchmark two CPU lowerings of JAX's Threefry-2x32 hash side by side (not a test).

* ``straight``: :func:`autogp._threefry.threefry2x32`, the 20 rounds written out (what
  ``import autogp`` installs on CPU, and what JAX itself emits on GPU).
* ``rolled``: a ``fori_loop`` over the hash's five blocks of four rounds, as JAX 0.10 lowers it
  on CPU (this script's copy of that design, registered the same way).

Both compute the same bits; the script checks that every program below gives identical
outputs under both. For each design it reports XLA compile time (best of ``--compiles``
compilations, 2 by default, in alternating order, JAX's caches cleared in between) and run time
(best of ``--repeats``) of:

* ``draw_*``: single draws of the sizes the structure moves use (a normal [15, 3], Gumbel
  [15, 15], a key split) and one large draw (normal [1000, 1000]) for the run time;
* ``proposals``: one batch of structure-move proposals (8 particles, depth 3: about 30 random
  call sites);
* ``rejuvenation``: a whole rejuvenation of the SMC round (N = 128, 8 particles, 10 moves, 50
  optimiser steps: ``autogp.inference.rejuvenation.rejuvenate``), the bulk of a round program.

    python scripts/bench_threefry.py [--json PATH] [--tiny]

``--tiny`` is a smoke test (20 points, 2 particles, depth 1, no rejuvenation, one compile per
design); its figures say nothing about speed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: see bench_evaluator.py

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.extend.random import threefry2x32_p  # noqa: E402
from jax.interpreters import mlir  # noqa: E402

jax.config.update("jax_enable_x64", True)

from autogp import _threefry  # noqa: E402
from autogp.inference import moves, rejuvenation  # noqa: E402
from autogp.inference.settings import SMCSettings  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_rejuvenation import _problem  # noqa: E402

DESIGNS = ("straight", "rolled")


def rolled_threefry2x32(key1, key2, x1, x2):
    """Threefry-2x32 with the five blocks of rounds as a ``fori_loop`` (JAX's CPU design)."""
    schedule = [key1, key2, key1 ^ key2 ^ np.uint32(_threefry.PARITY)]
    rotations = [np.array(r, np.uint32) for r in _threefry.ROTATIONS]

    def block(i, state):
        x, ks, rots = state
        for r in rots[0]:
            x0 = x[0] + x[1]
            x = [x0, _threefry.rotate_left(x[1], r) ^ x0]
        x = [x[0] + ks[1], x[1] + ks[2] + (i + 1).astype(np.uint32)]
        return x, ks[1:] + ks[:1], rots[1:] + rots[:1]

    x = [x1 + schedule[0], x2 + schedule[1]]
    x, _, _ = jax.lax.fori_loop(0, 5, block, (x, schedule, rotations))
    return tuple(x)


LOWERINGS = {"straight": _threefry.lowering_of(_threefry.threefry2x32),
             "rolled": _threefry.lowering_of(rolled_threefry2x32)}


def use(design: str) -> None:
    mlir.register_lowering(threefry2x32_p, LOWERINGS[design], platform="cpu")
    jax.clear_caches()


def programs(tiny: bool) -> dict:
    """name -> (function, args)."""
    n, num_particles = (20, 2) if tiny else (128, 8)
    settings = SMCSettings(num_particles=num_particles)
    grammar, loglik, proposal, particles = _problem(n, num_particles, 1 if tiny else 3)
    key = jax.random.key(7)
    big = 30 if tiny else 1000
    progs = {
        "draw_normal": (lambda k: jax.random.normal(k, (15, 3)), (key,)),
        "draw_gumbel": (lambda k: jax.random.gumbel(k, (15, 15)), (key,)),
        "draw_split": (lambda k: jax.random.key_data(jax.random.split(k)), (key,)),
        "draw_large_normal": (lambda k: jax.random.normal(k, (big, big)), (key,)),
        "proposals": (lambda s, k: moves.propose_structure_move(
            grammar, s, key=k, period_proposal=proposal)[0], (particles, key)),
        "rejuvenation": (lambda s, k: rejuvenation.rejuvenate(
            grammar, settings, s, loglik, key=k, period_proposal=proposal),
            (particles, key)),
    }
    if tiny:  # its compile is the bulk of a smoke run; bench_rejuvenation.py --tiny runs it
        del progs["rejuvenation"]
    return progs


def run(tiny: bool, repeats: int, compiles: int = 2, only: list[str] | None = None) -> dict:
    progs = programs(tiny)
    if only:
        progs = {name: progs[name] for name in only}
    best: dict[tuple[str, str], dict] = {}
    orders = [DESIGNS if i % 2 == 0 else DESIGNS[::-1] for i in range(1 if tiny else compiles)]
    for order in orders:
        for design in order:
            use(design)
            for name, (fn, args) in progs.items():
                lowered = jax.jit(fn).lower(*args)
                start = time.perf_counter()
                compiled = lowered.compile()
                compile_s = time.perf_counter() - start
                got = best.get((design, name))
                if got is None or compile_s < got["compile_s"]:
                    best[design, name] = {"compile_s": compile_s, "compiled": compiled}

    results: dict[str, dict] = {name: {} for name in progs}
    for name, (_, args) in progs.items():
        outputs = {}
        for design in DESIGNS:
            compiled = best[design, name]["compiled"]
            outputs[design] = jax.block_until_ready(compiled(*args))
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                jax.block_until_ready(compiled(*args))
                times.append(time.perf_counter() - start)
            results[name][design] = {"compile_s": best[design, name]["compile_s"],
                                     "run_s": min(times)}
        for a, b in zip(*(jax.tree_util.tree_leaves(outputs[d]) for d in DESIGNS), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=name)
        for what in ("compile_s", "run_s"):
            results[name][f"{what[:-2]}_ratio"] = (
                results[name]["straight"][what] / results[name]["rolled"][what])
    use("straight")  # what autogp installed
    return {
        "tiny": tiny, "repeats": repeats, "compiles": len(orders), "programs": results,
        "same_outputs": True,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "backend": jax.default_backend(), "jax": jax.__version__},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per program")
    parser.add_argument("--compiles", type=int, default=2,
                        help="compilations per design and program, in alternating order")
    parser.add_argument("--programs", nargs="+", help="only these programs")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--tiny", action="store_true", help="smoke test on toy inputs")
    args = parser.parse_args()
    if jax.default_backend() != "cpu":
        parser.error("the two designs are CPU lowerings; run on a CPU backend")
    res = run(args.tiny, 1 if args.tiny else args.repeats, args.compiles, args.programs)
    if args.tiny:
        print("TINY smoke run: the figures say nothing about speed")
    print(f"{'program':18s} {'compile straight':>17s} {'rolled':>8s} {'ratio':>6s}   "
          f"{'run straight':>13s} {'rolled':>9s} {'ratio':>6s}")
    for name, r in res["programs"].items():
        print(f"{name:18s} {r['straight']['compile_s']:15.3f} s {r['rolled']['compile_s']:6.3f} s "
              f"{r['compile_ratio']:6.2f}   {r['straight']['run_s'] * 1e3:10.2f} ms "
              f"{r['rolled']['run_s'] * 1e3:6.2f} ms {r['run_ratio']:6.2f}")
    print("identical outputs from both designs: yes")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
