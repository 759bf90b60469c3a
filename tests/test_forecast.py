"""The AutoGP model: forecast layout, units, explanations, decomposition, panels and updates.

Most tests use hand-built particles (``AutoGP.from_kernels``) or a stand-in for the SMC engine
(``install_fake_smc``) so they check this layer, not the search; ``test_cli.py`` runs the real
engine end to end.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import autogp
from autogp import AutoGP, parse, to_text
from autogp.data import DataError
from autogp.forecast.explain import additive_terms, classify_term, describe
from autogp.kernels import pack

AIRLINE = "examples/data/airline.csv"
# Period 0.0839 of the normalised airline span (143 months) is 12.0 months.
FAKE_TEXTS = ("LIN + PER(l=1.0, period=0.0839; amp=1.0) * LIN", "GE + LIN")
FAKE_WEIGHTS = (0.7, 0.3)


def install_fake_smc(monkeypatch, texts=FAKE_TEXTS, weights=FAKE_WEIGHTS, calls=None):
    """Replace run_smc/update_smc by functions returning fixed particles (fast, deterministic)."""
    from autogp.inference import smc

    def fake_run_smc(x, y, grammar, settings, *, key, callback=None, debug=False,
                     seasonal_period=None, known_var=None):
        if calls is not None:
            calls.append(("run", len(x)))
        ops, params = pack([parse(t) for t in texts], max_depth=grammar.max_depth)
        if callback is not None:
            callback(1, 1)
        w = np.asarray(weights, dtype=np.float64)
        return smc.SMCResult(
            ops=ops,
            params=params,
            noise=np.log(np.full(len(texts), 0.01)),
            log_weights=np.log(w / w.sum()),
            log_marginal_likelihood=-1.0,
            history={"count": [[len(x)]]},
        )

    def fake_update_smc(result, x_all, y_all, grammar, settings, *, key, callback=None,
                        num_rounds=None, seasonal_period=None, known_var=None):
        if calls is not None:
            calls.append(("update", len(x_all)))
        return result._replace(history={"count": list(result.history["count"]) + [[len(x_all)]]})

    monkeypatch.setattr(smc, "run_smc", fake_run_smc)
    monkeypatch.setattr(smc, "update_smc", fake_update_smc)
    # The stand-in lives in this process: panels must not go to spawned workers (workers = 0
    # means one per core by default).
    from autogp.parallel import panel as panel_module

    monkeypatch.setattr(panel_module, "resolve_workers", lambda configured: configured or 1)


@pytest.fixture(scope="module")
def airline():
    return pd.read_csv(AIRLINE)


@pytest.fixture(scope="module")
def model(airline):
    return AutoGP.from_kernels(airline, FAKE_TEXTS, weights=FAKE_WEIGHTS, noise=0.01)


# ---- the public API --------------------------------------------------------------------------
def test_public_api_is_what_init_reexports():
    assert sorted(autogp.__all__) == sorted(
        ["AutoGP", "load", "read_csv", "load_config", "parse", "to_text", "__version__"]
    )
    assert autogp.__version__ == "0.1.0"


def test_public_calls_use_float64_without_flipping_the_global_flag(model):
    import json
    import subprocess
    import sys

    # A fresh interpreter where JAX's global x64 flag is off (the test session turns it on).
    code = f"""
import json, jax, pandas as pd, autogp
assert not jax.config.jax_enable_x64
m = autogp.AutoGP.from_kernels(pd.read_csv({AIRLINE!r}), {list(FAKE_TEXTS)!r},
                               weights={list(FAKE_WEIGHTS)!r}, noise=0.01)
fc = m.predict(3)
print(json.dumps([jax.config.jax_enable_x64, fc["AutoGP-hi-95"].tolist()]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    flag, values = json.loads(out.stdout.strip().splitlines()[-1])
    assert flag is False
    np.testing.assert_allclose(values, model.predict(3)["AutoGP-hi-95"], rtol=1e-10)


# ---- forecast layout -------------------------------------------------------------------------
def test_forecast_frame_has_the_statsforecast_layout(model):
    fc = model.predict(18, level=[95, 80])
    assert list(fc.columns) == [
        "unique_id",
        "ds",
        "AutoGP",
        "AutoGP-lo-95",
        "AutoGP-lo-80",
        "AutoGP-hi-80",
        "AutoGP-hi-95",
    ]
    assert len(fc) == 18
    assert fc["ds"].iloc[0] == pd.Timestamp("1961-01-01")
    assert fc["ds"].iloc[-1] == pd.Timestamp("1962-06-01")
    values = fc.drop(columns=["unique_id", "ds"]).to_numpy()
    assert np.all(np.isfinite(values))
    lo95, lo80, mean, hi80, hi95 = (fc[c] for c in fc.columns[[3, 4, 2, 5, 6]])
    assert np.all(lo95 <= lo80) and np.all(lo80 <= mean) and np.all(mean <= hi80)
    assert np.all(hi80 <= hi95)
    # Values are in data units (thousands of passengers), not z-scores.
    assert 300 < mean.mean() < 700


def test_latent_intervals_are_narrower_than_observation_intervals(model):
    noisy = model.predict(6, level=[90])
    latent = model.predict(6, level=[90], include_noise=False)
    np.testing.assert_allclose(noisy["AutoGP"], latent["AutoGP"], rtol=1e-12)
    assert np.all(
        latent["AutoGP-hi-90"] - latent["AutoGP-lo-90"]
        < noisy["AutoGP-hi-90"] - noisy["AutoGP-lo-90"]
    )


def test_predict_at_given_future_stamps(model):
    fc = model.predict(["1961-03-01", "1963-01-01"], level=[80])
    assert list(fc["ds"]) == [pd.Timestamp("1961-03-01"), pd.Timestamp("1963-01-01")]
    by_h = model.predict(3, level=[80])
    np.testing.assert_allclose(fc["AutoGP"].iloc[0], by_h["AutoGP"].iloc[2], rtol=1e-10)
    frame = pd.DataFrame({"unique_id": ["series"], "ds": ["1961-03-01"]})
    np.testing.assert_allclose(model.predict(frame, level=[80])["AutoGP"], fc["AutoGP"].iloc[:1])


def test_per_particle_rows_carry_weights(model):
    pp = model.predict(4, level=[80], per_particle=True)
    assert len(pp) == 2 * 4
    assert set(pp["structure"]) == {"LIN + PER * LIN", "GE + LIN"}
    sums = pp.groupby("ds")["weight"].sum()
    np.testing.assert_allclose(sums, 1.0)
    mix = model.predict(4, level=[80])
    weighted = (pp["weight"] * pp["AutoGP"]).groupby(pp["ds"]).sum().to_numpy()
    np.testing.assert_allclose(weighted, mix["AutoGP"], rtol=1e-10)


def test_numeric_time_and_array_input():
    t = np.arange(144.0)
    y = np.sin(2 * np.pi * t / 10) + 0.05 * t
    period = 10 / 143  # normalised: the span is 143 units
    model = AutoGP.from_kernels((t, y), [f"PER(l=1.0, period={period!r}; amp=1.0) + LIN"])
    fc = model.predict(5)
    assert fc["ds"].tolist() == [144.0, 145.0, 146.0, 147.0, 148.0]
    reading = model.kernels()["reading"].iloc[0]
    assert "period 10 units" in reading


def test_bad_arguments_are_clear(model):
    with pytest.raises(ValueError, match="levels"):
        model.predict(3, level=[120])
    with pytest.raises(ValueError, match="quantiles"):
        model.predict(3, quantiles=[1.5])
    with pytest.raises(RuntimeError, match="not fitted"):
        AutoGP().predict(3)
    with pytest.raises(DataError):
        AutoGP().fit(pd.DataFrame({"ds": [1, 2], "y": [1.0, 2.0]}))


# ---- units and readings ----------------------------------------------------------------------
def test_a_period_under_two_steps_reads_as_the_period_the_grid_sees():
    from autogp.forecast.explain import period_seen_on_grid

    # On yearly steps a period of 0.967 years is the same kernel as a 29.3-year cycle.
    seen = period_seen_on_grid(0.967, 1.0)
    assert seen == pytest.approx(1.0 / (1.0 / 0.967 - 1.0), rel=1e-12)
    r = np.arange(60.0)
    np.testing.assert_allclose(np.sin(np.pi * r / 0.967) ** 2, np.sin(np.pi * r / seen) ** 2,
                               atol=1e-12)
    # A half-step period folds onto itself at the Nyquist rate; a whole step is a constant.
    assert period_seen_on_grid(2.0 / 3.0, 1.0) == pytest.approx(2.0)
    assert period_seen_on_grid(1.0, 1.0) == np.inf

    years = pd.date_range("1960-01-01", periods=18, freq="YS")
    y = np.linspace(1.0, 2.0, 18) + 0.1 * np.sin(np.arange(18.0))
    span = 17.0  # years: normalised time 1
    model = AutoGP.from_kernels(pd.DataFrame({"ds": years, "y": y}),
                                [f"LIN + PER(l=0.5, period={0.967 / span!r}; amp=0.1)"],
                                noise=0.05)
    reading = model.kernels()["reading"].iloc[0]
    assert "yearly seasonality" not in reading
    assert "period 29.3 years" in reading and "fitted period 0.967 years" in reading


def test_weekly_period_of_daily_data_prints_in_days():
    days = pd.date_range("2024-01-01", periods=144, freq="D")
    rng = np.random.default_rng(0)
    y = np.sin(2 * np.pi * np.arange(144) / 7) + 0.1 * rng.standard_normal(144)
    span = 143.0  # days from the first to the last observation: normalised time 1
    model = AutoGP.from_kernels(
        pd.DataFrame({"ds": days, "y": y}),
        [f"PER(l=1.0, period={7 / span!r}; amp=1.0) + GE(l=0.3, gamma=1.5; amp=0.2)"],
        noise=0.05,
    )
    row = model.kernels().iloc[0]
    assert "weekly seasonality (period 7 days)" in row["reading"]
    assert "period=7;" in row["expression"] or "period=7," in row["expression"]
    assert "smooth variation over ~42.9 days" in row["reading"]
    assert "weekly seasonality" in model.explain()


def test_yearly_period_of_monthly_data_and_change_point_dates(model):
    k = model.kernels()
    assert k["weight"].tolist() == pytest.approx([0.7, 0.3])
    assert k["reading"].iloc[0] == (
        "linear trend + yearly seasonality (period 12 months) whose amplitude grows linearly"
    )
    assert k["reading"].iloc[1].startswith("smooth variation over ~31.9 months + linear trend")
    assert "period=12" in k["expression"].iloc[0]
    axis = model.series().axis
    cp = parse("CP(LIN, GE(l=10.0, gamma=1.0; amp=1.0); location=136.0, scale=1.0)")
    assert describe(cp, axis).startswith("change point at 1960-05-01: before, linear trend")


def test_structures_group_particles(airline):
    texts = ["LIN + GE(l=0.1, gamma=1.0; amp=1.0)", "LIN + GE(l=0.2, gamma=1.0; amp=1.0)", "GE"]
    model = AutoGP.from_kernels(airline, texts, weights=[0.2, 0.5, 0.3])
    k = model.kernels()
    assert k["structure"].tolist() == ["LIN + GE", "GE"]
    assert k["particles"].tolist() == [2, 1]
    assert k["weight"].tolist() == pytest.approx([0.7, 0.3])
    # The expression shown is that of the heavier particle (l = 0.2 of 143 months).
    assert "l=28.6" in k["expression"].iloc[0]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("LIN", "trend"),
        ("CONST", "trend"),
        ("LIN * GE", "trend"),
        ("PER", "seasonal"),
        ("PER * LIN", "seasonal"),
        ("GE * PER", "seasonal"),
        ("CP(LIN, GE)", "changepoint"),
        ("GE", "smooth"),
        ("SE * M52", "smooth"),
        ("WN", "noise"),
    ],
)
def test_term_classification(text, kind):
    assert classify_term(parse(text)) == kind


def test_additive_terms_split_only_at_top_level_sums():
    terms = additive_terms(parse("LIN + (PER + GE) * LIN + WN"))
    expected = [parse(s) for s in ("LIN", "(PER + GE) * LIN", "WN")]
    assert [to_text(t) for t in terms] == [to_text(e) for e in expected]


# ---- decomposition ---------------------------------------------------------------------------
def test_decompose_components_sum_to_the_posterior_mean(model):
    d = model.decompose()
    n, h = 144, model.config.forecast.horizon
    assert len(d) == n + h
    assert list(d.columns) == [
        "unique_id",
        "ds",
        "y",
        "trend",
        "seasonal",
        "smooth",
        "changepoint",
        "noise",
        "fitted",
        "residual",
    ]
    parts = d[["trend", "seasonal", "smooth", "changepoint", "noise"]].sum(axis=1)
    np.testing.assert_allclose(parts, d["fitted"], rtol=1e-12)
    # fitted is the latent posterior mean, as predict reports it, in the past and the future.
    latent = model.predict(d["ds"].tolist(), level=[], include_noise=False)
    np.testing.assert_allclose(d["fitted"], latent["AutoGP"], rtol=1e-8)
    assert d["y"].iloc[:n].notna().all() and d["y"].iloc[n:].isna().all()
    np.testing.assert_allclose(d["residual"].iloc[:n], d["y"].iloc[:n] - d["fitted"].iloc[:n])
    assert (d["seasonal"].abs() > 0).any() and (d["smooth"].abs() > 0).any()
    assert (d["changepoint"] == 0).all() and (d["noise"] == 0).all()


# ---- panels, fit and update with a stand-in engine -------------------------------------------
def _panel(airline):
    a = airline.assign(unique_id="A")
    b = airline.assign(unique_id="B", y=airline["y"] * 2.0)
    return pd.concat([a, b], ignore_index=True)


def test_panel_is_fitted_series_by_series_with_a_progress_bar(monkeypatch, airline, capsys):
    calls = []
    install_fake_smc(monkeypatch, calls=calls)
    model = AutoGP(particles=2).fit(_panel(airline))
    assert model.unique_ids == ["A", "B"]
    assert calls == [("run", 144), ("run", 144)]
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "series" in captured.err
    fc = model.predict(3, level=[80])
    assert fc["unique_id"].tolist() == ["A"] * 3 + ["B"] * 3
    a, b = fc[fc["unique_id"] == "A"], fc[fc["unique_id"] == "B"]
    # B is A doubled; normalisation makes the fits identical up to the scale.
    np.testing.assert_allclose(b["AutoGP"].to_numpy(), 2 * a["AutoGP"].to_numpy(), rtol=1e-9)
    assert set(model.kernels()["unique_id"]) == {"A", "B"}
    with pytest.raises(ValueError, match="unique_id"):
        model.series()


def test_fit_accepts_arrays_and_csv_paths(monkeypatch, airline):
    install_fake_smc(monkeypatch)
    m1 = AutoGP(progress=False).fit(AIRLINE)
    assert m1.unique_ids == ["airline"]
    t = pd.to_datetime(airline["ds"])
    m2 = AutoGP(progress=False).fit((t, airline["y"].to_numpy()))
    np.testing.assert_allclose(m1.predict(3)["AutoGP"], m2.predict(3)["AutoGP"], rtol=1e-12)


def test_update_appends_data_and_continues(monkeypatch, airline):
    calls = []
    install_fake_smc(monkeypatch, calls=calls)
    first = airline.iloc[:132]
    model = AutoGP(progress=False).fit(first)
    before = model.predict(3)
    assert before["ds"].iloc[0] == pd.Timestamp("1960-01-01")
    model.update(airline.iloc[132:133])  # a single new row
    model.update(airline.iloc[133:])
    assert calls == [("run", 132), ("update", 133), ("update", 144)]
    assert model.series().n == 144
    after = model.predict(3)
    assert after["ds"].iloc[0] == pd.Timestamp("1961-01-01")
    # The normalisation of the first fit is kept.
    assert model.fits["series"].scaler.time_scale == 131.0
    with pytest.raises(DataError, match="repeat"):
        model.update(airline.iloc[140:141])


def test_log_transform_option(monkeypatch, airline):
    install_fake_smc(monkeypatch)
    model = AutoGP(log_transform=True, progress=False).fit(airline)
    fc = model.predict(12, level=[80])
    assert np.all(fc["AutoGP-lo-80"] > 0)
    d = model.decompose()
    assert d.attrs["units"] == "log"
    np.testing.assert_allclose(d["y"].iloc[:144], np.log(airline["y"]))


def test_median_point_forecast_is_the_mixture_median(monkeypatch, airline):
    install_fake_smc(monkeypatch)
    model = AutoGP({"forecast": {"point": "median"}}, log_transform=True, progress=False)
    model.fit(airline)
    med = model.predict(18, level=[80])
    mean = model.predict(18, level=[80], point="mean")
    np.testing.assert_allclose(med["AutoGP-hi-80"], mean["AutoGP-hi-80"], rtol=1e-12)
    assert not np.allclose(med["AutoGP"], mean["AutoGP"], rtol=1e-3)
    # Each particle is log-normal: its median exp(mu) lies below its mean exp(mu + sd^2 / 2).
    pp_mean = model.predict(18, level=[80], per_particle=True, point="mean")
    # Independent check: each particle is log-normal, its median exp(mu) and its 80% bounds
    # exp(mu -+ 1.2816 sd); the mixture CDF of log y at the reported median is one half.
    pp = model.predict(18, level=[80], per_particle=True, point="median")
    mu = np.log(pp["AutoGP"].to_numpy()).reshape(2, 18)
    sd = (mu - np.log(pp["AutoGP-lo-80"].to_numpy()).reshape(2, 18)) / 1.2815515655446004
    w = pp["weight"].to_numpy().reshape(2, 18)
    np.testing.assert_allclose(
        pp_mean["AutoGP"].to_numpy().reshape(2, 18), np.exp(mu + 0.5 * sd**2), rtol=1e-9
    )
    z = (np.log(med["AutoGP"].to_numpy())[None, :] - mu) / (sd * np.sqrt(2.0))
    cdf = (w * 0.5 * (1.0 + np.vectorize(math.erf)(z))).sum(axis=0)
    np.testing.assert_allclose(cdf, 0.5, atol=1e-6)
    with pytest.raises(ValueError, match="point"):
        model.predict(3, point="mode")


def test_recent_centring_uses_the_last_season(monkeypatch, airline):
    install_fake_smc(monkeypatch)
    model = AutoGP(progress=False).fit(airline)  # the default (airline is fitted in log units)
    scaler = model.fits["series"].scaler
    assert scaler.log
    assert scaler.value_offset == pytest.approx(np.mean(np.log(airline["y"].iloc[-12:])),
                                                rel=1e-12)
    model = AutoGP({"data": {"center": "mean", "transform": "none"}}, progress=False).fit(airline)
    assert model.fits["series"].scaler.value_offset == pytest.approx(np.mean(airline["y"]))
    numeric = pd.DataFrame({"ds": np.arange(50.0), "y": np.arange(50.0)})
    model = AutoGP({"data": {"center": "recent"}}, progress=False).fit(numeric)
    # No calendar season on a plain numeric axis: the last tenth of the points.
    assert model.fits["series"].scaler.value_offset == pytest.approx(np.mean(np.arange(45, 50)))


def test_plots_build_and_save(model, tmp_path):
    from autogp import plots

    fc = model.predict(12)
    for name, fig in (
        ("fc.png", plots.plot_forecast(model, fc, history=48)),
        ("comp.svg", plots.plot_components(model.decompose())),
        ("kernels.pdf", plots.plot_structures(model.kernels())),
    ):
        path = plots.save_figure(fig, tmp_path / name)
        assert path.stat().st_size > 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["comp.svg", "fc.png", "kernels.pdf"]
    ax = plots.plot_forecast(model, fc).axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "observed",
        "95% interval",
        "80% interval",
        "forecast mean",
    ]


def test_zero_horizon_and_empty_levels(model):
    fc = model.predict(0)
    assert len(fc) == 0 and "AutoGP-hi-95" in fc.columns
    fc = model.predict(2, level=[])
    assert list(fc.columns) == ["unique_id", "ds", "AutoGP"]
