"""The SEED-V card (issue 37): ``neuro prepare seed_v`` on a small corpus in SEED-V's layout
(``EEG_raw/<subject>_<session>_<date>.cnt``) equals the release's ``preprocessing_SEEDV.py`` computed here with MNE
in the release's order: the same 1-s windows per trial and label, the release's split by trial index, values within
1e-3 of the signal's RMS. MNE cannot write .cnt, so the file reading (``load_cnt``) is replaced by a RawArray;
the trial lists are shortened so that the recordings are short."""

from __future__ import annotations

import mne
import numpy as np
import pytest
from typer.testing import CliRunner

import neurokit.io.seedv as seedv
from neurokit.cli.main import app
from neurokit.io.store import PatchStore
from tests.release_corpus import close, signals

pytestmark = pytest.mark.slow

EEG = [f"E{i:02d}" for i in range(62)]
NAMES = EEG[:30] + ["M1", "M2"] + EEG[30:] + ["VEO", "HEO"]
#: shortened trials: 15 per session, 2 or 3 s long
SHORT = {s: (tuple(2 + 4 * j for j in range(15)), tuple(4 + 4 * j + j % 2 for j in range(15))) for s in "123"}


def _raw(seed, sf=500.0, seconds=64.0, names=NAMES):
    return mne.io.RawArray(
        signals(len(names), sf, seconds, seed, 50.0), mne.create_info(names, sf, "eeg"), verbose="error"
    )


def _release(raw, session):
    """preprocessing_SEEDV.py + seedv_dataset.py on one file: drop, resample, filter, cut, 1-s samples, / 100."""
    raw = raw.copy().drop_channels(["M1", "M2", "VEO", "HEO"])
    raw.resample(200, verbose="error")
    raw.filter(l_freq=0.3, h_freq=75, verbose="error")
    d = raw.get_data(units="uV")
    out = {}
    for j in range(15):
        x = d[:, SHORT[session][0][j] * 200 : SHORT[session][1][j] * 200].reshape(62, -1, 1, 200).transpose(1, 0, 2, 3)
        out[j] = (x[:, :, 0, :] / 100, seedv.LABELS[session][j])
    return out


def test_seed_v_equals_the_release(tmp_path, monkeypatch):
    root = tmp_path / "SEED-V" / "EEG_raw"
    root.mkdir(parents=True)
    files = {"1_1_20180804.cnt": _raw(1), "1_2_20180810.cnt": _raw(2), "2_3_20180901.cnt": _raw(3)}
    for n in files:
        (root / n).write_bytes(n.encode())  # distinct content; read through the replaced load_cnt
    monkeypatch.setattr(seedv, "load_cnt", lambda p: files[p.name].copy())
    monkeypatch.setattr(seedv, "TRIALS", SHORT)
    seedv._processed_cached.cache_clear()
    r = CliRunner().invoke(
        app, ["prepare", "seed_v", "--data-root", str(tmp_path / "SEED-V"), "-o", str(tmp_path / "s.h5")]
    )
    assert r.exit_code == 0, r.output
    st = PatchStore(tmp_path / "s.h5")
    assert st.sample_shape == (62, 1, 200) and len(st.info.ch_names) == 62
    subj, ses, run = (st.meta[k].astype(str) for k in ("subject", "session", "run"))
    for name, raw in files.items():
        s, session = name.split("_")[:2]
        for j, (want, label) in _release(raw, session).items():
            sel = np.flatnonzero((subj == s) & (ses == session) & (run == f"t{j:02d}"))
            sel = sel[np.argsort(st.meta["onset"][sel], kind="stable")]
            got = np.stack([st.patches(int(i)).reshape(62, 200) for i in sel])
            assert got.shape == want.shape and close(got, want) < 1e-3
            assert set(st.labels[sel].tolist()) == {label}
    body = st.info.card_body["tasks"]["emotion"]
    assert body["split_unit"] == "run" and "paper" not in body
    assert body["splits"]["train"] == [f"t{j:02d}" for j in range(5)]
    assert body["splits"]["test"] == [f"t{j:02d}" for j in range(10, 15)]


def test_other_channel_count_is_one_line_naming_the_file(tmp_path, monkeypatch):
    root = tmp_path / "EEG_raw"
    root.mkdir()
    (root / "3_1_20180101.cnt").write_bytes(b"x")
    monkeypatch.setattr(seedv, "load_cnt", lambda p: _raw(4, seconds=4.0, names=NAMES[:40]))
    seedv._processed_cached.cache_clear()
    r = CliRunner().invoke(app, ["prepare", "seed_v", "--data-root", str(root), "-o", str(tmp_path / "s.h5")])
    assert r.exit_code != 0
    err = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert len(err) == 1 and "3_1_20180101.cnt" in err[0] and "40 channels" in err[0], r.output


def test_release_tables():
    assert seedv.TRIALS["1"][0][:3] == (30, 132, 287) and seedv.TRIALS["3"][1][-1] == 3066
    assert all(len(a) == len(b) == 15 for a, b in seedv.TRIALS.values())
    assert seedv.LABELS["1"] == (4, 1, 3, 2, 0) * 3 and seedv.LABELS["2"] == seedv.LABELS["3"]
