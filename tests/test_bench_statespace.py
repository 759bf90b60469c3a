"""scripts/bench_statespace.py: the Kalman filter is the exact likelihood (against scipy's dense
Gaussian density), state dimensions follow the sum / Kronecker rules, and a tiny run reports
every part."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.helpers import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("bench_statespace")


def test_kalman_filter_equals_the_dense_density(bench):
    out = bench.exactness_check(n=40, seed=3)
    assert set(out) == {"M32", "M12 + M32", "M12 * M12"}
    for row in out.values():
        assert row["abs_diff"] < 1e-8 * abs(row["dense"]), row


@pytest.mark.parametrize(
    ("text", "dim"),
    [
        ("SE", 6),
        ("PER", 16),
        ("LIN + PER * SE", 2 + 16 * 6),  # the sum stacks, the product is a Kronecker product
        ("CP(LIN, M32 * BM)", 2 + 2 * 1),  # a change point keeps both sides' states
        ("WN * PER + CONST", 0 + 1),  # white noise times anything is white noise: no state
        ("(PER + SE) * (PER + LIN)", (16 + 6) * (16 + 2)),
    ],
)
def test_state_dimension(bench, text, dim):
    from autogp.kernels.text import parse

    assert bench.state_dimension(parse(text)) == dim


def test_structure_dims_weights_each_series_equally(bench):
    frame = pd.DataFrame({
        "unique_id": ["a", "a", "b"],
        "structure": ["SE", "PER * SE", "LIN"],  # dims 6, 96, 2
        "weight": [0.9, 0.1, 0.5],  # b's weights need not sum to one
    })
    out = bench.structure_dims(frame)
    # series weights: a: 0.45 (dim 6), 0.05 (dim 96); b: 0.5 (dim 2)
    assert out["dim_weighted_median"] == 2 and out["dim_weighted_q90"] == 6
    assert out["dim_max"] == 96 and out["share_over_64"] == pytest.approx(0.05)


@pytest.fixture(scope="module")
def tiny_run(bench, tmp_path_factory):
    """One tiny run of the whole script (its report and folder), read by the tests below."""
    tmp_path = tmp_path_factory.mktemp("tiny")
    structures = tmp_path / "structures.csv"
    pd.DataFrame({"unique_id": ["a"], "structure": ["PER * SE"], "weight": [1.0]}).to_csv(
        structures, index=False)
    report = bench.main(["--tiny", "--structures", str(structures),
                         "--json", str(tmp_path / "r.json")])
    return report, tmp_path, structures


def test_tiny_run_reports_every_part(tiny_run):
    report, tmp_path, structures = tiny_run
    assert [(row["n"], row["d"]) for row in report["cost"]] == [(50, 2), (50, 4)]
    for row in report["cost"]:
        assert row["kalman_s"] > 0 and row["dense_floor_s"] > 0
        assert row["kalman_over_floor"] == pytest.approx(row["kalman_s"] / row["dense_floor_s"])
    assert report["dims"][str(structures)]["dim_max"] == 96
    assert json.loads((tmp_path / "r.json").read_text())["orders"]["per_harmonics"] == 7


def test_structures_from_a_bench_scaling_report(bench, tmp_path):
    report = {"long": [
        {"unique_id": "half_hourly", "structures": [
            {"structure": "PER + PER * PER", "weight": 0.75},  # 16 + 256
            {"structure": "PER", "weight": 0.25}]},
        {"unique_id": "timed_out", "error": "timeout after 600 s"},
    ]}
    path = tmp_path / "long.json"
    path.write_text(json.dumps(report))
    out = bench.structure_dims(bench.read_structures(path))
    assert out["series"] == 1 and out["dim_max"] == 272 and out["dim_weighted_median"] == 272
    assert out["share_over_64"] == pytest.approx(0.75)
    path.write_text(json.dumps({"long": [{"error": "failed"}]}))
    with pytest.raises(SystemExit, match="no fitted structures"):
        bench.read_structures(path)


def test_tiny_run_times_the_grammar_tree(tiny_run):
    report = tiny_run[0]
    (row,) = report["grammar"]
    assert row["n"] == 64 and row["state_dim"] == 44  # LIN 2 + (PER 2 * 10 + 1) * M32 2
    for key in ("value_ms", "value_and_grad_adjoint_ms", "value_and_grad_autodiff_ms",
                "chandrasekhar_value_ms", "chandrasekhar_value_and_grad_ms",
                "associative_value_ms"):
        assert row[key] > 0
    # the tree is time-invariant: the recursions are the filter's likelihood
    assert row["chandrasekhar_value_rel_diff"] < 1e-10
    assert row["chandrasekhar_grad_rel_diff"] < 1e-8
    # no gain frozen (63 exact steps of 64): the frozen-gain filter is the exact filter, LIN's
    # non-stationary states included
    (row,) = report["steady"]
    assert row["n"] == 64 and row["head_steps"] == 63
    assert row["value_speedup"] == pytest.approx(row["exact_value_ms"] / row["frozen_value_ms"])
    assert row["value_relative_error"] < 1e-10 and row["gradient_relative_error"] < 1e-10
    first, looser = report["per_orders"]
    assert first["value_error"] == 0.0 and first["state_dim"] == 44
    assert looser["per_tolerance"] == 1e-4 and looser["state_dim"] < 44
    assert 0 < looser["value_error"] and 0 < looser["gradient_relative_error"] < 1


def test_associative_scan_is_the_sequential_filter(bench):
    import jax
    import jax.numpy as jnp
    import numpy as np

    from autogp._x64 import x64
    from autogp.kernels.packing import pack
    from autogp.kernels.text import parse
    from autogp.statespace import state_space_log_likelihood
    from autogp.statespace.compose import dense
    from autogp.statespace.filter import Options, marginal, model, observation, transition

    with x64():
        ops, params = pack([parse(bench.GRAMMAR_TREE)])
        noise = jnp.array([np.log(0.05)])
        x = np.linspace(0.0, 1.0, 90)
        y = jnp.asarray(np.sin(9 * x) + x)
        options = Options(44)

        @jax.jit  # op by op, the per-step elements alone are hundreds of small programs
        def parallel_filter(p, s):
            mod = model(jnp.asarray(ops[0]), p[0], s[0], options)
            A = dense(transition(mod, x[1] - x[0], options.harmonics))
            Pt = jax.vmap(lambda t: dense(marginal(mod, t)))(jnp.asarray(x))
            H, r = jax.vmap(lambda t: observation(mod, t))(jnp.asarray(x))
            return bench.parallel_filter(A, Pt, H, r, y)

        parallel = float(parallel_filter(params, noise))
        sequential = float(state_space_log_likelihood(ops, params, noise, x, y, dim=44)[0])
        assert parallel == pytest.approx(sequential, rel=1e-10)


def test_frozen_gain_filter_against_the_exact_filter(bench):
    """50 length scales in the span: the Riccati recursion has converged by step 300, so a gain
    frozen there gives the exact likelihood and gradient. (With no gain frozen it is the exact
    filter: the tiny run's steady row, on the grammar tree.)"""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from autogp._x64 import x64
    from autogp.kernels.packing import pack
    from autogp.kernels.text import parse
    from autogp.statespace import state_space_log_likelihood
    from autogp.statespace.filter import Options, model

    with x64():
        text, n, head, rel, dim = "M32(l=0.02; amp=1.0) + WN(v=0.1)", 1000, 300, 1e-8, 4
        ops, params = pack([parse(text)])
        noise = jnp.array([np.log(0.05)])
        x = np.linspace(0.0, 1.0, n)
        y = jnp.asarray(np.sin(9 * x) + x + 0.1 * np.random.default_rng(0).normal(size=n))
        options = Options(dim)

        def exact(p, s):
            return state_space_log_likelihood(ops, p, s, x, y, dim=dim, regular_grid=True)[0]

        def frozen(p, s):
            mod = model(jnp.asarray(ops[0]), p[0], s[0], options)
            return bench.frozen_gain_log_likelihood(mod, jnp.asarray(x), y, options, head)

        # compiled: op by op, the model and the two scans' gradients are hundreds of programs
        (v0, g0), (v1, g1) = (jax.jit(jax.value_and_grad(f, argnums=(0, 1)))(params, noise)
                              for f in (exact, frozen))
        assert float(v1) == pytest.approx(float(v0), rel=rel)
        for a, b in zip(g0, g1, strict=True):
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=rel,
                                       atol=rel * float(jnp.max(jnp.abs(a))))
