"""The CHB-MIT card (issue 34): ``neuro prepare chb_mit --data-root ROOT`` on a small corpus in PhysioNet's layout
equals the CBraMod release's steps (``preprocessing/CHB-MIT/process1.py``, ``process2.py``,
``datasets/chb_dataset.py``), computed here with MNE/scipy calls in the release's order: the same windows per
recording and label (regular 10-s windows and extra seizure windows), the release's split by patient, values within
1e-3 of the signal's RMS."""

from __future__ import annotations

import mne
import numpy as np
import pytest
from scipy.signal import resample
from typer.testing import CliRunner

from neurokit.cli.main import app
from neurokit.store.patch_store import PatchStore
from tests.edf_build import write_edf as write_edf_labels
from tests.release_corpus import signals, write_edf

pytestmark = pytest.mark.slow

#: the release's 16 derivations in its order (process2.py), as CHB-MIT labels them
RELEASE = [
    "FP1-F7", "F7-T7", "T7-P7", "P7-O1", "FP2-F8", "F8-T8", "T8-P8", "P8-O2",
    "FP1-F3", "F3-C3", "C3-P3", "P3-O1", "FP2-F4", "F4-C4", "C4-P4", "P4-O2",
]  # fmt: skip
#: a CHB-MIT file's channel order (chb01's), with two derivations the release does not use
FILE_ORDER = RELEASE[:4] + RELEASE[8:] + RELEASE[4:8] + ["FZ-CZ", "CZ-PZ"]


def _summary(folder, blocks):
    """``chbNN-summary.txt``: ``blocks`` = [(file name, [(start_s, end_s), …], numbered)]."""
    text = "Data Sampling Rate: 256 Hz\n*************************\n\nChannels in EDF Files:\n**********************\n"
    text += "".join(f"Channel {i + 1}: {c}\n" for i, c in enumerate(FILE_ORDER)) + "\n"
    for name, seizures, numbered in blocks:
        text += f"File Name: {name}\nFile Start Time: 11:42:54\nFile End Time: 12:42:54\n"
        text += f"Number of Seizures in File: {len(seizures)}\n"
        for k, (a, b) in enumerate(seizures, 1):
            tag = f"Seizure {k}" if numbered else "Seizure"
            text += f"{tag} Start Time: {a} seconds\n{tag} End Time: {b} seconds\n"
        text += "\n"
    (folder / f"{folder.name}-summary.txt").write_text(text)


def _release(path, seizures_s):
    """The release's windows of one recording: (onset samples, labels, (n, 16, 2000) windows / 100), the extra
    windows that run past the end left out (the card's documented difference)."""
    raw = mne.io.read_raw_edf(path, preload=True, verbose="error")
    first = {}
    for i, c in enumerate(raw.ch_names):  # MNE reads a repeated label as T8-P8-0, T8-P8-1; the release keeps the first
        first.setdefault(c[:-2] if c.endswith("-0") else c, i)
    sig = raw.get_data(units="uV")[[first[c] for c in RELEASE]]
    times = [(a * 256 - 1, b * 256 - 1) for a, b in seizures_s]
    n = sig.shape[1]
    out = []
    for i in range(0, n, 2560):
        seg = sig[:, i : i + 2560]
        if seg.shape[1] == 2560:
            y = int(any(i < s < i + 2560 or i < e < i + 2560 for s, e in times))
            out.append((i, y, seg))
    for s, e in times:
        for i in range(max(0, s - 256), min(e + 256, n), 1280):
            seg = sig[:, i : i + 2560]
            if seg.shape[1] == 2560:
                out.append((i, 1, seg))
    out.sort(key=lambda t: (t[0], t[1]))
    return (
        np.array([t[0] for t in out]),
        np.array([t[1] for t in out]),
        np.stack([resample(t[2], 2000, axis=1) / 100 for t in out]),
    )


def _got(st, run):
    sel = np.flatnonzero(st.meta["run"].astype(str) == run)
    on, y = st.meta["onset"][sel], st.labels[sel]
    order = np.lexsort((y, on))
    sel = sel[order]
    x = np.stack([np.asarray(st.patches(int(i))).reshape(16, -1) for i in sel])
    return np.round(on[order] * 256).astype(int), y[order], x


def _close(got, want):
    assert got.shape == want.shape, (got.shape, want.shape)
    return float(np.abs(got - want).max() / np.sqrt((want**2).mean()))


def _corpus(root):
    """chb01 (two recordings, the summary naming a third that is absent), chb21 (two numbered seizures, an extra
    window past the end), chb23 (a seizure from 0 s: a regular and an extra window at one time with labels 0 and
    1; a repeated T8-P8), chb12 (never processed by the release). Returns {path: seizures in s}."""
    files = {}

    def edf(patient, num, seconds, seed, seizures, dup=False):
        folder = root / f"chb{patient}"
        path = folder / f"chb{patient}_{num}.edf"
        if dup:  # MNE cannot write a repeated label: the EDF writer of the tests can
            names = FILE_ORDER + ["T8-P8"]
            data = signals(len(names), 256.0, seconds, seed) * 1e6
            folder.mkdir(parents=True, exist_ok=True)
            write_edf_labels(path, data, 256.0, names, plus="")
        else:
            write_edf(path, FILE_ORDER, 256.0, seconds, seed)
        files[path] = seizures
        return path

    edf("01", "01", 60.0, 1, [])
    edf("01", "03", 60.0, 2, [(20, 38)])
    _summary(
        root / "chb01", [("chb01_01.edf", [], False), ("chb01_02.edf", [], False), ("chb01_03.edf", [(20, 38)], False)]
    )
    edf("21", "01", 50.0, 3, [(5, 12), (40, 48)])
    _summary(root / "chb21", [("chb21_01.edf", [(5, 12), (40, 48)], True)])
    edf("23", "06", 60.0, 4, [(0, 30)], dup=True)
    _summary(root / "chb23", [("chb23_06.edf", [(0, 30)], False)])
    p12 = edf("12", "06", 30.0, 5, [])
    _summary(root / "chb12", [("chb12_06.edf", [], False)])
    del files[p12]
    return files


def test_chb_mit_equals_the_release(tmp_path):
    root = tmp_path / "chb-mit-scalp-eeg-database-1.0.0"
    files = _corpus(root)
    r = CliRunner().invoke(app, ["prepare", "chb_mit", "--data-root", str(root), "-o", str(tmp_path / "chb.h5")])
    assert r.exit_code == 0, r.output
    out = "".join(r.output.split())  # the log wraps at the terminal's width, anywhere in a long temporary path
    assert "chb01-summary.txt:names1recording(s)notin" in out and "chb01_02.edf" in out
    st = PatchStore(tmp_path / "chb.h5")
    assert list(st.info.ch_names) == [c.replace("FP", "Fp") for c in RELEASE] and st.sample_shape == (16, 10, 200)
    assert sorted(set(st.meta["subject"].astype(str))) == ["chb01", "chb21", "chb23"]  # chb12: not processed
    for f, seizures in files.items():
        on, y, x = _release(f, seizures)
        got_on, got_y, got_x = _got(st, f.stem)
        assert got_on.tolist() == on.tolist() and got_y.tolist() == y.tolist(), f.stem
        assert _close(got_x, x) < 1e-3, f.stem
    # chb23_06: the seizure from 0 s gives a regular window (label 0: neither end inside) and an extra one at 0 s
    _, y23, _ = _got(st, "chb23_06")
    assert y23[:2].tolist() == [0, 1]
    card = st.info.card_body["tasks"]["seizure"]
    assert card["splits"]["val"] == ["chb21", "chb22"] and card["splits"]["test"] == ["chb23", "chb24"]
    assert "chb12" not in card["splits"]["train"] and "chb01" in card["splits"]["train"]
    n = {k: int(np.isin(st.meta["subject"].astype(str), v).sum()) for k, v in card["splits"].items()}
    assert f"train{n['train']:,}·val{n['val']:,}·test{n['test']:,}" in out


def test_chb_mit_refuses_a_missing_derivation_and_an_unlisted_recording(tmp_path):
    root = tmp_path / "chb"
    write_edf(root / "chb01" / "chb01_01.edf", [c for c in FILE_ORDER if c != "P4-O2"], 256.0, 20.0, 1)
    _summary(root / "chb01", [("chb01_01.edf", [], False)])
    r = CliRunner().invoke(app, ["prepare", "chb_mit", "--data-root", str(root), "-o", str(tmp_path / "a.h5")])
    assert r.exit_code != 0
    assert "chb01_01.edf" in r.output and "P4-O2" in r.output
    write_edf(root / "chb01" / "chb01_01.edf", FILE_ORDER, 256.0, 20.0, 1)
    _summary(root / "chb01", [("chb01_02.edf", [], False)])
    r = CliRunner().invoke(app, ["prepare", "chb_mit", "--data-root", str(root), "-o", str(tmp_path / "b.h5")])
    assert r.exit_code != 0
    assert "chb01_01.edf: not listed in" in " ".join(r.output.split())


def test_chb_mit_summary_as_the_release_reads_it(tmp_path):
    from neurokit._utils.errors import DataFileError
    from neurokit.datasets.chbmit import read_summary

    s = tmp_path / "chb09-summary.txt"
    # chb09_08 names its second seizure's end "Seizure 1 End Time": the release takes the line after each start
    s.write_text(
        "File Name: chb09_08.edf\nFile End Time: 24:22:17\nNumber of Seizures in File: 2\n"
        "Seizure 1 Start Time: 2951 seconds\nSeizure 1 End Time: 3030 seconds\n"
        "Seizure 2 Start Time: 9196 seconds\nSeizure 1 End Time: 9267 seconds\n\n"
        "File Name: chb09_09.edf\nNumber of Seizures in File: 0\n"
    )
    assert read_summary(s) == {
        "chb09_08.edf": [(2951 * 256 - 1, 3030 * 256 - 1), (9196 * 256 - 1, 9267 * 256 - 1)],
        "chb09_09.edf": [],
    }
    s.write_text(
        "File Name: chb09_08.edf\nNumber of Seizures in File: 2\nSeizure Start Time: 10 seconds\n"
        "Seizure End Time: 20 seconds\n\nFile Name: chb09_09.edf\nNumber of Seizures in File: 0\n"
    )
    with pytest.raises(DataFileError, match=r"chb09-summary.txt:2: chb09_08.edf announces 2 seizure\(s\) but lists 1"):
        read_summary(s)


def test_chb_mit_summary_repeating_a_recording_keeps_every_seizure(tmp_path):
    """Issue 44 item 3: a recording listed in two blocks keeps the seizures of both (a repeated one once); a seizure
    whose end is not after its start is refused naming the summary's line."""
    from neurokit._utils.errors import DataFileError
    from neurokit.datasets.chbmit import read_summary

    root = tmp_path / "chb"
    path = write_edf(root / "chb01" / "chb01_03.edf", FILE_ORDER, 256.0, 60.0, 2)
    blocks = [("chb01_03.edf", [(20, 38)], False), ("chb01_03.edf", [(20, 38), (44, 52)], True)]
    _summary(root / "chb01", blocks)
    summary = root / "chb01" / "chb01-summary.txt"
    assert read_summary(summary) == {"chb01_03.edf": [(20 * 256 - 1, 38 * 256 - 1), (44 * 256 - 1, 52 * 256 - 1)]}
    r = CliRunner().invoke(app, ["prepare", "chb_mit", "--data-root", str(root), "-o", str(tmp_path / "c.h5")])
    assert r.exit_code == 0, r.output
    on, y, _ = _release(path, [(20, 38), (44, 52)])
    got_on, got_y, _ = _got(PatchStore(tmp_path / "c.h5"), "chb01_03")
    assert got_on.tolist() == on.tolist() and got_y.tolist() == y.tolist()
    assert int(got_y.sum()) > int(_release(path, [(44, 52)])[1].sum())

    _summary(root / "chb01", [("chb01_03.edf", [(20, 38), (40, 40)], False)])
    lines = summary.read_text().splitlines()
    end_line = next(i for i, ln in enumerate(lines) if ln == "Seizure End Time: 40 seconds") + 1
    with pytest.raises(
        DataFileError, match=rf"chb01-summary.txt:{end_line}: chb01_03.edf's seizure ends at 40 s, not after"
    ):
        read_summary(summary)
    _summary(root / "chb01", [("chb01_03.edf", [(30, 25)], False)])
    r = CliRunner().invoke(app, ["prepare", "chb_mit", "--data-root", str(root), "-o", str(tmp_path / "d.h5")])
    out = "".join(r.output.split())
    assert r.exit_code != 0 and "chb01-summary.txt:" in out and "notafteritsstartat30s" in out, out
