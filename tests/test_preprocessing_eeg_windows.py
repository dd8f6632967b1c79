"""CBraMod's recipe against a plain MNE pipeline, windowing, and bad recordings."""

import mne
import numpy as np
import pytest

import neurokit
from neurokit._utils.errors import ChannelMismatchError, ConfigError, DataFileError
from neurokit.cards.recipes import EEGRecipe
from neurokit.preprocessing.eeg.windows import make_windows, preprocess_raw

S001R04 = "MNE-eegbci-data/files/eegmmidb/1.0.0/S001/S001R04.edf"


def _recipe(**kw):
    base = neurokit.load_card("physionet_mi").recipe().to_dict()
    base.update(kw)
    return EEGRecipe.from_dict(base)


def test_matches_plain_mne_pipeline(eeg_root):
    recipe = _recipe(events={"T1": 0, "T2": 1})
    raw = neurokit.read_eeg(eeg_root / S001R04)
    raw = preprocess_raw(raw, recipe)
    w = make_windows(raw, recipe)
    # the same steps written out with MNE alone: CBraMod's PhysioNet-MI order, 0.3 Hz high-pass only
    ref = mne.io.read_raw_edf(eeg_root / S001R04, preload=True, verbose="error")
    ref.set_eeg_reference("average", projection=False, verbose="error")
    ref.filter(0.3, None, verbose="error")
    ref.notch_filter([60.0], verbose="error")
    ref.resample(200.0, verbose="error")
    ev, _ = mne.events_from_annotations(ref, event_id={"T1": 0, "T2": 1}, verbose="error")
    assert w.patches.shape == (15, 64, 4, 200) and w.patches.dtype == np.float32
    np.testing.assert_array_equal(w.labels, ev[:, 2])
    s = ev[0, 0] - ref.first_samp
    expected = (ref.get_data()[:, s : s + 800] * 1e4).reshape(64, 4, 200)
    np.testing.assert_allclose(w.patches[0], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.onsets[0], s / 200.0)
    # 100 µV units: typical scalp EEG after filtering is tens of µV -> std well below 1
    assert 0.05 < float(w.patches.std()) < 1.0


def test_high_cut_capped_below_nyquist(eeg_root):
    raw = neurokit.read_eeg(eeg_root / "formats/eeglab/test_raw.set")  # 128 Hz: Nyquist 64 Hz
    with pytest.warns(RuntimeWarning, match=r"using 57.6 Hz instead"):
        raw = preprocess_raw(raw, _recipe(reference=None, h_freq=75.0))
    assert raw.info["sfreq"] == 200.0 and raw.info["lowpass"] == pytest.approx(57.6, abs=0.1)


def test_sliding_windows_and_rejection(eeg_root):
    raw = neurokit.read_eeg(eeg_root / "formats/fif/data_resting_EO_200Hz_raw.fif")
    rec = _recipe(reference=None, window_s=30.0, crop_start_s=60.0, crop_end_s=60.0, line_freq=50.0)
    raw = preprocess_raw(raw, rec)
    w = make_windows(raw, rec)
    assert w.patches.shape == (8, 2, 30, 200)  # (360 s - 120 s) / 30 s
    assert np.all(w.labels == -1) and w.onsets[0] == 60.0
    strict = make_windows(raw, EEGRecipe.from_dict({**rec.to_dict(), "reject_uv": 1e-3}))
    assert len(strict.patches) == 0 and strict.n_rejected == 8


def _synthetic(data, sfreq=200.0, names=("Cz", "Pz")):
    info = mne.create_info(list(names), sfreq, "eeg")
    raw = mne.io.RawArray(np.asarray(data, dtype=float), info, verbose="error")
    raw.info["temp"] = {"neurokit_source": "synthetic.edf"}
    return raw


def test_too_short_recording():
    raw = _synthetic(np.random.default_rng(0).normal(0, 1e-5, (2, 600)))  # 3 s
    rec = _recipe(reference=None)
    raw = preprocess_raw(raw, rec)
    with pytest.raises(DataFileError, match=r"synthetic.edf: recording too short: 3.00 s usable.*needs 4 s"):
        make_windows(raw, rec)


def test_nan_channel_named():
    data = np.random.default_rng(0).normal(0, 1e-5, (2, 2000))
    data[1, 100] = np.nan
    with pytest.raises(DataFileError, match=r"synthetic.edf: non-finite samples \(NaN/inf\) in channels \['Pz'\]"):
        preprocess_raw(_synthetic(data), _recipe(reference=None))


def test_flat_channel_warns():
    data = np.random.default_rng(0).normal(0, 1e-5, (2, 2000))
    data[0] = 0.0
    with pytest.warns(RuntimeWarning, match=r"flat channel\(s\) \['Cz'\]"):
        preprocess_raw(_synthetic(data), _recipe(reference=None))


def test_rate_too_low_for_band():
    raw = _synthetic(np.random.default_rng(0).normal(0, 1e-5, (2, 100)), sfreq=0.5)
    with pytest.raises(
        DataFileError, match=r"synthetic.edf: sampling rate 0.5 Hz is too low for this recipe \(minimum 64 Hz"
    ):
        preprocess_raw(raw, _recipe(reference=None))
    raw = _synthetic(np.random.default_rng(0).normal(0, 1e-5, (2, 100)), sfreq=0.5)
    with pytest.raises(DataFileError, match=r"sampling rate 0.5 Hz is too low for a 0.3 Hz high-pass"):
        preprocess_raw(raw, _recipe(reference=None, min_sfreq=0.1))


def test_missing_recipe_channel():
    raw = _synthetic(np.zeros((2, 2000)))
    with pytest.raises(ChannelMismatchError, match=r"channels \['Fp1'\] required by the recipe are missing"):
        preprocess_raw(raw, _recipe(reference=None, channels=["Cz", "Fp1"]))


def test_recipe_validation():
    with pytest.raises(ConfigError, match="not a whole number"):
        EEGRecipe(window_s=2.5)
    with pytest.raises(ConfigError, match="unknown preprocessing keys"):
        EEGRecipe.from_dict({"lowpass": 40})


def test_tueg_recipe_resamples_before_filtering(eeg_root):
    """The pretraining card's order (CBraMod on TUEG): resample to 200 Hz, then 0.3-75 Hz and the notch."""
    rec = EEGRecipe.from_dict(
        {
            **neurokit.load_card("eeg_folder").recipe().to_dict(),
            "channels": ["C3", "Cz", "C4"],
            "min_duration_s": 0.0,
            "crop_start_s": 0.0,
            "crop_end_s": 0.0,
            "window_s": 10.0,
            "reject_uv": None,
        }
    )
    raw = neurokit.read_eeg(eeg_root / S001R04)
    raw = preprocess_raw(raw, rec)
    assert list(raw.info["temp"]["neurokit_applied"])[-4:] == ["resampled", "l_freq", "h_freq", "notch_hz"]
    ref = mne.io.read_raw_edf(eeg_root / S001R04, preload=True, verbose="error").pick(["C3..", "Cz..", "C4.."])
    ref.resample(200.0, verbose="error")
    ref.filter(0.3, 75.0, verbose="error")
    ref.notch_filter([60.0], verbose="error")
    np.testing.assert_allclose(raw.get_data(), ref.get_data(), rtol=1e-6, atol=1e-12)


def test_tiled_markers_all_too_short_say_so_not_too_short_a_recording():
    """Review of issue 35: a 60-s recording whose tiled markers are all zero-length was refused as 'recording too
    short'; the markers are named instead."""
    import mne

    from neurokit._utils.errors import DataFileError
    from neurokit.cards.recipes import EEGRecipe
    from neurokit.preprocessing.eeg.windows import make_windows

    raw = mne.io.RawArray(np.zeros((2, 200 * 60)), mne.create_info(["C3", "C4"], 200.0, "eeg"), verbose="error")
    raw.set_annotations(mne.Annotations([12.0, 25.0], [0.0, 0.0], ["T1", "T2"]))
    r = EEGRecipe(
        window_s=2.0, events={"T1": 0, "T2": 1}, event_windows="tile", l_freq=None, h_freq=None, line_freq=None
    )
    with pytest.raises(DataFileError, match=r"x\.edf: no event window: 2 tiled event marker\(s\) shorter than one 2-s"):
        make_windows(raw, r, source="x.edf")
