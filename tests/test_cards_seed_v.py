"""The SEED-V card (issue 37): ``neuro prepare seed_v`` on a small corpus of REAL Neuroscan ``.cnt`` files
(written by ``tests/cnt_build.py``, read through the reader's own ``mne.io.read_raw_cnt``) in SEED-V's layout
(``EEG_raw/<subject>_<session>_<date>.cnt``, 62 EEG channels plus M1, M2, VEO, HEO at 1000 Hz, 32- and 16-bit)
equals the release's ``preprocessing_SEEDV.py`` computed here with MNE in the release's order (read the file with
``read_raw_cnt``, drop, resample, filter, cut, 1-s samples, / 100): the same windows per trial and label, the
release's split by trial index, values within 1e-3 of the signal's RMS. The release's trial lists need an hour of
recording per file, so they are shortened to 15 trials of 1 or 2 s (``TRIALS`` replaced; the full lists are
checked against the release's in :func:`test_release_tables`)."""

from __future__ import annotations

import mne
import numpy as np
import pytest
from typer.testing import CliRunner

import neurokit.datasets.seedv as seedv
from neurokit.cli.main import app
from neurokit.store.patch_store import PatchStore
from tests.cnt_build import write_cnt
from tests.release_corpus import finetune_tiny, close, signals

pytestmark = pytest.mark.slow

#: SEED-V's 62 EEG channels (its channel order)
EEG = (
    "FP1 FPZ FP2 AF3 AF4 F7 F5 F3 F1 FZ F2 F4 F6 F8 FT7 FC5 FC3 FC1 FCZ FC2 FC4 FC6 FT8 T7 C5 C3 C1 CZ C2 C4 C6 T8 "
    "TP7 CP5 CP3 CP1 CPZ CP2 CP4 CP6 TP8 P7 P5 P3 P1 PZ P2 P4 P6 P8 PO7 PO5 PO3 POZ PO4 PO6 PO8 CB1 O1 OZ O2 CB2"
).split()
#: the 66 channels of a file: the Neuroscan 64-channel Quik-Cap order (M1 after T8, M2 after TP8, EOG last)
NAMES = EEG[:32] + ["M1"] + EEG[32:41] + ["M2"] + EEG[41:] + ["VEO", "HEO"]
SF = 1000
#: shortened trials: 15 per session, 1 or 2 s long, the last ending at 44 s
SHORT = {s: (tuple(1 + 3 * j for j in range(15)), tuple(2 + 3 * j + j % 2 for j in range(15))) for s in "123"}


def _cnt(path, seed, names=NAMES, seconds=45.0, fmt="int32"):
    path.parent.mkdir(parents=True, exist_ok=True)
    write_cnt(path, signals(len(names), SF, seconds, seed, 50.0) * 1e6, SF, names, data_format=fmt)
    return path


def _release(path, session):
    """preprocessing_SEEDV.py + seedv_dataset.py on one file: read, drop, resample, filter, cut, 1-s samples, / 100."""
    raw = mne.io.read_raw_cnt(path, preload=True, verbose="error")
    raw.drop_channels(["M1", "M2", "VEO", "HEO"])
    raw.resample(200, verbose="error")
    raw.filter(l_freq=0.3, h_freq=75, verbose="error")
    d = raw.get_data(units="uV")
    out = {}
    for j in range(15):
        x = d[:, SHORT[session][0][j] * 200 : SHORT[session][1][j] * 200].reshape(62, -1, 1, 200).transpose(1, 0, 2, 3)
        out[j] = (x[:, :, 0, :] / 100, seedv.LABELS[session][j])
    return out


def _prepare(root, out):
    seedv._processed_cached.cache_clear()
    return CliRunner().invoke(app, ["prepare", "seed_v", "--data-root", str(root), "-o", str(out)])


def test_seed_v_cnt_files_equal_the_release(tmp_path, monkeypatch):
    assert len(EEG) == 62 and len(NAMES) == 66
    root = tmp_path / "SEED-V" / "EEG_raw"
    files = [
        _cnt(root / "1_1_20180804.cnt", 1),
        _cnt(root / "1_2_20180810.cnt", 2, fmt="int16"),
        _cnt(root / "2_3_20180901.cnt", 3),
    ]
    monkeypatch.setattr(seedv, "TRIALS", SHORT)
    r = _prepare(tmp_path / "SEED-V", tmp_path / "s.h5")
    assert r.exit_code == 0, r.output
    st = PatchStore(tmp_path / "s.h5")
    assert st.sample_shape == (62, 1, 200) and [c.upper() for c in st.info.ch_names] == EEG  # names as 10-05
    subj, ses, run = (st.meta[k].astype(str) for k in ("subject", "session", "run"))
    worst, n = 0.0, 0
    for path in files:
        s, session = path.name.split("_")[:2]
        for j, (want, label) in _release(path, session).items():
            sel = np.flatnonzero((subj == s) & (ses == session) & (run == f"t{j:02d}"))
            sel = sel[np.argsort(st.meta["onset"][sel], kind="stable")]
            got = np.stack([st.patches(int(i)).reshape(62, 200) for i in sel])
            assert got.shape == want.shape == (1 + j % 2, 62, 200)
            worst = max(worst, close(got, want))
            assert set(st.labels[sel].tolist()) == {label}
            n += len(sel)
    assert n == len(st.labels) == 3 * sum(1 + j % 2 for j in range(15))
    assert worst < 1e-3, worst
    body = st.info.card_body["tasks"]["emotion"]
    assert body["split_unit"] == "run" and body["paper"]["CBraMod"]["cohen_kappa"] == 0.2569  # CBraMod Table 2
    assert "LUNA (Döner et al., NeurIPS 2025), Table 3" in body["paper"]["LUNA-Base"]["source"]
    assert body["splits"]["train"] == [f"t{j:02d}" for j in range(5)]
    assert body["splits"]["test"] == [f"t{j:02d}" for j in range(10, 15)]
    finetune_tiny(tmp_path / "s.h5", tmp_path / "ft")  # the card's (the release's) fine-tuning settings


@pytest.mark.parametrize(
    ("names", "problem"),
    [
        (NAMES[:40], "40 channels"),
        ([c if c != "VEO" else "EKG" for c in NAMES], "66 channels without VEO"),
    ],
)
def test_a_cnt_with_other_channels_is_one_line_naming_the_file(tmp_path, names, problem):
    p = _cnt(tmp_path / "EEG_raw" / "3_1_20180101.cnt", 4, names=names, seconds=2.0)
    r = _prepare(tmp_path / "EEG_raw", tmp_path / "s.h5")
    assert r.exit_code != 0
    err = [ln for ln in r.output.splitlines() if not ln.startswith("prepare seed_v:")]  # all but progress
    assert len(err) == 1 and err[0].startswith(f"error: {p}: ") and problem in err[0], r.output
    assert "62 EEG channels plus M1, M2, VEO, HEO (66)" in err[0] and "move it out of the data root" in err[0]


def test_a_truncated_cnt_is_one_line_naming_the_file(tmp_path):
    p = _cnt(tmp_path / "EEG_raw" / "3_2_20180101.cnt", 5, seconds=2.0)
    p.write_bytes(p.read_bytes()[:5000])  # the SETUP's event table position now lies past the end
    r = _prepare(tmp_path / "EEG_raw", tmp_path / "s.h5")
    assert r.exit_code != 0
    err = [ln for ln in r.output.splitlines() if not ln.startswith("prepare seed_v:")]  # all but progress
    assert len(err) == 1 and err[0].startswith(f"error: {p}: not a readable Neuroscan .cnt"), r.output
    assert "Event table offset from header" in err[0] and "move it out of the data root" in err[0]


def test_release_tables():
    assert seedv.TRIALS["1"][0][:3] == (30, 132, 287) and seedv.TRIALS["3"][1][-1] == 3066
    assert all(len(a) == len(b) == 15 for a, b in seedv.TRIALS.values())
    assert seedv.LABELS["1"] == (4, 1, 3, 2, 0) * 3 and seedv.LABELS["2"] == seedv.LABELS["3"]
