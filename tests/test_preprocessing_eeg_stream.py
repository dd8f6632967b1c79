"""Streaming long recordings (neurokit.preprocessing.eeg.stream) gives the in-memory path's windows."""

import mne
import numpy as np
import pytest

import neurokit
from neurokit._utils.errors import DataFileError
from neurokit.store.patch_store import PatchStore
from neurokit.pipelines.prepare import prepare
from neurokit.cards.recipes import EEGRecipe
from neurokit.preprocessing.eeg.windows import make_windows, preprocess_raw
from neurokit.preprocessing.eeg.stream import stream_windows, streamable

RUNS = "MNE-eegbci-data/files/eegmmidb/1.0.0/S001"


def _recipe(**kw):
    return EEGRecipe.from_dict({**neurokit.load_card("physionet_mi").recipe().to_dict(), **kw})


def _streamed(path, recipe, tmp_path, chunk_s=7.0):
    got = []
    applied, ch, n_rej = stream_windows(
        neurokit.read_eeg(path), recipe, tmp_path / "scratch", got.append, source=str(path), chunk_s=chunk_s
    )
    assert not list((tmp_path / "scratch").iterdir())  # scratch files removed
    cat = {k: np.concatenate([getattr(g, k) for g in got]) for k in ("patches", "labels", "onsets")}
    return cat, applied, ch, n_rej


@pytest.mark.parametrize(
    "recipe",
    [
        _recipe(events={"T1": 0, "T2": 1}),  # PhysioNet-MI order: filter, then resample; event windows
        _recipe(resample_first=True, h_freq=75.0, reject_uv=400.0),  # TUEG order, sliding windows, rejection
    ],
)
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


@pytest.mark.parametrize(
    "recipe", [_recipe(), _recipe(resample_first=True, h_freq=75.0, reject_uv=400.0, reference=None)]
)
def test_stream_joined_runs_and_skipped_spans(eeg_root, tmp_path, recipe):
    """Joined runs (EDGE boundary marks) are filtered apart in both orders, as MNE does; a recording that
    is not a whole number of EDF records ends in a BAD_ACQ_SKIP span, left unfiltered, and still streams."""
    raws = [mne.io.read_raw_edf(eeg_root / RUNS / f"S001R0{i}.edf", preload=True, verbose="error") for i in (4, 8)]
    for r in raws:
        r.set_annotations(None)
    path = tmp_path / "joined.edf"
    mne.export.export_raw(path, mne.concatenate_raws(raws).crop(0, 200.37), fmt="edf", verbose="error")
    raw = neurokit.read_eeg(path)
    marks = {d.split()[0].lower() for d in raw.annotations.description}
    assert {"edge", "bad_acq_skip"} <= marks and streamable(raw, recipe, 0)
    ref = make_windows(preprocess_raw(neurokit.read_eeg(path), recipe), recipe)
    got, _, _, n_rej = _streamed(path, recipe, tmp_path, chunk_s=11.0)
    assert got["patches"].shape == ref.patches.shape and n_rej == ref.n_rejected
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
    path = tmp_path / "nan_run-04_raw.fif"  # its run where a layout reads runs (a BIDS run- entity): run 4's group
    raw.save(path, verbose="error")
    with pytest.raises(DataFileError, match=r"nan_run-04_raw\.fif: non-finite samples .* \[.FC4.\]"):
        prepare(
            "physionet_mi",
            tmp_path / "s.h5",
            task="left_right_imagery",
            files=[path],
            progress=False,
            stream_above_mb=0.5,
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nan_run-04_raw.fif"]


def _fill_disk_after(monkeypatch, n_ok):
    """os.pwrite of the streaming scratch files raises ENOSPC after ``n_ok`` writes."""
    import errno
    import os

    from neurokit.preprocessing.eeg import stream

    calls = {"n": 0}
    real = os.pwrite

    def pwrite(fd, buf, off):
        calls["n"] += 1
        if calls["n"] > n_ok:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, buf, off)

    monkeypatch.setattr(stream.os, "pwrite", pwrite)


def test_full_disk_while_streaming_is_the_outputs_fault(eeg_root, tmp_path, monkeypatch):
    """A full disk under the scratch files is reported as one (never skipped as a bad recording); a shard
    set keeps what is written and says to resume; a single store is not left half-written."""
    from neurokit._utils.errors import StoreError

    files = [eeg_root / RUNS / f"S001R0{i}.edf" for i in (4, 8)]
    kw = dict(task="left_right_imagery", files=files, progress=False, stream_above_mb=0.5, skip_bad=True)
    _fill_disk_after(monkeypatch, 300)  # the first recording (~256 writes: 3 chunks + 1 resampling per channel) fits
    with pytest.raises(
        StoreError,
        match=r"disk full while processing .*S001R08\.edf; the 1 recording written "
        r"before is kept .* rerun the same command with resume=True",
    ):
        prepare("physionet_mi", tmp_path / "set", shards=True, **kw)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["set"]  # no scratch left beside it
    _fill_disk_after(monkeypatch, 10)
    with pytest.raises(StoreError, match=r"disk full while writing .*S001R04\.edf; nothing was kept"):
        prepare("physionet_mi", tmp_path / "one.h5", **kw)
    assert not (tmp_path / "one.h5").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["set"]


def test_cli_output_os_errors_are_one_line(eeg_root, tmp_path):
    from typer.testing import CliRunner

    from neurokit.cli.main import app

    (tmp_path / "afile").write_text("x")
    res = CliRunner().invoke(
        app,
        [
            "prepare",
            "physionet_mi",
            "--data-root",
            str(eeg_root),
            "--subjects",
            "1",
            "-o",
            str(tmp_path / "afile" / "s.h5"),
        ],
    )
    assert res.exit_code == 2 and "Traceback" not in res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "afile" in lines[0] and "error" in lines[0].lower(), res.output
    res = CliRunner().invoke(
        app,
        [
            "prepare",
            "physionet_mi",
            "--data-root",
            str(eeg_root),
            "--subjects",
            "1",
            "-o",
            str(tmp_path / "s.h5"),
            "--stream-above",
            "-1",
        ],
    )
    assert res.exit_code == 2 and "--stream-above" in res.output and "≥ 0" in res.output, res.output


def test_shard_set_never_written_into_a_folder_of_other_files(eeg_root, tmp_path):
    from neurokit._utils.errors import StoreError

    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    for overwrite in (False, True):
        with pytest.raises(StoreError, match=r"mine: a folder of other files, not a shard set"):
            prepare(
                "physionet_mi",
                tmp_path / "mine",
                task="left_right_imagery",
                progress=False,
                shards=True,
                overwrite=overwrite,
                files=[eeg_root / RUNS / "S001R04.edf"],
            )
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.txt"]
