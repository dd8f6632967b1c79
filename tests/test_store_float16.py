"""Half-precision stores (issue 45 item 4): ``dtype="float16"`` in the writer, ``prepare`` and ``neuro prepare``;
float32 reads of float16 stores; values beyond float16's range refused or clipped (never inf); shard sets of one
dtype; a float16 store trains."""

from __future__ import annotations

import os
import shutil

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

from neurokit._utils.errors import DataFileError, ConfigError, StoreError
from neurokit.store.patch_store import FLOAT16_MAX, PatchStore, PatchStoreWriter, store_values

SHAPE = (3, 2, 200)
S001R04 = "MNE-eegbci-data/files/eegmmidb/1.0.0/S001/S001R04.edf"
ONE = dict(task="left_right_imagery", channels=["C3", "Cz", "C4"], progress=False)
#: float16 keeps an 11-bit significand: a value rounds to within 2**-11 of itself (2**-24 absolute below 2**-14)
REL, ABS = 2.0**-11, 2.0**-24


def _x(n=20, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, *SHAPE)) * np.logspace(-3, 3, 200)).astype(np.float32)  # 1e-3 … 1e3


def _write(path, x, **kw):
    with PatchStoreWriter(path, SHAPE, **kw) as w:
        w.append(x, np.arange(len(x)) % 2, subject=[f"S{i % 3}" for i in range(len(x))])
    return path


def _close(y, x):
    assert y.dtype == np.float32
    assert np.all(np.abs(y - x) <= np.abs(x) * REL + ABS)
    assert not np.array_equal(y, x)  # it did go through float16


def test_writer_records_the_dtype_and_float32_stays_as_it_was(tmp_path):
    x = _x()
    a, b = _write(tmp_path / "a.h5", x), _write(tmp_path / "b.h5", x, dtype="float16")
    with h5py.File(a) as fa, h5py.File(b) as fb:
        assert fa["patches"].dtype == np.float32 and fb["patches"].dtype == np.float16
        assert "sample_dtype" not in fa.attrs and fb.attrs["sample_dtype"] == "float16"
        assert set(fb.attrs) - set(fa.attrs) == {"sample_dtype"}
        np.testing.assert_array_equal(fa["patches"][:], x)
        assert fb["patches"].id.get_storage_size() * 2 == fa["patches"].id.get_storage_size() == x.nbytes
    sa, sb = PatchStore(a), PatchStore(b)
    assert (sa.sample_dtype, sa.info.sample_dtype, sb.sample_dtype, sb.info.sample_dtype) == (
        "float32",
        "float32",
        "float16",
        "float16",
    )
    with pytest.raises(ConfigError, match="dtype='float64': allowed values are 'float32', 'float16'"):
        PatchStoreWriter(tmp_path / "c.h5", SHAPE, dtype="float64")
    assert not (tmp_path / "c.h5.partial").exists()


def test_float16_reads_return_float32_close_to_the_original(tmp_path):
    from neurokit.data.dataset import PatchDataset

    x = _x()
    st = PatchStore(_write(tmp_path / "h.h5", x, dtype="float16"))
    _close(st.patches(3), x[3])
    _close(st.patches(slice(2, 9)), x[2:9])
    rows = np.array([9, 1, 1, 17])
    _close(st.patches(rows), x[rows])
    out = np.full((6, *SHAPE), -7.0, dtype=np.float32)  # scattered places of a larger batch: the others untouched
    st.read_into(np.array([4, 0]), out, at=np.array([5, 2]))
    _close(out[[5, 2]], x[[4, 0]])
    assert (out[[0, 1, 3, 4]] == -7).all()
    ds = PatchDataset(tmp_path / "h.h5")
    b = ds.__getitems__([7, 2, 11])  # the batched read path
    assert b.x.dtype.is_floating_point and b.x.element_size() == 4
    _close(b.x.numpy(), x[[7, 2, 11]])
    np.testing.assert_array_equal(b.x.numpy(), np.stack([ds[k][0].numpy() for k in (7, 2, 11)]))
    lzf = PatchStore(_write(tmp_path / "z.h5", x, dtype="float16", compression="lzf"))  # through HDF5's selections
    np.testing.assert_array_equal(lzf.patches(rows), st.patches(rows))


def test_values_beyond_float16_are_refused_or_clipped_never_inf(tmp_path):
    x = _x()
    x[4, 0, 0, :3] = [7e4, -1e5, 65504.0]  # two beyond, one at the largest float16
    with pytest.raises(
        StoreError, match=r"h\.h5: 2 value\(s\) beyond float16's range .*largest 100000.*float16_overflow"
    ):
        _write(tmp_path / "h.h5", x, dtype="float16")
    assert not (tmp_path / "h.h5").exists() and not (tmp_path / "h.h5.partial").exists()
    st = PatchStore(_write(tmp_path / "c.h5", x, dtype="float16", float16_overflow="clip"))
    y = st.patches(4)
    assert (
        y[0, 0, :3].tolist() == [FLOAT16_MAX, -FLOAT16_MAX, FLOAT16_MAX] and np.isfinite(st.patches(slice(0, 20))).all()
    )
    assert st.attrs["n_float16_clipped"] == 2
    v, n = store_values(np.array([np.nan, 1.0]), "float16")
    assert n == 0 and np.isnan(v[0])  # NaN is not an overflow (prepare refuses NaN itself)
    with pytest.raises(ConfigError, match="float16_overflow='wrap'"):
        store_values(x, "float16", overflow="wrap")


def _card(clip: bool):
    from neurokit.cards import load_card
    from neurokit.cards.card import DataCard

    card = load_card("physionet_mi")
    if not clip:
        return card
    raw = {**card.raw, "preprocessing": {**card.raw["preprocessing"], "float16_overflow": "clip"}}
    return DataCard(name=card.name, raw=raw, path=card.path, extra=card.extra)


def test_prepare_float16_logs_the_rounding_and_refuses_or_clips_overflow(eeg_root, tmp_path, caplog):
    import logging

    from neurokit.pipelines.prepare import prepare

    f = eeg_root / S001R04
    ref = PatchStore(prepare("physionet_mi", tmp_path / "a.h5", data_root=eeg_root, files=[f], **ONE))
    with caplog.at_level(logging.INFO, logger="neurokit"):
        half = PatchStore(
            prepare("physionet_mi", tmp_path / "h.h5", data_root=eeg_root, files=[f], dtype="float16", **ONE)
        )
    said = [r.getMessage() for r in caplog.records if "rounding error" in r.getMessage()]
    assert len(said) == 1 and "S001R04.edf" in said[0]
    rel = float(said[0].split("windows ")[1].split(" of their RMS")[0])
    assert 1e-5 < rel < 2.0**-11  # float16's rounding, relative to the signal's RMS
    assert half.sample_dtype == "float16" and half.info.recipe == ref.info.recipe  # float32 recipe as before
    assert "float16_overflow" not in ref.info.recipe
    _close(half.patches(slice(0, 30)), ref.patches(slice(0, 30)))
    volts = dict(units="V", override_units=True, dtype="float16", **ONE)  # µV read as V: 1e6 too large
    with pytest.raises(
        StoreError,
        match=r"S001R04\.edf: \d+ of its 36000 values are beyond float16's range .*largest \d+, i\.e\. [\d.]+ V.*float16_overflow: clip",
    ) as refused:
        prepare("physionet_mi", tmp_path / "v.h5", data_root=eeg_root, files=[f], **volts)
    n_out = int(str(refused.value).split(": ")[1].split(" of its")[0])
    assert not (tmp_path / "v.h5").exists()
    clipped = PatchStore(prepare(_card(True), tmp_path / "c.h5", data_root=eeg_root, files=[f], **volts))
    y = clipped.patches(slice(0, len(clipped)))
    assert np.isfinite(y).all() and np.abs(y).max() == FLOAT16_MAX
    assert clipped.attrs["n_float16_clipped"] == n_out > 1000
    assert clipped.info.recipe["float16_overflow"] == "clip"
    assert clipped.info.sources[0]["n_float16_clipped"] == clipped.attrs["n_float16_clipped"]


def test_cli_dtype_reaches_the_writer_and_a_float16_store_trains(eeg_root, tmp_path, monkeypatch):
    import torch

    from neurokit.cli.main import app
    from neurokit.pipelines.pretrain import pretrain
    from neurokit.training.config import PretrainConfig
    from neurokit.training.trainer import Trainer

    args = [
        "prepare",
        "physionet_mi",
        "-f",
        eeg_root / S001R04,
        "--data-root",
        eeg_root,
        "--task",
        "left_right_imagery",
    ]
    args += ["--channels", "C3,Cz,C4", "-o", tmp_path / "h.h5", "--no-progress"]
    r = CliRunner().invoke(app, [str(a) for a in [*args, "--dtype", "float16"]], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    assert "(eeg, float16, task left_right_imagery)" in r.output
    with h5py.File(tmp_path / "h.h5") as f:
        assert f["patches"].dtype == np.float16
    r = CliRunner().invoke(app, [str(a) for a in [*args[:-3], "-o", tmp_path / "x.h5", "--dtype", "int8"]])
    assert r.exit_code == 2 and "--dtype int8: allowed values are 'float32', 'float16'" in " ".join(r.output.split())
    cfg = PretrainConfig(
        model_kwargs={"n_layers": 1}, epochs=1, max_steps=1, batch_size=4, split="all", progress=False, device="cpu"
    )
    # cbramod's default normalize='corpus' divides each window by its corpus's scale: the batches stay float16 on
    # the host (divided in place) and reach the model as float32 on the device
    assert cfg.normalize == "corpus"
    seen, real = [], Trainer.batches

    def spy(self, epoch, start):
        for task, x, y in real(self, epoch, start):
            seen.append(x.dtype)
            yield task, x, y

    monkeypatch.setattr(Trainer, "batches", spy)
    res = pretrain([tmp_path / "h.h5"], tmp_path / "pt", cfg)
    assert res["steps"] == 1 and np.isfinite(res["history"]).all()
    assert seen == [torch.float16]
    monkeypatch.undo()
    pre = ["--epochs", "1", "--max-steps", "1", "--batch-size", "4", "--n-layers", "1", "--split", "all"]
    r = CliRunner().invoke(
        app,
        ["pretrain", str(tmp_path / "h.h5"), "-o", str(tmp_path / "pt2"), *pre, "--device", "cpu", "--no-progress"],
        env={"COLUMNS": "250"},
    )
    assert r.exit_code == 0, r.output
    assert "training batches go to the device as stored, in float16, and are cast to float32 there" in r.output


def test_a_shard_set_keeps_one_dtype(eeg_root, tmp_path):
    from neurokit.data.dataset import PatchDataset
    from neurokit.pipelines.prepare import prepare
    from neurokit.store.shards import merge_shard_sets, read_index

    files = [eeg_root / S001R04, eeg_root / S001R04.replace("R04", "R08")]
    kw = dict(data_root=eeg_root, shards=True, **ONE)
    out = prepare("physionet_mi", tmp_path / "set", files=files[:1], dtype="float16", **kw)
    assert read_index(out)["attrs"]["sample_dtype"] == "float16"
    with pytest.raises(
        StoreError, match=r"made with other dtype.*\(samples stored as float16; this run writes float32"
    ):
        prepare("physionet_mi", out, files=files, resume=True, **kw)
    prepare("physionet_mi", out, files=files, resume=True, dtype="float16", **kw)
    ds = PatchDataset(out)
    assert [st.sample_dtype for st in ds.stores] == ["float16", "float16"]
    assert ds.__getitems__(list(range(len(ds)))).x.dtype.itemsize == 4
    plain = prepare("physionet_mi", tmp_path / "set32", files=files[:1], **kw)
    assert "sample_dtype" not in read_index(plain)["attrs"]
    with pytest.raises(StoreError, match="differs from .* in dtype"):
        merge_shard_sets([plain, out], tmp_path / "merged")
    shutil.copy(plain / "shard-000000.h5", out / "new.h5")  # the same recording, in float32
    os.replace(out / "new.h5", out / "shard-000000.h5")
    with pytest.raises(StoreError, match="samples stored as float32, where the index of .* says float16"):
        PatchDataset(out)


@pytest.mark.parametrize("shards", [False, True])
def test_skip_bad_leaves_out_a_recording_beyond_float16_and_keeps_the_rest(eeg_root, tmp_path, monkeypatch, shards):
    import neurokit.preprocessing.eeg.prepare as prep_mod
    from neurokit.data.dataset import PatchDataset
    from neurokit.pipelines.prepare import prepare

    files = [eeg_root / S001R04, eeg_root / S001R04.replace("R04", "R08")]
    peak = [np.abs(PatchStore(prepare("physionet_mi", tmp_path / f"p{i}.h5", data_root=eeg_root, files=[f], **ONE))
                   .patches(slice(None))).max() for i, f in enumerate(files)]  # fmt: skip
    assert peak[0] != peak[1]
    # a float16 range between the two recordings' peaks: the louder one overflows (and is refused by the card)
    monkeypatch.setattr(prep_mod, "FLOAT16_MAX", float(np.mean(peak)))
    loud, quiet = (1, 0) if peak[1] > peak[0] else (0, 1)
    kw = dict(data_root=eeg_root, files=files, dtype="float16", shards=shards, **ONE)
    with pytest.raises(StoreError, match=rf"{files[loud].name}: \d+ of its \d+ values are beyond float16's range"):
        prepare("physionet_mi", tmp_path / "refused", **kw)
    out = prepare("physionet_mi", tmp_path / "kept", skip_bad=True, **kw)
    got = PatchDataset(out)
    alone = PatchDataset(prepare("physionet_mi", tmp_path / "alone", **{**kw, "files": [files[quiet]]}))
    assert len(got) == len(alone) > 0  # the quiet recording's windows, and none of the loud one's
    np.testing.assert_array_equal(got.__getitems__(list(range(len(got)))).x.numpy(),
                                  alone.__getitems__(list(range(len(alone)))).x.numpy())  # fmt: skip
    assert set(got.meta("run").astype(str)) == set(alone.meta("run").astype(str))
    # the store says which recording it passed over, and so does the prepare summary
    from neurokit.data.provenance import kept_line, kept_summary
    from neurokit.store.shards import read_index

    said = read_index(out)["skipped"] if shards else list(got.stores[0].info.skipped)
    assert said == [str(files[loud])]
    assert "1 recording(s) skipped as bad files" in kept_line(kept_summary(got.stores))
    assert "skipped" not in (read_index(alone.stores[0].set_path) if shards else alone.stores[0].attrs)
    # every recording beyond the range: said so (not a reject_uv matter), and nothing left behind
    monkeypatch.setattr(prep_mod, "FLOAT16_MAX", float(min(peak)) / 2)
    with pytest.raises(DataFileError, match=r"no usable recording of 2 \(2 skipped as bad files") as none:
        prepare("physionet_mi", tmp_path / "none", skip_bad=True, **kw)
    assert "reject_uv" not in str(none.value) and not (tmp_path / "none").exists()
