"""The SHU-MI card (issue 37): ``neuro prepare shu_mi --data-root ROOT`` on a small corpus of the dataset's MATLAB
files (``sub-NNN_ses-NN_task_motorimagery_eeg.mat``: ``data`` trials x 32 x 1000, ``labels`` 1 x trials) equals
CBraMod's ``preprocessing_shu.py`` computed here with scipy in the release's order: the same trials per subject and
label, the release's split by sorted file position, values within 1e-3 of the signal's RMS; bad files give one
line."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io
from scipy.signal import resample
from typer.testing import CliRunner

from neurokit.cli.main import app
from neurokit.store.patch_store import PatchStore
from tests.release_corpus import finetune_tiny, close, signals, store_windows

pytestmark = pytest.mark.slow


def _name(s: int, k: int) -> str:
    return f"sub-{s:03d}_ses-{k:02d}_task_motorimagery_eeg.mat"


def _write(path, n_trials: int, seed: int, labels=None, n_labels=None):
    """One session file: data (trials, 32, 1000) µV, labels (1, trials) 1-2 as the dataset stores them."""
    x = signals(32, 250.0, 4.0 * n_trials, seed, line=50.0) * 1e6
    data = x.reshape(32, n_trials, 1000).transpose(1, 0, 2)
    y = labels if labels is not None else [1 + (k + seed) % 2 for k in range(n_labels or n_trials)]
    path.parent.mkdir(parents=True, exist_ok=True)
    scipy.io.savemat(path, {"data": data, "labels": np.asarray(y, dtype=np.uint8).reshape(1, -1)})
    return path


def _release(path):
    """preprocessing_shu.py's steps on one file: (n, 32, 800) µV / 100 (the loader) and labels - 1."""
    data = scipy.io.loadmat(path)
    eeg, labels = data["data"], data["labels"][0]
    out = resample(eeg, 800, axis=2) / 100.0
    return out, [int(v) - 1 for v in labels]


def _prepare(root, out):
    return CliRunner().invoke(app, ["prepare", "shu_mi", "--data-root", str(root), "-o", str(out)])


def test_shu_mi_equals_the_release(tmp_path):
    root = tmp_path / "shu" / "mat"
    files = {}
    for s in range(1, 26):
        for k in (1, 2):  # two of the five sessions, to keep the test small
            f = _write(root / _name(s, k), 2 + (s + k) % 2, 10 * s + k)
            files[f.stem] = f
    r = _prepare(tmp_path / "shu", tmp_path / "s.h5")
    assert r.exit_code == 0, r.output
    st = PatchStore(tmp_path / "s.h5")
    assert st.sample_shape == (32, 4, 200) and list(st.info.ch_names[14:18]) == ["T7", "T8", "A1", "A2"]
    for run, f in files.items():
        want, labs = _release(f)
        got = store_windows(st, run)
        assert close(got, want) < 1e-3, run
        sel = st.meta["run"].astype(str) == run
        order = np.argsort(st.meta["onset"][sel], kind="stable")
        assert st.labels[sel][order].tolist() == labs
        assert set(st.meta["subject"][sel].astype(str)) == {run[:7]}
        assert set(st.meta["session"][sel].astype(str)) == {run[8:14]}
    card = st.info.card_body["tasks"]["motor_imagery"]
    assert card["splits"] == {"train": "1-15", "val": "16-20", "test": "21-25"}
    assert card["paper"]["CBraMod"] == {"balanced_accuracy": 0.637, "auc_pr": 0.7139, "auroc": 0.6988,
                                        "source": "CBraMod (Wang et al., ICLR 2025, arXiv 2412.07236), Table 3"}  # fmt: skip
    # the release's split: sorted names, [:75] / [75:100] / [100:] of the full 125 files (5 sessions a subject) =
    # subjects 1-15 / 16-20 / 21-25
    names = sorted(_name(s, k) for s in range(1, 26) for k in range(1, 6))
    release = {"train": names[:75], "val": names[75:100], "test": names[100:]}
    ids = {k: sorted({n[:7] for n in v}) for k, v in release.items()}
    assert ids["train"] == [f"sub-{s:03d}" for s in range(1, 16)] and ids["test"][0] == "sub-021"
    subj = st.meta["subject"].astype(str)
    n = {k: int(np.isin(subj, v).sum()) for k, v in ids.items()}
    want = {k: sum(len(_release(f)[1]) for r_, f in files.items() if r_[:7] in v) for k, v in ids.items()}
    assert n == want
    assert f"train {want['train']} · val {want['val']} · test {want['test']}" in r.output
    # neuro finetune runs on the store with the card's (the release's) settings, binary metrics
    out = finetune_tiny(tmp_path / "s.h5", tmp_path / "ft")
    assert "auroc" in out.lower() or "auc" in out.lower()


def test_bad_files_give_one_line(tmp_path):
    f = tmp_path / "a" / _name(1, 1)
    f.parent.mkdir(parents=True)
    scipy.io.savemat(f, {"eeg": np.zeros((2, 32, 1000)), "labels": np.ones((1, 2))})
    r = _prepare(tmp_path / "a", tmp_path / "x.h5")
    assert r.exit_code != 0
    msg = " ".join(r.output.split())
    assert f"{_name(1, 1)}: no variable 'data' (it holds: eeg, labels)" in msg
    _write(tmp_path / "b" / _name(2, 3), 3, 1, n_labels=4)
    r = _prepare(tmp_path / "b", tmp_path / "y.h5")
    assert r.exit_code != 0
    msg = " ".join(r.output.split())
    assert f"{_name(2, 3)}: variable 'data' holds 3 trials but 'labels' holds 4 labels" in msg


def _write_v73(path, data, labels):
    """The same session as MATLAB's ``save -v7.3`` writes it (HDF5, axes reversed as h5py sees them)."""
    import h5py

    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w", userblock_size=512) as h:
        for name, value, cls in (("data", data, b"double"), ("labels", labels, b"uint8")):
            d = h.create_dataset(name, data=np.asarray(value).T)
            d.attrs["MATLAB_class"] = cls
    return path


def test_a_session_of_one_trial_keeps_its_trial_axis(tmp_path):
    """Issue 44 item 9: a session file of one trial (``data`` 1 x 32 x 1000) was refused ("variable 'data' has shape
    (32, 1000); expected 3 axes"): the reader squeezed the trial axis away. v5 and v7.3 files alike read as the
    release reads them."""
    from neurokit.datasets.shumi import release_trials

    v5 = _write(tmp_path / "shu" / "v5" / _name(1, 1), 1, 3)
    x5, y5 = release_trials(v5)
    data = scipy.io.loadmat(v5)["data"]
    assert data.shape == (1, 32, 1000) and x5.shape == (1, 32, 1000) and y5 == [2]
    np.testing.assert_array_equal(x5, data)
    other = scipy.io.loadmat(_write(tmp_path / "other.mat", 1, 4))["data"]
    v73 = _write_v73(tmp_path / "shu" / "v73" / _name(2, 1), other, np.array([[1]], dtype=np.uint8))
    x73, y73 = release_trials(v73)
    assert x73.shape == (1, 32, 1000) and y73 == [1]
    np.testing.assert_array_equal(x73, other)
    r = _prepare(tmp_path / "shu", tmp_path / "s.h5")
    assert r.exit_code == 0, r.output
    st = PatchStore(tmp_path / "s.h5")
    for f, x, labs in ((v5, data, [1]), (v73, other, [0])):
        want = resample(x, 800, axis=2) / 100.0  # the release's steps (preprocessing_shu.py, the loader)
        assert close(store_windows(st, f.stem), want) < 1e-3
        assert st.labels[st.meta["run"].astype(str) == f.stem].tolist() == labs
