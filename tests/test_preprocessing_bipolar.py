"""Bipolar derivations as a recipe step (issue 34, item 2): the 16 TCP derivations TUH's and CHB-MIT's recipes
use, made after filtering and resampling, equal to CBraMod's TUAB order (resample to 200 Hz, 0.3-75 Hz, 60 Hz notch,
µV, derivations, 10-s windows) computed here with MNE calls."""

from __future__ import annotations

import mne
import numpy as np
import pytest

from neurokit._utils.errors import ChannelMismatchError, ConfigError
from neurokit.cards.recipes import EEGRecipe
from neurokit.preprocessing.eeg.windows import preprocess_raw

#: the TCP montage (TUH's "T3/T4/T5/T6" read as T7/T8/P7/P8)
TCP = [
    "Fp1-F7", "F7-T7", "T7-P7", "P7-O1", "Fp2-F8", "F8-T8", "T8-P8", "P8-O2",
    "Fp1-F3", "F3-C3", "C3-P3", "P3-O1", "Fp2-F4", "F4-C4", "C4-P4", "P4-O2",
]  # fmt: skip
ELECTRODES = sorted({c for d in TCP for c in d.split("-")})
#: how the TUH files name them
TUH = {"T7": "T3", "T8": "T4", "P7": "T5", "P8": "T6"}


def _signals(n_ch: int, sf: float, seconds: float, seed: int) -> np.ndarray:
    """Distinct EEG-like signals in volts: noise, a 10-Hz rhythm, 60-Hz mains and a slow drift."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(sf * seconds)) / sf
    x = rng.normal(size=(n_ch, t.size)) * 10e-6
    x += 20e-6 * np.sin(2 * np.pi * 10 * t + rng.uniform(0, 6, size=(n_ch, 1)))
    x += 30e-6 * np.sin(2 * np.pi * 60 * t) + 50e-6 * t / seconds
    return x


def _release(raw, seconds: float = 10.0) -> np.ndarray:
    """CBraMod's TUAB steps with MNE, in its order: windows ``(n, 16, seconds·200)`` in µV / 100."""
    r = raw.copy().load_data().resample(200.0, verbose="error")
    r.filter(0.3, 75.0, verbose="error").notch_filter(60.0, verbose="error")
    d = r.get_data(units="uV")
    idx = {c: i for i, c in enumerate(r.ch_names)}
    der = np.stack([d[idx[a]] - d[idx[b]] for a, b in (x.split("-") for x in TCP)])
    n = int(seconds * 200)
    k = der.shape[1] // n
    return der[:, : k * n].reshape(16, k, n).transpose(1, 0, 2) / 100.0


def test_derivations_after_filtering_equal_the_release_order():
    raw = mne.io.RawArray(_signals(len(ELECTRODES), 250.0, 30.0, 0), mne.create_info(ELECTRODES, 250.0, "eeg"))
    r = EEGRecipe(l_freq=0.3, h_freq=75.0, line_freq=60.0, window_s=10.0, resample_first=True, channels=ELECTRODES,
                  bipolar=TCP)  # fmt: skip
    out = preprocess_raw(raw.copy(), r, source="x.edf")
    assert out.ch_names == TCP
    want = _release(raw)
    got = out.get_data().reshape(16, 3, 2000).transpose(1, 0, 2) * 1e4
    assert np.abs(got - want).max() < 1e-9 * np.sqrt((want**2).mean())


def test_recipe_refuses_malformed_derivations():
    with pytest.raises(ConfigError, match="'A-B'"):
        EEGRecipe(bipolar=["Fp1F7"])
    with pytest.raises(ConfigError, match="not among the recipe's channels"):
        EEGRecipe(channels=["Fp1", "F3"], bipolar=["Fp1-F7"])
    with pytest.raises(ConfigError, match="twice"):
        EEGRecipe(bipolar=["Fp1-F7", "Fp1-F7"])
    with pytest.raises(ConfigError, match="reference: null"):
        EEGRecipe(reference="average", bipolar=["Fp1-F7"])
    assert "bipolar" not in EEGRecipe().to_dict()  # recipes without derivations read as before


def test_a_missing_electrode_names_the_file_and_the_derivation():
    names = [c for c in ELECTRODES if c != "T7"]
    raw = mne.io.RawArray(_signals(len(names), 200.0, 20.0, 1), mne.create_info(names, 200.0, "eeg"))
    r = EEGRecipe(window_s=10.0, bipolar=TCP)
    with pytest.raises(ChannelMismatchError, match=r"rec\.edf: cannot derive F7-T7, T7-P7: T7 not in the recording"):
        preprocess_raw(raw, r, source="rec.edf")


@pytest.mark.slow
def test_prepare_a_tuh_style_edf_with_the_tcp_montage(tmp_path, prepare_folder):
    """``neuro prepare`` on an EDF named as TUH names its channels (``EEG FP1-REF``…, 250 Hz, an extra channel the
    montage does not use), through a card whose recipe derives the TCP montage: the store equals the release's
    steps within 1e-3 of the signal's RMS."""
    names = [f"EEG {TUH.get(c, c).upper()}-REF" for c in ELECTRODES] + ["EEG A1-REF"]
    raw = mne.io.RawArray(_signals(len(names), 250.0, 40.0, 2), mne.create_info(names, 250.0, "eeg"))
    root = tmp_path / "edf"
    root.mkdir()
    edf = root / "aaaaaaaa_s001_t000.edf"
    mne.export.export_raw(edf, raw, fmt="edf", verbose="error")
    recipe = dict(sfreq=200.0, l_freq=0.3, h_freq=75.0, line_freq=60.0, reference=None, scale=1e4, window_s=10.0,
                  resample_first=True, channels=ELECTRODES, bipolar=TCP)  # fmt: skip
    st = prepare_folder(root, "**/*.edf", recipe)
    assert list(st.info.ch_names) == TCP and st.sample_shape == (16, 10, 200)
    want = _release(mne.io.read_raw_edf(edf, verbose="error").rename_channels(
        {f"EEG {TUH.get(c, c).upper()}-REF": c for c in ELECTRODES}))  # fmt: skip
    got = np.stack([np.asarray(st.patches(i)).reshape(16, 2000) for i in range(len(st))])
    assert got.shape == want.shape == (4, 16, 2000)
    assert np.abs(got - want).max() < 1e-3 * np.sqrt((want**2).mean())
