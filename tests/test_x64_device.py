"""Float64 work on the CPU when JAX's default device is an accelerator (autogp._x64).

CI has no accelerator: the backend JAX reports is replaced here, and the checks are on what
autogp asks of JAX (the default device inside the context, the environment its worker
processes inherit, the message)."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import pytest
from typer.testing import CliRunner

from autogp import _x64
from autogp.cli.main import app


@pytest.fixture
def on_tpu(monkeypatch):
    """JAX reports a TPU as its default backend; the announcement has not been made yet."""
    monkeypatch.setattr(jax, "default_backend", lambda: "tpu")
    monkeypatch.setattr(_x64, "_announced", False)
    monkeypatch.setenv("JAX_PLATFORMS", "")  # records the caller's value, restored after
    monkeypatch.delenv("JAX_PLATFORMS")


def test_on_the_cpu_nothing_changes(monkeypatch):
    monkeypatch.setattr(_x64, "_announced", False)
    monkeypatch.setenv("JAX_PLATFORMS", "")
    monkeypatch.delenv("JAX_PLATFORMS")
    before = jax.config.jax_default_device
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with _x64.x64():
            assert jax.config.jax_default_device is before
            assert jnp.zeros(2).dtype == jnp.float64
    assert "JAX_PLATFORMS" not in __import__("os").environ


def test_an_accelerator_default_runs_float64_on_the_cpu_and_says_so_once(on_tpu):
    import os

    cpu = jax.devices("cpu")[0]
    before = jax.config.jax_default_device
    with pytest.warns(RuntimeWarning, match="default backend is tpu.*float64 work on the CPU"):
        with _x64.x64():
            assert jax.config.jax_default_device == cpu
            x = jnp.linalg.cholesky(jnp.eye(3) * 4.0)
            assert x.dtype == jnp.float64 and x.devices() == {cpu}
    assert jax.config.jax_default_device is before  # restored on exit
    assert os.environ["JAX_PLATFORMS"] == "cpu"  # inherited by spawned workers
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second entry says nothing
        with _x64.x64():
            assert jax.config.jax_default_device == cpu


def test_with_x64_uses_the_same_placement(on_tpu):
    cpu = jax.devices("cpu")[0]

    @_x64.with_x64
    def where() -> object:
        return jax.config.jax_default_device

    with pytest.warns(RuntimeWarning):
        assert where() == cpu


def test_without_a_cpu_device_the_command_line_refuses_in_one_line(on_tpu, monkeypatch):
    def no_cpu(backend=None):
        raise RuntimeError(f"Unknown backend {backend}")

    monkeypatch.setattr(jax, "devices", no_cpu)
    result = CliRunner().invoke(app, ["fit", "examples/data/airline.csv", "--quiet"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: JAX's default backend is tpu")
    assert "JAX_PLATFORMS=tpu,cpu" in lines[0]


def test_programs_are_exported_and_keyed_for_the_cpu_under_an_accelerator(on_tpu, tmp_path,
                                                                          monkeypatch):
    """The SMC rounds are exported programs: exported for the default backend (a TPU), they
    would refuse to run on the CPU device that x64() picks. jax.export asks JAX's internals
    for the default backend, so they report a TPU too here."""
    import numpy as np
    from jax._src import xla_bridge

    from autogp.inference import exported

    monkeypatch.setattr(xla_bridge, "default_backend", lambda: "tpu")

    def double(scale, x):
        return x * scale

    program = exported.Program("double", double, (2.0,), (np.arange(3.0),))
    with pytest.warns(RuntimeWarning), _x64.x64():
        assert _x64.float64_platform() == "cpu"
        key = exported.program_key(program.name, program.static, program.args)
        form = exported._export(tmp_path, program, key)
        assert form.platforms == ("cpu",)
        out = exported.call(tmp_path, program, jax.tree_util.tree_structure([0]))
    np.testing.assert_array_equal(np.asarray(out[0]), [0.0, 2.0, 4.0])
