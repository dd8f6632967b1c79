"""Streaming long recordings (neurokit.preprocessing.stream) gives the in-memory path's windows."""
import mne
import numpy as np
import pytest

import neurokit
from neurokit._errors import DataFileError
from neurokit.data.store import PatchStore
from neurokit.pipelines.prepare import prepare
from neurokit.preprocessing.eeg import EEGRecipe, make_windows, preprocess_raw
from neurokit.preprocessing.stream import stream_windows, streamable

RUNS = "MNE-eegbci-data/files/eegmmidb/1.0.0/S001"


def _recipe(**kw):
    return EEGRecipe.from_dict({**neurokit.load_card("physionet_mi").recipe().to_dict(), **kw})


def _streamed(path, recipe, tmp_path, chunk_s=7.0):
    got = []
    applied, ch, n_rej = stream_windows(neurokit.read_eeg(path), recipe, tmp_path / "scratch", got.append,
                                        source=str(path), chunk_s=chunk_s)
    assert not list((tmp_path / "scratch").iterdir())  # scratch files removed
    cat = {k: np.concatenate([getattr(g, k) for g in got]) for k in ("patches", "labels", "onsets")}
    return cat, applied, ch, n_rej


@pytest.mark.parametrize("recipe", [
    _recipe(events={"T1": 0, "T2": 1}),  # PhysioNet-MI order: filter, then resample; event windows
    _recipe(resample_first=True, h_freq=75.0, reject_uv=400.0),  # TUEG order, sliding windows, rejection
])
def test_stream_equals_in_memory(eeg_root, tmp_path, recipe):
    path = eeg_root / RUNS / "S001R04.edf"
    ref = make_windows(preprocess_raw(neurokit.read_eeg(path), recipe), recipe)
    raw = preprocess_raw(neurokit.read_eeg(path), recipe)
    got, applied, ch, n_rej = _streamed(path, recipe, tmp_path)
    assert got["patches"].shape == ref.patches.shape and len(ref.labels) >= 10
    np.testing.assert_allclose(got["patches"], ref.patches, rtol=0, atol=1e-6)  # float32 store, 100 µV units
    np.testing.assert_array_equal(got["labels"], ref.labels)
    np.testing.assert_allclose(got["onsets"], ref.onsets)
    assert ch == ref.ch_names and n_rej == ref.n_rejected
    assert applied.pop("streamed_chunk_s") == 7.0
    assert applied == raw.info["temp"]["neurokit_applied"]


def test_stream_concatenated_runs_filtered_apart(eeg_root, tmp_path):
    """A recording of joined runs (EDGE boundary marks): each stretch is filtered on its own, as MNE does."""
    raws = [mne.io.read_raw_edf(eeg_root / RUNS / f"S001R0{i}.edf", preload=True, verbose="error") for i in (4, 8)]
    for r in raws:
        r.set_annotations(None)
    path = tmp_path / "joined.edf"
    mne.export.export_raw(path, mne.concatenate_raws(raws), fmt="edf", verbose="error")
    recipe = _recipe()
    assert streamable(neurokit.read_eeg(path), recipe, 0)
    ref = make_windows(preprocess_raw(neurokit.read_eeg(path), recipe), recipe)
    got, *_ = _streamed(path, recipe, tmp_path, chunk_s=11.0)
    np.testing.assert_allclose(got["patches"], ref.patches, rtol=0, atol=1e-6)


def test_prepare_streams_long_recordings_to_the_same_store(eeg_root, tmp_path):
    files = [eeg_root / RUNS / f"S001R0{i}.edf" for i in (4, 8)]
    kw = dict(task="left_right_imagery", files=files, progress=False)
    mem = PatchStore(prepare("physionet_mi", tmp_path / "mem.h5", **kw))
    for n_jobs in (1, 2):
        out = tmp_path / f"stream{n_jobs}.h5"
        st = PatchStore(prepare("physionet_mi", out, stream_above_mb=0.5, n_jobs=n_jobs, **kw))
        assert len(st) == len(mem) == 30
        np.testing.assert_allclose(st.patches(slice(None)), mem.patches(slice(None)), rtol=0, atol=1e-6)
        np.testing.assert_array_equal(st.labels, mem.labels)
        np.testing.assert_allclose(st.meta["onset"], mem.meta["onset"])
        assert [s["applied"]["streamed_chunk_s"] for s in st.attrs["sources"]] == [60.0, 60.0]
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # parts removed


def test_stream_bad_samples_named_and_nothing_left(eeg_root, tmp_path):
    raw = mne.io.read_raw_edf(eeg_root / RUNS / "S001R04.edf", preload=True, verbose="error")
    raw._data[5, 9000:9010] = np.nan
    path = tmp_path / "nan_raw.fif"
    raw.save(path, verbose="error")
    with pytest.raises(DataFileError, match=r"nan_raw\.fif: non-finite samples .* \[.FC4.\]"):
        prepare("physionet_mi", tmp_path / "s.h5", task="left_right_imagery", files=[path], progress=False,
                stream_above_mb=0.5)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nan_raw.fif"]
