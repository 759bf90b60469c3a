"""Batched LAPACK calls against one call per matrix on CPU: speed and stalls (not a test).

jaxlib's CPU LAPACK kernels split a batched call over XLA's thread pool and wait for the
pieces; two such calls running at once on a small pool can wait for each other forever (see
``autogp/evaluator/linalg.py``). autogp therefore loops over the batch on CPU. This script runs
the likelihood's linear algebra both ways, side by side, each design in its own process under
a timeout (a stalled program never returns), and reports seconds per call, the looped-over-
batched ratio and how many designs stalled:

* ``exact_N``: Cholesky of P matrices N x N, the solve for alpha and the inverse the exact
  gradient needs (what the dense likelihood's value and hand-written gradient compute), the
  inverse as L^-1 by a solve against the identity and then W^T W; a third design, ``blocks``,
  is the likelihood's own since 2026-12-04: looped, with the inverse from the Cholesky factor by
  2 x 2 blocks (``linalg.inverse_from_cholesky``, about n^3 flops against 3 n^3);
* ``sparse_N``: the sparse bound's algebra (Cholesky of Kuu, A = L^-1 Kuf, Cholesky of
  I + A A^T and a solve), differentiated by JAX, for P particles, M = 256 inducing points.

    python scripts/bench_linalg.py [--tiny] [--runs 20] [--timeout 120] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

CASES = {  # name -> (kind, particles, n, inducing)
    "exact_144": ("exact", 16, 144, 0),
    "exact_512": ("exact", 16, 512, 0),
    "exact_1000": ("exact", 16, 1000, 0),
    "sparse_1000": ("sparse", 8, 1000, 256),
}
TINY_CASES = {"exact_70": ("exact", 4, 70, 0),  # 70: one level of the blocked inverse
              "sparse_40": ("sparse", 2, 40, 8)}


def _program(kind: str, design: str, particles: int, n: int, inducing: int):
    """The compiled program and its inputs."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from autogp.evaluator import linalg

    if design in ("looped", "blocks"):
        chol, solve = linalg.cholesky, linalg.solve_triangular
    else:
        def solve(L, B, trans=0):
            return jax.scipy.linalg.solve_triangular(L, B, lower=True, trans=trans)

        chol = jnp.linalg.cholesky
    rng = np.random.default_rng(0)
    if kind == "exact":
        X = rng.normal(size=(particles, n, n))
        K = jnp.asarray(X @ np.swapaxes(X, -1, -2) / n + np.eye(n))
        y = jnp.asarray(rng.normal(size=(particles, n, 1)))

        def exact(K, y):
            L = chol(K)
            alpha = solve(L, solve(L, y), trans=1)
            if design == "blocks":
                inv = linalg.inverse_from_cholesky(L)
            else:
                W = solve(L, jnp.broadcast_to(jnp.eye(n, dtype=K.dtype), K.shape))
                inv = jnp.swapaxes(W, -1, -2) @ W
            return jnp.sum(alpha) + jnp.sum(inv) + jnp.sum(jnp.log(jnp.diagonal(L, 0, -2, -1)))

        return jax.jit(exact), (K, y)
    Kuf = jnp.asarray(rng.normal(size=(particles, inducing, n)) / np.sqrt(n))
    Z = rng.normal(size=(particles, inducing, inducing))
    Kuu = jnp.asarray(Z @ np.swapaxes(Z, -1, -2) / inducing + np.eye(inducing))
    y = jnp.asarray(rng.normal(size=(n,)))
    eye = jnp.eye(inducing)

    def sparse(Kuf, Kuu):
        L = chol(Kuu)
        A = solve(L, Kuf)
        LB = chol(eye + A @ jnp.swapaxes(A, -1, -2))
        c = solve(LB, (A @ y)[..., None])
        return jnp.sum(jnp.log(jnp.diagonal(LB, 0, -2, -1))) + jnp.sum(c * c)

    return jax.jit(jax.grad(sparse, argnums=(0, 1))), (Kuf, Kuu)


def _child(spec: dict) -> dict:
    import jax

    jax.config.update("jax_enable_x64", True)
    fn, args = _program(spec["kind"], spec["design"], spec["particles"], spec["n"],
                        spec["inducing"])
    jax.block_until_ready(fn(*args))  # compile
    best = float("inf")
    for _ in range(spec["runs"]):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return {"seconds": best}


def run_case(spec: dict, timeout: float) -> dict:
    """One design of one case in its own process; a stall or crash is an error row."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    try:
        proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)],
                              capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"stalled: no result within {timeout:g} s"}
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "crashed"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiny", action="store_true", help="seconds-long smoke run")
    ap.add_argument("--runs", type=int, default=20, help="executions per design (best is kept)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per design")
    ap.add_argument("--json", type=Path, help="write the report here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(json.loads(args.child))))
        return {}
    cases = TINY_CASES if args.tiny else CASES
    runs = 3 if args.tiny else args.runs
    rows = {}
    print(f"{'case':<12} {'batched s':>10} {'looped s':>10} {'looped/batched':>15} "
          f"{'blocks s':>10} {'blocks/looped':>14}")
    for name, (kind, particles, n, inducing) in cases.items():
        row = {"kind": kind, "particles": particles, "n": n, "inducing": inducing}
        designs = ("batched", "looped", "blocks") if kind == "exact" else ("batched", "looped")
        for design in designs:
            spec = {"kind": kind, "design": design, "particles": particles, "n": n,
                    "inducing": inducing, "runs": runs}
            row[design] = run_case(spec, args.timeout)
        b, lo = row["batched"].get("seconds"), row["looped"].get("seconds")
        bl = row.get("blocks", {}).get("seconds")
        row["looped_over_batched"] = lo / b if b and lo else None
        row["blocks_over_looped"] = bl / lo if bl and lo else None
        rows[name] = row

        def cell(r):
            return "-" if r is None else f"{r['seconds']:.4f}" if "seconds" in r else "STALLED"

        def fmt(v):
            return f"{v:.2f}" if v else "-"

        print(f"{name:<12} {cell(row['batched']):>10} {cell(row['looped']):>10} "
              f"{fmt(row['looped_over_batched']):>15} {cell(row.get('blocks')):>10} "
              f"{fmt(row['blocks_over_looped']):>14}")
    report = {
        "tiny": args.tiny, "runs": runs, "timeout_s": args.timeout, "cases": rows,
        "stalled": {d: sum("error" in r.get(d, {}) for r in rows.values())
                    for d in ("batched", "looped", "blocks")},
        "cpu_count": os.cpu_count(),
    }
    print(f"stalled designs: batched {report['stalled']['batched']}, "
          f"looped {report['stalled']['looped']}, blocks {report['stalled']['blocks']} "
          f"(of {len(rows)} cases each; blocks: exact cases only)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
