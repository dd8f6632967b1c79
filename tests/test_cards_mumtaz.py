"""The Mumtaz 2016 card (issue 34): ``neuro prepare mumtaz --data-root ROOT`` on a small folder in the figshare
layout equals the CBraMod release's ``preprocessing_mumtaz.py`` + ``datasets/mumtaz_dataset.py``, computed here with
MNE calls in the release's order (pick in its order, resample 200 Hz, 0.3-75 Hz, 50-Hz notch, ``to_data_frame``'s
µV, 5-s windows, / 100): the same windows per recording and label, values within 1e-3 of the signal's RMS, and the
release's split by sorted file name (which parts one subject's EC and EO files: stored by recording, warned)."""

from __future__ import annotations

import logging
import os
import shutil

import mne
import pytest
import yaml
from typer.testing import CliRunner

from neurokit._utils.errors import DataFileError
from neurokit.cards import cards_dir, load_card
from neurokit.cli.main import app
from neurokit.datasets.mumtaz import mumtaz_entries
from neurokit.store.patch_store import PatchStore
from tests.release_corpus import close, signals, store_windows

pytestmark = pytest.mark.slow

#: the release's ``selected_channels``, in its order
RELEASE_CHANNELS = [
    f"EEG {c}-LE"
    for c in ["Fp1", "Fp2", "F3", "F4", "C3", "C4", "P3", "P4", "O1", "O2", "F7", "F8", "T3", "T4", "T5", "T6"]
    + ["Fz", "Cz", "Pz"]
]
#: a file's channels in another order than the release's, with the non-scalp ones of the download
FILE_CHANNELS = ["EEG A2-A1"] + RELEASE_CHANNELS[::-1] + ["EEG 23A-23R"]


def _write(path, seed: int, seconds: float = 16.0):
    raw = mne.io.RawArray(
        signals(len(FILE_CHANNELS), 256.0, seconds, seed, line=50.0), mne.create_info(FILE_CHANNELS, 256.0, "eeg")
    )
    mne.export.export_raw(path, raw, fmt="edf", overwrite=True, verbose="error")


def _release_split(root, cuts):
    """The release's ``iter_files`` and cut points (``cuts``: {'H': (a, b), 'MDD': (a, b)})."""
    files_h, files_mdd = [], []
    for f in os.listdir(root):
        if "TASK" not in f:
            (files_mdd if "MDD" in f else files_h).append(f)
    out = {"train": [], "val": [], "test": []}
    for files, (a, b) in ((sorted(files_h), cuts["H"]), (sorted(files_mdd), cuts["MDD"])):
        out["train"] += files[:a]
        out["val"] += files[a:b]
        out["test"] += files[b:]
    return out


def _release_windows(path):
    """The release's steps on one file: ``(n, 19, 1000)`` in units of 100 µV."""
    raw = mne.io.read_raw_edf(path, preload=True, verbose="error")
    raw.pick_channels(RELEASE_CHANNELS, ordered=True)
    raw.resample(200, verbose="error")
    raw.filter(l_freq=0.3, h_freq=75, verbose="error")
    raw.notch_filter(50, verbose="error")
    x = raw.to_data_frame().values[:, 1:]  # µV: to_data_frame's default scaling of EEG
    a = x.shape[0] % 1000
    if a:
        x = x[:-a]
    x = x.reshape(-1, 5, 200, x.shape[1]).transpose(0, 3, 1, 2)
    return x.reshape(len(x), 19, 1000) / 100.0


class _Said(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_mumtaz_equals_the_release(tmp_path):
    root = tmp_path / "mumtaz"
    root.mkdir()
    names = ["H S1 EC", "H S1 EO", "H S15 EC", "H S2 EC", "H S2 EO", "6921143_H S15 EO"]
    names += ["MDD S1 EC", "MDD S1 EO", "MDD S10 EC", "MDD S10 EO", "MDD S2 EC", "MDD S2 EO"]
    for seed, n in enumerate(names):
        _write(root / f"{n}.edf", seed, 16.0 + seed % 3)  # whole seconds: MNE pads EDF records otherwise
    # the download's second copy of H S15 EO (same bytes, another figshare id); TASK files are never read
    shutil.copyfile(root / "6921143_H S15 EO.edf", root / "6921959_H S15 EO.edf")
    for n in ("H S1 TASK.edf", "MDD S2 TASK.edf"):
        (root / n).write_bytes(b"not an EDF: the release skips TASK files before reading them")
    # the card with small cut points; the release's numbers are checked in the test below
    card = yaml.safe_load((cards_dir() / "mumtaz.yaml").read_text())
    card["tasks"]["mdd"]["split_rule"]["groups"] = {"MDD": [3, 5], "": [3, 5]}
    (tmp_path / "mumtaz.yaml").write_text(yaml.safe_dump(card, sort_keys=False))

    said = _Said()
    logging.getLogger("neurokit").addHandler(said)
    try:
        r = CliRunner().invoke(
            app, ["prepare", str(tmp_path / "mumtaz.yaml"), "--data-root", str(root), "-o", str(tmp_path / "m.h5")]
        )
    finally:
        logging.getLogger("neurokit").removeHandler(said)
    assert r.exit_code == 0, r.output
    st = PatchStore(tmp_path / "m.h5")
    assert list(st.info.ch_names) == ["Fp1", "Fp2", "F3", "F4", "C3", "C4", "P3", "P4", "O1", "O2", "F7", "F8"] + [
        "T7", "T8", "P7", "P8", "Fz", "Cz", "Pz",
    ]  # fmt: skip
    assert st.sample_shape == (19, 5, 200)
    runs = st.meta["run"].astype(str)
    assert "H S1 TASK" not in runs and "MDD S2 TASK" not in runs
    # every recording: the release's windows and label (the second copy of H S15 EO is read once: see the card)
    assert "6921959_H S15 EO" not in runs
    for n in names:
        got = store_windows(st, n)
        assert close(got, _release_windows(root / f"{n}.edf")) < 1e-3, n
        assert set(st.labels[runs == n].tolist()) == {1 if "MDD" in n else 0}
    # the split: each group's sorted file names cut at the positions; H S1 EC trains and H S1 EO validates
    release = _release_split(root, {"H": (3, 5), "MDD": (3, 5)})
    task = st.info.card_body["tasks"]["mdd"]
    assert task["split_unit"] == "run"
    for k in ("train", "val", "test"):
        assert task["splits"][k] == sorted(f[:-4] for f in release[k]), k
    assert task["splits"]["train"][:3] == ["6921143_H S15 EO", "6921959_H S15 EO", "H S1 EC"]
    assert any("in two splits" in s and "H S1" in s and "MDD S10" in s for s in said.lines), said.lines


def test_the_cards_cut_points_on_the_published_names(tmp_path):
    """The packaged rule ([:40], [40:48] healthy; [:42], [42:52] MDD) over the names of the figshare folder (empty
    files: names are all the rule reads) equals the release's ``iter_files`` + ``sorted`` + cuts."""
    missing = {"H S15 EO", "H S3 EC", "H S12 EO", "MDD S7 EO", "MDD S20 EC"}  # some subjects lack a condition
    names = [
        f"{g} S{i} {c}" for g, n in (("H", 30), ("MDD", 34)) for i in range(1, n + 1) for c in ("EC", "EO", "TASK")
    ]
    names = [n for n in names if n not in missing] + ["6921143_H S15 EO", "6921959_H S15 EO"]
    for n in names:
        (tmp_path / f"{n}.edf").write_bytes(b"")
    entries = mumtaz_entries(tmp_path)
    assert len(entries) == len([n for n in names if "TASK" not in n])
    card = load_card("mumtaz")
    card.apply_split_rule("mdd", entries)
    release = _release_split(tmp_path, {"H": (40, 48), "MDD": (42, 52)})
    assert card.split_unit("mdd") == "run"
    got = card.splits("mdd")
    for k in ("train", "val", "test"):
        assert got[k] == sorted(f[:-4] for f in release[k]), k
    assert {e.subject for e in entries if e.run.endswith("H S15 EO")} == {"H S15"}


def test_names_the_rule_cannot_place_are_refused(tmp_path):
    (tmp_path / "H S1 EC.edf").write_bytes(b"")
    (tmp_path / "x_MDD S1 EC.edf").write_bytes(b"")
    with pytest.raises(DataFileError, match="'MDD' inside the name but not at its start"):
        mumtaz_entries(tmp_path)
    (tmp_path / "x_MDD S1 EC.edf").unlink()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "H S1 EC.edf").write_bytes(b"")
    with pytest.raises(DataFileError, match="a second file named 'H S1 EC.edf'"):
        mumtaz_entries(tmp_path)
