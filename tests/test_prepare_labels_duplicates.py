"""One labelling rule for every way files come in (-f, --data-root, --bids), and recordings compared by content:
a copy under another subject refused, a file given twice read once, split-FIF continuation parts alone refused,
and a test split holding a training recording refused by fine-tuning."""

from __future__ import annotations

import shutil

import mne
import numpy as np
import pytest
from card_build import write_card
from edf_build import write_edf

from neurokit._utils.errors import CardError, ConfigError, DataFileError
from neurokit.cards import load_card
from neurokit.data.dataset import PatchDataset
from neurokit.store.patch_store import PatchStore
from neurokit.pipelines.prepare import prepare

EEGMMIDB = "MNE-eegbci-data/files/eegmmidb/1.0.0"
CH = ["C3", "Cz", "C4"]
#: annotations of every synthetic file: 4 T1 and 3 T2 (7 event windows of 1 s)
EVENTS = [(1, "T1"), (3, "T2"), (5, "T1"), (7, "T2"), (9, "T1"), (11, "T2"), (13, "T1")]


def _edf(path, seed, seconds=16):
    data = np.random.default_rng(seed).normal(0, 20.0, (len(CH), 200 * seconds))  # µV
    write_edf(path, data, 200.0, CH, annotations=EVENTS)
    return path


def _card(tmp_path, tasks, **layout):
    pre = {"l_freq": None, "h_freq": None, "line_freq": None, "window_s": 1.0, "reference": None}
    # the run is the number after the subject (a layout names where runs are; none is guessed from a file name)
    layout = {"subject_pattern": r"(?P<subject>[^/_.]+)_(?P<run>\d+)", **layout}
    return write_card(tmp_path, layout={"kind": "folder", "pattern": "*.edf", **layout}, tasks=tasks, preprocessing=pre)


def _store(path):
    st = PatchStore(path)
    try:
        cols = {c: st.meta[c].astype(str) for c in ("subject", "run")}
        return st.patches(slice(None)), np.asarray(st.labels), cols
    finally:
        st.close()


def _assert_same(a, b):
    pa, la, ma = _store(a)
    pb, lb, mb = _store(b)
    np.testing.assert_array_equal(pa, pb)
    np.testing.assert_array_equal(la, lb)
    for c in ma:
        np.testing.assert_array_equal(ma[c], mb[c], err_msg=c)
    return la, ma


TASKS = {
    # task-level events: every file
    "events": {"classes": ["left", "right"], "events": {"T1": "left", "T2": "right"}},
    # one run group: run 1 only (the layout leaves run 2 out, -f is given run 1's files)
    "one_group": {"classes": ["left", "right"], "run_groups": [{"runs": [1], "events": {"T1": "left", "T2": "right"}}]},
    # two run groups: a file's run picks its classes
    "two_groups": {
        "classes": ["a", "b", "c", "d"],
        "run_groups": [
            {"runs": [1], "events": {"T1": "a", "T2": "b"}},
            {"runs": [2], "events": {"T1": "c", "T2": "d"}},
        ],
    },
}
#: per task: the labels each file's 7 windows carry (T1 T2 T1 T2 T1 T2 T1), by file
EXPECT = {
    "events": {"Subject01_1.edf": (0, 1), "Subject01_2.edf": (0, 1), "Subject02_1.edf": (0, 1)},
    "one_group": {"Subject01_1.edf": (0, 1), "Subject02_1.edf": (0, 1)},
    "two_groups": {"Subject01_1.edf": (0, 1), "Subject01_2.edf": (2, 3), "Subject02_1.edf": (0, 1)},
}


@pytest.mark.parametrize("task", list(TASKS))
def test_explicit_files_are_labelled_as_the_layout_labels_them(tmp_path, task):
    data = tmp_path / "data"
    data.mkdir()
    for i, name in enumerate(["Subject01_1.edf", "Subject01_2.edf", "Subject02_1.edf"]):
        _edf(data / name, i)
    card = _card(tmp_path, {task: TASKS[task]})
    by_root = prepare(card, tmp_path / "root.h5", data_root=data, task=task, progress=False)
    files = [data / n for n in EXPECT[task]]
    by_files = prepare(card, tmp_path / "files.h5", files=files, task=task, progress=False)
    labels, meta = _assert_same(by_root, by_files)
    # hand-computed: 7 event windows per file, T1 T2 T1 T2 T1 T2 T1 → (t1, t2) classes of its run
    want = np.concatenate([[t1, t2, t1, t2, t1, t2, t1] for t1, t2 in EXPECT[task].values()])
    np.testing.assert_array_equal(labels, want)
    assert list(meta["subject"]) == [n.split("_")[0] for n in EXPECT[task] for _ in range(7)]


def test_file_of_no_run_group_is_refused_or_labelled_by_task_events(tmp_path):
    f = _edf(tmp_path / "Subject01_3.edf", 0)
    card = _card(tmp_path, {"one_group": TASKS["one_group"]})
    with pytest.raises(CardError, match=r"Subject01_3.edf: run 3, which no run group .* names \(runs \[1\]\)"):
        prepare(card, tmp_path / "x.h5", files=[f], progress=False)
    assert not (tmp_path / "x.h5").exists()
    # the card says so: task-level events label the files of runs no group names
    both = {**TASKS["one_group"], "events": {"T1": "right", "T2": "left"}}
    card = _card(tmp_path, {"both": both})
    _, labels, _ = _store(prepare(card, tmp_path / "y.h5", files=[f], progress=False))
    np.testing.assert_array_equal(labels, [1, 0, 1, 0, 1, 0, 1])


def test_task_without_labels_for_the_files_says_so(tmp_path, caplog):
    f = _edf(tmp_path / "rec.edf", 0)
    card = _card(tmp_path, {"lr": {"classes": ["left", "right"]}}, subject_pattern=r"(?P<subject>[^/_.]+)")  # no run
    with caplog.at_level("WARNING", logger="neurokit"):
        out = prepare(card, tmp_path / "x.h5", files=[f], progress=False)
    assert "none of the 1 recordings is labelled" in caplog.text
    from neurokit.data.provenance import unlabelled_line

    assert unlabelled_line(PatchDataset(out)) == (
        "none of the 16 windows is labelled, though task 'lr' has classes ['left', 'right'] (all -1)"
    )


@pytest.mark.slow
def test_physionet_several_run_groups_through_f_and_data_root(eeg_root, tmp_path):
    """The issue's example: ``neuro prepare physionet_mi --task motor_imagery_4class -f S001R04.edf`` gave 31
    windows all -1; runs 4 and 6 pick the two groups' classes, as under --data-root."""
    root = tmp_path / "root"
    (root / EEGMMIDB / "S001").mkdir(parents=True)
    for r in (4, 6):
        shutil.copy(eeg_root / EEGMMIDB / f"S001/S001R{r:02d}.edf", root / EEGMMIDB / "S001")
    kw = dict(task="motor_imagery_4class", channels="C3,Cz,C4", progress=False)
    a = prepare("physionet_mi", tmp_path / "a.h5", data_root=root, subjects=[1], **kw)
    files = [eeg_root / EEGMMIDB / "S001/S001R04.edf", eeg_root / EEGMMIDB / "S001/S001R06.edf"]
    b = prepare("physionet_mi", tmp_path / "b.h5", files=files, **kw)
    labels, meta = _assert_same(a, b)
    runs = meta["run"]
    assert set(runs) == {"R04", "R06"} and set(meta["subject"]) == {"S001"}
    assert set(labels[runs == "R04"]) == {0, 1} and set(labels[runs == "R06"]) == {2, 3}
    with pytest.raises(CardError, match=r"S001R03.edf: run 3, which no run group"):
        prepare("physionet_mi", tmp_path / "c.h5", files=[eeg_root / EEGMMIDB / "S001/S001R03.edf"], **kw)


# ------------------------------------------------------------------------------------------ duplicates
def test_copy_under_another_subject_is_refused_naming_both(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    _edf(data / "Subject01_1.edf", 0)
    _edf(data / "Subject02_1.edf", 1)
    shutil.copy(data / "Subject01_1.edf", data / "Subject04_1.edf")
    card = _card(tmp_path, {"events": TASKS["events"]})
    with pytest.raises(DataFileError, match=r"Subject01_1.edf \(subject Subject01\) and .*Subject04_1.edf \(subject"):
        prepare(card, tmp_path / "x.h5", data_root=data, progress=False)
    assert not (tmp_path / "x.h5").exists()
    # kept on purpose: recorded in the store
    out = prepare(card, tmp_path / "y.h5", data_root=data, allow_duplicate_recordings=True, progress=False)
    st = PatchStore(out)
    try:
        assert len(st) == 21
        (dup,) = st.attrs["duplicate_recordings"]
        assert dup["subjects"] == ["Subject01", "Subject04"] and len(dup["sha256"]) == 64
    finally:
        st.close()


def test_same_file_twice_is_read_once(tmp_path, caplog):
    f = _edf(tmp_path / "Subject01_1.edf", 0)
    (tmp_path / "link").mkdir()
    (tmp_path / "link" / "Subject01_1.edf").symlink_to(f)
    card = _card(tmp_path, {"events": TASKS["events"]})
    twice = [f, f, tmp_path / "link" / ".." / "Subject01_1.edf", tmp_path / "link" / "Subject01_1.edf"]
    with caplog.at_level("WARNING", logger="neurokit"):
        out = prepare(card, tmp_path / "x.h5", files=twice, progress=False)
    st = PatchStore(out)
    try:
        assert len(st) == 7 and len(st.attrs["sources"]) == 1
    finally:
        st.close()
    assert caplog.text.count("read once") == 3
    # a copy under the same subject: one recording, read once
    shutil.copy(f, tmp_path / "Subject01_2.edf")
    out = prepare(card, tmp_path / "y.h5", files=[f, tmp_path / "Subject01_2.edf"], progress=False)
    assert len(PatchStore(out)) == 7


#: 19 channels of the 10-20 system: 200 s at 200 Hz make 1-MB parts with split_size="2MB"
CH19 = "Fp1 Fp2 F7 F3 Fz F4 F8 T7 C3 Cz C4 T8 P7 P3 Pz P4 P8 O1 O2".split()


def _split_fif(path, naming="neuromag", seconds=200):
    data = np.random.default_rng(0).normal(0, 1e-5, (len(CH19), 200 * seconds))
    raw = mne.io.RawArray(data, mne.create_info(CH19, 200.0, "eeg"), verbose="error")
    raw.save(path, split_size="2MB", buffer_size_sec=1.0, split_naming=naming, verbose="error")
    return sorted(path.parent.iterdir())


def test_continuation_parts_alone_are_refused(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    parts = _split_fif(data / "rec_raw.fif")
    assert [p.name for p in parts] == ["rec_raw-1.fif", "rec_raw-2.fif", "rec_raw.fif"]
    (data / "rec_raw.fif").unlink()  # the first part is missing: only continuation parts
    card = _card(tmp_path, {"pre": {"classes": []}}, pattern="*.fif")
    with pytest.raises(DataFileError, match=r"rec_raw-1.fif.*first part rec_raw.fif is not among the files"):
        prepare(card, tmp_path / "x.h5", data_root=data, progress=False)
    with pytest.raises(DataFileError, match=r"first part rec_raw.fif is not among"):
        prepare(card, tmp_path / "x.h5", files=[data / "rec_raw-2.fif"], progress=False)
    # a continuation part renamed like a recording of its own is known by its content
    shutil.copy(data / "rec_raw-2.fif", tmp_path / "run-1.fif")
    with pytest.raises(DataFileError, match=r"run-1.fif.*first part rec_raw.fif"):
        prepare(card, tmp_path / "y.h5", files=[tmp_path / "run-1.fif"], progress=False)


# --------------------------------------------------------------------------------- splits by content
@pytest.fixture
def copied_store(tmp_path):
    """Subjects S001, S002, S003 and S004 = a copy of S001 (kept with allow_duplicate_recordings)."""
    data = tmp_path / "data"
    data.mkdir()
    for i in (1, 2, 3):
        _edf(data / f"S00{i}_1.edf", i)
    shutil.copy(data / "S001_1.edf", data / "S004_1.edf")
    card = _card(tmp_path, {"events": {**TASKS["events"], "splits": {"train": "1-2", "val": "3", "test": "4"}}})
    return prepare(card, tmp_path / "s.h5", data_root=data, allow_duplicate_recordings=True, progress=False)


def test_split_check_finds_a_training_recording_in_the_test_split(copied_store):
    from neurokit.data.provenance import check_split_recordings

    parts = {
        k: PatchDataset(copied_store, labelled=True, subjects=s)
        for k, s in (("train", ["S001", "S002"]), ("val", ["S003"]), ("test", ["S004"]))
    }
    with pytest.raises(ConfigError, match=r"test split holds 1 recording\(s\) that the train split holds too"):
        check_split_recordings(parts, where="run")
    res = check_split_recordings(parts, allow=True)
    assert res["allowed"] and res["checked"] == 3
    assert [sorted(s["splits"]) for s in res["shared"]] == [["test", "train"]]
    # the same store split without the copy's twin: nothing shared
    clean = {
        k: PatchDataset(copied_store, labelled=True, subjects=[s]) for k, s in zip(parts, ["S002", "S003", "S001"])
    }
    assert check_split_recordings(clean) == {"checked": 3, "shared": [], "allowed": False}
    # a validation recording in the test split is refused too (the model was selected on it)
    with pytest.raises(ConfigError, match=r"test split holds 1 recording\(s\) that the val split holds too"):
        check_split_recordings({**clean, "val": PatchDataset(copied_store, labelled=True, subjects=["S004"])})


def test_finetune_refuses_a_test_split_holding_a_training_recording(copied_store, tmp_path):
    from neurokit.training.config import FinetuneConfig
    from neurokit.pipelines.finetune import finetune

    cfg = FinetuneConfig(epochs=1, progress=False, baselines=False, confound_check=False)
    with pytest.raises(ConfigError, match=r"test split holds 1 recording.*S001_1.edf.*allow_duplicate_recordings=True"):
        finetune(copied_store, tmp_path / "ft", cfg)
    assert not (tmp_path / "ft" / "report.json").exists()


@pytest.mark.slow
def test_override_is_reported_and_evaluate_checks_too(copied_store, tmp_path):
    from neurokit.pipelines.evaluate import evaluate
    from neurokit.training.config import FinetuneConfig
    from neurokit.pipelines.finetune import finetune

    cfg = FinetuneConfig(
        epochs=1,
        batch_size=8,
        device="cpu",
        progress=False,
        baselines=False,
        confound_check=False,
        model_kwargs={"n_layers": 1},
        allow_duplicate_recordings=True,
    )
    rep = finetune(copied_store, tmp_path / "ft", cfg)
    assert rep["split_recordings"]["allowed"] is True
    assert rep["split_recordings"]["shared"][0]["splits"] == {
        "train": str((tmp_path / "data" / "S001_1.edf").resolve()),
        "test": str((tmp_path / "data" / "S004_1.edf").resolve()),
    }
    best = tmp_path / "ft" / "best.pt"
    with pytest.raises(ConfigError, match=r"scored split holds 1 recording.*train split holds too"):
        evaluate(best, copied_store, device="cpu")
    res = evaluate(best, copied_store, device="cpu", allow_duplicate_recordings=True)
    assert res["split_recordings"]["allowed"] is True and res["n_samples"] == 7


@pytest.mark.slow
def test_bids_files_through_f_as_through_the_layout(eeg_root, tmp_path):
    """A BIDS card (two run groups) and ``--bids`` (task-level events): -f files get the subjects, runs and
    events.tsv labels the BIDS layout gives them."""
    import copy

    mne_bids = pytest.importorskip("mne_bids")
    from typer.testing import CliRunner

    from neurokit.cards import DataCard
    from neurokit.cli.main import app

    root = tmp_path / "bids"
    for r in (4, 6):
        raw = mne.io.read_raw_edf(eeg_root / EEGMMIDB / f"S001/S001R{r:02d}.edf", verbose="error")
        raw.info["line_freq"] = 60
        bp = mne_bids.BIDSPath(subject="001", task="imagery", run=r, datatype="eeg", root=root)
        mne_bids.write_raw_bids(raw, bp, overwrite=True, verbose="error")
    raw = copy.deepcopy(load_card("physionet_mi").raw)
    raw["layout"] = {"kind": "bids", "task": "imagery", "subject_format": "S{:03d}", "run_format": "R{:02d}"}
    card = DataCard(name="physionet_mi", raw=raw)
    kw = dict(task="motor_imagery_4class", channels="C3,Cz,C4", progress=False)
    a = prepare(card, tmp_path / "a.h5", data_root=root, subjects=[1], **kw)
    files = sorted(root.glob("sub-001/eeg/*_eeg.edf"))
    b = prepare(card, tmp_path / "b.h5", files=files, **kw)  # the dataset folder found above the files
    labels, meta = _assert_same(a, b)
    assert set(labels[meta["run"] == "R04"]) == {0, 1} and set(labels[meta["run"] == "R06"]) == {2, 3}
    # neuro prepare --bids, with and without -f
    cli = ["prepare", "--bids", str(root), "--task", "imagery", "--events", "T1,T2", "--channels", "C3,Cz,C4"]
    r1 = CliRunner().invoke(app, [*cli, "-o", str(tmp_path / "c.h5")])
    r2 = CliRunner().invoke(app, [*cli, "-o", str(tmp_path / "d.h5"), *sum((["-f", str(f)] for f in files), [])])
    assert r1.exit_code == 0 and r2.exit_code == 0, r1.output + r2.output
    labels, _ = _assert_same(tmp_path / "c.h5", tmp_path / "d.h5")
    assert set(labels) == {0, 1} and "labels:" not in r2.output


def test_bids_continuation_parts_alone_are_refused(tmp_path):
    pytest.importorskip("mne_bids")
    from neurokit.io.bids import find_recordings

    eeg = tmp_path / "sub-01" / "eeg"
    eeg.mkdir(parents=True)
    (tmp_path / "dataset_description.json").write_text('{"Name": "x", "BIDSVersion": "1.8.0"}')
    _split_fif(eeg / "sub-01_task-rest_eeg.fif", naming="bids")
    assert len(find_recordings(tmp_path, "rest")) == 1  # every part there: one recording, read through split-01
    (eeg / "sub-01_task-rest_split-01_eeg.fif").unlink()
    with pytest.raises(DataFileError, match=r"split-02_eeg.fif: a later part .* first part sub-01_task-rest_split-01"):
        find_recordings(tmp_path, "rest")


@pytest.mark.slow
def test_reader_card_files_through_f_as_through_the_layout(eeg_root, tmp_path):
    """A dataset-reader card (Bonn archives, labelled by task-level events): an archive given with -f is read
    member by member through the card's reader, as under --data-root (the old path tried MNE on the .zip)."""
    import zipfile

    (tmp_path / "root" / "bonn").mkdir(parents=True)
    small = tmp_path / "root" / "bonn" / "S.zip"  # the first 4 segments of set S (the whole set takes 15 s)
    with zipfile.ZipFile(eeg_root / "bonn" / "S.zip") as src, zipfile.ZipFile(small, "w") as dst:
        for m in sorted(n for n in src.namelist() if n.lower().endswith(".txt"))[:4]:
            dst.writestr(m, src.read(m))
    a = prepare("bonn_epilepsy", tmp_path / "a.h5", data_root=tmp_path / "root", task="seizure", progress=False)
    b = prepare("bonn_epilepsy", tmp_path / "b.h5", files=[small], task="seizure", progress=False)
    labels, meta = _assert_same(a, b)
    assert len(labels) == 20 and set(labels) == {1}  # set S: seizure, 5 windows of 4 s per 23.6-s segment
    assert list(dict.fromkeys(meta["run"])) == ["S001", "S002", "S003", "S004"]


def test_a_file_without_a_run_takes_the_only_group():
    """A task of one run group labels a file whose name gives no run with that group, through -f and --data-root
    alike (nothing to choose between); with two groups such a file belongs to neither."""
    from neurokit.cards import TaskEvents

    one = TaskEvents("c", "t", groups=((frozenset({0}), {"T1": 0, "T2": 1}),))
    assert one.of_run(None) == one.of_file("x.edf", None) == {"T1": 0, "T2": 1}
    assert one.of_run(3) is None
    two = TaskEvents("c", "t", groups=((frozenset({4}), {"T1": 0}), (frozenset({6}), {"T1": 1})))
    assert two.of_run(None) is None and two.of_run(6) == {"T1": 1}
    with pytest.raises(CardError, match="no run"):
        two.of_file("x.edf", None)


def test_a_missing_file_is_said_before_its_name_is_read(tmp_path):
    """``-f`` of a file that does not exist: 'no such file', not the run its name lacks."""
    card = load_card("physionet_mi")
    with pytest.raises(DataFileError, match=r"nope\.edf: no such file"):
        card.explicit_files([tmp_path / "nope.edf"], "left_right_imagery")
