"""One declaration per setting: a field of the engine's settings classes is a TOML key, a row of
``describe()``, a validated value and an engine setting, with nothing else to edit."""

from __future__ import annotations

import dataclasses
import enum
import pickle

import pytest

from autogp.config import (
    Config,
    ConfigError,
    config_class,
    describe,
    engine_settings,
    load_config,
)
from autogp.inference.exported import program_key
from autogp.inference.settings import (
    RefineMode,
    RefineSettings,
    Schedule,
    SMCSettings,
    StructureWeights,
)
from autogp.setting import Spec, setting, spec_of


class Tempering(enum.StrEnum):
    NONE = "none"
    GEOMETRIC = "geometric"


@dataclasses.dataclass(frozen=True)
class ExtendedSettings(SMCSettings):
    """The engine's settings with three more, each declared once, here."""

    warmup_rounds: int = setting(2, "rounds before the first structure move", lo=0, hi=50)
    tempering: Tempering = setting(Tempering.NONE, "how the rounds temper the likelihood")
    log_every: int = setting(0, "rounds between progress lines (0: off)", lo=0,
                             in_programs=False)


@pytest.fixture(scope="module")
def extended():
    return config_class(ExtendedSettings)


def test_a_new_setting_is_a_toml_key(extended):
    cfg = extended.loads("[smc]\nwarmup_rounds = 7\ntempering = 'geometric'\nnum_particles = 5\n")
    assert (cfg.smc.warmup_rounds, cfg.smc.tempering, cfg.smc.num_particles) == (7, "geometric", 5)
    assert cfg.smc.tempering is Tempering.GEOMETRIC
    defaults = extended.load()
    assert (defaults.smc.warmup_rounds, defaults.smc.tempering, defaults.smc.log_every) == (
        2, Tempering.NONE, 0)
    assert extended.loads(cfg.to_toml()) == cfg
    assert cfg.to_dict()["smc"]["tempering"] == "geometric"
    assert extended.load(None, {"smc.warmup_rounds": 3}).smc.warmup_rounds == 3
    # the default configuration does not have it
    assert "warmup_rounds" not in load_config().to_dict()["smc"]
    with pytest.raises(ConfigError, match="unknown key 'smc.warmup_rounds'"):
        load_config({"smc": {"warmup_rounds": 3}})


def test_a_new_setting_is_described(extended):
    rows = {key: (default, allowed, doc) for key, default, allowed, doc in extended.describe()}
    assert rows["smc.warmup_rounds"] == (
        2, "an integer in [0, 50]", "rounds before the first structure move")
    assert rows["smc.tempering"] == (
        "none", "one of 'none', 'geometric'", "how the rounds temper the likelihood")
    assert rows["smc.log_every"][1] == "an integer >= 0"
    base = {row[0] for row in describe()}
    assert set(rows) - base == {"smc.warmup_rounds", "smc.tempering", "smc.log_every"}
    text = extended.default_toml()
    assert "# rounds before the first structure move. Allowed: an integer in [0, 50].\n" \
        "warmup_rounds = 2\n" in text
    assert extended.loads(text) == extended()


@pytest.mark.parametrize(("smc", "substrings"), [
    ({"warmup_rounds": 51}, ["smc.warmup_rounds = 51", "out of range", "[0, 50]"]),
    ({"warmup_rounds": -1}, ["smc.warmup_rounds = -1", "[0, 50]"]),
    ({"warmup_rounds": 2.5}, ["smc.warmup_rounds", "wrong type", "integer"]),
    ({"tempering": "geometrc"}, ["smc.tempering = 'geometrc'", "did you mean 'geometric'"]),
    ({"log_every": -3}, ["smc.log_every = -3", ">= 0"]),
    ({"warmup_round": 3}, ["unknown key 'smc.warmup_round'", "did you mean 'smc.warmup_rounds'"]),
])
def test_a_new_setting_is_validated(extended, smc, substrings):
    with pytest.raises(ConfigError) as info:
        extended.load({"smc": smc})
    for s in substrings:
        assert s in str(info.value), f"{s!r} missing from: {info.value}"


def test_a_new_setting_reaches_the_engine(extended):
    given = {"num_particles": 5, "subtree_replace": 0.8, "detach_attach": 0.2,
             "schedule": "log"}
    settings = engine_settings(extended.load({"smc": {**given, "warmup_rounds": 9,
                                                      "log_every": 4}})).smc
    base = engine_settings(load_config({"smc": given})).smc
    assert type(settings) is ExtendedSettings
    assert settings == ExtendedSettings(
        **{f.name: getattr(base, f.name) for f in dataclasses.fields(SMCSettings)},
        warmup_rounds=9, log_every=4)
    assert settings.replace_prob == 0.8 and settings.schedule is Schedule.LOG
    # hashable, and part of the compiled programs' key unless declared host-only
    assert hash(settings) == hash(dataclasses.replace(settings))
    programs = settings.for_programs()
    assert (programs.warmup_rounds, programs.log_every) == (9, 0)
    assert programs == dataclasses.replace(settings, log_every=0).for_programs()
    assert programs != dataclasses.replace(settings, warmup_rounds=1).for_programs()


def test_the_default_tree_is_the_engine_defaults():
    assert config_class() is Config and config_class(SMCSettings) is Config
    assert engine_settings(Config()).smc == SMCSettings()
    # every [smc] and [refine] key is an engine setting, a key standing for one, or the
    # product's (where a panel runs)
    smc = load_config().to_dict()["smc"]
    engine = {f.name for f in dataclasses.fields(SMCSettings)} - {"refine", "replace_prob"}
    assert set(smc) == engine | {"subtree_replace", "detach_attach", "workers", "backend",
                                 "scheduler"}
    assert set(load_config().to_dict()["refine"]) == {
        f.name for f in dataclasses.fields(RefineSettings)}


def test_every_engine_setting_is_declared_with_a_spec():
    for cls in (SMCSettings, RefineSettings):
        for f in dataclasses.fields(cls):
            sp = spec_of(f)
            if f.name == "refine":
                assert sp is None and f.default_factory is RefineSettings
                continue
            assert isinstance(sp, Spec) and sp.doc, f.name
            assert cls.__dataclass_fields__[f.name].default == getattr(cls(), f.name)


def test_modes_are_enumerations_equal_to_their_strings():
    modes = [(cls, f) for cls in (SMCSettings, RefineSettings)
             for f in dataclasses.fields(cls) if spec_of(f) and spec_of(f).kind == "choice"]
    assert {f.name for _, f in modes} == {
        "schedule", "round_sizes", "structure_weights", "resampling", "rejuvenate", "pick",
        "likelihood", "mode", "optimizer"}
    for cls, f in modes:
        sp = spec_of(f)
        assert issubclass(sp.enum, enum.StrEnum), f.name
        assert sp.choices == tuple(m.value for m in sp.enum), f.name
        for member in sp.enum:
            assert member == member.value and hash(member) == hash(member.value)
            assert f"{member}" == member.value
            built = cls(**{f.name: member.value})
            assert type(getattr(built, f.name)) is sp.enum, f.name
            assert built == cls(**{f.name: member})
    # strings given to the engine become members, so equal settings key the same programs
    a = SMCSettings(schedule="log", refine=RefineSettings(mode="hmc"))
    b = SMCSettings(schedule=Schedule.LOG, refine=RefineSettings(mode=RefineMode.HMC))
    assert a == b and hash(a) == hash(b)
    assert program_key("p", (a.for_programs(),), ()) == program_key("p", (b.for_programs(),), ())
    assert dataclasses.replace(a, structure_weights="laplace").structure_weights is \
        StructureWeights.LAPLACE
    with pytest.raises(ValueError, match=r"SMCSettings.schedule = 'lin'.*'linear'"):
        SMCSettings(schedule="lin")
    # the config holds members and writes strings
    cfg = load_config({"smc": {"schedule": "online"}, "refine": {"mode": "hmc"}})
    assert cfg.smc.schedule is Schedule.ONLINE and cfg.refine.mode is RefineMode.HMC
    assert type(cfg.to_dict()["smc"]["schedule"]) is str


def test_for_programs_resets_the_host_only_settings():
    host_only = {"num_particles", "schedule", "num_rounds", "restarts", "counts", "shuffle",
                 "round_sizes", "period_peaks", "likelihood", "inducing_points", "sparse_above",
                 "likelihood_power", "power_from", "structure_weights", "evidence_power",
                 "calibrate", "calibration_prior"}
    declared = {f.name for f in dataclasses.fields(SMCSettings)
                if spec_of(f) is not None and not spec_of(f).in_programs}
    assert declared == host_only
    changed = SMCSettings(
        num_particles=3, schedule="counts", num_rounds=2, restarts=2, counts=(4, 8), shuffle=True,
        round_sizes="full", period_peaks=1, likelihood="sparse", inducing_points=9,
        sparse_above=10, likelihood_power=0.3, power_from=5, structure_weights="laplace",
        evidence_power=0.5, calibrate=True, calibration_prior=0.5, ess_threshold=0.2,
        structure_moves=4, pick="leaf_biased",
        refine=RefineSettings(steps=3, posterior_draws=4, mode="hmc"))
    programs = changed.for_programs()
    default = SMCSettings()
    for f in dataclasses.fields(SMCSettings):
        want = getattr(default if f.name in host_only else changed, f.name)
        if f.name != "refine":
            assert getattr(programs, f.name) == want, f.name
    assert programs.refine == RefineSettings(steps=3, posterior_draws=0, mode="hmc")


def test_configs_pickle():
    """Panels send their config to worker processes."""
    cfg = load_config({"smc": {"schedule": "log", "workers": 2}, "refine": {"mode": "hmc"}})
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    assert pickle.loads(pickle.dumps(engine_settings(cfg).smc)) == engine_settings(cfg).smc
