"""The ISRUC card (issue 34): ``neuro prepare isruc --data-root ROOT`` on a small corpus in ISRUC subgroup 1's
published layout (``<N>/<N>.rec`` EDF, ``<N>/<N>_1.txt``) equals the CBraMod release's
``preprocessing/ISRUC/prepare_ISRUC_1.py`` computed here with MNE calls in its order (read, 0.3-35 Hz, 50-Hz notch,
µV data frame, columns 2:8, whole 30-s epochs, whole sequences of 20, /100 at loading): the same epochs with the
same stages, the release's split (1-80 / 81-90 / 91-100), values within 1e-3 of the signal's RMS."""

from __future__ import annotations

import shutil

import mne
import numpy as np
import pytest
from typer.testing import CliRunner

from neurokit.cli.main import app
from neurokit.store.patch_store import PatchStore
from tests.release_corpus import close, store_windows, write_edf

pytestmark = pytest.mark.slow

#: an ISRUC subgroup-1 night's channels, in the file's order
ISRUC_A = ["LOC-A2", "ROC-A1", "F3-A2", "C3-A2", "O1-A2", "F4-A1", "C4-A1", "O2-A1", "X1", "X2", "X3"]
#: a later night's labels (M1/M2 references)
ISRUC_M = ["E1-M2", "E2-M1", "F3-M2", "C3-M2", "O1-M2", "F4-M1", "C4-M1", "O2-M1", "X1", "X2", "X3"]
CODES = {0: 0, 1: 1, 2: 2, 3: 3, 5: 4}  # hypnogram code → the release's class


def _night(root, n: int, names, n_epochs: int, extra_s: float, seed: int, codes=None):
    """``<root>/<n>/<n>.rec`` (an EDF renamed) of ``n_epochs`` 30-s epochs and ``extra_s`` more, and its
    hypnogram ``<n>_1.txt`` (blank last line, as the release skips blank lines); returns the codes."""
    edf = write_edf(root / str(n) / f"{n}.edf", names, 200.0, 30.0 * n_epochs + extra_s, seed, line=50.0)
    rec = edf.with_suffix(".rec")
    edf.rename(rec)
    rng = np.random.default_rng(seed)
    codes = list(rng.choice([0, 1, 2, 3, 5], size=n_epochs)) if codes is None else codes
    (root / str(n) / f"{n}_1.txt").write_text("".join(f"{c}\n" for c in codes) + "\n")
    (root / str(n) / f"{n}_2.txt").write_text("".join("0\n" for _ in codes))  # scorer 2: not read
    return [int(c) for c in codes]


def _release(rec, codes):
    """The release's steps on one night: ``(n_seq·20, 6, 6000)`` epochs / 100 and their classes."""
    edf = rec.with_suffix(".edf")
    shutil.copy(rec, edf)  # the release's EDF reader is MNE's with '.rec' allowed
    raw = mne.io.read_raw_edf(edf, preload=True, verbose="error")
    raw.filter(0.3, 35, fir_design="firwin", verbose="error")
    raw.notch_filter(50, verbose="error")
    x = raw.to_data_frame().values[:, 1:][:, 2:8]
    edf.unlink()
    x = x[: x.shape[0] - x.shape[0] % 6000]
    x = x.reshape(-1, 6000, 6)
    a = x.shape[0] % 20
    x = x[: x.shape[0] - a].reshape(-1, 20, 6000, 6).transpose(0, 1, 3, 2)
    y = np.array([CODES[c] for c in codes])
    y = (y[:-a] if a > 0 else y).reshape(-1, 20)
    return x.reshape(-1, 6, 6000) / 100.0, y.reshape(-1)


def _prepare(root, out, *extra):
    return CliRunner().invoke(app, ["prepare", "isruc", "--data-root", str(root), "-o", str(out), *extra])


def test_isruc_equals_the_release(tmp_path):
    root = tmp_path / "ISRUC" / "subgroup1"
    nights = {
        1: _night(root, 1, ISRUC_A, 41, 17.0, 1),  # 41 epochs: the last one dropped (41 % 20), and 17 s more
        81: _night(root, 81, ISRUC_M, 20, 0.0, 2),  # exactly one sequence
        91: _night(root, 91, ISRUC_A, 40, 29.0, 3),
    }
    r = _prepare(tmp_path / "ISRUC", tmp_path / "isruc.h5")
    assert r.exit_code == 0, r.output
    st = PatchStore(tmp_path / "isruc.h5")
    assert list(st.info.ch_names) == ["F3", "C3", "O1", "F4", "C4", "O2"] and st.sample_shape == (6, 30, 200)
    for n, codes in nights.items():
        want, y = _release(root / str(n) / f"{n}.rec", codes)
        got = store_windows(st, str(n))
        assert got.shape[0] == 20 * (len(codes) // 20)
        assert close(got, want) < 1e-3
        sel = np.flatnonzero(st.meta["run"].astype(str) == str(n))
        order = sel[np.argsort(st.meta["onset"][sel], kind="stable")]
        assert st.labels[order].tolist() == y.tolist()  # epochs in order, each with its stage
        np.testing.assert_allclose(st.meta["onset"][order], 30.0 * np.arange(len(order)))
        assert set(st.meta["subject"][order].astype(str)) == {f"{n:03d}"}
    card = st.info.card_body["tasks"]["sleep_stages"]
    assert card["splits"] == {"train": "1-80", "val": "81-90", "test": "91-100"}
    assert "train 40 · val 20 · test 40" in r.output
    # neuro finetune on the store with the card's settings (tiny here): the pooled head, the paper's figures beside
    args = ["finetune", str(tmp_path / "isruc.h5"), "-o", str(tmp_path / "ft"), "--epochs", "1", "--batch-size", "8",
            "--n-layers", "1", "--no-baselines", "--no-progress"]  # fmt: skip
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "head avgpool" in r.output and "paper: CBraMod" in r.output and "0.7442" in r.output


def test_isruc_hypnogram_that_does_not_match_its_recording(tmp_path):
    _night(tmp_path, 1, ISRUC_A, 21, 3.0, 1, codes=[0] * 22)
    r = _prepare(tmp_path, tmp_path / "x.h5")
    assert r.exit_code != 0
    assert "1_1.txt: 22 stages, but 1.rec holds 21 whole 30-s epochs" in r.output


def test_isruc_night_without_the_six_derivations_is_named(tmp_path):
    _night(tmp_path, 1, ISRUC_A, 20, 0.0, 1)
    # a night whose channels 2-7 are not F3, C3, O1, F4, C4, O2 (no F3/F4): the release would take X1 and X2
    _night(tmp_path, 2, ["LOC-A2", "ROC-A1", "C3-A2", "O1-A2", "C4-A1", "O2-A1", "X1", "X2"], 20, 0.0, 2)
    r = _prepare(tmp_path, tmp_path / "x.h5")
    assert r.exit_code != 0
    assert "2.rec: channels 2-7 are ['C3-A2', 'O1-A2', 'C4-A1', 'O2-A1', 'X1', 'X2']" in r.output
