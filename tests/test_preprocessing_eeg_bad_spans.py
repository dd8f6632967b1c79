"""Windows overlapping ``BAD…`` annotation spans (issue 19 item 10): dropped as MNE's ``reject_by_annotation``
does, counted in the store's provenance, kept on request."""

import mne
import numpy as np
import pytest
import yaml

from neurokit.cards.recipes import EEGRecipe
from neurokit.store.patch_store import PatchStore
from neurokit.pipelines.prepare import prepare
from neurokit.preprocessing.eeg.windows import make_windows


def _raw(seconds=60.0, sf=200.0):
    rng = np.random.default_rng(0)
    info = mne.create_info(["C3", "Cz", "C4"], sf, "eeg")
    raw = mne.io.RawArray(rng.normal(0, 10e-6, (3, int(seconds * sf))), info, verbose="error")
    return raw


def _recipe(**kw):
    return EEGRecipe(l_freq=None, h_freq=None, line_freq=None, window_s=4.0, **kw)


def test_windows_touching_bad_spans_are_dropped():
    raw = _raw()
    # 15 windows of 4 s; BAD_muscle over 9.5-10.5 s lies in window [8, 12) s;
    # BAD_move 20-24 s is window 5 exactly; a span ending at a window's start (24 s) does not touch window 6
    raw.set_annotations(mne.Annotations([9.5, 20.0, 40.0], [1.0, 4.0, 0.0], ["BAD_muscle", "bad_move", "BAD boundary"]))
    w = make_windows(raw, _recipe())
    assert w.n_bad_annotation == 2
    np.testing.assert_array_equal(w.onsets, [0, 4, 12, 16, 24, 28, 32, 36, 40, 44, 48, 52, 56])
    kept = make_windows(raw, _recipe(reject_by_annotation=False))
    assert kept.n_bad_annotation == 0 and len(kept.onsets) == 15


def test_prepare_counts_bad_windows_in_provenance(tmp_path):
    raw = _raw()
    # three 2 mV muscle bursts, each inside a BAD_muscle span
    for t in (5.0, 21.0, 45.0):
        raw._data[:, int(t * 200) : int(t * 200) + 100] += 2e-3
    raw.set_annotations(mne.Annotations([4.9, 20.9, 44.9], [0.7, 0.7, 0.7], ["BAD_muscle"] * 3))
    f = tmp_path / "rec_raw.fif"
    raw.save(f, verbose="error")
    card = {
        "name": "t",
        "modality": "eeg",
        "title": "t",
        "source": "s",
        "licence": "l",
        "citation": ["c"],
        "layout": {"kind": "folder", "pattern": "*.fif"},
        "tasks": {"pre": {"classes": []}},
        "preprocessing": {"l_freq": None, "h_freq": None, "line_freq": None, "window_s": 4.0},
    }
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(card))
    out = prepare(tmp_path / "c.yaml", tmp_path / "s.h5", files=[f], progress=False)
    st = PatchStore(out)
    try:
        assert len(st) == 12  # 15 windows, 3 dropped
        assert st.info.extra["n_bad_annotation"] == 3
        assert st.info.sources[0]["n_bad_annotation"] == 3
        assert (
            float(np.abs(st.patches(slice(0, len(st)))).max()) < 1.0
        )  # no 2 mV (= 20 units of 100 µV) left; noise peaks ~0.5
    finally:
        st.close()
    # the streamed path (long recordings, bounded memory) drops and counts the same windows
    out = prepare(tmp_path / "c.yaml", tmp_path / "streamed.h5", files=[f], progress=False, stream_above_mb=1e-4)
    st = PatchStore(out)
    try:
        assert len(st) == 12 and st.info.extra["n_bad_annotation"] == 3
        assert "streamed_chunk_s" in st.info.sources[0]["applied"]
        assert "n_bad_annotation" not in st.info.sources[0]["applied"]
    finally:
        st.close()
    card["preprocessing"]["reject_by_annotation"] = False
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(card))
    out = prepare(tmp_path / "c.yaml", tmp_path / "k.h5", files=[f], progress=False)
    st = PatchStore(out)
    try:
        assert len(st) == 15 and st.info.extra["n_bad_annotation"] == 0
    finally:
        st.close()


@pytest.mark.parametrize("meas_date", [None, "2020-01-01"])
def test_bad_spans_of_a_cropped_recording_match_mne(meas_date):
    """After a crop (first sample > 0), spans are where MNE's own reject_by_annotation puts them."""
    import datetime

    from neurokit.preprocessing.eeg.windows import bad_spans

    raw = _raw(seconds=60.0)
    md = None if meas_date is None else datetime.datetime.fromisoformat(meas_date).replace(tzinfo=datetime.timezone.utc)
    raw.set_meas_date(md)
    raw.set_annotations(mne.Annotations([25.0], [2.0], ["BAD_x"], orig_time=md))
    raw.crop(10.0, None, verbose="error")
    data = raw.get_data(reject_by_annotation="NaN", verbose="error")
    nan = np.flatnonzero(np.isnan(data[0]))
    assert bad_spans(raw).tolist() == [[int(nan.min()), int(nan.max()) + 1]] == [[3000, 3400]]


def test_all_windows_bad_is_said():
    raw = _raw(seconds=8.0)
    raw.set_annotations(mne.Annotations([0.0], [8.0], ["BAD_all"]))
    from neurokit._utils.errors import DataFileError

    with pytest.raises(DataFileError, match="every window overlaps a BAD"):
        make_windows(raw, _recipe())
