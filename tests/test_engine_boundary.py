"""The boundary between the engine and the config: ``autogp.inference`` never imports
``autogp.config``, and ``autogp.config.engine_settings`` carries every engine key across."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np

from autogp.config import engine_settings, load_config
from autogp.inference.grammar import Grammar
from autogp.inference.settings import RefineSettings, SMCSettings
from autogp.kernels import spec

ROOT = Path(__file__).resolve().parents[1]
INFERENCE = ROOT / "autogp" / "inference"
# [smc] keys that choose where a panel is fitted, not how: the product reads them.
NOT_ENGINE_KEYS = {"workers", "backend", "scheduler", "subtree_replace", "detach_attach"}


def _imported_modules(path: Path) -> set[str]:
    """Every module an import statement anywhere in ``path`` names (functions included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_inference_module_imports_the_config():
    files = sorted(INFERENCE.glob("*.py"))
    assert len(files) > 5
    for path in files:
        bad = {m for m in _imported_modules(path)
               if m == "autogp.config" or m.startswith("autogp.config.")}
        assert not bad, (path.name, bad)


def test_the_engine_imports_and_runs_with_the_config_package_blocked():
    # A fresh interpreter where ``autogp.config`` cannot be imported at all and the package's
    # __init__ (which re-exports the config for users) is skipped.
    script = f"""
import sys, types
pkg = types.ModuleType("autogp")
pkg.__path__ = [{str(ROOT / "autogp")!r}]
sys.modules["autogp"] = pkg

class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name == "autogp.config" or name.startswith("autogp.config."):
            raise ImportError("the engine imported " + name)
        return None

sys.meta_path.insert(0, Blocked())
import jax, numpy as np
from autogp.inference import smc
from autogp.inference.grammar import Grammar
from autogp.inference.settings import RefineSettings, SMCSettings
x = np.linspace(0, 1, 12)
settings = SMCSettings(num_particles=2, num_rounds=1, structure_moves=1,
                       refine=RefineSettings(steps=1))
r = smc.run_smc(x, np.sin(6 * x), Grammar.default(max_depth=1), settings, key=jax.random.key(0))
assert r.ops.shape[0] == 2
assert not [m for m in sys.modules if m.startswith("autogp.config")]
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


NON_DEFAULT = {
    "grammar": {
        "max_depth": 2,
        "weights": {"LIN": 1, "GE": 2, "PER": 3, "PLUS": 4, "TIMES": 0, "CP": 1, "SE": 5},
    },
    "priors": {"l": {"mean": -0.7, "std": 0.4}, "period": {"mean": -2.0, "std": 0.3},
               "noise": {"mean": -3.0, "std": 0.5}},
    "smc": {
        "num_particles": 7, "schedule": "counts", "num_rounds": 4, "counts": [5, 9, 20],
        "shuffle": True, "ess_threshold": 0.3, "resampling": "systematic",
        "rejuvenate": "after_resample", "structure_moves": 3, "subtree_replace": 0.7,
        "detach_attach": 0.3, "pick": "leaf_biased", "period_proposal": 0.2, "period_peaks": 5,
        "period_spread": 0.1, "likelihood": "sparse", "inducing_points": 40,
        "sparse_above": 500, "workers": 3, "restarts": 2, "round_sizes": "full",
        "likelihood_power": 0.25, "power_from": 30, "structure_weights": "laplace",
        "evidence_power": 0.5, "seasonal_start": 0.1, "calibrate": True,
        "calibration_prior": 5.0,
    },
    "refine": {
        "mode": "hmc", "optimizer": "sgd", "steps": 7, "late_steps": 3, "late_from": 11,
        "learning_rate": 0.2, "hmc_step_size": 0.01, "hmc_leapfrog_steps": 3, "hmc_steps": 2,
        "learn_noise": False, "posterior_draws": 3, "probes": 4, "probes_from": 64,
        "period_step": 0.5,
    },
}


def test_every_engine_key_reaches_the_settings():
    config = load_config(NON_DEFAULT)
    grammar, settings = engine_settings(config)
    default = SMCSettings()
    for f in dataclasses.fields(SMCSettings):
        if f.name in ("replace_prob", "refine"):
            continue
        value = getattr(settings, f.name)
        assert value == getattr(config.smc, f.name), f.name
        assert value != getattr(default, f.name), f"{f.name}: the test must change it"
    assert settings.replace_prob == 0.7
    for f in dataclasses.fields(RefineSettings):
        value = getattr(settings.refine, f.name)
        assert value == getattr(config.refine, f.name), f.name
        assert value != getattr(default.refine, f.name), f"refine.{f.name}: the test must change it"
    # every [smc] and [refine] key is either an engine setting or the product's
    engine_keys = {f.name for f in dataclasses.fields(SMCSettings)}
    for key in config.to_dict()["smc"]:
        assert key in engine_keys or key in NOT_ENGINE_KEYS, key
    assert set(config.to_dict()["refine"]) == {f.name for f in dataclasses.fields(RefineSettings)}

    assert grammar.max_depth == 2
    expected = dict.fromkeys(range(spec.NUM_OPS), 0.0)
    expected[spec.BM] = 6.0  # not in the config's table: its default weight
    expected.update({spec.LIN: 1, spec.GE: 2, spec.PER: 3, spec.PLUS: 4, spec.CP: 1, spec.SE: 5})
    assert grammar.weights == tuple(float(expected[op]) for op in range(spec.NUM_OPS))
    mean, std = np.asarray(grammar.prior_mean_table), np.asarray(grammar.prior_std_table)
    default_mean, default_std = spec.default_prior_table()
    for op, names in spec.PARAM_NAMES.items():
        for k, name in enumerate(names):
            want = {"l": (-0.7, 0.4), "period": (-2.0, 0.3)}.get(
                name, (default_mean[op, k], default_std[op, k]))
            assert (mean[op, k], std[op, k]) == want, (spec.NAMES[op], name)
    assert grammar.noise_prior == (-3.0, 0.5)


def test_the_default_config_gives_the_engine_defaults():
    grammar, settings = engine_settings(load_config())
    assert settings == SMCSettings()
    assert grammar == Grammar.default()
