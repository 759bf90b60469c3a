"""Prior files and the priors a fit runs under: reading and writing, the group a series gets,
what a hand-set prior keeps, that the engine really runs under the file's prior, and a
panel's own prior learned, used and resumed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from autogp import AutoGP, load
from autogp.config import ConfigError, engine_settings, load_config
from autogp.config.learned_prior import (
    SHIPPED,
    PriorTable,
    apply_group,
    group_of,
    prior_table,
    prior_table_text,
    read_prior_table,
)
from autogp.inference.grammar import Grammar
from autogp.kernels import spec
from autogp.parallel import panel_prior

TINY = {"smc.num_particles": 4, "smc.num_rounds": 3, "smc.structure_moves": 2,
        "refine.steps": 5, "grammar.max_depth": 2, "smc.workers": 1}


def _group(name, seasons, points, shift=0.0):
    base = Grammar.default()
    moved = base.__class__(
        max_depth=base.max_depth, weights=base.weights,
        param_prior_mean=tuple(tuple(v + shift for v in row) for row in base.param_prior_mean),
        param_prior_std=base.param_prior_std, noise_prior=(-2.5, 0.7))
    return group_of(name, moved, seasons=seasons, points=points, series=30, gain=12.5)


def test_a_prior_file_reads_back_what_was_written(tmp_path):
    table = PriorTable("test", (_group("yearly short", (1,), (1, 60), 0.25),
                                _group("any", (), (1, 0), -0.5)))
    path = tmp_path / "p.toml"
    path.write_text(prior_table_text(table, "a header\nsecond line"))
    back = read_prior_table(path)
    assert back.source == "test"
    for a, b in zip(back.groups, table.groups, strict=True):
        assert (a.name, a.seasons, a.points, a.series, a.weights.keys()) == (
            b.name, b.seasons, b.points, b.series, b.weights.keys())
        for key, (m, s) in b.priors.items():
            np.testing.assert_allclose(a.priors[key], (m, s), atol=5e-5)
        np.testing.assert_allclose(a.noise, b.noise, atol=5e-5)


def test_the_most_specific_group_wins():
    table = PriorTable("t", (_group("any", (), (1, 0)), _group("s1", (1,), (1, 0)),
                             _group("s1 short", (1,), (1, 60)), _group("short", (), (1, 60))))
    assert table.group_for(1, 30).name == "s1 short"
    assert table.group_for(1, 61).name == "s1"
    assert table.group_for(4, 30).name == "short"
    assert table.group_for(12, 200).name == "any"
    assert PriorTable("t", (_group("s4", (4,), (1, 0)),)).group_for(1, 10) is None


@pytest.mark.parametrize("entry, message", [
    ('"LIN.slope" = [0.0, 1.0]', "'LIN.slope' is no parameter"),
    ('"LIN.amp" = [0.0, -1.0]', "std must be positive"),
    ('"LIN.amp" = [0.0]', "[mean, std] expected"),
])
def test_a_bad_prior_file_names_the_entry(tmp_path, entry, message):
    path = tmp_path / "bad.toml"
    path.write_text(f'[[group]]\nname = "g"\n[group.priors]\n{entry}\n')
    with pytest.raises(ConfigError, match="group 1") as info:
        read_prior_table(path)
    assert message in str(info.value)


def test_a_prior_set_by_hand_is_kept():
    group = _group("g", (), (1, 0), shift=1.0)
    config = load_config(None, {"priors.amp.mean": -3.0, "priors.amp.std": 0.5})
    grammar = apply_group(engine_settings(config).grammar, group, config)
    lin_amp = spec.PARAM_NAMES[spec.LIN].index("amp")
    ge_l = spec.PARAM_NAMES[spec.GE].index("l")
    assert grammar.param_prior_mean[spec.LIN][lin_amp] == -3.0  # by hand
    assert grammar.param_prior_std[spec.LIN][lin_amp] == 0.5
    assert grammar.param_prior_mean[spec.GE][ge_l] == pytest.approx(-1.5 + 1.0)  # learned
    assert grammar.noise_prior == (-2.5, 0.7)
    # a weight set by hand keeps all the config's weights
    config = load_config(None, {"grammar.weights.PER": 1.0})
    assert apply_group(engine_settings(config).grammar, group, config).weights[spec.PER] == 1.0


def test_the_shipped_file_is_complete():
    table = prior_table(load_config(None, {"grammar.prior": "learned"}))
    assert Path(table.path) == SHIPPED
    base = engine_settings(load_config()).grammar
    for season, points in ((1, 20), (1, 80), (4, 40), (12, 100), (7, 300), (24, 1000)):
        group = table.group_for(season, points)
        assert group is not None, (season, points)
        grammar = apply_group(base, group, load_config())  # valid: Grammar checks itself
        assert sum(grammar.weights) > 0


def _yearly(n=24, seed=0, uid="a"):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"unique_id": uid,
                         "ds": pd.date_range("1990-01-01", periods=n, freq="YS"),
                         "y": 100 + np.cumsum(rng.normal(1.0, 2.0, n))})


def test_the_fit_runs_under_the_files_prior(tmp_path):
    """A group allowing LIN alone: every particle is LIN, and the fit, explain() and the model
    file name the group."""
    path = tmp_path / "lin.toml"
    path.write_text('[[group]]\nname = "only lines"\nseasons = [1]\n[group.weights]\nLIN = 1.0\n')
    model = AutoGP(prior=str(path), overrides=TINY).fit(_yearly())
    fit = model.fits["a"]
    assert set(np.asarray(fit.ops)[:, 0]) == {spec.LIN}
    assert np.all(np.asarray(fit.ops)[:, 1:] == spec.EMPTY)
    assert fit.prior == "lin.toml: only lines"
    assert "prior: lin.toml: only lines" in model.explain()
    model.save(tmp_path / "m.autogp")
    assert load(tmp_path / "m.autogp").fits["a"].prior == "lin.toml: only lines"
    # the config's own priors: the same seed draws other structures
    plain = AutoGP(overrides=TINY).fit(_yearly())
    assert plain.fits["a"].prior == ""
    assert "prior: autogp.jl" in plain.explain()


def test_a_missing_prior_file_is_named():
    with pytest.raises(ConfigError, match="no prior file 'nowhere.toml'"):
        AutoGP(prior="nowhere.toml", overrides=TINY).fit(_yearly())


def test_a_panels_own_prior_is_learned_used_and_resumed(tmp_path, monkeypatch):
    monkeypatch.setattr(panel_prior, "MIN_SERIES", 3)
    frame = pd.concat([_yearly(20 + i, seed=i, uid=f"s{i}") for i in range(4)])
    folder = tmp_path / "resume"
    model = AutoGP(prior="panel", overrides=TINY).fit(frame, resume=folder)
    learned = folder / panel_prior.FILE_NAME
    table = read_prior_table(learned)
    assert [g.name for g in table.groups] == ["season 1, up to 60 points", "season 1",
                                              "any season, up to 60 points", "any series"]
    assert all(g.series == 4 for g in table.groups)
    assert model.config.grammar.prior == str(learned.resolve())
    assert {f.prior for f in model.fits.values()} == {
        "learned_prior.toml: season 1, up to 60 points"}
    # the learned group differs from the base prior (it moved towards the fits)
    group = table.groups[0]
    assert group.priors["LIN.amp"] != pytest.approx(spec.PARAM_OF_NAME["amp"].prior)
    # a resumed run reads the file back and refits nothing
    stamp = learned.stat().st_mtime_ns
    again = AutoGP(prior="panel", overrides=TINY).fit(frame, resume=folder)
    assert learned.stat().st_mtime_ns == stamp
    for uid, fit in model.fits.items():
        np.testing.assert_array_equal(again.fits[uid].params, fit.params)


def test_too_small_a_panel_cannot_learn_a_prior():
    with pytest.raises(ValueError, match="at least 20 fitted series of one kind"):
        AutoGP(prior="panel", overrides=TINY).fit(
            pd.concat([_yearly(20, seed=i, uid=f"s{i}") for i in range(2)]))


def test_autogp_run_learns_the_panels_prior_and_reports_it(tmp_path, monkeypatch):
    from autogp.experiments.runner import run_single_experiment

    monkeypatch.setattr(panel_prior, "MIN_SERIES", 3)
    frame = pd.concat([_yearly(22 + i, seed=i, uid=f"s{i}") for i in range(4)])
    frame["split"] = ["test" if k >= len(g) - 3 else "train"
                      for _, g in frame.groupby("unique_id", sort=False) for k in range(len(g))]
    frame.to_csv(tmp_path / "panel.csv", index=False)
    settings = "\n".join(f"{k.split('.')[1]} = {v}" for k, v in TINY.items() if "smc." in k)
    (tmp_path / "run.toml").write_text(f"""seed = 0
[data]
path = "panel.csv"
id_col = "unique_id"
split_col = "split"
[grammar]
max_depth = 2
prior = "panel"
[smc]
{settings}
[refine]
steps = 5
[output]
dir = "{(tmp_path / "out").as_posix()}"
plot = ""
model = ""
""")
    summary = run_single_experiment(tmp_path / "run.toml", quiet=True)
    learned = tmp_path / "out" / "prior" / panel_prior.FILE_NAME
    assert read_prior_table(learned).groups[0].series == 4
    label = "learned_prior.toml: season 1, up to 60 points"
    assert summary["priors"] == {label: 4}
    assert f"Priors: 4 series under {label}." in (tmp_path / "out" / "report.md").read_text()
    # a prior file named in the config is found beside it
    (tmp_path / "mine.toml").write_text('[[group]]\nname = "lines"\n[group.weights]\nLIN = 1\n')
    text = (tmp_path / "run.toml").read_text().replace('prior = "panel"', 'prior = "mine.toml"')
    (tmp_path / "run2.toml").write_text(text)
    summary = run_single_experiment(tmp_path / "run2.toml", quiet=True)
    assert summary["priors"] == {"mine.toml: lines": 4}
