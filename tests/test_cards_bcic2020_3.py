"""The BCIC2020-3 card (issue 37): ``neuro prepare bcic2020_3 --data-root ROOT`` on a small corpus in the
competition's layout (``Training set`` / ``Validation set`` of MATLAB v5 files with ``epo_train`` /
``epo_validation`` {x: samples x 64 x trials, y: one-hot 5 x trials}, ``Test set`` of MATLAB v7.3 files with
``epo_test`` {x}, the labels in ``Track3_Answer Sheet_Test.xlsx``) equals CBraMod's ``preprocessing_speech.py``
computed here with scipy/h5py in the release's order: the same trials per subject and label, the release's split by
folder, values within 1e-3 of the signal's RMS; bad files give one line. (``neuro finetune`` on such a store is not
run here: the release's all_patch_reps head over 64 x 3 x 200 has 23 M weights, and one tiny epoch writes ~470 MB of
checkpoints in ~11 s.)"""

from __future__ import annotations

import zipfile
from xml.sax.saxutils import escape

import h5py
import numpy as np
import pytest
import scipy.io
from scipy.signal import resample
from typer.testing import CliRunner

from neurokit.cli.main import app
from neurokit.datasets.bcic2020 import CHANNELS
from neurokit.store.patch_store import PatchStore
from tests.release_corpus import finetune_tiny, close, signals

pytestmark = pytest.mark.slow

T = 795  # samples per trial in the published files (3.1 s at 256 Hz)
FOLDER = {"train": "Training set", "val": "Validation set", "test": "Test set"}
VAR = {"train": "epo_train", "val": "epo_validation", "test": "epo_test"}
SHEET = "Track3_Answer Sheet_Test.xlsx"


def _x(n_trials: int, seed: int, n_ch: int = 64) -> np.ndarray:
    """Trials as the files store them: samples x channels x trials, µV."""
    x = signals(n_ch, 256.0, T * n_trials / 256.0, seed) * 1e6
    return x.reshape(n_ch, n_trials, T).transpose(2, 0, 1)


def _write_v5(path, var, x, labels, n_classes=5):
    """A v5 file whose struct has x and y at field positions 4 and 5 (where the release's [0][0][4], [0][0][5] read
    them), y one-hot classes x trials."""
    y = np.zeros((n_classes, len(labels)))
    y[np.asarray(labels) - 1, np.arange(len(labels))] = 1
    path.parent.mkdir(parents=True, exist_ok=True)
    epo = {"clab": np.asarray(CHANNELS, dtype=object), "fs": 256.0, "title": "Data_Sample", "className": "words"}
    scipy.io.savemat(path, {var: {**epo, "x": x, "y": y, "t": np.arange(T) / 256.0}})
    return path


def _write_v73(path, var, x):
    """A MATLAB v7.3 (HDF5) file: struct ``var`` with x (h5py sees MATLAB's column-major axes reversed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w", userblock_size=512) as h:
        g = h.create_group(var)
        g.attrs["MATLAB_class"] = b"struct"
        d = g.create_dataset("x", data=x.T)
        d.attrs["MATLAB_class"] = b"double"
        d = g.create_dataset("fs", data=np.array([[256.0]]))
        d.attrs["MATLAB_class"] = b"double"
    return path


def _col(c: int) -> str:
    return chr(65 + c) if c < 26 else "A" + chr(65 + c - 26)


def _write_xlsx(path, grid):
    """A minimal workbook (as Excel writes one: a zip of XML, text in shared strings) of ``grid`` (rows of cells:
    str, number or None), its first sheet."""
    ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    strings: list[str] = []
    rows = []
    for i, row in enumerate(grid, start=1):
        cells = []
        for c, v in enumerate(row):
            ref = f"{_col(c)}{i}"
            if isinstance(v, str):
                strings.append(v)
                cells.append(f'<c r="{ref}" t="s"><v>{len(strings) - 1}</v></c>')
            elif v is not None:
                cells.append(f'<c r="{ref}"><v>{v}</v></c>')
        rows.append(f'<row r="{i}">{"".join(cells)}</row>')
    sst = "".join(f"<si><t>{escape(s)}</t></si>" for s in strings)
    files = {
        "[Content_Types].xml": '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/'
        'content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships'
        '+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override '
        'PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.'
        'spreadsheetml.worksheet+xml"/><Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.'
        'openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>',
        "_rels/.rels": '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
        f'relationships"><Relationship Id="rId1" Type="{rel}/officeDocument" Target="xl/workbook.xml"/>'
        "</Relationships>",
        "xl/workbook.xml": f'<?xml version="1.0"?><workbook {ns} xmlns:r="{rel}"><sheets><sheet name="Sheet1" '
        'sheetId="1" r:id="rId1"/></sheets></workbook>',
        "xl/_rels/workbook.xml.rels": '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/'
        f'package/2006/relationships"><Relationship Id="rId1" Type="{rel}/worksheet" '
        f'Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="{rel}/sharedStrings" '
        'Target="sharedStrings.xml"/></Relationships>',
        "xl/worksheets/sheet1.xml": f'<?xml version="1.0"?><worksheet {ns}><sheetData>{"".join(rows)}</sheetData>'
        "</worksheet>",
        "xl/sharedStrings.xml": f'<?xml version="1.0"?><sst {ns} count="{len(strings)}">{sst}</sst>',
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


def _sheet_grid(test_labels: dict[int, list[int]], n_rows: int = 50):
    """The answer sheet's cells: three header rows, then one row per trial: its number in column B, then per subject
    NN its label in column 2*NN (C, E, ...) and the word in the column after."""
    words = ["Hello", "Help me", "Stop", "Thank you", "Yes"]
    grid = [["Track #3 answer sheet"], [None, "Imagined speech classification"], [None, "Trial"]]
    for s in range(1, 16):
        grid[2] += [f"Data_Sample{s:02d}", None]
    for k in range(n_rows):
        row = [None, k + 1]
        for s in range(1, 16):
            labs = test_labels.get(s, [])
            v = labs[k] if k < len(labs) else 1 + (k + s) % 5
            row += [v, words[v - 1]]
        grid.append(row)
    return grid


def _release_v5(path, var):
    """preprocessing_speech.py on a training/validation file: (n, 64, 600) µV / 100 (the loader), labels 0-4."""
    data = scipy.io.loadmat(path)
    eeg = data[var][0][0][4].transpose(2, 1, 0)
    labels = data[var][0][0][5].transpose(1, 0)
    eeg = eeg[:, :, -768:]
    return resample(eeg, 600, axis=2) / 100.0, np.argmax(labels, axis=1).tolist()


def _release_test(path, grid, j):
    """preprocessing_speech.py on the j-th test file: h5py's epo_test/x, the answer sheet read as pandas would
    (first row the header, then head(53)), its [2:, 1:][:, 1:30:2] transposed, row j, label - 1."""
    sheet = np.array([row + [None] * (32 - len(row)) for row in grid[1:]], dtype=object)[:53]
    all_labels = sheet[2:, 1:][:, 1:30:2].transpose(1, 0)
    with h5py.File(path) as data:
        eeg = data["epo_test"]["x"][:]
    eeg = eeg[:, :, -768:]
    out = resample(eeg, 600, axis=2) / 100.0
    return out, [int(v) - 1 for v in all_labels[j][: len(out)]]


def _windows(st, subject, run):
    sel = np.flatnonzero((st.meta["subject"].astype(str) == subject) & (st.meta["run"].astype(str) == run))
    sel = sel[np.argsort(st.meta["onset"][sel], kind="stable")]
    x = np.stack([np.asarray(st.patches(int(i))).reshape(64, -1) for i in sel])
    return x, st.labels[sel].tolist()


def _prepare(root, out):
    return CliRunner().invoke(app, ["prepare", "bcic2020_3", "--data-root", str(root), "-o", str(out)])


N = {"train": 3, "val": 2, "test": 2}
SUBJECTS = (1, 2, 15)


def _corpus(root):
    """Three subjects (1, 2 and the last, 15) of the competition's layout; returns the release's (windows, labels)
    per (subject id, split)."""
    test_labels = {s: [1 + (3 * k + s) % 5 for k in range(N["test"])] for s in SUBJECTS}
    grid = _sheet_grid(test_labels)
    _write_xlsx(root / SHEET, grid)
    want = {}
    for s in SUBJECTS:
        name = f"Data_Sample{s:02d}.mat"
        for k, split in enumerate(("train", "val")):
            labels = [1 + (j + s + k) % 5 for j in range(N[split])]
            f = _write_v5(root / FOLDER[split] / name, VAR[split], _x(N[split], 10 * s + k), labels)
            want[(f"Data_Sample{s:02d}", split)] = _release_v5(f, VAR[split])
        f = _write_v73(root / FOLDER["test"] / name, "epo_test", _x(N["test"], 10 * s + 2))
        # the release takes the j-th column for the j-th sorted test file: with the 15 published files, j = NN - 1
        want[(f"Data_Sample{s:02d}", "test")] = _release_test(f, grid, s - 1)
    return want


def test_bcic2020_3_equals_the_release(tmp_path):
    want = _corpus(tmp_path / "Imagined speech" / "mat")
    r = _prepare(tmp_path / "Imagined speech", tmp_path / "s.h5")
    assert r.exit_code == 0, r.output
    st = PatchStore(tmp_path / "s.h5")
    assert st.sample_shape == (64, 3, 200) and list(st.info.ch_names[16:22]) == CHANNELS[16:22]
    assert list(st.info.label_names) == ["hello", "help_me", "stop", "thank_you", "yes"]
    worst = 0.0
    for (subject, split), (x, labels) in want.items():
        got, labs = _windows(st, subject, split)
        assert labs == labels, (subject, split)
        worst = max(worst, close(got, x))
    assert worst < 1e-3
    card = st.info.card_body["tasks"]["imagined_speech"]
    assert card["splits"] == {"train": ["train"], "val": ["val"], "test": ["test"]} and card["split_unit"] == "run"
    assert card["paper"]["CBraMod"]["cohen_kappa"] == 0.4216 and card["paper"]["CBraMod"]["source"].endswith("Table 9")
    # every subject in all three splits, as the release's folders put them
    for run, n in N.items():
        sel = st.meta["run"].astype(str) == run
        assert sorted(set(st.meta["subject"][sel].astype(str))) == [f"Data_Sample{s:02d}" for s in SUBJECTS]
        assert int(sel.sum()) == n * len(SUBJECTS)
    out = " ".join(r.output.split())
    assert "train 9 · val 6 · test 6" in out and "train 4,500 · val 750 · test 750" in out
    # neuro finetune on the store with the card's (the release's) settings
    finetune_tiny(tmp_path / "s.h5", tmp_path / "ft")


def test_bad_files_give_one_line(tmp_path):
    # a .mat without the named variable
    f = tmp_path / "a" / "Training set" / "Data_Sample01.mat"
    f.parent.mkdir(parents=True)
    scipy.io.savemat(f, {"epo": {"x": np.zeros((T, 64, 2))}})
    r = _prepare(tmp_path / "a", tmp_path / "x.h5")
    assert r.exit_code != 0
    assert "Data_Sample01.mat: no variable 'epo_train' (it holds: epo)" in " ".join(r.output.split())
    # a trial list longer than the recording: y labels 4 trials, x holds 3
    x = _x(3, 1)
    _write_v5(tmp_path / "b" / "Training set" / "Data_Sample02.mat", "epo_train", x, [1, 2, 3, 4])
    r = _prepare(tmp_path / "b", tmp_path / "y.h5")
    assert r.exit_code != 0
    msg = " ".join(r.output.split())
    assert "Data_Sample02.mat: epo_train.y labels 4 trials but epo_train.x holds 3: the trial list does not" in msg
    # a wrong channel count
    _write_v5(tmp_path / "c" / "Validation set" / "Data_Sample03.mat", "epo_validation", _x(2, 2, n_ch=63), [1, 2])
    r = _prepare(tmp_path / "c", tmp_path / "z.h5")
    assert r.exit_code != 0
    assert "Data_Sample03.mat: epo_validation.x has 63 channels; expected 64" in " ".join(r.output.split())


def test_answer_sheet_that_does_not_match_the_test_file(tmp_path):
    root = tmp_path / "mat"
    _write_v73(root / "Test set" / "Data_Sample04.mat", "epo_test", _x(3, 4))
    r = _prepare(root, tmp_path / "x.h5")
    assert r.exit_code != 0
    assert "Data_Sample04.mat: no answer sheet 'Track3_Answer Sheet_Test.xlsx'" in " ".join(r.output.split())
    _write_xlsx(root / SHEET, _sheet_grid({4: [1, 2]}, n_rows=2))  # two labels for a file of three trials
    r = _prepare(root, tmp_path / "y.h5")
    assert r.exit_code != 0
    msg = " ".join(r.output.split())
    assert f"{SHEET}: cell I6 (subject 4, trial 3) is empty but the test file holds 3 trials" in msg


def test_files_of_one_trial_keep_their_trial_axis(tmp_path):
    """Issue 44 item 9: a validation file of one trial (``x`` samples x 64 x 1, ``y`` 5 x 1) was refused: the reader
    squeezed the trial axis away. It reads as the release reads it; so does a v7.3 test file of one trial, whose
    trailing axis of length 1 MATLAB does not store (``x`` 795 x 64)."""
    from neurokit.datasets.bcic2020 import release_trials

    root = tmp_path / "mat"
    val = _write_v5(root / FOLDER["val"] / "Data_Sample01.mat", VAR["val"], _x(1, 5), [4])
    assert scipy.io.loadmat(val)[VAR["val"]][0][0][4].shape == (T, 64, 1)
    x, y = release_trials(val)
    assert x.shape == (1, 64, 768) and y == [4]
    one = _x(1, 6)[:, :, 0]  # as MATLAB stores samples x 64 x 1: samples x 64
    test = _write_v73(root / FOLDER["test"] / "Data_Sample01.mat", VAR["test"], one)
    _write_xlsx(root / SHEET, _sheet_grid({1: [2]}, n_rows=1))
    x, y = release_trials(test)
    assert x.shape == (1, 64, 768) and y == [2]
    np.testing.assert_array_equal(x[0], one[-768:].T)
    r = _prepare(root, tmp_path / "s.h5")
    assert r.exit_code == 0, r.output
    st = PatchStore(tmp_path / "s.h5")
    want_val = _release_v5(val, VAR["val"])
    want_test = resample(one[-768:].T[None], 600, axis=2) / 100.0, [1]
    for split, (want, labels) in (("val", want_val), ("test", want_test)):
        got, labs = _windows(st, "Data_Sample01", split)
        assert labs == labels and close(got, want) < 1e-3, split
