"""Experiment scoring (autogp.experiments.scoring), statsforecast baselines and the M3 report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate
from scipy.special import ndtr

from autogp.experiments.scoring import (
    horizon_coverage,
    horizon_errors,
    level_taus,
    mixture_crps,
    pinball_loss,
    quantiles_from_frame,
    scaled_crps,
    score_forecasts,
    summary_table,
    to_markdown_table,
)
from tests.helpers import load_script

ROOT = Path(__file__).resolve().parents[1]
M3_MONTHLY = ROOT / "benchmarks" / "data" / "m3_monthly.csv.gz"


# ---- mixture CRPS ----------------------------------------------------------------------------
def _crps_by_quadrature(w, mu, sd, y):
    """CRPS = integral of (F(x) - 1{x >= y})^2, F the mixture CDF (point masses where sd = 0)."""
    w = w / w.sum()

    gaussian = sd > 0
    safe_sd = np.where(gaussian, sd, 1.0)

    def cdf(x):
        components = np.where(gaussian, ndtr((x - mu) / safe_sd), (x >= mu).astype(float))
        return float(np.sum(w * components))

    spread = np.max(sd) if np.any(sd > 0) else 1.0
    lo = min(y, mu.min()) - 12 * spread - 1
    hi = max(y, mu.max()) + 12 * spread + 1
    breaks = sorted({float(y), *map(float, mu)})
    edges = [lo, *breaks, hi]
    total = 0.0
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        if b > a:
            step = 0.0 if b <= y else 1.0  # 1{x >= y} on (a, b)
            val, _ = integrate.quad(
                lambda x, step=step: (cdf(x) - step) ** 2, a, b, epsabs=1e-12, limit=200
            )
            total += val
    return total


def _gaussian_crps(mu, sd, y):
    """Closed form CRPS of N(mu, sd^2) (Gneiting and Raftery, 2007)."""
    z = (y - mu) / sd
    pdf = np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)
    return sd * (z * (2 * ndtr(z) - 1) + 2 * pdf - 1 / np.sqrt(np.pi))


def test_mixture_crps_single_gaussian_matches_closed_form():
    mu = np.array([[0.0, 1.5, -2.0, 10.0]])
    sd = np.array([[1.0, 0.3, 2.5, 4.0]])
    y = np.array([0.0, 1.0, 3.0, -5.0])
    got = mixture_crps(np.array([1.0]), mu, sd, y)
    np.testing.assert_allclose(got, _gaussian_crps(mu[0], sd[0], y), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mixture_crps_matches_numerical_integration(seed):
    rng = np.random.default_rng(seed)
    P, M = 4, 3
    w = rng.uniform(0.1, 1.0, P)
    mu = rng.normal(0, 2, (P, M))
    sd = rng.uniform(0.2, 2.0, (P, M))
    y = rng.normal(0, 2, M)
    got = mixture_crps(w, mu, sd, y)
    want = [_crps_by_quadrature(w, mu[:, m], sd[:, m], y[m]) for m in range(M)]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_mixture_crps_with_point_masses():
    # Two point masses: sum w|y - x| - 1/2 sum w w |x_i - x_j|.
    w = np.array([0.25, 0.75])
    x = np.array([[1.0], [3.0]])
    got = mixture_crps(w, x, np.zeros_like(x), np.array([2.5]))
    want = 0.25 * 1.5 + 0.75 * 0.5 - 0.5 * 2 * 0.25 * 0.75 * 2.0
    np.testing.assert_allclose(got, [want], rtol=1e-12)
    # A point mass mixed with a Gaussian, against quadrature.
    mu, sd, y = np.array([[0.5], [2.0]]), np.array([[0.0], [1.2]]), np.array([1.0])
    got = mixture_crps(np.array([0.4, 0.6]), mu, sd, y)
    want = _crps_by_quadrature(np.array([0.4, 0.6]), mu[:, 0], sd[:, 0], y[0])
    np.testing.assert_allclose(got, [want], rtol=1e-6)


def test_mixture_crps_normalises_weights_and_rejects_bad_shapes():
    mu, sd, y = np.array([[0.0], [1.0]]), np.array([[1.0], [2.0]]), np.array([0.3])
    np.testing.assert_allclose(
        mixture_crps(np.array([2.0, 6.0]), mu, sd, y),
        mixture_crps(np.array([0.25, 0.75]), mu, sd, y),
    )
    with pytest.raises(ValueError, match="shapes"):
        mixture_crps(np.array([1.0]), mu, sd, y)
    with pytest.raises(ValueError, match="non-negative"):
        mixture_crps(np.array([1.0, 1.0]), mu, -sd, y)


# ---- quantile scores -------------------------------------------------------------------------
def test_level_taus():
    assert level_taus([50, 80, 90, 95]) == [0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.975]
    assert level_taus([]) == [0.5]
    with pytest.raises(ValueError, match="between 0 and 100"):
        level_taus([100])


def test_pinball_loss():
    np.testing.assert_allclose(pinball_loss([1.0, 1.0], [0.0, 2.0], 0.9), [0.9, 0.1])


def test_scaled_crps_by_hand():
    y = np.array([1.0, 3.0])
    quantiles = {0.1: np.array([0.0, 1.0]), 0.5: np.array([1.0, 2.0]), 0.9: np.array([2.0, 4.0])}
    # pinball: tau .5 -> [0, .5]; tau .1 -> [.1, .2]; tau .9 -> [.1, .1]. Mean 1/6, times 2 = 1/3,
    # over mean |y| = 2.
    assert scaled_crps(y, quantiles) == pytest.approx(1.0 / 6.0, rel=1e-14)
    assert np.isnan(scaled_crps(np.zeros(2), quantiles))


def test_quantile_crps_of_the_m3_levels_is_two_thirds_of_the_exact_crps():
    """Why the M3 report's two CRPS figures differ: for a calibrated Gaussian forecast the mean
    pinball loss at tau is sd * phi(z_tau), so the quantile score over the 9 taus of levels
    50/80/90/95 is 2 * mean(phi(z_tau)) * sd, while the exact CRPS is sd / sqrt(pi): a ratio of
    0.673, because 6 of the 9 taus sit in the tails where the loss is small."""
    from scipy.stats import norm

    taus = level_taus([50, 80, 90, 95])
    expected = 2.0 * np.mean(norm.pdf(norm.ppf(taus))) * np.sqrt(np.pi)
    assert expected == pytest.approx(0.673, abs=1e-3)
    rng = np.random.default_rng(0)
    sd = rng.uniform(0.5, 2.0, 40_000)
    mu = rng.normal(size=sd.size) + 10.0
    y = mu + sd * rng.normal(size=sd.size)
    quantile = scaled_crps(y, {t: mu + sd * norm.ppf(t) for t in taus})
    exact = np.mean(mixture_crps(np.ones(1), mu[None], sd[None], y)) / np.mean(np.abs(y))
    assert quantile / exact == pytest.approx(expected, rel=0.02)


def test_quantiles_from_frame_reads_columns_and_names_missing_ones():
    fc = pd.DataFrame({"M": [1.0], "M-lo-97.5": [0.0], "M-hi-97.5": [2.0]})
    q = quantiles_from_frame(fc, "M", [97.5])
    assert list(q) == [0.0125, 0.5, 0.9875]
    with pytest.raises(ValueError, match="'M-lo-80'"):
        quantiles_from_frame(fc, "M", [80])


# ---- panel scores ----------------------------------------------------------------------------
def _toy_panel():
    """Two series with trend 1/step and a seasonal pattern: y_t - y_{t-12} = 12 throughout.

    Model ``Perfect`` forecasts the truth with intervals +-1 (80%) and +-2 (95%); ``SNaive`` is
    the seasonal-naive forecast y_{t-12} (error 12 at every step) with intervals +-5 and +-20.
    """
    season = np.array([3, 5, 9, 4, 2, 7, 8, 1, 6, 10, 11, 0], dtype=np.float64)
    train_rows, test_rows = [], []
    for uid, offset in (("A", 100.0), ("B", 300.0)):
        t = np.arange(48)
        y = offset + t + season[t % 12]
        ds = pd.date_range("2000-01-01", periods=48, freq="MS")
        train_rows.append(pd.DataFrame({"unique_id": uid, "ds": ds[:36], "y": y[:36]}))
        snaive = y[24:36]
        test_rows.append(
            pd.DataFrame(
                {
                    "unique_id": uid,
                    "ds": ds[36:],
                    "y": y[36:],
                    "Perfect": y[36:],
                    "Perfect-lo-95": y[36:] - 2,
                    "Perfect-lo-80": y[36:] - 1,
                    "Perfect-hi-80": y[36:] + 1,
                    "Perfect-hi-95": y[36:] + 2,
                    "SNaive": snaive,
                    "SNaive-lo-95": snaive - 20,
                    "SNaive-lo-80": snaive - 5,
                    "SNaive-hi-80": snaive + 5,
                    "SNaive-hi-95": snaive + 20,
                }
            )
        )
    return pd.concat(test_rows, ignore_index=True), pd.concat(train_rows, ignore_index=True)


def test_score_forecasts_by_hand():
    fc, train = _toy_panel()
    scores = score_forecasts(fc, train, ["Perfect", "SNaive"], [80, 95]).set_index(
        ["unique_id", "model"]
    )
    assert list(scores.columns) == [
        "smape",
        "mase",
        "scaled_crps",
        "coverage_80",
        "width_80",
        "coverage_95",
        "width_95",
    ]
    for uid in ("A", "B"):
        y = fc.loc[fc.unique_id == uid, "y"].to_numpy()
        scale = np.mean(np.abs(y))
        perfect, snaive = scores.loc[(uid, "Perfect")], scores.loc[(uid, "SNaive")]
        assert perfect["smape"] == 0.0 and perfect["mase"] == 0.0
        assert perfect["coverage_80"] == 1.0 and perfect["coverage_95"] == 1.0
        assert perfect["width_80"] == pytest.approx(2.0 / scale, rel=1e-14)
        assert perfect["width_95"] == pytest.approx(4.0 / scale, rel=1e-14)
        # taus .025/.1/.5/.9/.975 lose .05/.1/0/.1/.05 at every point: mean .06, doubled .12.
        assert perfect["scaled_crps"] == pytest.approx(0.12 / scale, rel=1e-12)

        assert snaive["mase"] == 1.0  # the seasonal-naive error equals the in-sample scale
        want_smape = 200 * np.mean(12 / (y + (y - 12)))
        assert snaive["smape"] == pytest.approx(want_smape, rel=1e-14)
        assert snaive["coverage_80"] == 0.0 and snaive["coverage_95"] == 1.0
        assert snaive["width_80"] == pytest.approx(10.0 / scale, rel=1e-14)
        assert snaive["width_95"] == pytest.approx(40.0 / scale, rel=1e-14)


def test_score_forecasts_partial_coverage_and_interval_ends():
    train = pd.DataFrame({"unique_id": "S", "ds": range(14), "y": np.arange(14.0)})
    fc = pd.DataFrame(
        {
            "unique_id": "S",
            "ds": range(14, 18),
            "y": [10.0, 10.0, 10.0, 10.0],
            "M": [10.0, 10.0, 10.0, 10.0],
            "M-lo-90": [9.0, 10.0, 10.5, 5.0],  # inside, on the end, above, inside
            "M-hi-90": [11.0, 12.0, 12.0, 9.5],  # ..., ..., ..., below
        }
    )
    row = score_forecasts(fc, train, ["M"], [90]).iloc[0]
    assert row["coverage_90"] == 0.5
    assert row["width_90"] == pytest.approx(np.mean([2.0, 2.0, 1.5, 4.5]) / 10.0)


def test_score_forecasts_names_missing_columns_and_series():
    fc, train = _toy_panel()
    with pytest.raises(ValueError, match="'SNaive-lo-90'"):
        score_forecasts(fc, train, ["SNaive"], [90])
    with pytest.raises(ValueError, match="'y'"):
        score_forecasts(fc.drop(columns="y"), train, ["SNaive"], [80])
    with pytest.raises(ValueError, match="no training rows"):
        score_forecasts(fc, train[train.unique_id == "A"], ["SNaive"], [80])


def test_horizon_errors_and_summary_table():
    fc, train = _toy_panel()
    errors = horizon_errors(fc, ["Perfect", "SNaive"])
    assert list(errors.index) == list(range(1, 13)) and errors.index.name == "horizon"
    assert (errors["Perfect"] == 0).all()
    y = fc["y"].to_numpy().reshape(2, 12)
    np.testing.assert_allclose(errors["SNaive"], np.mean(200 * 12 / (2 * y - 12), axis=0))

    scores = score_forecasts(fc, train, ["Perfect", "SNaive"], [80, 95])
    table = summary_table(scores, [80, 95])
    assert list(table.index) == ["Perfect", "SNaive"]
    assert table.loc["SNaive", "mase"] == 1.0
    want = scores.loc[scores.model == "SNaive", "smape"].mean()
    assert table.loc["SNaive", "smape"] == pytest.approx(want)

    md = to_markdown_table(table).splitlines()
    assert md[0] == (
        "| model | smape | mase | scaled_crps | coverage_80 | coverage_95 | width_80 | width_95 |"
    )
    assert md[1] == "|---|---:|---:|---:|---:|---:|---:|---:|"
    assert md[3].startswith("| SNaive | ") and "| 1.000 |" in md[3]


def test_horizon_coverage_counts_closed_intervals_per_step():
    fc = pd.DataFrame(
        {
            "unique_id": ["A", "A", "A", "B", "B", "B"],
            "y": [1.0, 2.0, 3.0, 1.0, 2.0, 3.0],
            "M-lo-90": [0.0, 2.0, 3.5, 1.5, 0.0, 0.0],  # A: inside, on the end, above
            "M-hi-90": [2.0, 4.0, 9.0, 2.0, 2.0, 2.9],  # B: below, on the end, above
        }
    )
    table = horizon_coverage(fc, ["M"], 90)
    assert list(table.index) == [1, 2, 3] and table.index.name == "horizon"
    np.testing.assert_array_equal(table["M"], [0.5, 1.0, 0.0])
    with pytest.raises(ValueError, match="'M-hi-95'"):
        horizon_coverage(fc.rename(columns={"M-lo-90": "M-lo-95"}), ["M"], 95)


# ---- statsforecast baselines -----------------------------------------------------------------
def test_statsforecast_baselines_on_m3_series():
    pytest.importorskip("statsforecast")
    if not M3_MONTHLY.exists():
        pytest.skip(f"{M3_MONTHLY} is not available")
    from autogp.experiments.baselines import statsforecast_forecasts

    data = pd.read_csv(M3_MONTHLY, parse_dates=["ds"])
    ids = list(pd.unique(data["unique_id"]))[:3]
    train = data[(data.split == "train") & data.unique_id.isin(ids)][["unique_id", "ds", "y"]]
    fc, seconds = statsforecast_forecasts(
        train, 18, [80.0, 97.5], n_jobs=1, models=("AutoETS", "SeasonalNaive")
    )
    assert set(seconds) == {"AutoETS", "SeasonalNaive"}
    assert all(s >= 0 for s in seconds.values())
    assert list(fc.columns) == [
        "unique_id",
        "ds",
        "AutoETS",
        "AutoETS-lo-97.5",
        "AutoETS-lo-80",
        "AutoETS-hi-80",
        "AutoETS-hi-97.5",
        "SeasonalNaive",
        "SeasonalNaive-lo-97.5",
        "SeasonalNaive-lo-80",
        "SeasonalNaive-hi-80",
        "SeasonalNaive-hi-97.5",
    ]
    assert len(fc) == 3 * 18 and fc.notna().all().all()
    for uid in ids:
        history = train.loc[train.unique_id == uid].sort_values("ds")
        future = fc.loc[fc.unique_id == uid].sort_values("ds")
        assert future["ds"].iloc[0] == history["ds"].iloc[-1] + pd.offsets.MonthBegin(1)
        path = np.concatenate([history["y"].to_numpy(), future["SeasonalNaive"].to_numpy()])
        n = len(history)
        np.testing.assert_array_equal(path[n:], path[n - 12 : len(path) - 12])
        assert (future["SeasonalNaive-lo-80"] < future["SeasonalNaive"]).all()

    with pytest.raises(ValueError, match="unknown baseline model"):
        statsforecast_forecasts(train, 18, [80], n_jobs=1, models=("NoSuchModel",))


def test_baselines_on_a_split_use_each_series_own_season():
    """``autogp run --baselines``: a quarterly, a monthly and a trading-day series (numbered
    days, so the panel's stamps mix dates and numbers) get seasonal-naive forecasts that repeat
    their own last 4, 12 and 5 values, aligned with each series' held-out stamps."""
    pytest.importorskip("statsforecast")
    from autogp.experiments.comparison import baselines_on_split

    rng = np.random.default_rng(0)
    lengths = {"Q": 30, "M": 40, "D": 33}
    seasons = {"Q": 4, "M": 12, "D": 5}
    stamps = {
        "Q": pd.date_range("2000-01-01", periods=lengths["Q"] + 3, freq="QS"),
        "M": pd.date_range("2000-01-01", periods=lengths["M"] + 3, freq="MS"),
        "D": pd.Index(np.arange(1, lengths["D"] + 4)),
    }
    values = {uid: rng.normal(size=n) + 10.0 for uid, n in lengths.items()}
    train = pd.concat([pd.DataFrame({"unique_id": uid, "ds": stamps[uid][:n], "y": values[uid]})
                       for uid, n in lengths.items()], ignore_index=True)
    scored = pd.concat([pd.DataFrame({"unique_id": uid, "ds": stamps[uid][n:], "y": 0.0})
                        for uid, n in lengths.items()], ignore_index=True)
    fc, seconds = baselines_on_split(train, scored, [80], seasons)
    assert set(seconds) == {"AutoETS", "AutoARIMA", "AutoTheta", "SeasonalNaive"}
    for uid, n in lengths.items():
        rows = fc[fc.unique_id == uid]
        assert list(rows["ds"]) == list(stamps[uid][n:])
        m = seasons[uid]
        want = values[uid][n - m:][np.arange(3) % m]
        np.testing.assert_allclose(rows["SeasonalNaive"], want, rtol=0, atol=1e-12)
        assert rows.drop(columns=["ds"]).notna().all().all()


def test_baselines_by_season_take_series_longer_than_pandas_month_range():
    """Placeholder stamps must hold a long series (4,000 daily values would run past pandas'
    last date as month starts); the forecast repeats the last week."""
    pytest.importorskip("statsforecast")
    from autogp.experiments.baselines import statsforecast_by_season

    y = np.random.default_rng(1).normal(size=4000)
    train = pd.DataFrame({"unique_id": "long", "ds": np.arange(4000), "y": y})
    fc, _ = statsforecast_by_season(train, 10, [80], {"long": 7}, n_jobs=1,
                                    models=("SeasonalNaive",))
    np.testing.assert_allclose(fc["SeasonalNaive"], y[-7:][np.arange(10) % 7], rtol=0,
                               atol=1e-12)


# ---- the report script -----------------------------------------------------------------------
def _load_report_script():
    return load_script("m3_report")


def _write_run_dir(run_dir: Path, *, optional: bool) -> None:
    rng = np.random.default_rng(0)
    train_rows, autogp_rows, baseline_rows = [], [], []
    for uid in ("S1", "S2", "S3"):
        ds = pd.date_range("1990-01-01", periods=42, freq="MS")
        y = 100 + 10 * np.sin(np.arange(42) * np.pi / 6) + rng.normal(0, 1, 42)
        train_rows.append(pd.DataFrame({"unique_id": uid, "ds": ds[:36], "y": y[:36]}))
        truth, guess = y[36:], y[24:30]
        frame = {"unique_id": uid, "ds": ds[36:], "y": truth, "AutoGP": guess + 0.5}
        naive = {"unique_id": uid, "ds": ds[36:], "y": truth, "SeasonalNaive": guess}
        for level, half in ((80, 2.0), (95, 4.0)):
            frame[f"AutoGP-lo-{level}"], frame[f"AutoGP-hi-{level}"] = guess - half, guess + half
            naive[f"SeasonalNaive-lo-{level}"] = guess - 2 * half
            naive[f"SeasonalNaive-hi-{level}"] = guess + 2 * half
        autogp_rows.append(pd.DataFrame(frame))
        baseline_rows.append(pd.DataFrame(naive))
    pd.concat(train_rows).to_csv(run_dir / "train.csv", index=False)
    pd.concat(autogp_rows).to_csv(run_dir / "forecast.csv", index=False)
    if not optional:
        return
    pd.DataFrame(
        {
            "unique_id": ["S1", "S2", "S3"],
            "lpd_per_point": [-1.0, -2.0, -6.0],
            "crps_mixture_scaled": [0.1, 0.2, 3.0],
        }
    ).to_csv(run_dir / "metrics.csv", index=False)
    pd.concat(baseline_rows).to_csv(run_dir / "baselines.csv", index=False)
    pd.DataFrame(
        {
            "unique_id": ["S1", "S1", "S2", "S3", "S3"],
            "structure": ["PER", "LIN + PER", "PER", "SE", "PER"],
            "weight": [0.7, 0.3, 1.0, 0.1, 0.9],
        }
    ).to_csv(run_dir / "structures.csv", index=False)
    summary = {"date": "2025-01-01", "machine": "test box", "command": "autogp run", "extra": 1}
    (run_dir / "summary.json").write_text(json.dumps(summary))


def test_report_script_writes_report_and_plots(tmp_path):
    report = _load_report_script()
    _write_run_dir(tmp_path, optional=True)
    assert report.main([str(tmp_path)]) == 0
    text = (tmp_path / "report.md").read_text()
    assert "| model | smape | mase | scaled_crps | coverage_80 | coverage_95 |" in text
    assert "| AutoGP |" in text and "| SeasonalNaive |" in text
    assert "test box" in text and "`autogp run`" in text
    assert "| PER | 3 |" in text  # the top structure of all three series
    # the 95% intervals: AutoGP's +-4 around last year's values, seasonal naive's +-8
    fc = pd.read_csv(tmp_path / "forecast.csv")
    inside = (fc["y"] - fc["AutoGP-lo-95"]).between(0, 8).to_numpy().reshape(3, 6).mean(axis=0)
    assert "| AutoGP | " + " | ".join(f"{v:.3f}" for v in inside) + " |" in text
    # mean, median and max over the series of the mixture scores in metrics.csv
    assert "| lpd_per_point | -3 | -2 | -1 |" in text
    assert "| crps_mixture_scaled | 1.1 | 0.2 | 3 |" in text
    for name in ("smape_by_horizon", "coverage", "structures"):
        assert (tmp_path / f"report_{name}.png").stat().st_size > 0


def test_report_script_without_optional_files(tmp_path):
    report = _load_report_script()
    _write_run_dir(tmp_path, optional=False)
    out = tmp_path / "sub" / "r.md"
    assert report.main([str(tmp_path), "--out", str(out)]) == 0
    text = out.read_text()
    assert "| AutoGP |" in text and "SeasonalNaive" not in text
    assert not (tmp_path / "sub" / "r_structures.png").exists()


def test_lognormal_mixture_crps_matches_numerical_integration():
    from scipy import integrate, stats

    from autogp.experiments.scoring import lognormal_mixture_crps

    rng = np.random.default_rng(11)
    w = np.array([0.2, 0.5, 0.3])
    mu = rng.normal(5.0, 0.3, size=(3, 6))
    sd = rng.uniform(0.05, 0.4, size=(3, 6))
    sd[:, 4:] = [[0.8, 1.0], [2.0, 1.5], [3.0, 2.5]]  # wide in log units: decades of spread
    y = np.exp(rng.normal(5.0, 0.4, size=6))
    y[3] = np.exp(9.0)  # far above every component
    y[5] = -3.0  # below the support
    got = lognormal_mixture_crps(w, mu, sd, y)
    for m in range(6):

        def cdf(x, m=m):
            return sum(
                w[p] * stats.lognorm.cdf(x, s=sd[p, m], scale=np.exp(mu[p, m])) for p in range(3)
            )

        def sf(x, m=m):
            return sum(
                w[p] * stats.lognorm.sf(x, s=sd[p, m], scale=np.exp(mu[p, m])) for p in range(3)
            )

        # quad in x, split at the component medians so it sees where the mass is
        knots = np.sort(np.exp(mu[:, m]))
        if y[m] > 0:
            below = integrate.quad(lambda x: cdf(x) ** 2, 0, y[m], limit=500)[0]
            cuts = [y[m], *knots[knots > y[m]], np.inf]
        else:
            below = -y[m]  # (0 - 1)^2 on [y, 0)
            cuts = [0.0, *knots, np.inf]
        above = sum(
            integrate.quad(lambda x: sf(x) ** 2, a, b, limit=500)[0]
            for a, b in zip(cuts[:-1], cuts[1:], strict=True)
        )
        assert got[m] == pytest.approx(below + above, rel=2e-4), m


def test_mase_scale_of_a_panel_mixing_dates_and_day_numbers(tmp_path):
    """A panel read back from CSV with a monthly series (dates) and a trading-day series
    (day numbers 1..30) has every stamp as text; the day numbers must sort as numbers
    ("10" after "9"), so the MASE scale is the mean |y_t - y_{t-5}| in day order."""
    rng = np.random.default_rng(3)
    days = np.arange(1, 31)
    gold = np.cumsum(rng.normal(size=30)) + 50.0
    months = pd.date_range("2001-01-01", periods=30, freq="MS").strftime("%Y-%m-%d")
    airline = 100.0 + np.arange(30.0) ** 1.5
    rows = [pd.DataFrame({"unique_id": "gold", "ds": days.astype(str), "y": gold}),
            pd.DataFrame({"unique_id": "air", "ds": months, "y": airline})]
    # Shuffled rows, then through a CSV file, as scripts/panel_scores.py reads them.
    train = pd.concat(rows, ignore_index=True).sample(frac=1.0, random_state=0)
    train.to_csv(tmp_path / "train.csv", index=False)
    train = pd.read_csv(tmp_path / "train.csv")
    assert train["ds"].dtype == object
    fc = pd.DataFrame({"unique_id": ["gold", "gold", "air", "air"],
                       "ds": ["31", "32", "2003-07-01", "2003-08-01"],
                       "y": [gold[-1] + 2.0, gold[-1] - 1.0, 300.0, 310.0],
                       "M": [gold[-1], gold[-1], 290.0, 290.0]})
    fc["M-lo-80"], fc["M-hi-80"] = fc["M"] - 1.0, fc["M"] + 1.0
    scores = score_forecasts(fc, train, ["M"], [80], {"gold": 5, "air": 12}).set_index(
        "unique_id")
    gold_scale = np.mean([abs(gold[t] - gold[t - 5]) for t in range(5, 30)])
    air_scale = np.mean([abs(airline[t] - airline[t - 12]) for t in range(12, 30)])
    assert scores.loc["gold", "mase"] == pytest.approx(np.mean([2.0, 1.0]) / gold_scale,
                                                       rel=1e-12)
    assert scores.loc["air", "mase"] == pytest.approx(np.mean([10.0, 20.0]) / air_scale,
                                                      rel=1e-12)


def test_training_stamps_that_are_neither_numbers_nor_dates_are_named():
    train = pd.DataFrame({"unique_id": "S", "ds": ["a", "b", "c"], "y": [1.0, 2.0, 3.0]})
    fc = pd.DataFrame({"unique_id": "S", "ds": ["d"], "y": [1.0], "M": [1.0],
                       "M-lo-80": [0.0], "M-hi-80": [2.0]})
    with pytest.raises(ValueError, match="series 'S'.*'a'"):
        score_forecasts(fc, train, ["M"], [80])
