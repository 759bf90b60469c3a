"""Cross-validation with covariates: each window is fitted on its training rows' covariates and
forecast with the held-out rows' values from the frame itself, in the API and the CLI.

References: separate ``fit`` + ``predict(h, X_df=...)`` calls on the data truncated at each
cutoff (the real engine, same seed), and for ``refit=False`` a numpy GP over time and the
standardised covariate (the first window's standardisation), conditioned by Bayes' rule.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import multivariate_normal
from typer.testing import CliRunner

from autogp import AutoGP
from autogp.cli.main import app
from tests.test_forecast import install_fake_smc

pytestmark = pytest.mark.filterwarnings("ignore::autogp.data.AutoGPDataWarning")

TINY = {"smc.num_particles": 2, "smc.num_rounds": 2, "refine.steps": 2, "grammar.max_depth": 2,
        "smc.workers": 1, "data.transform": "none"}  # fmt: skip
# Particles of the stand-in SMC: a linear and a smooth effect of the first covariate.
TEXTS = ("LIN(intercept=0.5; bias=1.0, amp=1.0) + LIN[1](amp=1.0)",
         "SE(l=0.3; amp=1.0) + SE[1](l=1.0; amp=0.5)")
WEIGHTS = (0.7, 0.3)
FAKE_NOISE = 0.01  # the stand-in's noise variance


def daily(n: int = 36, seed: int = 4) -> pd.DataFrame:
    """y = trend + 2 x + noise with a known covariate x, and a promotion indicator that is 0
    until day 31 (constant on the first window's training rows)."""
    rng = np.random.default_rng(seed)
    i = np.arange(n)
    x = rng.standard_normal(n).cumsum() * 0.4 + np.sin(i / 3.0)
    promo = np.isin(i, [31, 34]).astype(float)
    y = 10 + 0.05 * i + 2.0 * x + 1.5 * promo + 0.2 * rng.standard_normal(n)
    return pd.DataFrame({"ds": pd.date_range("2020-03-01", periods=n, freq="D"), "y": y,
                         "x": x, "promo": promo})


@pytest.mark.slow
def test_each_window_equals_a_separate_fit_with_its_future_covariates():
    df = daily()
    h = 3
    cv = AutoGP(seed=3, overrides=TINY, progress=False).cross_validation(df, h=h, n_windows=2,
                                                                           level=[90])
    cutoffs = cv["cutoff"].unique()
    assert list(cutoffs) == list(df["ds"].iloc[[29, 32]])
    covariates = []
    for cut in cutoffs:
        train, test = df[df["ds"] <= cut], df[df["ds"] > cut].iloc[:h]
        separate = AutoGP(seed=3, overrides=TINY, progress=False).fit(train)
        covariates.append(separate.fits["series"].covariates)
        ref = separate.predict(h, level=[90], X_df=test[["ds", "x", "promo"]])
        got = cv[cv["cutoff"] == cut].drop(columns=["cutoff", "y"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(got, ref, check_exact=True)
        np.testing.assert_array_equal(cv.loc[cv["cutoff"] == cut, "y"], test["y"])
    # The first window's rows hold no promotion: its fit (as the separate one) has only x.
    assert covariates == [("x",), ("x", "promo")]


def test_no_refit_with_covariates_conditions_the_first_fit_by_bayes_rule(monkeypatch):
    install_fake_smc(monkeypatch, texts=TEXTS, weights=WEIGHTS)
    df = daily(24)[["ds", "y", "x"]]
    eta, h = 0.5, 2
    overrides = {**TINY, "smc.power_from": 0, "smc.likelihood_power": eta}
    cv = AutoGP(overrides=overrides).cross_validation(df, h=h, n_windows=3, refit=False,
                                                      level=[80])
    # Cutoffs at rows 17, 19, 21; the first window's fit sees the first 18 rows.
    first = AutoGP(overrides=overrides).fit(df.iloc[:18]).fits["series"]
    s = first.scaler
    days = (df["ds"] - df["ds"].iloc[0]).dt.days.to_numpy(float)
    t = days / days[17]  # time onto [0, 1] over the first window's rows
    x0 = df["x"].to_numpy()[:18]
    z = (df["x"].to_numpy() - x0.mean()) / x0.std()  # its standardisation of x
    v = s.forward_y(df["y"].to_numpy())
    np.testing.assert_allclose(first.x, np.column_stack([t[:18], z[:18]]), rtol=1e-12,
                               atol=1e-12)

    def gram(p, a, b):
        if p == 0:
            return 1.0 + np.outer(t[a] - 0.5, t[b] - 0.5) + np.outer(z[a], z[b])
        return (np.exp(-0.5 * np.subtract.outer(t[a], t[b]) ** 2 / 0.3**2)
                + 0.5 * np.exp(-0.5 * np.subtract.outer(z[a], z[b]) ** 2))

    w0 = np.asarray(WEIGHTS) / np.sum(WEIGHTS)
    old = np.arange(18)
    for k, end in enumerate([18, 20, 22]):
        seen, star = np.arange(end), np.arange(end, end + h)
        log_w, means = [], []
        for p in range(2):
            K = gram(p, seen, seen) + FAKE_NOISE * np.eye(end)
            lp = (multivariate_normal(np.zeros(end), K).logpdf(v[:end])
                  - multivariate_normal(np.zeros(18), K[:18, :18]).logpdf(v[old]))
            log_w.append(eta * lp)
            means.append(gram(p, star, seen) @ np.linalg.solve(K, v[:end]))
        w = w0 * np.exp(np.asarray(log_w) - max(log_w))
        w /= w.sum()
        expected = s.value_offset + s.value_scale * (w @ np.asarray(means))
        np.testing.assert_allclose(cv["AutoGP"].to_numpy()[h * k: h * k + h], expected,
                                   rtol=1e-7)


def test_cli_cv_reads_the_covariates_from_the_file(monkeypatch, tmp_path):
    install_fake_smc(monkeypatch, texts=TEXTS, weights=WEIGHTS)
    df = daily(24)[["ds", "y", "x"]]
    path, out = tmp_path / "data.csv", tmp_path / "cv.csv"
    df.to_csv(path, index=False)
    result = CliRunner().invoke(app, ["cv", str(path), "--horizon", "3", "--windows", "2",
                                      "--level", "80", "--set", "data.transform=none",
                                      "--output", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    cli = pd.read_csv(out, parse_dates=["ds", "cutoff"])
    api = AutoGP(overrides={"data.transform": "none"}).cross_validation(df, h=3, n_windows=2,
                                                                        level=[80])
    assert set(cli["unique_id"]) == {"data"}  # a file's single series is named after it
    pd.testing.assert_frame_equal(cli.drop(columns="unique_id"), api.drop(columns="unique_id"),
                                  check_dtype=False, rtol=1e-12)
    # The forecasts read the held-out rows' covariates: other values, other forecasts.
    warmer = df.assign(x=df["x"] + np.where(np.arange(len(df)) >= 18, 1.0, 0.0))
    moved = AutoGP(overrides={"data.transform": "none"}).cross_validation(
        warmer, h=3, n_windows=2, level=[80])
    assert np.all(np.abs(moved["AutoGP"].to_numpy() - api["AutoGP"].to_numpy())[:3] > 1e-3)


@pytest.mark.parametrize("refit", [True, False])
def test_a_panel_is_cross_validated_as_each_series_alone(monkeypatch, refit):
    # Two series of other lengths and covariate paths; the promotion is constant (zero) on
    # every row of "b", so b's fits leave it out while a's later windows use it.
    install_fake_smc(monkeypatch, texts=TEXTS, weights=WEIGHTS)
    a = daily(36, seed=4).assign(unique_id="a")
    b = daily(30, seed=9).assign(unique_id="b", x=lambda f: 2 * f["x"] - 1)
    assert b["promo"].eq(0).all() and a["promo"].iloc[-6:].any()
    panel = pd.concat([b, a], ignore_index=True)[["unique_id", "ds", "y", "x", "promo"]]
    h, windows = 3, 2
    model = AutoGP(seed=3, overrides=TINY, progress=False)
    cv = model.cross_validation(panel, h=h, n_windows=windows, refit=refit, level=[90])
    alone = pd.concat([model.cross_validation(s, h=h, n_windows=windows, refit=refit, level=[90])
                       for s in (a, b)], ignore_index=True)
    assert list(cv["unique_id"].unique()) == ["a", "b"]
    pd.testing.assert_frame_equal(cv, alone, check_exact=True)
    if not refit:
        return
    for uid, s in (("a", a), ("b", b)):
        got = cv[cv["unique_id"] == uid]
        for cut in got["cutoff"].unique():
            train, test = s[s["ds"] <= cut], s[s["ds"] > cut].iloc[:h]
            fit = AutoGP(seed=3, overrides=TINY, progress=False).fit(
                train.drop(columns="unique_id"))
            used = ("x", "promo") if train["promo"].any() else ("x",)
            assert fit.fits["series"].covariates == used
            ref = fit.predict(h, level=[90], X_df=test[["ds", "x", "promo"]])
            rows = got[got["cutoff"] == cut]
            np.testing.assert_array_equal(rows["AutoGP"], ref["AutoGP"])
            np.testing.assert_array_equal(rows["AutoGP-hi-90"], ref["AutoGP-hi-90"])
            np.testing.assert_array_equal(rows["ds"], test["ds"])
