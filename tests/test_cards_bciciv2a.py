"""The BCIC-IV-2a card (issue 37): ``neuro prepare bciciv2a --data-root ROOT`` on a small corpus of BNCI-layout
MATLAB files (``A01T.mat`` ... ``A09E.mat``, variable ``data``: a cell of run structs X / trial / y) equals CBraMod's
``preprocessing_bciciv2a.py`` computed here with scipy in the release's order: the same trials per subject and
label, the release's split by file lists, values within 1e-3 of the signal's RMS; and bad files give one line."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io
from scipy.signal import butter, lfilter, resample
from typer.testing import CliRunner

from neurokit._utils.errors import DataFileError
from neurokit.cli.main import app
from neurokit.store.patch_store import PatchStore
from tests.release_corpus import finetune_tiny, close, signals, store_windows

pytestmark = pytest.mark.slow

GAP = 1875  # 7.5 s between trial starts at 250 Hz


def _run(n_trials: int, seed: int, labels=None):
    """One MI run: X samples x 25 (µV), 0-based trial starts (as the release uses them), labels 1-4."""
    n = n_trials * GAP + 400
    x = signals(25, 250.0, n / 250.0, seed, line=50.0).T * 1e6
    trial = (np.arange(n_trials) * GAP + 100 + seed % 7).reshape(-1, 1).astype(np.int32)
    y = np.asarray(labels if labels is not None else [1 + (k + seed) % 4 for k in range(n_trials)]).reshape(-1, 1)
    return {"X": x, "trial": trial, "y": y.astype(np.uint8), "fs": 250}


def _eog(seed: int):
    return {"X": signals(25, 250.0, 4.0, seed).T * 1e6, "trial": np.zeros((0, 1)), "y": np.zeros((0, 1)), "fs": 250}


def _write(path, runs):
    cell = np.empty((1, len(runs)), dtype=object)
    for j, r in enumerate(runs):
        cell[0, j] = r
    path.parent.mkdir(parents=True, exist_ok=True)
    scipy.io.savemat(path, {"data": cell})
    return path


def _release(path):
    """preprocessing_bciciv2a.py's steps on one file: (n, 22, 800) µV and labels 0-3; then / 100 (the loader)."""
    data = scipy.io.loadmat(path)
    b, a = butter(5, [0.3 / 125, 40 / 125], btype="band")
    out, labs = [], []
    for j in range(len(data["data"][0])):
        labels = data["data"][0, j][0, 0][2][:, 0]
        if labels.shape[0] == 0:
            continue
        raw = data["data"][0, j][0, 0][0][:, :22]
        ev = data["data"][0, j][0, 0][1][:, 0].tolist() + [raw.shape[0]]
        for i, lab in enumerate(labels):
            s = raw[ev[i] : ev[i + 1]].T
            s = s - s.mean(axis=0, keepdims=True)
            s = lfilter(b, a, s, -1)[:, 500:1500]
            out.append(resample(s, 800, axis=-1) / 100.0)
            labs.append(int(lab) - 1)
    return np.stack(out), labs


def _prepare(root, out):
    return CliRunner().invoke(app, ["prepare", "bciciv2a", "--data-root", str(root), "-o", str(out)])


def test_bciciv2a_equals_the_release(tmp_path):
    root = tmp_path / "BCICIV2a" / "data_mat"
    files = {}
    for s in range(1, 10):
        for k, sess in enumerate("TE"):
            seed = 10 * s + k
            # three EOG runs before the MI runs, one in A04T (the release detects them by their empty y)
            eog = [_eog(seed + 100)] if (s, sess) == (4, "T") else [_eog(seed + 100 + i) for i in range(3)]
            runs = eog + [_run(3, seed), _run(2, seed + 50)]
            files[f"A{s:02d}{sess}"] = _write(root / f"A{s:02d}{sess}.mat", runs)
    r = _prepare(tmp_path / "BCICIV2a", tmp_path / "s.h5")
    assert r.exit_code == 0, r.output
    st = PatchStore(tmp_path / "s.h5")
    assert st.sample_shape == (22, 4, 200) and list(st.info.ch_names[:3]) == ["Fz", "FC3", "FC1"]
    for run, f in files.items():
        want, labs = _release(f)
        got = store_windows(st, run)
        assert close(got, want) < 1e-3, run
        sel = st.meta["run"].astype(str) == run
        order = np.argsort(st.meta["onset"][sel], kind="stable")
        assert st.labels[sel][order].tolist() == labs
        assert set(st.meta["subject"][sel].astype(str)) == {run[:3]}
    card = st.info.card_body["tasks"]["motor_imagery"]
    # the release's file lists, as ranges of the layout's subject ids A01 ... A09
    assert card["splits"] == {"train": "1-5", "val": "6-7", "test": "8-9"}
    ids = {"train": ["A01", "A02", "A03", "A04", "A05"], "val": ["A06", "A07"], "test": ["A08", "A09"]}
    n = {k: int(np.isin(st.meta["subject"].astype(str), v).sum()) for k, v in ids.items()}
    assert "train 50 · val 20 · test 20" in r.output
    assert n == {"train": 50, "val": 20, "test": 20}  # 5 trials per file, T and E sessions
    assert card["paper"]["CBraMod"]["cohen_kappa"] == 0.3518
    # neuro finetune on the store: the card's (the release's) settings, the paper's figures beside the run's
    out = finetune_tiny(tmp_path / "s.h5", tmp_path / "ft")
    assert "paper: CBraMod" in out and "0.3518" in out


def test_bad_files_give_one_line(tmp_path):
    root = tmp_path / "a"
    f = root / "A01T.mat"
    f.parent.mkdir(parents=True)
    scipy.io.savemat(f, {"runs": np.zeros((2, 2))})
    r = _prepare(root, tmp_path / "x.h5")
    assert r.exit_code != 0
    assert "A01T.mat: no variable 'data' (it holds: runs)" in " ".join(r.output.split())
    # a trial list running past the recording: the last start beyond the run's samples
    run = _run(3, 1)
    run["trial"][-1, 0] = run["X"].shape[0] + 10
    _write(tmp_path / "b" / "A02E.mat", [_eog(1), run])
    r = _prepare(tmp_path / "b", tmp_path / "y.h5")
    assert r.exit_code != 0
    msg = " ".join(r.output.split())
    assert "A02E.mat: data{2} trial 3 starts at sample" in msg and "the trial list does not match the recording" in msg
    (tmp_path / "c.mat").write_bytes(b"not matlab at all")
    from neurokit.io.matlab import load_mat, read_mat

    with pytest.raises(DataFileError, match=r"c\.mat: not a readable MATLAB \.mat file"):
        load_mat(tmp_path / "c.mat", ["data"])
    # (a 2 x 2 variable is also 2 x 2 x 1 to MATLAB, which drops trailing axes of length 1: three axes are fine)
    assert read_mat(f, {"runs": ("trial", "channel", "time")})["runs"].shape == (2, 2, 1)
    with pytest.raises(DataFileError, match=r"variable 'runs' has shape \(2, 2\); expected 1 axes"):
        read_mat(f, {"runs": ("trial",)})


def test_matlab_v73_reads_as_v5(tmp_path):
    """A v7.3 (HDF5) file with a cell of structs reads as scipy reads the v5 file (MATLAB's column-major axes)."""
    import h5py

    from neurokit.datasets.bciciv2a import release_trials
    from neurokit.io.matlab import load_mat

    runs = [_eog(3), _run(2, 4)]
    v5 = _write(tmp_path / "A03T.mat", runs)
    p = tmp_path / "h" / "A03T.mat"
    p.parent.mkdir()
    with h5py.File(p, "w", userblock_size=512) as h:
        refs = h.create_group("#refs#")
        cell = []
        for j, r in enumerate(runs):
            g = refs.create_group(f"r{j}")
            for k, v in r.items():
                v = np.atleast_2d(np.asarray(v, dtype=np.float64))
                if v.size == 0:
                    d = g.create_dataset(k, data=np.array([0, 0], dtype=np.uint64))
                    d.attrs["MATLAB_empty"] = 1
                else:
                    d = g.create_dataset(k, data=v.T)  # MATLAB writes column-major: h5py sees it transposed
                d.attrs["MATLAB_class"] = b"double"
            g.attrs["MATLAB_class"] = b"struct"
            cell.append(g.ref)
        d = h.create_dataset("data", data=np.array(cell, dtype=h5py.ref_dtype).reshape(-1, 1))
        d.attrs["MATLAB_class"] = b"cell"
    a, b = load_mat(v5, ["data"])["data"], load_mat(p, ["data"])["data"]
    assert len(a) == len(b) == 2 and np.array_equal(a[1]["X"], b[1]["X"])
    (xa, la), (xb, lb) = release_trials(v5), release_trials(p)
    assert la == lb and np.allclose(xa, xb)


def test_one_bad_trial_costs_that_trial_not_the_session(tmp_path):
    """Issue 44 item 8: a NaN stretch inside one trial lost the whole session, naming no run, trial or channel. The
    trial is left out (named with its channels), the other trials keep their release values, and the store's
    source entry counts it."""
    root = tmp_path / "BCICIV2a" / "data_mat"
    run = _run(3, 11)
    run["X"][int(run["trial"][1, 0]) + 300 : int(run["trial"][1, 0]) + 340, 4] = np.nan  # trial 2, channel 5
    f = _write(root / "A01T.mat", [_eog(5), run])
    r = CliRunner().invoke(
        app, ["prepare", "bciciv2a", "--data-root", str(tmp_path / "BCICIV2a"), "-o", str(tmp_path / "s.h5"),
              "--subjects", "1"], env={"COLUMNS": "400"})  # fmt: skip
    said = " ".join(r.output.split())
    assert r.exit_code == 0, said
    assert "A01T.mat: data{2} trial 2 holds NaN/inf samples in FC2; that trial is left out" in said
    st = PatchStore(tmp_path / "s.h5")
    want, labs = _release(f)
    keep = [0, 2]
    got = store_windows(st, "A01T")
    assert got.shape[0] == 2 and close(got, want[keep]) < 1e-3
    assert st.labels.tolist() == [labs[k] for k in keep]
    src = st.info.sources[0]
    assert src["applied"]["trials_left_out_nonfinite"] == ["data{2} trial 2 (FC2)"]
