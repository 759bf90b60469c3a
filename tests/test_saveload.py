"""The .autogp model file: round trips to identical predictions, clear errors on bad files."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pandas as pd
import pytest

import autogp
from autogp import AutoGP
from autogp.pipeline.saveload import FORMAT_VERSION, ModelFileError, model_to_bytes

AIRLINE = "examples/data/airline.csv"
TEXTS = ("LIN + PER(l=1.0, period=0.0839; amp=1.0) * LIN", "GE + LIN")


@pytest.fixture(scope="module")
def model():
    df = pd.read_csv(AIRLINE)
    return AutoGP.from_kernels(df, TEXTS, weights=[0.6, 0.4], noise=[0.01, 0.02], seed=3)


def _rewrite(path, src, edit_json=None, drop=None):
    """Copy the archive ``src`` to ``path`` with model.json edited or a member dropped."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(path, "w") as zout:
        for name in zin.namelist():
            if name == drop:
                continue
            data = zin.read(name)
            if name == "model.json" and edit_json is not None:
                doc = json.loads(data)
                edit_json(doc)
                data = json.dumps(doc).encode()
            zout.writestr(name, data)


def test_round_trip_gives_identical_forecasts(model, tmp_path):
    path = model.save(tmp_path / "m.autogp")
    loaded = autogp.load(path)
    assert loaded.unique_ids == model.unique_ids
    assert loaded.config == model.config
    for kwargs in ({}, {"quantiles": [0.05, 0.5]}, {"include_noise": False}):
        a, b = model.predict(24, **kwargs), loaded.predict(24, **kwargs)
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    pd.testing.assert_frame_equal(model.kernels(), loaded.kernels(), check_exact=True)
    pd.testing.assert_frame_equal(model.decompose(), loaded.decompose(), check_exact=True)
    fit, back = model.fits["series"], loaded.fits["series"]
    for name in ("ops", "params", "noise", "log_weights"):
        np.testing.assert_array_equal(getattr(fit, name), getattr(back, name))
    pd.testing.assert_index_equal(fit.series.ds, back.series.ds)
    assert fit.scaler == back.scaler and fit.series.axis == back.series.axis


def test_equal_models_give_equal_bytes(model, tmp_path):
    first = model.save(tmp_path / "a.autogp").read_bytes()
    second = autogp.load(tmp_path / "a.autogp").save(tmp_path / "b.autogp").read_bytes()
    assert first == second


def test_file_is_documented_json_plus_npz_without_pickle(model):
    with zipfile.ZipFile(io.BytesIO(model_to_bytes(model))) as zf:
        assert sorted(zf.namelist()) == ["arrays.npz", "model.json"]
        doc = json.loads(zf.read("model.json"))
        npz = np.load(io.BytesIO(zf.read("arrays.npz")), allow_pickle=False)
        assert {"s0_ops", "s0_params", "s0_noise", "s0_log_weights", "s0_t", "s0_y"} <= set(
            npz.files
        )
    assert doc["format"] == "autogp-model" and doc["format_version"] == FORMAT_VERSION
    assert doc["config"]["seed"] == 3
    (entry,) = doc["series"]
    assert entry["axis"]["unit"] == "months"
    assert [p["structure"] for p in entry["particles"]] == ["LIN + PER * LIN", "GE + LIN"]
    assert [p["weight"] for p in entry["particles"]] == pytest.approx([0.6, 0.4])
    # Parameters are written as exact repr floats: the text parses back to the same tree.
    texts = [p["expression"] for p in entry["particles"]]
    fit = model.fits["series"]
    assert [autogp.parse(t) for t in texts] == fit.expressions()


def test_newer_format_version_is_refused_clearly(model, tmp_path):
    src = model.save(tmp_path / "m.autogp")
    newer = tmp_path / "newer.autogp"
    _rewrite(newer, src, edit_json=lambda d: d.update(format_version=FORMAT_VERSION + 1))
    with pytest.raises(ModelFileError, match="newer autogp.*format version 2.*Upgrade"):
        autogp.load(newer)


@pytest.mark.parametrize("damage", ["truncate", "flip", "text", "empty"])
def test_corrupted_files_give_a_clear_error(model, tmp_path, damage):
    good = model.save(tmp_path / "m.autogp").read_bytes()
    bad = tmp_path / "bad.autogp"
    if damage == "truncate":
        bad.write_bytes(good[: len(good) // 2])
    elif damage == "flip":
        data = bytearray(good)
        start = good.index(b"arrays.npz") + 40  # inside the compressed arrays
        for i in range(start, start + 64):
            data[i] ^= 0xFF
        bad.write_bytes(bytes(data))
    elif damage == "text":
        bad.write_text("ds,y\n1,2\n")
    else:
        bad.write_bytes(b"")
    with pytest.raises(ModelFileError, match=r"bad\.autogp: not a valid autogp model file"):
        autogp.load(bad)


def test_inconsistent_or_incomplete_files(model, tmp_path):
    src = model.save(tmp_path / "m.autogp")
    no_arrays = tmp_path / "no_arrays.autogp"
    _rewrite(no_arrays, src, drop="arrays.npz")
    with pytest.raises(ModelFileError, match="no arrays.npz"):
        autogp.load(no_arrays)

    def swap(doc):
        doc["series"][0]["particles"][0]["structure"] = "GE"

    lying = tmp_path / "lying.autogp"
    _rewrite(lying, src, edit_json=swap)
    with pytest.raises(ModelFileError, match="arrays hold 'LIN \\+ PER \\* LIN'"):
        autogp.load(lying)
    other = tmp_path / "other.autogp"
    _rewrite(other, src, edit_json=lambda d: d.update(format="something-else"))
    with pytest.raises(ModelFileError, match="does not describe an autogp model"):
        autogp.load(other)
    with pytest.raises(ModelFileError, match="not found"):
        autogp.load(tmp_path / "missing.autogp")


def test_failed_save_keeps_the_previous_file(model, tmp_path, monkeypatch):
    path = model.save(tmp_path / "m.autogp")
    before = path.read_bytes()
    from autogp.pipeline import saveload

    def broken(_model, **_options):
        raise OSError("disk full")

    monkeypatch.setattr(saveload, "model_to_bytes", broken)
    with pytest.raises(OSError, match="disk full"):
        model.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.autogp"]


def test_numeric_axis_and_log_model_round_trip(tmp_path):
    t = np.arange(144.0) * 0.5 + 3.0
    y = np.exp(0.02 * t + 0.1 * np.sin(t))
    model = AutoGP.from_kernels((t, y), ["LIN + GE"], log_transform=True, noise=0.05)
    loaded = autogp.load(model.save(tmp_path / "n.autogp"))
    pd.testing.assert_frame_equal(model.predict(7), loaded.predict(7), check_exact=True)
    assert loaded.fits["series"].scaler.log
