"""One origin for annotation times in every window mode (issue 35, item 1): a recording cropped and saved has
``first_samp`` > 0, and MNE keeps annotation onsets from the first sample ever recorded, with or without a
measurement date. Event windows (through ``mne.events_from_annotations``), tiled event windows and BAD spans must
all put an annotation made at 5 s into the data at 5 s."""

from __future__ import annotations

import mne
import numpy as np
import pytest

from neurokit.preprocessing.eeg.windows import annotation_origin, bad_spans


def _recording(path, *, cropped: bool, dated: bool):
    """Two channels at 200 Hz with 'rest' at 5 s and 'task' at 30 s of the data (8 s each), and a BAD span at
    50-52 s; ``cropped``: cut from a longer recording (first 10 s dropped) and saved, so ``first_samp`` is 2000."""
    rng = np.random.default_rng(0)
    n = 200 * (70 if cropped else 60)
    raw = mne.io.RawArray(rng.normal(size=(2, n)) * 20e-6, mne.create_info(["C3", "C4"], 200.0, "eeg"), verbose="error")
    if dated:
        raw.set_meas_date(1_700_000_000.0)
    shift = 10.0 if cropped else 0.0
    raw.set_annotations(mne.Annotations([5 + shift, 30 + shift, 50 + shift], [8, 8, 2], ["rest", "task", "BAD_x"]))
    if cropped:
        raw.crop(10.0, None)
    raw.save(path, overwrite=True, verbose="error")
    return mne.io.read_raw_fif(path, verbose="error")


@pytest.mark.parametrize("cropped", [False, True])
@pytest.mark.parametrize("dated", [False, True])
def test_tiled_and_bad_spans_use_mnes_origin(tmp_path, cropped, dated):
    raw = _recording(tmp_path / "rec_raw.fif", cropped=cropped, dated=dated)
    assert raw.first_samp == (2000 if cropped else 0)
    assert bad_spans(raw).tolist() == [[50 * 200, 52 * 200]]
    ev, _ = mne.events_from_annotations(raw, event_id={"rest": 0, "task": 1}, verbose="error")
    assert (ev[:, 0] - raw.first_samp).tolist() == [1000, 6000]  # MNE's own answer: 5 s and 30 s
    assert raw.annotations.onset[0] - annotation_origin(raw) == pytest.approx(5.0)


@pytest.mark.slow
@pytest.mark.parametrize("cropped,dated", [(True, False), (True, True), (False, False)])
def test_prepare_tiles_event_windows_at_their_times(tmp_path, prepare_folder, cropped, dated):
    """``event_windows: tile`` stores the windows of 'rest' at 5 and 9 s and of 'task' at 30 and 34 s, their
    samples those of the file at those times (no filter, no resampling), cropped or not, dated or not."""
    root = tmp_path / "data"
    root.mkdir()
    raw = _recording(root / "sub-01_raw.fif", cropped=cropped, dated=dated)
    recipe = dict(sfreq=200.0, l_freq=None, h_freq=None, line_freq=None, reference=None, scale=1e4, window_s=4.0,
                  event_windows="tile")  # fmt: skip
    st = prepare_folder(root, "*.fif", recipe, {"state": {"description": "x", "classes": ["rest", "task"],
                                                          "events": {"rest": "rest", "task": "task"}}})  # fmt: skip
    assert st.meta["onset"].tolist() == [5.0, 9.0, 30.0, 34.0] and st.labels.tolist() == [0, 0, 1, 1]
    data = raw.get_data() * 1e4
    for i, t in enumerate([5, 9, 30, 34]):
        want = data[:, t * 200 : (t + 4) * 200].reshape(2, 4, 200)
        assert np.abs(np.asarray(st.patches(i)) - want).max() < 1e-6


def _marked(markers):
    """Two channels, 60 s at 200 Hz, with the given (onset, description) markers."""
    rng = np.random.default_rng(1)
    raw = mne.io.RawArray(rng.normal(size=(2, 12000)) * 20e-6, mne.create_info(["C3", "C4"], 200.0, "eeg"),
                          verbose="error")  # fmt: skip
    raw.set_annotations(mne.Annotations([o for o, _ in markers], [0.0] * len(markers), [d for _, d in markers]))
    return raw


@pytest.mark.parametrize(
    "policy,onsets,labels",
    [("first", [5.0, 20.0, 40.0], [0, 1, 0]), ("drop", [5.0, 40.0], [0, 0])],
)
def test_repeated_and_conflicting_markers(policy, onsets, labels):
    """Issue 35 item 2: 'rest' twice at 5 s (repeated), 'task' and 'rest' at 20 s (conflicting), 'rest' at 40 s.
    By default refused as MNE's Epochs refuses them, naming the file, the times, the markers and the option; with
    the option, the first marker kept or the conflicting ones dropped, and said."""
    from neurokit._utils.errors import DataFileError
    from neurokit.cards.recipes import EEGRecipe
    from neurokit.preprocessing.eeg.windows import window_plan

    raw = _marked([(5.0, "rest"), (5.0, "rest"), (20.0, "task"), (20.0, "rest"), (40.0, "rest")])
    events = {"rest": 0, "task": 1}
    with pytest.raises(DataFileError, match=r"rec\.edf: 2 time\(s\).*5\.000 s: rest, rest; 20\.000 s: task, rest.*"
                       r"event_repeated='first'.*event_repeated='drop'"):  # fmt: skip
        window_plan(raw, EEGRecipe(l_freq=None, h_freq=None, line_freq=None, events=events), source="rec.edf")
    r = EEGRecipe(l_freq=None, h_freq=None, line_freq=None, events=events, event_repeated=policy)
    with pytest.warns(RuntimeWarning, match="event_repeated"):
        plan = window_plan(raw, r, source="rec.edf")
    assert plan.onsets.tolist() == onsets and plan.labels.tolist() == labels
    assert r.to_dict()["event_repeated"] == policy and "event_repeated" not in EEGRecipe().to_dict()


def test_a_tiled_marker_too_short_for_a_window_is_said():
    from neurokit.cards.recipes import EEGRecipe
    from neurokit.preprocessing.eeg.windows import window_plan

    raw = _marked([(5.0, "rest")])
    raw.set_annotations(mne.Annotations([5.0, 20.0], [0.0, 8.0], ["rest", "rest"]))
    r = EEGRecipe(l_freq=None, h_freq=None, line_freq=None, events={"rest": 0}, event_windows="tile")
    with pytest.warns(RuntimeWarning, match=r"1 tiled event marker\(s\) shorter than one 4-s window.*rest at 5\.000 s"):
        plan = window_plan(raw, r, source="rec.edf")
    assert plan.onsets.tolist() == [20.0, 24.0]


@pytest.mark.parametrize("scale,factor", [(1e-6, "1e6"), (1e3, "1e-3"), (1e-3, "1e3")])
def test_units_that_lie_are_said(scale, factor):
    """Issue 35 item 3: a header whose unit lies (volts labelled µV read 1e-6 too small; µV labelled mV 1e3 too
    large; nV labelled µV 1e-3 too small) is read faithfully; its amplitude is outside scalp EEG and is said,
    naming the file, the channels, the figure and the factor that would fix it."""
    from neurokit.cards.recipes import EEGRecipe
    from neurokit.preprocessing.eeg.windows import preprocess_raw

    raw = _marked([])
    raw._data *= scale
    with pytest.warns(RuntimeWarning, match=rf"lie\.edf: C3, C4 have a robust RMS of .* µV.*scaled by {factor}"):
        preprocess_raw(raw, EEGRecipe(l_freq=None, h_freq=None, line_freq=None), source="lie.edf")


def test_no_shared_recording_looks_mislabelled(shared):
    """The units check stays quiet on every real EEG recording of the shared data (EDF, BDF, GDF, BrainVision,
    EEGLAB, FIF, EEGMMIDB, EEGMAT)."""
    import warnings

    from neurokit.io.eeg import read_eeg
    from neurokit.preprocessing.eeg.windows import check_units

    root = shared / "data" / "eeg"
    files = sorted(root.glob("formats/*/*.edf")) + sorted(root.glob("formats/*/*.bdf"))
    files += sorted(root.glob("formats/*/*.vhdr")) + sorted(root.glob("formats/*/*.set"))
    files += sorted(root.glob("formats/*/*.fif")) + sorted(root.glob("formats/*/*.gdf"))
    files += sorted(root.glob("MNE-eegbci-data/files/eegmmidb/1.0.0/S00[1-3]/*.edf"))[:6]
    files += sorted(root.glob("eegmat/1.0.0/*.edf"))
    said = []
    for f in files:
        try:
            raw = read_eeg(f)
        except Exception:  # files without EEG (a hypnogram, one ECG channel) are not this check's business
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            msg = check_units(raw.get_data(), raw.ch_names, str(f))
        if msg:
            said.append(msg)
    assert len(files) > 10 and said == []
