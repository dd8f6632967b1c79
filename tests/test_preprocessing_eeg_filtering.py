"""Batched filtering and resampling (neurokit.preprocessing.eeg.filtering) equal MNE's Raw methods."""

import mne
import numpy as np
import pytest

import neurokit
from neurokit.preprocessing.eeg import filtering
from neurokit.cards.recipes import EEGRecipe
from neurokit.preprocessing.eeg.prepare import PREPARE_FFT_DTYPE
from neurokit.preprocessing.eeg.windows import preprocess_raw

S001R04 = "MNE-eegbci-data/files/eegmmidb/1.0.0/S001/S001R04.edf"


def _rel(a, b):
    return float(np.abs(a - b).max() / np.sqrt(np.mean(b**2)))


@pytest.fixture(scope="module")
def raw160(eeg_root):
    raw = mne.io.read_raw_edf(eeg_root / S001R04, preload=True, verbose="error")
    raw.set_eeg_reference("average", projection=False, verbose="error")
    return raw


@pytest.mark.parametrize("band", [(0.3, None), (0.3, 75.0), (None, 40.0), (1.0, 30.0)])
def test_fir_equals_raw_filter(raw160, band):
    ref = raw160.copy().filter(*band, verbose="error")
    data = raw160.get_data()
    filtering.apply_fir(data, filtering.design_filter(160.0, *band))
    assert _rel(data, ref.get_data()) < 1e-9


@pytest.mark.parametrize("freqs", [[60.0], [50.0], [20.0, 40.0, 60.0]])
def test_notch_equals_raw_notch_filter(raw160, freqs):
    ref = raw160.copy().notch_filter(freqs, verbose="error")
    data = raw160.get_data()
    filtering.apply_fir(data, filtering.design_filter(160.0, freqs, None, notch=True))
    assert _rel(data, ref.get_data()) < 1e-9


@pytest.mark.parametrize("sfreq", [200.0, 256.0, 100.0, 128.0, 173.61])
@pytest.mark.parametrize("n", [19680, 4097, 1000])
def test_resample_equals_raw_resample(raw160, sfreq, n):
    raw = raw160.copy().crop(0, (n - 1) / 160.0)
    assert raw.n_times == n
    ref = raw.copy().resample(sfreq, verbose="error")
    out = filtering.resampled_raw(raw, filtering.resample_fft(raw.get_data(), 160.0, sfreq), sfreq)
    assert out.get_data().shape == ref.get_data().shape
    assert _rel(out.get_data(), ref.get_data()) < 1e-9
    assert out.info["sfreq"] == ref.info["sfreq"] and out.info["lowpass"] == ref.info["lowpass"]
    assert out.first_samp == ref.first_samp
    np.testing.assert_allclose(out.annotations.onset, ref.annotations.onset)
    assert list(out.annotations.description) == list(ref.annotations.description)


def test_recipe_equals_plain_mne_steps(eeg_root, raw160):
    """The whole PhysioNet-MI recipe (average reference, 0.3 Hz high-pass, 60 Hz notch, 200 Hz) against
    MNE's own Raw methods, and the provenance MNE would record in info."""
    rec = EEGRecipe.from_dict(neurokit.load_card("physionet_mi").recipe().to_dict())
    out = preprocess_raw(neurokit.read_eeg(eeg_root / S001R04), rec)
    ref = raw160.copy().filter(0.3, None, verbose="error").notch_filter([60.0], verbose="error")
    ref.resample(200.0, verbose="error")
    assert _rel(out.get_data(), ref.get_data()) < 1e-9
    assert (out.info["sfreq"], out.info["highpass"], out.info["lowpass"]) == (200.0, 0.3, ref.info["lowpass"])
    assert out.info["temp"]["neurokit_applied"]["resampled"] == [160.0, 200.0]


def test_special_recordings_take_mne_path(raw160):
    """Stretches between boundary annotations are filtered apart (as MNE does); joined runs and stim
    channels are resampled by MNE."""
    assert filtering.fast_path_ok(raw160)
    cat = mne.concatenate_raws([raw160.copy().crop(0, 10), raw160.copy().crop(20, 30)])
    assert not filtering.fast_path_ok(cat)  # two joined Raw objects: MNE resamples each
    assert filtering.filter_segments(cat) == [(0, 1601), (1601, 3202)]  # filtered apart, as MNE does
    stim = mne.io.RawArray(
        np.vstack([raw160.get_data()[:2], np.zeros((1, raw160.n_times))]),
        mne.create_info(["C3", "C4", "STI"], 160.0, ["eeg", "eeg", "stim"]),
        verbose="error",
    )
    assert not filtering.fast_path_ok(stim)
    # a concatenated recording still equals MNE's result (MNE filters each segment on its own)
    rec = EEGRecipe(l_freq=0.3, h_freq=None, line_freq=60.0, reference=None, window_s=1.0, sfreq=200.0)
    out = preprocess_raw(cat.copy(), rec)
    ref = cat.copy().filter(0.3, None, picks="all", verbose="error").notch_filter([60.0], picks="all", verbose="error")
    ref.resample(200.0, verbose="error")
    np.testing.assert_allclose(out.get_data(), ref.get_data(), rtol=0, atol=1e-12)


def test_even_filter_refused():
    with pytest.raises(ValueError, match="odd length"):
        filtering.apply_fir(np.zeros((1, 100)), np.ones(4))


@pytest.mark.parametrize("n", [19680, 5640, 2000])
def test_fir_pair_equals_two_passes(raw160, n):
    """High-pass and notch in one pass (exact ends) equal the two passes, also when too short to pair."""
    x = raw160.get_data()[:, :n]
    h1 = filtering.design_filter(160.0, 0.3, None)
    h2 = filtering.design_filter(160.0, [60.0], None, notch=True)
    two, one = x.copy(), x.copy()
    filtering.apply_fir(two, h1)
    filtering.apply_fir(two, h2)
    filtering.apply_fir_pair(one, h1, h2)
    assert _rel(one, two) < 1e-12
    ref = (
        raw160.copy().crop(0, (n - 1) / 160.0).filter(0.3, None, verbose="error").notch_filter([60.0], verbose="error")
    )
    assert _rel(one, ref.get_data()) < 1e-9


def test_average_reference_equals_mne(eeg_root, raw160):
    raw = mne.io.read_raw_edf(eeg_root / S001R04, preload=True, verbose="error")
    filtering.average_reference(raw)
    np.testing.assert_array_equal(raw.get_data(), raw160.get_data())  # raw160: MNE's set_eeg_reference
    assert raw.info["custom_ref_applied"] == raw160.info["custom_ref_applied"] != 0
    # a recording with a non-EEG channel goes through MNE (the EOG channel is left alone)
    eog = mne.io.read_raw_edf(eeg_root / S001R04, preload=True, verbose="error")
    eog.set_channel_types({eog.ch_names[0]: "eog"})
    ref = eog.copy().set_eeg_reference("average", projection=False, verbose="error")
    filtering.average_reference(eog)
    np.testing.assert_array_equal(eog.get_data(), ref.get_data())


def test_float32_ffts_stay_within_store_rounding(eeg_root, raw160):
    """``prepare``'s precision (float32 FFTs) against MNE's float64 chain on a real recording: within 1e-5 of
    the RMS (2.8e-6 measured) and, in the store's float32 100 µV units, within 8 float32 steps of the largest
    sample (≤ 3.9e-6; 1.4e-6 measured) — and not float64's 1e-14, so the float32 path is the one tested."""
    rec = EEGRecipe.from_dict(neurokit.load_card("physionet_mi").recipe().to_dict())
    out = preprocess_raw(neurokit.read_eeg(eeg_root / S001R04), rec, fft_dtype=PREPARE_FFT_DTYPE)
    ref = raw160.copy().filter(0.3, None, verbose="error").notch_filter([60.0], verbose="error")
    ref.resample(200.0, verbose="error")
    assert 1e-8 < _rel(out.get_data(), ref.get_data()) < 1e-5
    want = (ref.get_data() * rec.scale).astype(np.float32)
    got = (out.get_data() * rec.scale).astype(np.float32)
    assert float(np.abs(got - want).max()) <= 8 * np.spacing(np.abs(want).max())
    assert (out.info["sfreq"], out.info["highpass"], out.n_times) == (200.0, 0.3, ref.n_times)


def test_in_place_resampling_keeps_times_and_events(eeg_root, raw160):
    """``preprocess_raw`` resamples the recording itself, as ``Raw.resample`` does: same first sample, times,
    annotations and events as MNE's, and cropping still works."""
    rec = EEGRecipe.from_dict(neurokit.load_card("physionet_mi").recipe().to_dict())
    raw = neurokit.read_eeg(eeg_root / S001R04)
    out = preprocess_raw(raw, rec)
    ref = raw160.copy().filter(0.3, None, verbose="error").notch_filter([60.0], verbose="error")
    ref.resample(200.0, verbose="error")
    assert out is raw and (out.n_times, out.first_samp, out.info["sfreq"]) == (ref.n_times, ref.first_samp, 200.0)
    np.testing.assert_array_equal(out.times, ref.times)
    ev, ev_ref = (mne.events_from_annotations(r, verbose="error")[0] for r in (out, ref))
    np.testing.assert_array_equal(ev, ev_ref)
    assert out.copy().crop(10.0, 20.0).n_times == ref.copy().crop(10.0, 20.0).n_times == 2001


def _mne_chain(raw, band, notch, sfreq):
    out = raw.copy()
    if band is not None:
        out.filter(*band, verbose="error")
    if notch:
        out.notch_filter(notch, verbose="error")
    return out.resample(sfreq, verbose="error").get_data()


@pytest.mark.parametrize(
    ("band", "notch"), [((0.3, None), [60.0]), ((0.3, None), None), (None, [60.0]), ((1.0, 30.0), [20.0, 40.0])]
)
@pytest.mark.parametrize(("n", "sfreq"), [(19680, 200.0), (19680, 100.0), (5640, 256.0), (7001, 173.61)])
def test_one_pass_filter_resample_equals_mne(raw160, band, notch, n, sfreq):
    """Filtering and resampling in one spectral pass, the wrap of the circle corrected at both ends: MNE's
    Raw.filter → notch_filter → resample to float64 rounding (without the correction: ~1e-4 of the RMS)."""
    raw = raw160.copy().crop(0, (n - 1) / 160.0)
    kernels = ([filtering.design_filter(160.0, *band)] if band else []) + (
        [filtering.design_filter(160.0, notch, None, notch=True)] if notch else []
    )
    data = raw.get_data()
    before = data.copy()
    out = filtering.filter_resample_fft(data, kernels, 160.0, sfreq)
    np.testing.assert_array_equal(data, before)  # the input is left as it was
    ref = _mne_chain(raw, band, notch, sfreq)
    assert out.shape == ref.shape and out.dtype == np.float64
    assert _rel(out, ref) < 1e-9
    # float32 FFTs: within the float32 two-pass error (tests above: < 1e-5 of the RMS)
    assert _rel(filtering.filter_resample_fft(data, kernels, 160.0, sfreq, np.float32), ref) < 1e-5


def test_one_pass_refuses_what_it_cannot_do_and_preprocess_falls_back(raw160, monkeypatch):
    h = filtering.design_filter(160.0, 0.3, None)  # 1761 taps: a = 880
    short = raw160.get_data()[:, :1849]  # resampling pads 1123 and 1124 samples (to 4096): 1124 + 880 > 1848
    with pytest.raises(ValueError, match="too few for one pass"):
        filtering.filter_resample_fft(short, [h], 160.0, 200.0)
    with pytest.raises(ValueError, match="too few for the two filters"):
        filtering.filter_resample_fft(
            short, [h, filtering.design_filter(160.0, [60.0], None, notch=True)], 160.0, 200.0
        )
    with pytest.raises(ValueError, match="odd-length"):
        filtering.filter_resample_fft(short, [np.ones(4)], 160.0, 200.0)
    calls = []
    real = filtering.filter_resample_fft
    monkeypatch.setattr(filtering, "filter_resample_fft", lambda *a, **k: calls.append(a[0].shape) or real(*a, **k))
    rec = EEGRecipe(l_freq=0.3, h_freq=None, line_freq=None, reference=None, window_s=1.0, sfreq=200.0)
    for n in (1849, 19680):  # the short one through the two passes, the long one in one pass: both equal MNE
        raw = raw160.copy().crop(0, (n - 1) / 160.0)
        out = preprocess_raw(raw.copy(), rec)
        assert _rel(out.get_data(), _mne_chain(raw, (0.3, None), None, 200.0)) < 1e-9
        assert (out.info["sfreq"], out.info["highpass"], out.n_times) == (200.0, 0.3, round(n * 1.25))
        assert out.info["temp"]["neurokit_applied"]["resampled"] == [160.0, 200.0]
    assert calls == [(64, 1849), (64, 19680)]  # tried on both, refused (ValueError) on the short one


@pytest.mark.parametrize("seconds", [10.0, 100.0])  # too short for the filters (MNE's path) / one pass
def test_band_edge_near_nyquist_is_warned_once(raw160, seconds):
    rec = EEGRecipe(l_freq=0.3, h_freq=79.0, line_freq=60.0, reference=None, window_s=1.0, sfreq=200.0)
    with pytest.warns(RuntimeWarning, match="too close to Nyquist") as record:
        out = preprocess_raw(raw160.copy().crop(0, seconds), rec)
    assert sum("too close to Nyquist" in str(w.message) for w in record) == 1
    assert out.info["lowpass"] == 72.0 and out.info["sfreq"] == 200.0  # 0.9 × Nyquist, then the new rate's bound


@pytest.mark.parametrize("l_freq", [0.1, 0.125, 0.13])  # 5,281 / 4,225 / 4,063 taps on a circle of 4,096
def test_one_pass_with_a_filter_longer_than_half_the_circle(l_freq):
    """A filter longer than half of resampling's padded length: its two tails overlap on the circle and both
    ends' wrap corrections reach the same outputs; both add (a fresh user's case: 8e-3 and 7.6e-2 of the RMS off
    when the second overwrote the first)."""
    x = np.random.default_rng(0).standard_normal((3, 3896)) * 1e-5 + 1e-5
    h = filtering.design_filter(160.0, l_freq, None)
    raw = mne.io.RawArray(x.copy(), mne.create_info(3, 160.0, "eeg"), verbose="error")
    ref = raw.filter(l_freq, None, verbose="error").resample(200.0, verbose="error").get_data()
    assert _rel(filtering.filter_resample_fft(x, [h], 160.0, 200.0), ref) < 1e-9


def test_crop_applies_to_event_windows(eeg_root):
    """--crop-start/--crop-end drop the event windows that reach into the cropped parts (a fresh user's 60 s,
    118 s and 1000 s crops all gave the same 15 windows); cropping everything is one clear error."""
    from neurokit._utils.errors import DataFileError
    from neurokit.preprocessing.eeg.windows import make_windows

    rec = EEGRecipe.from_dict({**neurokit.load_card("physionet_mi").recipe().to_dict(), "events": {"T1": 0, "T2": 1}})
    raw = preprocess_raw(neurokit.read_eeg(eeg_root / S001R04), rec)
    full = make_windows(raw, rec)
    assert len(full.labels) == 15
    cropped = EEGRecipe.from_dict({**rec.to_dict(), "crop_start_s": 60.0, "crop_end_s": 10.0})
    with pytest.warns(RuntimeWarning, match=r"event window\(s\) reach into the cropped first 60 s or last 10 s"):
        w = make_windows(raw, cropped)
    t_end = raw.n_times / raw.info["sfreq"]
    want = [(o, y) for o, y in zip(full.onsets, full.labels) if o >= 60.0 and o + rec.window_s <= t_end - 10.0]
    assert 0 < len(w.labels) < 15 and list(zip(w.onsets, w.labels)) == want
    np.testing.assert_array_equal(w.patches, full.patches[[o in w.onsets for o in full.onsets]])
    with pytest.raises(DataFileError, match="all 15 event windows lie in the cropped part"):
        make_windows(raw, EEGRecipe.from_dict({**rec.to_dict(), "crop_start_s": 1000.0}))


def test_one_pass_refuses_malformed_input(raw160):
    h = filtering.design_filter(160.0, 0.3, None)
    x = raw160.get_data()[:2, :6000]
    for data, rates, match in [
        (x[0], (160.0, 200.0), r"\(n_channels, n_times\)"),
        (x[:, :0], (160.0, 200.0), r"with samples, got shape \(2, 0\)"),
        (x, (160.0, 0.0), "sampling rates must be positive"),
        (x, (-160.0, 200.0), "sampling rates must be positive"),
    ]:
        with pytest.raises(ValueError, match=match):
            filtering.filter_resample_fft(data, [h], *rates)
    # float32 samples are reflected in float64: the same result as their float64 copy
    x32 = x.astype(np.float32)
    np.testing.assert_array_equal(
        filtering.filter_resample_fft(x32, [h], 160.0, 200.0),
        filtering.filter_resample_fft(x32.astype(np.float64), [h], 160.0, 200.0),
    )
