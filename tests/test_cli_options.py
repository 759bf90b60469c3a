"""The command line as a new user meets it: help, defaults, how errors spell a setting, a
panel's default id column, and horizon 0."""

from __future__ import annotations

import io

import click
import numpy as np
import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from autogp.cli.main import app
from autogp.config import Config
from autogp.data import DataError, read_csv
from autogp.data.spelling import spelled_as
from tests.test_forecast import install_fake_smc

AIRLINE = "examples/data/airline.csv"
AIRLINE_Y = pd.read_csv(AIRLINE)["y"].to_numpy(dtype=float)
runner = CliRunner()


def _commands() -> dict[str, click.Command]:
    group = typer.main.get_command(app)
    return {name: group.get_command(click.Context(group), name)
            for name in group.list_commands(click.Context(group))}


def _one_line_error(result) -> str:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


# ---- help ------------------------------------------------------------------------------------
@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_h_is_help_for_every_command(flag):
    for name in ["", *_commands()]:
        result = runner.invoke(app, [name, flag] if name else [flag], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (name, result.output)
        assert "Usage:" in result.stdout and "Show this message and exit" in result.stdout


def test_horizon_has_no_short_flag():
    for name in ("fit", "forecast", "cv"):
        (horizon,) = [p for p in _commands()[name].params if p.name == "horizon"]
        assert horizon.opts == ["--horizon"] and not horizon.secondary_opts


def test_every_option_has_help_and_shows_its_default():
    checked = 0
    for name, command in _commands().items():
        for param in command.params:
            # TyperOption, not click.Option: newer typer versions carry their own copy of click
            if not isinstance(param, typer.core.TyperOption) or param.name == "help":
                continue
            checked += 1
            where = f"autogp {name} {param.opts[0]}"
            assert param.help and param.help.strip(), f"{where} has no help text"
            shown = param.show_default
            assert isinstance(shown, str) or (shown is not False and param.default is not None
                                              and param.default is not False), (
                f"{where} shows no default")
    assert checked > 20, checked


def test_shown_defaults_are_the_configs():
    """The defaults --help shows for config-backed options are the config's own."""
    defaults = Config()
    fit = {p.name: p for p in _commands()["fit"].params}
    assert fit["particles"].show_default.startswith(f"{defaults.smc.num_particles}, ")
    assert fit["seed"].show_default.startswith(f"{defaults.seed}, ")
    assert fit["horizon"].show_default.startswith(f"{defaults.forecast.horizon}, ")
    result = runner.invoke(app, ["fit", "-h"], env={"COLUMNS": "200"})
    assert f"[default: ({defaults.smc.num_particles}, config smc.num_particles)]" in result.stdout


# ---- errors spell settings as the interface takes them ---------------------------------------
def test_column_errors_spell_the_flag_on_the_command_line(tmp_path):
    path = tmp_path / "sales.csv"
    path.write_text("date,value\n" + "".join(f"2020-{m:02d}-01,{m}\n" for m in range(1, 7)))
    line = _one_line_error(runner.invoke(app, ["fit", str(path), "--quiet"]))
    assert "Pass --time-col date." in line and "time_col=" not in line
    line = _one_line_error(runner.invoke(app, ["fit", str(path), "--time-col", "date"]))
    assert "Pass --target-col value." in line
    # The Python API keeps its own spelling.
    with pytest.raises(DataError, match=r"Pass time_col='date'\."):
        read_csv(path)


def test_duplicate_stamps_spell_aggregate_per_interface(tmp_path):
    path = tmp_path / "dup.csv"
    path.write_text("ds,y\n2020-01-01,1\n2020-01-01,2\n2020-02-01,3\n2020-03-01,4\n")
    line = _one_line_error(runner.invoke(app, ["fit", str(path), "--quiet"]))
    assert "Pass --aggregate mean" in line
    with pytest.raises(DataError, match="Pass aggregate='mean'"):
        read_csv(path)
    from autogp.cli.options import config_spelling

    with spelled_as(config_spelling), pytest.raises(DataError,
                                                    match='Pass data.aggregate = "mean"'):
        read_csv(path)


def test_run_spells_config_keys(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("date,y\n" + "".join(f"2020-{m:02d}-01,{m}\n" for m in range(1, 9)))
    config = tmp_path / "c.toml"
    config.write_text(f'[data]\npath = "{data.name}"\n')
    line = _one_line_error(runner.invoke(app, ["run", str(config), "--quiet"]))
    assert 'Pass data.time_col = "date".' in line


# ---- a panel's id column ---------------------------------------------------------------------
def test_unique_id_column_makes_a_panel_without_id_col(monkeypatch, tmp_path):
    install_fake_smc(monkeypatch)
    src = pd.read_csv(AIRLINE)
    panel = pd.concat([src.assign(unique_id="a"), src.assign(unique_id="b", y=src["y"] + 10)])
    path = tmp_path / "panel.csv.gz"
    panel[["unique_id", "ds", "y"]].to_csv(path, index=False)
    result = runner.invoke(app, ["fit", str(path), "--horizon", "2", "--quiet"])
    assert result.exit_code == 0, result.output
    df = pd.read_csv(io.StringIO(result.stdout))
    assert df["unique_id"].tolist() == ["a", "a", "b", "b"]


def test_csv_columns_reads_only_the_header(tmp_path):
    from autogp.data.header import csv_columns

    path = tmp_path / "p.csv"
    path.write_text("# a comment\n\nunique_id;ds;y\nA;1;2\nA;2;3\n")
    assert csv_columns(path) == ["unique_id", "ds", "y"]
    assert csv_columns(tmp_path / "missing.csv") == []


# ---- horizon 0 -------------------------------------------------------------------------------
def _no_fit(monkeypatch):
    """Fitting fails the test: horizon 0 must be refused before any work."""
    from autogp.forecast.model import AutoGP

    def fail(*args, **kwargs):
        raise AssertionError("fit started")

    monkeypatch.setattr(AutoGP, "fit", fail)


def test_horizon_zero_with_nothing_to_keep_is_refused_at_once(monkeypatch):
    _no_fit(monkeypatch)
    line = _one_line_error(runner.invoke(app, ["fit", AIRLINE, "--horizon", "0"]))
    assert "horizon 0" in line and "--save" in line
    line = _one_line_error(runner.invoke(app, ["fit", AIRLINE, "--set", "forecast.horizon=0"]))
    assert "horizon 0" in line
    line = _one_line_error(runner.invoke(app, ["fit", AIRLINE, "--horizon", "0", "--save",
                                               "m.autogp", "--plot", "p.png"]))
    assert "--plot" in line
    result = runner.invoke(app, ["forecast", "m.autogp", "--horizon", "0"])
    assert result.exit_code == 2 and "--horizon" in result.output


def test_horizon_zero_fits_and_saves_without_forecasting(monkeypatch, tmp_path):
    install_fake_smc(monkeypatch)
    from autogp.forecast.model import AutoGP

    def no_predict(*args, **kwargs):
        raise AssertionError("predict called")

    monkeypatch.setattr(AutoGP, "predict", no_predict)
    saved = tmp_path / "m.autogp"
    result = runner.invoke(app, ["fit", AIRLINE, "--horizon", "0", "--save", str(saved),
                                 "--quiet"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "" and saved.stat().st_size > 0


# ---- explain: units ----------------------------------------------------------------------
@pytest.mark.parametrize("transform, units", [("log", "log units"), ("none", "data units")])
def test_explain_reports_the_noise_in_the_units_it_was_fitted_in(tmp_path, transform, units):
    from autogp import AutoGP
    from tests.test_forecast import FAKE_TEXTS

    model = AutoGP.from_kernels(pd.read_csv(AIRLINE), FAKE_TEXTS, noise=0.01,
                                overrides={"data.transform": transform})
    path = model.save(tmp_path / "m.autogp")
    result = runner.invoke(app, ["explain", str(path)], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    other = {"log units", "data units"} - {units}
    assert other.pop() not in result.stdout
    assert f"reading ({units})" in result.stdout
    assert f"noise sd in {units}" in result.stdout
    # The normalised noise variance 0.01 is an sd of 0.1 normalised units: 0.1 times the
    # scale of the (log) values.
    scale = np.std(np.log(AIRLINE_Y) if transform == "log" else AIRLINE_Y)
    noise_lines = [ln for ln in result.stdout.splitlines() if "noise sd " in ln and "%" in ln]
    assert len(noise_lines) == 2
    for line in noise_lines:
        assert line.endswith(f"noise sd {0.1 * scale:.4g} ({units})")
