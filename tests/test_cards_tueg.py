"""The TUEG card (issue 34): ``neuro prepare tueg --data-root ROOT`` on a small tree in TUEG's published layout equals
the CBraMod release's ``preprocessing_tueg_for_pretraining.py``, computed here with MNE calls in the release's order
(montage folders 01_tcp_ar / 02_tcp_le / 03_tcp_ar_a only, its 19 channels, resample 200 Hz, 0.3-75 Hz, 60-Hz notch,
``to_data_frame``'s µV, recordings under 300 s dropped, 60 s off the start and 60 s + the remainder off the end,
30-s windows kept when max |x| < 100 µV, / 100 when training): the same windows per recording, values within 1e-3
of the signal's RMS."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import mne
import numpy as np
import pytest
from typer.testing import CliRunner

from neurokit.cards import load_card
from neurokit.cli.main import app
from neurokit.store.patch_store import PatchStore
from neurokit.preprocessing.eeg.windows import RecordingDropped, select_channels
from tests.release_corpus import close, signals, store_windows

pytestmark = pytest.mark.slow

_NAMES = ["FP1", "FP2", "F3", "F4", "C3", "C4", "P3", "P4", "O1", "O2", "F7", "F8", "T3", "T4", "T5", "T6"]
_NAMES += ["FZ", "CZ", "PZ"]
#: the release's ``selected_channels`` per montage folder
RELEASE = {
    "01_tcp_ar": [f"EEG {c}-REF" for c in _NAMES],
    "02_tcp_le": [f"EEG {c}-LE" for c in _NAMES],
    "03_tcp_ar_a": [f"EEG {c}-REF" for c in _NAMES],
}


def _write(path, suffix: str, sf: float, seconds: int, seed: int, bursts=(), drop: str = ""):
    """A TUEG-like EDF: the 19 channels in another order than the release's plus two ear electrodes, mains and
    drift, and 10-Hz bursts of 200 µV at the ``bursts`` times (s) on one channel, which the 100-µV rule rejects."""
    names = [f"EEG {c}-{suffix}" for c in sorted(_NAMES) + ["A1", "A2"] if c != drop]
    x = signals(len(names), sf, seconds, seed)
    t = np.arange(x.shape[1]) / sf
    for b in bursts:
        on = (t >= b) & (t < b + 2.0)
        x[seed % len(names), on] += 200e-6 * np.sin(2 * np.pi * 10 * t[on])
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = mne.io.RawArray(x, mne.create_info(names, sf, "eeg"), verbose="error")
    mne.export.export_raw(path, raw, fmt="edf", overwrite=True, verbose="error")  # whole seconds: no padding
    return path


def _release(path) -> tuple[np.ndarray, int] | None:
    """The release's ``preprocessing_recording`` on one file: the windows it keeps, ``(n, 19, 6000)`` in units of
    100 µV, and how many it cut; ``None`` when it skips the file."""
    raw = mne.io.read_raw_edf(path, preload=True, verbose="error")
    montage = next((m for m in ("02_tcp_le", "01_tcp_ar", "03_tcp_ar_a") if m in str(path)), None)
    if montage is None or any(c not in raw.ch_names for c in RELEASE[montage]):
        return None
    raw.pick_channels(RELEASE[montage], ordered=True)
    raw.resample(200, verbose="error")
    raw.filter(l_freq=0.3, h_freq=75, verbose="error")
    raw.notch_filter(60, verbose="error")
    x = raw.to_data_frame().values[:, 1:]  # µV: to_data_frame's default scaling of EEG
    if x.shape[0] < 300 * 200:
        return None
    a = x.shape[0] % (30 * 200)
    x = x[60 * 200 : -(a + 60 * 200)]
    w = x.reshape(-1, 30, 200, 19).transpose(0, 3, 1, 2)
    return np.stack([s.reshape(19, 6000) / 100.0 for s in w if np.max(np.abs(s)) < 100]), len(w)


def _prepare(root, out, *extra):
    return CliRunner().invoke(app, ["prepare", "tueg", "--data-root", str(root), "-o", str(out), *extra])


def test_tueg_equals_the_release(tmp_path):
    root = tmp_path / "tuh_eeg" / "v2.0.1" / "edf"
    files = [
        _write(root / "000/aaaaaaaa/s001_2015/01_tcp_ar/aaaaaaaa_s001_t000.edf", "REF", 250.0, 392, 1, (75, 200)),
        _write(root / "000/aaaaaaaa/s002_2016/01_tcp_ar/aaaaaaaa_s002_t001.edf", "REF", 256.0, 331, 2, (62,)),
        _write(root / "000/aaaaaaab/s001_2016/02_tcp_le/aaaaaaab_s001_t000.edf", "LE", 250.0, 367, 3, (150, 310)),
        _write(root / "001/aaaaaabc/s001_2014/03_tcp_ar_a/aaaaaabc_s001_t002.edf", "REF", 250.0, 345, 4),
    ]
    # another montage (ignored), a recording under 300 s (dropped), one without Cz (skipped by the release)
    _write(root / "000/aaaaaaad/s001_2015/04_tcp_le_a/aaaaaaad_s001_t000.edf", "LE", 250.0, 340, 5)
    short = _write(root / "000/aaaaaaae/s001_2015/01_tcp_ar/aaaaaaae_s001_t000.edf", "REF", 250.0, 290, 6)
    no_cz = _write(root / "000/aaaaaaaf/s001_2015/01_tcp_ar/aaaaaaaf_s001_t000.edf", "REF", 250.0, 300, 7, drop="CZ")
    assert _release(short) is None and _release(no_cz) is None

    r = _prepare(tmp_path / "tuh_eeg", tmp_path / "tueg.h5")
    assert r.exit_code == 0, r.output
    said = "".join(r.output.split())  # the console folds long paths
    assert "aaaaaaaf_s001_t000.edf:nochannelCz" in said  # the file the release skips without a word is named
    assert "aaaaaaae_s001_t000.edf:290.000slong" in said

    st = PatchStore(tmp_path / "tueg.h5")
    assert list(st.info.ch_names) == [
        "Fp1", "Fp2", "F3", "F4", "C3", "C4", "P3", "P4", "O1", "O2", "F7", "F8", "T7", "T8", "P7", "P8", "Fz", "Cz", "Pz",
    ]  # fmt: skip
    assert st.sample_shape == (19, 30, 200)
    runs = st.meta["run"].astype(str)
    assert set(runs) == {f.stem for f in files}  # neither 04_tcp_le_a, nor the short file, nor the one without Cz
    n_rejected = 0
    for f in files:
        want, n_cut = _release(f)
        got = store_windows(st, f.stem)
        assert close(got, want) < 1e-3, f
        n_rejected += n_cut - len(want)
    assert n_rejected > 0  # some windows held more than 100 µV
    assert set(st.meta["subject"].astype(str)) == {"aaaaaaaa", "aaaaaaab", "aaaaaabc"}
    assert st.info.card_body["tasks"]["pretrain"].get("splits") is None
    with h5py.File(tmp_path / "tueg.h5", "r") as h:  # both left out by the recipe's rules, listed in the store
        assert sorted(Path(p).name for p in json.loads(h.attrs["dropped"].removeprefix("json:"))) == [
            "aaaaaaae_s001_t000.edf",
            "aaaaaaaf_s001_t000.edf",
        ]


def test_duration_is_measured_before_resampling():
    """A 400-Hz recording of 119 999 samples (299.9975 s) is dropped here, kept by the release (its 200-Hz copy
    has round(59 999.5) = 60 000 samples); 250-Hz recordings cannot fall between the two rules."""
    raw = mne.io.RawArray(np.zeros((19, 119_999)), mne.create_info(load_card("tueg").recipe().channels, 400.0, "eeg"))
    with pytest.raises(RecordingDropped, match="under the recipe.s min_duration_s"):
        select_channels(raw, load_card("tueg").recipe(), "x.edf", {})
    raw.resample(200, verbose="error")
    assert raw.n_times == 300 * 200  # the release's test (points < 300 * 200) keeps it
    n = np.arange(299 * 250, 300 * 250)  # every 250-Hz length under 300 s stays under 60 000 samples at 200 Hz
    assert (np.round(n * 200 / 250) < 60_000).all()
