"""Stores edited by hand or written by other tools are refused when opened, one line per problem naming the file
(issue 35, item 4): labels shorter than the samples, samples widened beside their channel names, a missing
``meta/subject``, NaN windows, a label outside the classes."""

from __future__ import annotations

import contextlib
import logging
import re

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

from neurokit._utils.errors import StoreError
from neurokit.store.patch_store import PatchStore, PatchStoreWriter


def _store(path):
    rng = np.random.default_rng(0)
    attrs = dict(
        modality="eeg", ch_names=["C3", "Cz", "C4"], sfreq=200.0, label_names=["left", "right"], patch_size=200
    )
    with PatchStoreWriter(path, (3, 2, 200), attrs=attrs) as w:
        for i in range(12):
            w.append(rng.normal(size=(1, 3, 2, 200)).astype(np.float32), label=i % 2, subject=f"S{i % 4:03d}")
    return path


def _labels_short(f):
    del f["labels"]
    f["labels"] = np.zeros(10, dtype=np.int64)


def _widened(f):
    x = f["patches"][:]
    del f["patches"]
    f["patches"] = np.concatenate([x, x[:, :1]], axis=1)


def _no_subject(f):
    del f["meta/subject"]


def _nan(f):
    x = f["patches"][:]
    x[3, 1, 0, 7] = np.nan
    x[8] = np.inf
    f["patches"][...] = x


def _label_5(f):
    y = f["labels"][:]
    y[4] = 5
    f["labels"][...] = y


@pytest.mark.parametrize(
    "edit,words",
    [
        (_labels_short, "'labels' holds 10 values for 12 samples"),
        (_widened, r"3 channel names \(ch_names\) for samples of 4 channels"),
        (_no_subject, "no 'meta/subject' column"),
        (_nan, r"2 sample\(s\) hold NaN or inf values \(e\.g\. 3, 8\)"),
        (_label_5, r"labels \[5\] outside its 2 classes \(left, right; -1 = unlabelled\) in 1 sample\(s\), e\.g\. 4"),
    ],
)
def test_an_edited_store_is_refused_when_opened(tmp_path, edit, words):
    p = _store(tmp_path / "s.h5")
    assert PatchStore(p).problems() == []
    with h5py.File(p, "r+") as f:
        edit(f)
    with pytest.raises(StoreError, match=rf"s\.h5: {words}"):
        PatchStore(p)
    from neurokit.cli.main import app

    for cmd in (["pretrain", str(p), "-o", str(tmp_path / "pt")], ["finetune", str(p), "-o", str(tmp_path / "ft")]):
        r = CliRunner().invoke(app, cmd)
        assert r.exit_code == 2 and "Traceback" not in r.output, r.output
        assert "s.h5: " in r.output and not (tmp_path / cmd[3].split("/")[-1]).exists()


def test_a_large_store_says_its_nan_window_when_read(tmp_path, monkeypatch):
    """Stores too large to scan when opened say a non-finite sample when it is read, in one line."""
    import neurokit.store.patch_store as store

    p = _store(tmp_path / "s.h5")
    with h5py.File(p, "r+") as f:
        _nan(f)
    monkeypatch.setattr(store, "FINITE_SCAN_VALUES", 10)
    st = PatchStore(p)
    assert st.patches(2).shape == (3, 2, 200)
    with pytest.raises(StoreError, match=r"s\.h5: sample\(s\) 3 hold NaN or inf"):
        st.patches(3)


def test_a_foreign_state_dict_is_said_not_to_be_a_backbone(tmp_path):
    """Issue 35 item 7: a plain ``nn.TransformerEncoder`` state dict given to ``--init`` with ``--n-layers 1`` was
    refused as "the checkpoint's backbone has n_layers=12"; it has no CBraMod layer at all, and that is said first."""
    import torch

    from neurokit._utils.errors import NeurokitError
    from neurokit.models.registry import build_backbone

    enc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True), 2)
    torch.save(enc.state_dict(), tmp_path / "foreign.pt")
    attrs = dict(modality="eeg", ch_names=["C3", "Cz", "C4"], sfreq=200.0, units="100uV")
    for kw in ({}, {"n_layers": 1}):
        with pytest.raises(NeurokitError) as e:
            build_backbone(tmp_path / "foreign.pt", model="cbramod", model_kwargs=kw, store_attrs=attrs,
                           sample_shape=(3, 2, 200))  # fmt: skip
        text = str(e.value)
        assert "none of its" in text and "belongs to the" in text and "n_layers=12" not in text, text


def _float_labels(f):
    y = f["labels"][:].astype(np.float32) + 0.5
    del f["labels"]
    f["labels"] = y


def _longer_patches(f):
    x = f["patches"][:]
    del f["patches"]
    f["patches"] = np.concatenate([x, x[..., :50]], axis=-1)


@pytest.mark.parametrize(
    "edit,words",
    [
        (_longer_patches, "patches of 250 samples where the store says patch_size 200"),
        (_float_labels, r"labels that are not whole numbers \(-0\.5\) though it lists 2 classes"),
    ],
)
def test_more_edits_are_refused(tmp_path, edit, words):
    p = _store(tmp_path / "s.h5")
    with h5py.File(p, "r+") as f:
        edit(f)
    with pytest.raises(StoreError, match=rf"s\.h5: {words}"):
        PatchStore(p)


def test_a_minority_of_channels_in_another_unit_is_said():
    """Three of eight channels hold volts under a µV header (read 1e6 too small): named, though the median is fine."""
    from neurokit.preprocessing.eeg.windows import check_units

    x = np.random.default_rng(0).normal(size=(8, 4000)) * 15e-6
    x[:3] *= 1e-6
    names = ["Fp1", "Fp2", "C3", "C4", "Cz", "P3", "P4", "O1"]
    with pytest.warns(
        RuntimeWarning, match=r"x\.edf: Fp1, Fp2, C3 have a robust RMS of .*scaled by 1e6.*V labelled µV"
    ) as rec:
        check_units(x, names, "x.edf")
    # the remedy is for those channels only (--override-units on all would spoil the others)
    assert "Only these channels: read them in it with the card's reading: {units: {Fp1: UNIT, …}" in str(rec[0].message)


def test_a_header_whose_units_lie_is_said_refused_when_strict_and_read_right_with_the_remedy(tmp_path):
    """Issue 35 item 3: an EDF whose header says µV over samples in volts. Warned naming the file, the figure and
    the remedy; refused under the card's ``units_check: error``; the remedy it names (``--units V
    --override-units``) stores the true amplitude (15 µV RMS sines → 15 / 100 in the store's unit)."""
    import yaml
    from edf_build import write_edf
    from typer.testing import CliRunner

    from neurokit.cli.main import app

    data = tmp_path / "data"
    data.mkdir()
    t = np.arange(200 * 12) / 200.0
    volts = np.stack([15e-6 * np.sqrt(2) * np.sin(2 * np.pi * f * t) for f in (7.0, 9.0, 11.0)])
    # volts' values under a µV header (the physical range written as ±0.0001 "µV")
    write_edf(data / "rec.edf", volts, 200.0, ["C3", "Cz", "C4"], units="uV", phys=[(-1e-4, 1e-4)] * 3)
    card = {
        "name": "own", "modality": "eeg", "title": "t", "source": "s", "licence": "l", "citation": ["c"],
        "layout": {"kind": "folder", "pattern": "*.edf"}, "tasks": {"pre": {"classes": []}},
        "preprocessing": {"l_freq": None, "h_freq": None, "line_freq": None, "window_s": 4.0},
    }  # fmt: skip
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(card))

    def run(out, *extra):
        args = ["prepare", str(path), "--data-root", str(data), "-o", str(tmp_path / out), *extra]
        return CliRunner().invoke(app, args, env={"COLUMNS": "400"})

    r = run("a.h5")
    said = " ".join(r.output.split())
    assert r.exit_code == 0 and "rec.edf: C3, Cz, C4 have a robust RMS of" in said
    assert "the samples' true unit is the header's × 1e6" in said and "--units UNIT and --override-units" in said
    # read as the header says: 1.5e-5 µV RMS, 1.5e-7 in the store's 100-µV unit (the figure)
    assert abs(float(PatchStore(tmp_path / "a.h5").patches(0).std()) - 1.5e-7) < 1e-8
    card["preprocessing"]["units_check"] = "error"
    path.write_text(yaml.safe_dump(card))
    r = run("b.h5")
    assert r.exit_code != 0 and "the card's units_check: error refuses it" in " ".join(r.output.split())
    assert not (tmp_path / "b.h5").exists()
    r = run("c.h5", "--units", "V", "--override-units")
    assert r.exit_code == 0, r.output
    x = PatchStore(tmp_path / "c.h5").patches(slice(None))
    np.testing.assert_allclose(x.reshape(len(x), 3, -1).std(axis=-1), 0.15, rtol=0.02)  # 15 µV / 100


@pytest.mark.parametrize("phys", [1.0, 5000.0])
def test_volts_under_a_uv_label_on_a_coarsely_quantised_channel_are_said_and_refused_when_strict(tmp_path, phys):
    """Issue 44 item 4: a header saying ``uV`` with a ±1 physical range over samples in volts: the 16-bit steps
    (3e-5 "µV") quantise 15 µV sines to a few steps around 0, whose median absolute deviation is 0, so the check
    skipped them and ``units_check: error`` accepted the file. The trimmed RMS sees them."""
    import yaml
    from edf_build import write_edf
    from typer.testing import CliRunner

    from neurokit.cli.main import app
    from neurokit.preprocessing.eeg.windows import robust_rms

    data = tmp_path / "data"
    data.mkdir()
    t = np.arange(200 * 12) / 200.0
    volts = np.stack([15e-6 * np.sqrt(2) * np.sin(2 * np.pi * f * t) for f in (7.0, 9.0, 11.0)])
    write_edf(data / "rec.edf", volts, 200.0, ["C3", "Cz", "C4"], units="uV", phys=[(-phys, phys)] * 3)
    import mne

    raw = mne.io.read_raw_edf(data / "rec.edf", preload=True, verbose="error")
    x = raw.get_data()
    if phys == 1.0:  # what the old check saw: a median absolute deviation of 0, so the channel was skipped
        assert np.median(np.abs(x - np.median(x, axis=1, keepdims=True)), axis=1).max() == 0
        assert (robust_rms(x) > 1e-12).all() and (robust_rms(x) < 1e-10).all()  # ~1e-5 µV, far below 0.1 µV
    assert max(len(np.unique(row)) for row in x) <= 4  # a few digital steps: below the file's resolution
    card = {
        "name": "own", "modality": "eeg", "title": "t", "source": "s", "licence": "l", "citation": ["c"],
        "layout": {"kind": "folder", "pattern": "*.edf"}, "tasks": {"pre": {"classes": []}},
        "preprocessing": {"l_freq": None, "h_freq": None, "line_freq": None, "window_s": 4.0,
                          "units_check": "error"},
    }  # fmt: skip
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(card))
    args = ["prepare", str(path), "--data-root", str(data), "-o", str(tmp_path / "q.h5")]
    r = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    said = " ".join(r.output.split())
    assert r.exit_code != 0 and "rec.edf: C3, Cz, C4 take only a few distinct values" in said, said
    assert "the card's units_check: error refuses it" in said and not (tmp_path / "q.h5").exists()


@pytest.mark.parametrize("content", [[1, 2, 3], "tensor"])
def test_weights_that_are_not_a_mapping_are_refused_in_one_line(tmp_path, content):
    """Review of issue 35: a file holding a list or a lone tensor ended in a TypeError traceback."""
    import torch

    from neurokit._utils.errors import NeurokitError
    from neurokit.models.registry import build_backbone

    torch.save(torch.zeros(3) if content == "tensor" else content, tmp_path / "w.pt")
    attrs = dict(modality="eeg", ch_names=["C3", "Cz", "C4"], sfreq=200.0, units="100uV")
    with pytest.raises(NeurokitError, match=r"w\.pt: neither a neurokit checkpoint nor a state dict \(holds a "):
        build_backbone(tmp_path / "w.pt", model="cbramod", store_attrs=attrs, sample_shape=(3, 2, 200))


def test_every_problem_of_an_edited_store_is_said_at_once(tmp_path):
    """Review of issue 35 item 4: a store with short labels, a label outside its classes, a NaN window and no
    meta/subject listed two of its four problems; every one is said, one line each."""
    p = _store(tmp_path / "s.h5")
    with h5py.File(p, "r+") as f:
        x = f["patches"][:]
        x[2] = np.nan
        f["patches"][...] = x
        y = f["labels"][:]
        y[1] = 7
        del f["labels"]
        f["labels"] = y[:-1]
        del f["meta/subject"]
    with pytest.raises(StoreError) as e:
        PatchStore(p)
    text = str(e.value)
    assert "'labels' holds" in text and "no 'meta/subject'" in text and "labels [7] outside" in text
    assert "sample(s) hold NaN or inf values (e.g. 2)" in text and len(text.splitlines()) == 4


def test_a_store_opened_before_a_chdir_reads_the_same_file(tmp_path, monkeypatch):
    """Issue 44 item 7: ``PatchDataset("mi.h5")`` made in one folder and iterated after ``os.chdir`` was refused as
    "the store was replaced or changed on disk"; the path is made absolute once, when the store is opened."""
    import os

    from neurokit.data.dataset import PatchDataset

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _store(tmp_path / "a" / "mi.h5")
    other = _store(tmp_path / "b" / "mi.h5")  # a different file of the same name in the folder moved to
    with h5py.File(other, "r+") as f:
        f["patches"][...] = 0.0
    monkeypatch.chdir(tmp_path / "a")
    want = PatchStore(tmp_path / "a" / "mi.h5").patches(np.arange(12))
    ds = PatchDataset("mi.h5")
    os.chdir(tmp_path / "b")
    got = np.stack([np.asarray(ds[i][0]) for i in range(len(ds))])
    np.testing.assert_array_equal(got, want)
    st = PatchStore("mi.h5")
    os.chdir(tmp_path)
    assert float(np.abs(st.patches(0)).max()) == 0.0 and str(st.path) == "mi.h5"
    # a shard set's shards open when first read: their paths are fixed when the set is opened too
    from neurokit.store.shards import ShardSetWriter

    w = ShardSetWriter(tmp_path / "a" / "set", (2, 3), attrs={"modality": "eeg", "card": "x"})
    for i in range(2):
        with w.shard(f"rec-{i}") as sw:
            sw.append(np.full((2, 2, 3), i + 1, dtype=np.float32), np.array([0, 1]), subject=str(i))
    w.close()
    os.chdir(tmp_path / "a")
    ds = PatchDataset("set")
    os.chdir(tmp_path / "b")
    assert [float(ds[i][0][0, 0]) for i in range(4)] == [1.0, 1.0, 2.0, 2.0]


FAST = ["--epochs", "1", "--batch-size", "8", "--n-layers", "1", "--no-progress", "--device", "cpu", "--no-baselines"]
SPLIT = ["--train-subjects", "S000,S001", "--val-subjects", "S002", "--test-subjects", "S003"]


@contextlib.contextmanager
def _said():
    """The messages of the ``neurokit`` logger while inside (whatever handlers a CLI call set on the root)."""
    lines: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
    log = logging.getLogger("neurokit")
    log.addHandler(handler)
    try:
        yield lines
    finally:
        log.removeHandler(handler)


def _regression_store(path):
    rng = np.random.default_rng(1)
    attrs = dict(modality="eeg", ch_names=["C3", "Cz", "C4"], sfreq=200.0, patch_size=200)
    with PatchStoreWriter(path, (3, 1, 200), attrs=attrs, label_dtype="float32") as w:
        for i in range(16):
            x = rng.normal(size=(1, 3, 1, 200)).astype(np.float32)
            w.append(x, rng.uniform(size=1).astype(np.float32), subject=f"S{i % 4:03d}")
    return path


def test_a_store_without_its_onset_column_is_refused_naming_the_columns(tmp_path):
    """Issue 44 item 5: with ``meta/onset`` deleted, ``neuro finetune`` ended in a raw ``KeyError: 'onset'``."""
    from neurokit.cli.main import app

    p = _store(tmp_path / "s.h5")
    with h5py.File(p, "r+") as f:
        del f["meta/onset"]
    want = "no 'meta/onset' column (a store has the columns meta/subject, meta/session, meta/run, meta/onset"
    with pytest.raises(StoreError, match=rf"s\.h5: {re.escape(want)}"):
        PatchStore(p)
    r = CliRunner().invoke(app, ["finetune", str(p), "-o", str(tmp_path / "ft"), *FAST, *SPLIT])
    out = " ".join(r.output.split())
    assert r.exit_code == 2 and "Traceback" not in out and f"s.h5: {want}" in out and "rerun prepare" in out, out


def test_whole_number_float_labels_of_a_classification_store_are_its_classes(tmp_path):
    """Issue 44 item 5: labels re-saved as float32 0.0/1.0 in a store that lists classes trained as a regression;
    they are read as class indices (said in one line), a NaN one as unlabelled; a whole number outside the classes
    is refused."""
    from neurokit.data.dataset import open_labelled

    p = _store(tmp_path / "s.h5")
    want = np.arange(12) % 2
    with h5py.File(p, "r+") as f:
        y = want.astype(np.float32)  # as another tool re-saves them
        y[5] = np.nan
        del f["labels"]
        f["labels"] = y
    with _said() as lines:
        st = PatchStore(p)
        PatchStore(p)
    said = [m for m in lines if "read as class indices" in m]
    assert said == [
        f"{p}: labels stored as float32 numbers though it lists 2 classes (left, right); read as class indices"
    ]
    assert st.labels.dtype == np.int64 and st.labels.tolist() == [*want[:5].tolist(), -1, *want[6:].tolist()]
    ds, names, n_classes, kind = open_labelled(p)
    assert (len(ds), names, n_classes, kind) == (11, ["left", "right"], 2, "binary")
    with h5py.File(p, "r+") as f:
        f["labels"][5] = 2.0
    with pytest.raises(StoreError, match=r"s\.h5: labels \[2\] outside its 2 classes \(left, right; -1 = unlabelled\)"):
        PatchStore(p)


def test_non_finite_regression_targets_are_unlabelled_or_refused(tmp_path):
    """Issue 44 item 5: a regression store with a NaN target failed with "cannot convert float NaN to integer", one
    with +inf in a raw OverflowError (finetune and evaluate). NaN (the unlabelled mark of a regression store, as
    prepare writes it) leaves the sample out, said with the count; an infinite target is refused with the count."""
    from neurokit.cli.main import app
    from neurokit.data.dataset import open_labelled

    p = _regression_store(tmp_path / "v.h5")
    r = CliRunner().invoke(app, ["finetune", str(p), "-o", str(tmp_path / "ft"), *FAST, *SPLIT])
    assert r.exit_code == 0, r.output
    with h5py.File(p, "r+") as f:
        y = f["labels"][:]
        y[[3, 9]] = np.nan
        f["labels"][...] = y
    with _said() as lines:
        ds, names, n_classes, kind = open_labelled(p)
    assert (len(ds), names, kind) == (14, [], "regression")
    assert lines == [f"{p}: 2 of 16 target(s) are NaN: those samples are unlabelled and left out"]
    r = CliRunner().invoke(app, ["evaluate", str(tmp_path / "ft" / "best.pt"), str(p)])
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output
    with h5py.File(p, "r+") as f:
        y[3], y[12] = np.inf, -np.inf
        f["labels"][...] = y
    want = r"v\.h5: 2 infinite label\(s\) \(e\.g\. sample\(s\) 3, 12\); a target is a finite number"
    with pytest.raises(StoreError, match=want):
        PatchStore(p)
    for cmd in (
        ["finetune", str(p), "-o", str(tmp_path / "ft2"), *FAST, *SPLIT],
        ["evaluate", str(tmp_path / "ft" / "best.pt"), str(p)],
    ):
        r = CliRunner().invoke(app, cmd)
        out = " ".join(r.output.split())
        assert r.exit_code == 2 and "Traceback" not in out and "OverflowError" not in out, out
        assert "v.h5: 2 infinite label(s) (e.g. sample(s) 3, 12)" in out and "rerun prepare" in out, out
