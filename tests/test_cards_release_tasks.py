"""The release tasks of the eegmat and physionet_mi cards (issue 34): ``neuro prepare eegmat --task
arithmetic_release`` and ``neuro prepare physionet_mi --task motor_imagery_release`` on the real recordings of
``../shared/data/eeg`` (read where they lie) equal the CBraMod release's scripts (``preprocessing_stress.py``,
``preprocessing_physio.py``, with the loaders' ``/ 100``), computed here with MNE calls in the release's order: the
same windows per recording and label, values within 1e-3 of the signal's RMS; and the cards' fixed splits equal the
release's cuts of its sorted file (folder) names over the whole datasets."""

from __future__ import annotations

from pathlib import Path

import mne
import numpy as np
import pytest
from typer.testing import CliRunner

from neurokit.cards import load_card
from neurokit.cards.split_rules import assign_splits
from neurokit.cli.main import app
from neurokit.store.patch_store import PatchStore
from tests.release_corpus import close

pytestmark = pytest.mark.slow

#: the channels preprocessing_stress.py picks, in its order
STRESS_CHANNELS = [
    "EEG Fp1", "EEG Fp2", "EEG F3", "EEG F4", "EEG F7", "EEG F8", "EEG T3", "EEG T4", "EEG C3", "EEG C4",
    "EEG T5", "EEG T6", "EEG P3", "EEG P4", "EEG O1", "EEG O2", "EEG Fz", "EEG Cz", "EEG Pz", "EEG A2-A1",
]  # fmt: skip
EEGBCI = Path("MNE-eegbci-data/files/eegmmidb/1.0.0")


def _prepare(*args) -> str:
    r = CliRunner().invoke(app, ["prepare", *map(str, args)])
    assert r.exit_code == 0, r.output
    return r.output


def _windows(st, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The windows and labels of the store rows ``sel`` (a mask), in onset order, as ``(n, C, n_patches·200)``."""
    idx = np.flatnonzero(sel)
    idx = idx[np.argsort(st.meta["onset"][idx], kind="stable")]
    x = np.stack([np.asarray(st.patches(int(i))).reshape(st.sample_shape[0], -1) for i in idx])
    return x, st.labels[idx]


def stress_release(path: Path) -> tuple[np.ndarray, int]:
    """preprocessing_stress.py on one file, with stress_dataset.py's ``/ 100``: ``(n, 20, 1000)`` and the label."""
    raw = mne.io.read_raw_edf(path, preload=True, verbose="error")
    raw.pick(STRESS_CHANNELS)
    raw.reorder_channels(STRESS_CHANNELS)
    raw.resample(200, verbose="error")
    x = raw.get_data(units="uV")
    rest = x.shape[1] % 1000
    if rest:
        x = x[:, :-rest]
    x = x.reshape(20, -1, 5, 200).transpose(1, 0, 2, 3).reshape(-1, 20, 1000)
    return x / 100.0, int(path.name[-5]) - 1


def physio_release(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """preprocessing_physio.py on one run file, with physio_dataset.py's ``/ 100``: ``(n, 64, 800)`` and labels."""
    run = path.stem[-2:]
    raw = mne.io.read_raw_edf(path, preload=True, verbose="error")
    raw.set_eeg_reference(ref_channels="average", verbose="error")
    raw.filter(l_freq=0.3, h_freq=None, verbose="error")
    raw.notch_filter(60, verbose="error")
    raw.resample(200, verbose="error")
    ev, ids = mne.events_from_annotations(raw, verbose="error")
    ep = mne.Epochs(raw, ev, ids, tmin=0, tmax=4.0 - 1.0 / 200, baseline=None, preload=True, verbose="error")
    x, codes = ep.get_data(units="uV")[:, :, -800:], ep.events[:, 2]
    keep = codes != 1  # T0
    labels = codes[keep] - 2 if run in ("04", "08", "12") else codes[keep]
    return x[keep] / 100.0, labels


def test_eegmat_release_task_equals_the_release(eeg_root, tmp_path):
    files = sorted((eeg_root / "eegmat").glob("**/Subject*_[12].edf"))
    assert len(files) >= 2, "../shared/data/eeg/eegmat holds no EEGMAT files"
    out = _prepare("eegmat", "--task", "arithmetic_release", "--data-root", eeg_root, "-o", tmp_path / "s.h5")
    st = PatchStore(tmp_path / "s.h5")
    assert st.sample_shape == (20, 5, 200)
    # the A2-A1 derivation keeps its file label (the reader renames only the 19 electrodes), last as in the release
    assert list(st.info.ch_names) == [
        "Fp1", "Fp2", "F3", "F4", "F7", "F8", "T7", "T8", "C3", "C4",
        "P7", "P8", "P3", "P4", "O1", "O2", "Fz", "Cz", "Pz", "EEG A2-A1",
    ]  # fmt: skip
    runs = st.meta["run"].astype(str)
    for f in files:
        want, label = stress_release(f)
        got, labels = _windows(st, runs == f.stem)
        assert close(got, want) < 1e-3, f.name
        assert set(labels.tolist()) == {label}, f.name
    assert len(st) == sum(int((runs == f.stem).sum()) for f in files)
    # the local subjects (2-4) are all training subjects of the release's split
    assert f"train {len(st):,} · val 0 · test 0" in out
    assert st.info.card_body["tasks"]["arithmetic_release"]["splits"]["train"] == "0-27"


def test_eegmat_release_split_of_the_72_files(tmp_path):
    """The release sorts the 72 file names and cuts them at 56 and 64; the card's fixed ranges give the same
    subjects, as does the sorted_files rule over the entries the eegmat reader lists."""
    from neurokit.datasets.classic import eegmat_entries

    base = tmp_path / "eegmat"
    base.mkdir()
    names = [f"Subject{s:02d}_{k}.edf" for s in range(36) for k in (1, 2)]
    for n in reversed(names):  # listing order must not matter
        (base / n).touch()
    release = sorted(names)
    cut = {"train": release[:56], "val": release[56:64], "test": release[64:]}
    want = {k: sorted({f"S{int(n[7:9]):03d}" for n in v}) for k, v in cut.items()}
    assert want["train"] == [f"S{s:03d}" for s in range(28)]
    assert want["val"] == ["S028", "S029", "S030", "S031"]
    assert want["test"] == ["S032", "S033", "S034", "S035"]
    assert load_card("eegmat").splits("arithmetic_release") == want
    entries = eegmat_entries(base)
    assert len(entries) == 72
    got = assign_splits(entries, {"rule": "sorted_files", "groups": {"Subject": [56, 64]}})
    by = {k: sorted({e.subject for e, s in zip(entries, got) if s == k}) for k in want}
    assert by == want
    # no subject in two splits: its two files are adjacent and the cuts are even
    assert all(
        len({s for e, s in zip(entries, got) if e.subject == subj}) == 1 for subj in {e.subject for e in entries}
    )


def test_physionet_mi_release_task_equals_the_release(eeg_root, tmp_path):
    base = eeg_root / EEGBCI
    files = [base / "S001" / "S001R04.edf", base / "S001" / "S001R06.edf"]
    for f in files:
        assert f.is_file(), f"{f} missing from ../shared"
    args = ["--data-root", eeg_root, *[a for f in files for a in ("-f", f)]]
    _prepare("physionet_mi", "--task", "motor_imagery_release", *args, "-o", tmp_path / "rel.h5")
    _prepare("physionet_mi", "--task", "motor_imagery_4class", *args, "-o", tmp_path / "four.h5")
    st, four = PatchStore(tmp_path / "rel.h5"), PatchStore(tmp_path / "four.h5")
    assert st.sample_shape == (64, 4, 200) and list(st.info.ch_names[:3]) == ["FC5", "FC3", "FC1"]
    assert list(st.info.ch_names) == list(four.info.ch_names)
    seen = set()
    for f in files:
        want, want_y = physio_release(f)
        sel = (st.meta["subject"].astype(str) == f.stem[:4]) & (st.meta["run"].astype(str) == f.stem[4:])
        got, y = _windows(st, sel)
        assert close(got, want) < 1e-3, f.name
        assert y.tolist() == want_y.tolist(), f.name
        seen |= set(y.tolist())
        # motor_imagery_4class holds the same windows
        sel4 = (four.meta["subject"].astype(str) == f.stem[:4]) & (four.meta["run"].astype(str) == f.stem[4:])
        got4, y4 = _windows(four, sel4)
        np.testing.assert_array_equal(got4, got)
        assert y4.tolist() == y.tolist()
    assert seen == {0, 1, 2, 3}  # left fist, right fist (run 4); both fists, both feet (run 6)


def test_physionet_mi_release_split_of_the_109_folders():
    """The release sorts the subject folders of files/ and cuts them at 70 and 89."""
    folders = sorted(f"S{s:03d}" for s in range(109, 0, -1))
    want = {"train": folders[:70], "val": folders[70:89], "test": folders[89:109]}
    card = load_card("physionet_mi")
    assert card.splits("motor_imagery_release") == want
    assert card.splits("motor_imagery_4class") == want
    assert card.classes("motor_imagery_release") == ["left_fist", "right_fist", "both_fists", "both_feet"]
