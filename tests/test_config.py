"""The configuration: defaults, round trips, and errors that name the key, range and value."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

from autogp.config import (
    Config,
    ConfigError,
    default_toml,
    describe,
    load_config,
    loads_config,
    parse_overrides,
)
from autogp.config.build import flatten
from autogp.data import read_csv
from autogp.kernels import spec

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "data"
SECTIONS = ["data", "grammar", "priors", "smc", "refine", "forecast", "output", "experiment"]


def test_defaults():
    cfg = load_config()
    assert cfg == Config() == load_config({})
    assert cfg.seed == 0
    assert cfg.grammar.max_depth == 3
    assert cfg.grammar.weights.as_dict() == {
        "CONST": 0, "LIN": 6, "SE": 0, "GE": 6, "PER": 6, "WN": 0, "M12": 0, "M32": 0,
        "M52": 0, "RQ": 0, "BM": 6, "M72": 0, "IBM": 0, "IOU": 0, "PLUS": 5, "TIMES": 5,
        "CP": 2,
    }  # fmt: skip
    smc = cfg.smc
    assert (smc.num_particles, smc.schedule, smc.num_rounds, smc.shuffle) == (
        16, "linear", 10, False,
    )  # fmt: skip
    assert (smc.ess_threshold, smc.resampling, smc.structure_moves) == (0.5, "multinomial", 10)
    assert (smc.subtree_replace, smc.detach_attach, smc.pick) == (0.5, 0.5, "uniform")
    assert (cfg.refine.optimizer, cfg.refine.steps, cfg.refine.learning_rate) == (
        "adam", 50, 0.05,
    )  # fmt: skip
    assert cfg.refine.mode == "optimize" and cfg.refine.learn_noise is True
    assert cfg.forecast.levels == (80.0, 95.0) and cfg.forecast.observation_noise is True
    assert cfg.data.time_col == "ds" and cfg.data.target_col == "y"
    assert cfg.data.max_points == 5000 and cfg.data.aggregate is None


def test_config_is_frozen_and_hashable():
    cfg = load_config()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.seed = 3  # type: ignore[misc]
    assert hash(cfg) == hash(load_config(cfg.to_dict()))


def test_priors_follow_the_kernel_table():
    mean, std = spec.default_prior_table()
    names = {n for ns in spec.PARAM_NAMES.values() for n in ns}
    priors = load_config().priors.as_dict()
    assert set(priors) == names | {"noise"}
    for op, ns in spec.PARAM_NAMES.items():
        for k, n in enumerate(ns):
            assert priors[n] == (mean[op, k], std[op, k]), n
    assert priors["noise"] == tuple(spec.DEFAULT_NOISE_PRIOR)


def test_partial_section_keeps_other_defaults():
    cfg = load_config({"priors": {"period": {"std": 0.3}}, "smc": {"num_particles": 64}})
    assert cfg.priors.period.std == 0.3
    assert cfg.priors.period.mean == load_config().priors.period.mean  # not the class default
    assert cfg.smc.num_particles == 64 and cfg.smc.num_rounds == 10


CUSTOM = {
    "seed": 7,
    "data": {"path": "x.csv", "id_col": "unique_id", "log_transform": True, "aggregate": "sum",
             "split_col": "split", "test_value": "holdout", "max_points": 900, "sep": ";"},
    "grammar": {"max_depth": 4, "weights": {"SE": 1.5, "CP": 0}},
    "priors": {"l": {"mean": -1.0, "std": 0.5}, "noise": {"mean": -4.0, "std": 2.0}},
    "smc": {"num_particles": 128, "schedule": "counts", "counts": [10, 50, 100],
            "shuffle": True, "ess_threshold": 0.25, "resampling": "residual",
            "rejuvenate": "after_resample", "structure_moves": 3, "subtree_replace": 0.8,
            "detach_attach": 0.2, "pick": "leaf_biased"},
    "refine": {"optimizer": "rmsprop", "steps": 10, "learning_rate": 0.1, "mode": "hmc",
               "hmc_step_size": 0.01, "hmc_leapfrog_steps": 20, "hmc_steps": 5,
               "learn_noise": False},
    "forecast": {"horizon": 18, "levels": [50, 90], "quantiles": [0.1, 0.5, 0.9],
                 "observation_noise": False},
    "output": {"dir": "out", "forecast": "f.csv", "plot": False, "model": "m.json"},
    "experiment": {"name": "m3", "metrics": ["smape", "mase"]},
}  # fmt: skip


@pytest.mark.parametrize("section", SECTIONS)
def test_every_section_round_trips(section):
    cfg = load_config({section: CUSTOM[section]})
    assert getattr(cfg, section) != getattr(Config(), section)  # the values took effect
    d = cfg.to_dict()
    assert load_config(d) == cfg
    assert load_config({section: d[section]}) == cfg
    assert loads_config(cfg.to_toml()) == cfg
    assert isinstance(d[section], dict)  # plain data, TOML-ready


def test_full_custom_round_trip_and_values(tmp_path):
    cfg = load_config(CUSTOM)
    assert cfg.smc.counts == (10, 50, 100) and cfg.forecast.levels == (50.0, 90.0)
    assert cfg.output.plot is None  # false turns an output off
    assert cfg.grammar.weights.SE == 1.5 and cfg.grammar.weights.LIN == 6.0
    path = tmp_path / "c.toml"
    path.write_text(cfg.to_toml())
    assert load_config(path) == cfg
    assert load_config(str(path)) == cfg
    assert load_config(cfg) == cfg
    d = cfg.to_dict()
    assert d["smc"]["counts"] == [10, 50, 100] and d["output"]["plot"] is None


def test_default_toml_documents_every_key_and_parses_back():
    text = default_toml()
    assert loads_config(text) == Config()
    rows = describe()
    assert len(rows) == len({r[0] for r in rows})
    for key, default, allowed, doc in rows:
        assert doc and allowed, key
        node = Config().to_dict()
        for part in key.split("."):
            node = node[part]
        assert default == node, key
        leaf = key.rsplit(".", 1)[-1]
        assert f"{leaf} =" in text, key
    keys = {r[0] for r in rows}
    assert {"smc.ess_threshold", "grammar.weights.LIN", "priors.noise.std", "seed"} <= keys
    assert dict((r[0], r[2]) for r in rows)["smc.ess_threshold"] == "a number in [0, 1]"
    tomllib.loads(text)


def test_toml_file_with_comments(tmp_path):
    path = tmp_path / "fit.toml"
    path.write_text(
        "seed = 3\n[data]\npath = 'airline.csv'\n[smc]\nnum_particles = 8  # small\n"
        "[grammar.weights]\nSE = 2\n[priors.period]\nmean = -2.5\n"
    )
    cfg = load_config(path)
    assert (cfg.seed, cfg.data.path, cfg.smc.num_particles) == (3, "airline.csv", 8)
    assert cfg.grammar.weights.SE == 2.0 and cfg.priors.period.mean == -2.5


def test_overrides():
    cfg = load_config(None, {"smc.num_particles": 32, "grammar.weights.SE": 1, "seed": 5})
    assert (cfg.smc.num_particles, cfg.grammar.weights.SE, cfg.seed) == (32, 1.0, 5)
    parsed = parse_overrides(
        ["smc.ess_threshold=0.3", "forecast.levels=[90]", "data.path=a b.csv", "smc.shuffle=true"]
    )
    assert parsed == {
        "smc.ess_threshold": 0.3,
        "forecast.levels": [90],
        "data.path": "a b.csv",
        "smc.shuffle": True,
    }
    assert cfg.with_overrides(parsed).smc.ess_threshold == 0.3
    with pytest.raises(ConfigError, match="key=value"):
        parse_overrides(["seed"])
    with pytest.raises(ConfigError, match="smc.num_particles"):
        load_config(None, {"smc.num_particles": 0})


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*.toml")), ids=lambda p: p.name)
def test_bundled_configs_load_with_the_values_they_set(path):
    """Every key a bundled config sets reads back as written (false or "": an output turned
    off); every other key keeps its default."""
    with path.open("rb") as fh:
        written = flatten(tomllib.load(fh))
    loaded = flatten(load_config(path).to_dict())
    defaults = flatten(Config().to_dict())
    assert set(written) <= set(loaded)
    for key, value in loaded.items():
        if key not in written:
            assert value == defaults[key], key
        elif value is None:  # an output turned off
            assert written[key] is False or written[key] == "", key
        else:
            assert value == written[key], key


def test_data_section_feeds_read_csv():
    cfg = load_config({"data": {"path": str(EXAMPLES / "airline.csv"), "max_points": 200}})
    s = read_csv(cfg.data.path, **cfg.data.read_kwargs())
    assert s.n == 144


# (id, config dict, substrings the message must contain)
BAD = [
    ("probability above 1", {"smc": {"ess_threshold": 1.5}},
     ["smc.ess_threshold", "1.5", "[0, 1]"]),
    ("negative probability", {"smc": {"detach_attach": -0.1}},
     ["smc.detach_attach", "-0.1", "[0, 1]"]),
    ("move probability above 1", {"smc": {"subtree_replace": 1.2}},
     ["smc.subtree_replace", "1.2", "[0, 1]"]),
    ("moves not summing to 1", {"smc": {"subtree_replace": 0.7}},
     ["smc.subtree_replace", "smc.detach_attach", "sum to 1", "1.2"]),
    ("max_depth 0", {"grammar": {"max_depth": 0}}, ["grammar.max_depth", "0", "[1, 5]"]),
    ("max_depth 6", {"grammar": {"max_depth": 6}}, ["grammar.max_depth", "6", "[1, 5]"]),
    ("too many particles", {"smc": {"num_particles": 5000}},
     ["smc.num_particles", "5000", "[1, 4096]"]),
    ("negative weight", {"grammar": {"weights": {"PER": -1}}},
     ["grammar.weights.PER", "-1", "[0,"]),
    ("all atoms zero", {"grammar": {"weights": {"LIN": 0, "GE": 0, "PER": 0, "BM": 0}}},
     ["grammar.weights", "atom", "> 0"]),
    ("zero prior std", {"priors": {"l": {"std": 0}}}, ["priors.l.std", "0", "(0,"]),
    ("zero learning rate", {"refine": {"learning_rate": 0.0}},
     ["refine.learning_rate", "(0, 10]"]),
    ("late steps -2", {"refine": {"late_steps": -2}}, ["refine.late_steps", "-2"]),
    ("negative probes", {"refine": {"probes": -1}}, ["refine.probes", "-1"]),
    ("level 100", {"forecast": {"levels": [80, 100]}}, ["forecast.levels[1]", "100", "(0, 100)"]),
    ("quantile 1", {"forecast": {"quantiles": [0.5, 1.0]}}, ["forecast.quantiles[1]", "(0, 1)"]),
    ("repeated level", {"forecast": {"levels": [80, 80]}}, ["forecast.levels", "repeated"]),
    ("nan", {"smc": {"ess_threshold": float("nan")}}, ["smc.ess_threshold", "nan"]),
    ("negative seed", {"seed": -1}, ["seed", "-1", "[0,"]),
    ("negative horizon", {"forecast": {"horizon": -3}}, ["forecast.horizon", "-3", "[0,"]),
    ("max_points below 3", {"data": {"max_points": 2}}, ["data.max_points", "[3,"]),
    # wrong types
    ("string for int", {"smc": {"num_particles": "16"}},
     ["smc.num_particles", "'16'", "wrong type", "integer", "string"]),
    ("float for int", {"smc": {"num_particles": 16.5}}, ["smc.num_particles", "integer"]),
    ("bool for int", {"grammar": {"max_depth": True}}, ["grammar.max_depth", "boolean"]),
    ("int for bool", {"smc": {"shuffle": 1}}, ["smc.shuffle", "true or false"]),
    ("string for float", {"smc": {"ess_threshold": "half"}}, ["smc.ess_threshold", "number"]),
    ("number for string", {"data": {"time_col": 3}}, ["data.time_col", "string"]),
    ("scalar for list", {"forecast": {"levels": 80}}, ["forecast.levels", "list"]),
    ("string for list", {"experiment": {"metrics": "smape"}}, ["experiment.metrics", "list"]),
    ("scalar for section", {"smc": 3}, ["smc", "table"]),
    ("scalar for prior", {"priors": {"l": 0.5}}, ["priors.l", "table"]),
    # bad choices
    ("unknown schedule", {"smc": {"schedule": "linar"}},
     ["smc.schedule", "'linar'", "'linear'", "'log'", "'counts'", "'online'"]),
    ("unknown resampling", {"smc": {"resampling": "stratify"}},
     ["smc.resampling", "did you mean 'stratified'"]),
    ("unknown optimizer", {"refine": {"optimizer": "adamw"}}, ["refine.optimizer", "'adam'"]),
    ("unknown aggregate", {"data": {"aggregate": "avg"}}, ["data.aggregate", "'mean'"]),
    ("counts without schedule", {"smc": {"counts": [10, 20]}}, ["smc.counts", "schedule"]),
    ("schedule without counts", {"smc": {"schedule": "counts"}}, ["smc.counts", "needs"]),
    ("decreasing counts", {"smc": {"schedule": "counts", "counts": [10, 5]}},
     ["smc.counts", "increasing"]),
    ("zero count", {"smc": {"schedule": "counts", "counts": [0, 5]}},
     ["smc.counts[0]", ">= 1"]),
    ("empty metrics", {"experiment": {"metrics": []}}, ["experiment.metrics", "non-empty"]),
    # unknown keys
    ("misspelled key", {"smc": {"num_particle": 3}},
     ["unknown key 'smc.num_particle'", "did you mean 'smc.num_particles'"]),
    ("key in the wrong section", {"smc": {"max_depth": 3}},
     ["'smc.max_depth'", "did you mean 'grammar.max_depth'"]),
    ("misspelled section", {"forcast": {"horizon": 3}}, ["'forcast'", "did you mean 'forecast'"]),
    ("lower-case atom", {"grammar": {"weights": {"per": 1}}},
     ["grammar.weights.per", "did you mean 'grammar.weights.PER'"]),
    ("unknown prior", {"priors": {"bandwidth": {"mean": 0}}},
     ["priors.bandwidth", "valid keys here", "period"]),
    ("prior by its long name", {"priors": {"lengthscale": {"mean": 0}}},
     ["priors.lengthscale", "did you mean 'priors.l'"]),
    ("nonsense key", {"zzz": 1}, ["unknown key 'zzz'", "valid keys here", "smc"]),
]  # fmt: skip


@pytest.mark.parametrize(("cfg", "substrings"), [pytest.param(c, s, id=i) for i, c, s in BAD])
def test_bad_config_names_key_and_range(cfg, substrings):
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    msg = str(info.value)
    assert isinstance(info.value, ValueError)
    for s in substrings:
        assert s in msg, f"{s!r} missing from: {msg}"


def test_bad_files(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[smc]\nnum_particles = \n")
    with pytest.raises(ConfigError, match="bad.toml: invalid TOML"):
        load_config(bad)
    wrong = tmp_path / "wrong.toml"
    wrong.write_text("[smc]\ness_threshold = 2.0\n")
    with pytest.raises(ConfigError) as info:
        load_config(wrong)
    assert "wrong.toml" in str(info.value) and "smc.ess_threshold" in str(info.value)
    assert info.value.key == "smc.ess_threshold"
    with pytest.raises(ConfigError, match="expects a path"):
        load_config(42)  # type: ignore[arg-type]
