"""Smoke tests: each script in ``scripts/`` and ``lab/`` runs on tiny inputs with sound output.

The scripts run in subprocesses, all started at once (they spend most of their time compiling,
single-threaded), with this checkout first on the path. A new script needs an entry in
``SMOKE_ARGS`` and a check in ``CHECKS`` (or, if a test file of its own runs it on tiny inputs,
an entry in ``COVERED_ELSEWHERE``), or ``test_every_script_has_a_smoke_run`` fails.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
TIMEOUT_S = 900  # a hang, not a speed limit: under load the compilations take minutes

# script -> its arguments on tiny inputs; {tmp} is the test's scratch folder
SMOKE_ARGS = {
    # stationary trees: the agreement check then holds the regular grid's lag-space path to the
    # naive and specialised designs on whole trees (the every-atom check covers the rest)
    "bench_evaluator.py": ["--tiny", "--atoms", "stationary", "--json",
                           "{tmp}/bench_evaluator.json"],
    "bench_linalg.py": ["--tiny", "--timeout", "300", "--json", "{tmp}/bench_linalg.json"],
    "bench_rejuvenation.py": ["--tiny", "--json", "{tmp}/bench_rejuvenation.json"],
    "bench_smc.py": ["--tiny", "--json", "{tmp}/bench_smc.json"],
    "bench_threefry.py": ["--tiny", "--json", "{tmp}/bench_threefry.json"],
    "m3_report.py": ["{tmp}/m3_run", "--out", "{tmp}/m3_run/report.md"],
    "learn_priors.py": ["--tiny", "--workers", "1", "--objective", "both", "--laplace",
                        "--output", "{tmp}/prior.toml"],
    "make_gallery.py": ["--tiny", "--out", "{tmp}/gallery"],
    "panel_scores.py": ["{tmp}/m3_run", "--baselines", "{tmp}/m3_run/baselines.csv",
                        "--freq-data", "{tmp}/m3_run/freq.csv", "--json", "{tmp}/scores.json"],
}
# script -> the test file that runs it on tiny inputs itself
COVERED_ELSEWHERE = {
    "bench_covariates.py": "test_bench_covariates.py",
    "bench_cv.py": "test_bench_cv.py",
    "bench_long_series.py": "test_bench_long_series.py",
    "bench_revise.py": "test_bench_revise.py",
    "bench_panel.py": "test_bench_panel.py",
    "bench_scaling.py": "test_bench_scaling.py",
    "bench_statespace.py": "test_bench_statespace.py",
}
# lab/ script -> the test file that runs it on tiny inputs
LAB_COVERED = {
    "choose_defaults.py": "test_choose_defaults.py",
    "seed_spread.py": "test_seed_spread.py",
}
LAB = ROOT / "lab"


def test_every_script_has_a_smoke_run():
    found = {path.name for path in SCRIPTS.glob("*.py")}
    assert found == set(SMOKE_ARGS) | set(COVERED_ELSEWHERE), (
        "add a tiny run for each new script to SMOKE_ARGS"
    )
    assert set(CHECKS) == set(SMOKE_ARGS)
    for script, test_file in COVERED_ELSEWHERE.items():
        text = (Path(__file__).parent / test_file).read_text()
        # a tiny run: the script's --tiny flag, or tiny settings the test passes itself
        assert script in text and ("--tiny" in text or "TINY" in text), (script, test_file)


def test_every_lab_script_has_a_smoke_run():
    scripts = {path.name for path in LAB.glob("*.py")
               if 'if __name__ == "__main__":' in path.read_text()}
    assert scripts == set(LAB_COVERED), "add a tiny run for each new lab script to LAB_COVERED"
    for script, test_file in LAB_COVERED.items():
        text = (Path(__file__).parent / test_file).read_text()
        assert f"lab.{script.removesuffix('.py')}" in text and "--tiny" in text, script


# ---- a tiny M3-style run folder, with scores we can compute here ---------------------------
HORIZON, TRAIN_LEN = 6, 24


def _write_m3_run(run_dir: Path) -> dict[str, float]:
    """The files ``m3_report.py`` reads, for two monthly series; returns the expected means
    over the series of AutoGP's sMAPE, MASE (lag 12) and 80% / 95% coverage."""
    run_dir.mkdir(parents=True)
    rng = np.random.default_rng(0)
    train_rows, fc_rows = [], []
    smapes, mases = [], []
    ds = pd.date_range("2000-01-01", periods=TRAIN_LEN + HORIZON, freq="MS")
    for k, uid in enumerate(("s1", "s2")):
        y = 100.0 + 10 * k + 8 * np.sin(2 * np.pi * np.arange(len(ds)) / 12)
        y += rng.normal(scale=2.0, size=len(ds))
        train, test = y[:TRAIN_LEN], y[TRAIN_LEN:]
        # Point forecasts off by +-3; the 80% interval (+-2) misses every point, the 95% one
        # (+-4) covers every point: coverage 0 and 1 whatever the noise.
        point = test + 3.0 * np.where(np.arange(HORIZON) % 2 == 0, 1.0, -1.0)
        smapes.append(np.mean(200 * np.abs(test - point) / (np.abs(test) + np.abs(point))))
        mases.append(np.mean(np.abs(test - point)) / np.mean(np.abs(train[12:] - train[:-12])))
        train_rows += [(uid, d, v) for d, v in zip(ds[:TRAIN_LEN], train, strict=True)]
        for d, v, f in zip(ds[TRAIN_LEN:], test, point, strict=True):
            fc_rows.append((uid, d, v, f, f - 2, f + 2, f - 4, f + 4, v + 1, v - 9, v + 9))
    pd.DataFrame(train_rows, columns=["unique_id", "ds", "y"]).to_csv(
        run_dir / "train.csv", index=False
    )
    columns = ["unique_id", "ds", "y", "AutoGP", "AutoGP-lo-80", "AutoGP-hi-80"]
    columns += ["AutoGP-lo-95", "AutoGP-hi-95", "Naive", "Naive-lo-80", "Naive-hi-80"]
    frame = pd.DataFrame(fc_rows, columns=columns)
    frame.iloc[:, :8].to_csv(run_dir / "forecast.csv", index=False)
    frame[["unique_id", "ds", "Naive", "Naive-lo-80", "Naive-hi-80"]].assign(
        **{"Naive-lo-95": frame["Naive"] - 20, "Naive-hi-95": frame["Naive"] + 20}
    ).to_csv(run_dir / "baselines.csv", index=False)
    pd.DataFrame(
        {
            "unique_id": ["s1", "s1", "s2"],
            "structure": ["PER + LIN", "SE", "PER + LIN"],
            "weight": [0.7, 0.3, 1.0],
        }
    ).to_csv(run_dir / "structures.csv", index=False)
    metrics = {"lpd_per_point": [-2.5, -3.0], "crps_mixture_scaled": [0.02, 0.04]}
    pd.DataFrame({"unique_id": ["s1", "s2"], **metrics}).to_csv(
        run_dir / "metrics.csv", index=False
    )
    (run_dir / "summary.json").write_text(json.dumps({"date": "2000-01-01", "series": 2}))
    pd.DataFrame({"unique_id": ["s1", "s2"], "freq": ["MS", "MS"]}).to_csv(
        run_dir / "freq.csv", index=False
    )
    return {
        "smape": float(np.mean(smapes)),
        "mase": float(np.mean(mases)),
        "coverage_80": 0.0,
        "coverage_95": 1.0,
    }


# ---- running the scripts --------------------------------------------------------------------
def _selected_scripts(session) -> list[str]:
    """The scripts whose smoke test this session runs (all of them unless ``-k`` picks)."""
    names = {item.callspec.params["name"] for item in session.items
             if item.originalname == "test_script_runs_on_tiny_inputs"}
    return sorted(names)


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory):
    """Start every selected script at once; ``runs[name]`` is ``(process, tmp folder, extra
    facts)``."""
    tmp = tmp_path_factory.mktemp("scripts")
    expected = _write_m3_run(tmp / "m3_run")
    facts = {"m3_report.py": expected, "panel_scores.py": expected}
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    started = {}
    for name in _selected_scripts(request.session):
        args = SMOKE_ARGS[name]
        command = [sys.executable, str(SCRIPTS / name)] + [a.format(tmp=tmp) for a in args]
        started[name] = subprocess.Popen(
            command, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
    yield {name: (proc, tmp, facts.get(name)) for name, proc in started.items()}
    for proc in started.values():
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _finite_positive(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def check_bench_evaluator(tmp: Path, output: str, _facts) -> None:
    report = json.loads((tmp / "bench_evaluator.json").read_text())
    assert report["config"]["tiny"] is True and report["config"]["atoms"] == "stationary"
    floor = report["over_dense_floor"]
    assert list(floor) == ["24"] and _finite_positive(floor["24"])
    assert list(report["over_looped_floor"]) == ["24"]
    assert _finite_positive(report["over_looped_floor"]["24"])
    assert _finite_positive(report["grad_over_value"])
    for ratios in (report["speedup_vs_naive"], report["over_specialized"]):
        assert all(_finite_positive(r) for r in ratios.values()), ratios
    assert all(_finite_positive(s) for s in report["compile_s_evaluator"].values())
    # one compiled program for every structure and mask: traced once over the batches
    assert report["traces"] == 1
    assert report["traces_detail"]["new_during_calls"] == [0, 0]
    # the agreement checks assert inside the script; both ran, the every-atom one included
    assert "agreement on airline_24" in output and "agreement on all_atoms" in output
    assert "(a') value rel. diff" in output  # the lag-space path was checked, not only timed
    assert _finite_positive(report["over_dense_floor_regular_grid"]["24"])
    assert "over_dense_floor" in output


def check_bench_linalg(tmp: Path, output: str, _facts) -> None:
    report = json.loads((tmp / "bench_linalg.json").read_text())
    assert report["tiny"] is True and set(report["cases"]) == {"exact_70", "sparse_40"}
    assert report["stalled"]["looped"] == 0 and report["stalled"]["blocks"] == 0
    exact = report["cases"]["exact_70"]
    assert exact["blocks_over_looped"] == pytest.approx(
        exact["blocks"]["seconds"] / exact["looped"]["seconds"])
    for row in report["cases"].values():
        looped = row["looped"]["seconds"]
        assert _finite_positive(looped)
        if "seconds" in row["batched"]:  # the batched design may stall: that is the point
            assert row["looped_over_batched"] == pytest.approx(looped / row["batched"]["seconds"])
        else:
            assert row["batched"]["error"].startswith("stalled")
    assert "looped/batched" in output


def check_bench_rejuvenation(tmp: Path, output: str, _facts) -> None:
    res = json.loads((tmp / "bench_rejuvenation.json").read_text())
    assert res["tiny"] is True and res["same_particles"] is True
    designs = res["designs"]
    assert set(designs) == {"one_call_site", "separate"}
    for row in designs.values():
        for key in ("lower_s", "compile_s", "run_s"):
            assert _finite_positive(row[key]), (key, row)
    for key in ("lower_s", "compile_s", "hlo_lines", "run_s"):
        expected = designs["one_call_site"][key] / designs["separate"][key]
        assert res[f"{key}_ratio"] == pytest.approx(expected)
    assert "same particles from both designs: yes" in output


def check_bench_threefry(tmp: Path, output: str, _facts) -> None:
    res = json.loads((tmp / "bench_threefry.json").read_text())
    assert res["tiny"] is True and res["same_outputs"] is True
    assert {"draw_normal", "draw_split", "proposals"} <= set(res["programs"])
    for name, row in res["programs"].items():
        for design in ("straight", "rolled"):
            assert _finite_positive(row[design]["compile_s"]), (name, row)
            assert _finite_positive(row[design]["run_s"]), (name, row)
        for what in ("compile", "run"):
            expected = row["straight"][f"{what}_s"] / row["rolled"][f"{what}_s"]
            assert row[f"{what}_ratio"] == pytest.approx(expected)
    assert "identical outputs from both designs: yes" in output


def check_bench_smc(tmp: Path, output: str, _facts) -> None:
    res = json.loads((tmp / "bench_smc.json").read_text())
    assert res["tiny"] is True
    for key in ("first_fit_s", "second_fit_s", "round_s", "tutorial_first_fit_warm_cache_s"):
        assert _finite_positive(res[key]), (key, res[key])
    assert res["compilations"] == 1  # the second fit reuses the first fit's compiled round
    for held_out in (res, res["second_fit"], res["raw_scale"]):
        assert held_out["heldout_points"] == 6
        assert 0 <= held_out["heldout_covered80"] <= held_out["heldout_covered95"] <= 6
        assert _finite_positive(held_out["heldout_rmse"])
        assert math.isfinite(held_out["heldout_mean_lpd"])
    assert math.isfinite(res["log_marginal_likelihood"])
    weights = [row["weight"] for row in res["top_structures"]]
    assert 0 < sum(weights) <= 1 + 1e-9
    assert "TINY smoke run" in output
    # The cold-start comparison on its reference design: an empty cache compiles (and says
    # so), the warm run it filled does not, and both forecast the same bytes.
    row = res["cold_start"]["summary"]["airline_tiny"]["a_current"]
    assert row["compiling_shown_cold"] and not row["compiling_shown_warm"]
    assert row["identical_forecasts"]
    assert 0 < row["cold_compile_s"] <= row["cold_fit_s"] < row["cold_wall_s"]
    assert row["cold_wall_ratio"] == row["warm_wall_ratio"] == 1.0
    assert row["cold_peak_rss_mb"] > 50
    assert "cold start: autogp fit in fresh processes" in output


def _markdown_row(report: str, first_cell: str) -> dict[str, str]:
    """The first table row starting with ``first_cell``, keyed by its table's header."""
    header = None
    for line in report.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if header is None:
            header = cells
        elif cells[0] == first_cell:
            return dict(zip(header, cells, strict=True))
    raise AssertionError(f"no table row {first_cell!r} in the report")


def check_make_gallery(tmp: Path, output: str, _facts) -> None:
    import matplotlib.image

    out = tmp / "gallery"
    page = (out / "gallery.md").read_text()
    linked = re.findall(r"!\[[^]]*\]\(([^)]+)\)", page)
    assert sorted(linked) == ["images/components.png", "images/forecast.png",
                              "images/structures.png"]
    for name in ("forecast", "components", "structures", "how-it-works"):
        path = out / "images" / f"{name}.png"
        assert 5_000 < path.stat().st_size < 200_000, (name, path.stat().st_size)
        pixels = matplotlib.image.imread(path)
        assert pixels.ndim == 3 and pixels.shape[1] > 500, (name, pixels.shape)
        assert pixels[..., :3].std() > 0.05, f"{name}.png is blank"  # something is drawn
    # the structure table lists the fit's structures, their weights summing to at most one
    rows = [line.split("|")[1:3] for line in page.splitlines() if line.startswith("| `")]
    weights = [float(w) for _, w in rows]
    assert rows and weights == sorted(weights, reverse=True) and sum(weights) <= 1 + 1e-3
    assert "*Made with `--tiny`" in page and "fitted in" in page  # explain()'s transform line
    assert output.count("wrote ") == 5


def check_m3_report(tmp: Path, output: str, expected: dict[str, float]) -> None:
    run_dir = tmp / "m3_run"
    report = (run_dir / "report.md").read_text()
    row = _markdown_row(report, "AutoGP")
    for key, value in expected.items():
        assert float(row[key]) == pytest.approx(value, rel=1e-3, abs=1e-9), key
    assert float(_markdown_row(report, "Naive")["coverage_80"]) == 1.0  # y +- 9 covers y
    # the top structure of s1 (weight 0.7) and of s2 are both PER + LIN
    assert _markdown_row(report, "PER + LIN")["series"] == "2"
    for png in ("report_smape_by_horizon.png", "report_coverage.png", "report_structures.png"):
        assert (run_dir / png).stat().st_size > 1000, png
    assert "wrote" in output


def check_panel_scores(tmp: Path, output: str, facts) -> None:
    means = json.loads((tmp / "scores.json").read_text())["means"]
    assert set(means) == {"AutoGP", "Naive"}
    for key, value in facts.items():  # MASE at lag 12, from the freq file's "MS"
        assert means["AutoGP"][key] == pytest.approx(value, rel=1e-12), key
    # The Naive column is the truth plus one, inside both of its intervals.
    assert means["Naive"]["coverage_80"] == 1.0 and means["Naive"]["coverage_95"] == 1.0
    assert "series with autogp MASE" in output


def check_learn_priors(tmp: Path, output: str, facts) -> None:
    from autogp.config.learned_prior import read_prior_table
    from autogp.kernels import spec

    for name, objective in (("prior.toml", "evidence"), ("prior_predictive.toml",
                                                         "predictive")):
        table = read_prior_table(tmp / name)
        assert f"objective {objective}" in table.source
        by_name = {g.name: g for g in table.groups}
        # 3 series of each part: yearly and other (season 1), quarterly (4), monthly (12), and
        # the development panel's first three by id
        assert {"season 1, up to 60 points", "season 4", "season 12", "any series"} <= set(
            by_name)
        every = by_name["any series"]
        assert every.series == 15
        base = spec.PARAM_OF_NAME["amp"].prior
        assert every.priors["LIN.amp"] != base  # learned from the fits
        assert set(every.weights) == {"LIN", "GE", "PER", "BM", "PLUS", "TIMES", "CP"}
    assert output.count("groups written to") == 2


CHECKS = {
    "bench_evaluator.py": check_bench_evaluator,
    "bench_linalg.py": check_bench_linalg,
    "bench_rejuvenation.py": check_bench_rejuvenation,
    "bench_smc.py": check_bench_smc,
    "bench_threefry.py": check_bench_threefry,
    "learn_priors.py": check_learn_priors,
    "make_gallery.py": check_make_gallery,
    "m3_report.py": check_m3_report,
    "panel_scores.py": check_panel_scores,
}


@pytest.mark.parametrize("name", sorted(SMOKE_ARGS))
def test_script_runs_on_tiny_inputs(runs, name):
    proc, tmp, facts = runs[name]
    output, _ = proc.communicate(timeout=TIMEOUT_S)
    assert proc.returncode == 0, f"{name} failed:\n{output[-4000:]}"
    CHECKS[name](tmp, output, facts)

