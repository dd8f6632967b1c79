"""The same recording under another subject whose file bytes differ (an EDF header edited, the recording exported to
FIF, BrainVision or EDF again) is known by its samples (:func:`~neurokit.preprocessing.duplicates.signal_fingerprint`)
and refused like a SHA-256 copy; real different recordings (two runs of one subject, two subjects, a crop) are not.

Real EEGMMIDB files, laid out in ``tmp_path`` under subject names of a folder card (``S001_R04.edf`` → subject
``S001``)."""

from __future__ import annotations

import logging
import warnings

import mne
import numpy as np
import pytest
from card_build import write_card

from neurokit._utils.errors import DataFileError
from neurokit.io.eeg import read_eeg
from neurokit.store.patch_store import PatchStore
from neurokit.pipelines.prepare import prepare
from neurokit.preprocessing.duplicates import SIGNAL_TOLERANCE, fingerprint_distance, raw_fingerprint

EEGMMIDB = "MNE-eegbci-data/files/eegmmidb/1.0.0"
KW = dict(channels="C3,Cz,C4", progress=False)


@pytest.fixture
def mmidb(eeg_root):
    def path(subject: int, run: int):
        return eeg_root / EEGMMIDB / f"S{subject:03d}/S{subject:03d}R{run:02d}.edf"

    if not path(1, 4).exists():
        pytest.skip("EEGMMIDB S001R04 not in the shared data")
    return path


def _card(tmp_path):
    pre = {"l_freq": None, "h_freq": None, "line_freq": None, "window_s": 1.0, "reference": None}
    # BrainVision files name the annotations Comment/T1, Comment/T2
    events = {"T1": "left", "T2": "right", "Comment/T1": "left", "Comment/T2": "right"}
    tasks = {"lr": {"classes": ["left", "right"], "events": events}}
    layout = {"kind": "folder", "pattern": ["*.edf", "*.fif", "*.vhdr"]}
    return write_card(tmp_path, layout=layout, tasks=tasks, preprocessing=pre)


def _data(tmp_path, files: dict):
    """``tmp_path / "data"`` with ``name → source`` symbolic links."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    for name, src in files.items():
        (data / name).symlink_to(src)
    return data


def _edited_header(src, dst):
    """``src`` with other patient and recording identification and start date (EDF header bytes 8-176)."""
    raw = bytearray(src.read_bytes())
    raw[8:88] = b"0042 M 01-JAN-1970 Anonymous".ljust(80)
    raw[88:168] = b"Startdate 01-JAN-2010 X X anonymised".ljust(80)
    raw[168:176] = b"01.01.10"
    dst.write_bytes(bytes(raw))
    return dst


def _export(src, dst):
    """The recording of ``src`` written in the format of ``dst``'s suffix (MNE: FIF float32, EDF 16-bit with a new
    gain, BrainVision)."""
    raw = mne.io.read_raw_edf(src, preload=True, verbose="error")
    if dst.suffix == ".fif":
        raw.save(dst, verbose="error")
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mne.export.export_raw(dst, raw, verbose="error")
    return dst


def _store(path):
    st = PatchStore(path)
    try:
        subjects = st.meta["subject"].astype(str)
        return {s: int((subjects == s).sum()) for s in sorted(set(subjects))}, st.attrs
    finally:
        st.close()


def test_edited_edf_header_under_another_subject_is_refused_naming_both(tmp_path, mmidb):
    copy = _edited_header(mmidb(1, 4), tmp_path / "copy.edf")
    assert copy.read_bytes() != mmidb(1, 4).read_bytes() and copy.stat().st_size == mmidb(1, 4).stat().st_size
    data = _data(tmp_path, {"S001_R04.edf": mmidb(1, 4), "S002_R04.edf": mmidb(2, 4)})
    card = _card(tmp_path)
    out = tmp_path / "x.h5"
    before, _ = _store(prepare(card, out, data_root=data, **KW))  # a store already there
    assert before == {"S001": 15, "S002": 15}
    mtime = out.stat().st_mtime_ns
    (data / "S009_R04.edf").symlink_to(copy)
    with pytest.raises(DataFileError) as err:
        prepare(card, out, data_root=data, overwrite=True, **KW)
    msg = str(err.value)
    assert f"{data / 'S001_R04.edf'} (subject S001) and {data / 'S009_R04.edf'} (subject S009) hold the same" in msg
    assert "3 channels × 20000 samples at 160 Hz" in msg and "allow_duplicate_recordings=True" in msg
    assert f"{out} was not written (the store that was there is unchanged)" in msg
    # the refusal came after reading, while writing: the store there before is as it was, no partial file is left
    assert out.stat().st_mtime_ns == mtime and _store(out)[0] == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.edf", "data", "own.yaml", "x.h5"]


@pytest.mark.parametrize("suffix", ["_raw.fif", ".edf", ".vhdr"])
def test_recording_in_another_format_under_another_subject_is_refused(tmp_path, mmidb, suffix):
    if suffix == ".vhdr":
        pytest.importorskip("pybv")
    data = _data(tmp_path, {"S001_R04.edf": mmidb(1, 4)})
    conv = _export(mmidb(1, 4), data / f"S009_R04{suffix}")
    with pytest.raises(DataFileError, match=r"S001_R04.edf \(subject S001\) and .*S009_R04.* \(subject S009\) hold"):
        prepare(_card(tmp_path), tmp_path / "x.h5", data_root=data, **KW)
    assert not (tmp_path / "x.h5").exists() and not (tmp_path / "x.h5.partial").exists()
    # how far the conversion moved the fingerprint: float32 (FIF), 16-bit with a new gain (EDF), none (BrainVision)
    d = fingerprint_distance(raw_fingerprint(read_eeg(mmidb(1, 4))), raw_fingerprint(read_eeg(conv)))
    assert {"_raw.fif": 1e-7, ".edf": 1e-4, ".vhdr": 1e-7}[suffix] > d


def test_allow_duplicate_recordings_keeps_both_and_records_them(tmp_path, mmidb):
    data = tmp_path / "data"
    data.mkdir()
    fif = _export(mmidb(1, 4), data / "S009_R04_raw.fif")
    edited = _edited_header(mmidb(1, 4), data / "S007_R04.edf")
    _data(tmp_path, {"S001_R04.edf": mmidb(1, 4), "S002_R04.edf": mmidb(2, 4)})
    out = prepare(_card(tmp_path), tmp_path / "y.h5", data_root=data, allow_duplicate_recordings=True, **KW)
    counts, attrs = _store(out)
    assert counts == {"S001": 15, "S002": 15, "S007": 15, "S009": 15}
    (dup,) = attrs["duplicate_recordings"]  # one recording, under three subjects
    assert dup["match"] == "signal" and dup["subjects"] == ["S001", "S007", "S009"]
    assert dup["files"] == [str(data / "S001_R04.edf"), str(edited), str(fif)]
    assert 0 < dup["distance"] < 1e-7  # FIF's float32 rounding; the edited header's samples are exact


def test_shard_set_keeps_what_was_written_and_resumes_with_the_copy_kept(tmp_path, mmidb):
    data = _data(tmp_path, {"S001_R04.edf": mmidb(1, 4), "S002_R04.edf": mmidb(2, 4)})
    _edited_header(mmidb(2, 4), data / "S003_R04.edf")
    card, out = _card(tmp_path), tmp_path / "set"
    with pytest.raises(DataFileError) as err:
        prepare(card, out, data_root=data, shards=True, **KW)
    msg = str(err.value)
    assert f"{data / 'S002_R04.edf'} (subject S002) and {data / 'S003_R04.edf'} (subject S003)" in msg
    assert f"the 2 recordings written before are kept in {out}; then rerun the same command with resume=True" in msg
    # a resumed run compares what it adds with the recordings the set holds (their fingerprints are in the shards)
    with pytest.raises(DataFileError, match=r"S002_R04.edf \(subject S002\) and .*S003_R04.edf \(subject S003\)"):
        prepare(card, out, data_root=data, shards=True, resume=True, **KW)
    prepare(card, out, data_root=data, shards=True, resume=True, allow_duplicate_recordings=True, **KW)
    from neurokit.store.shards import read_index

    idx = read_index(out)
    assert idx["complete"] and len(idx["shards"]) == 3
    (dup,) = idx["duplicate_recordings"]
    assert dup["subjects"] == ["S002", "S003"] and dup["match"] == "signal"
    # --overwrite writes a new set beside this one: refused, the new one is discarded and this one stays whole
    with pytest.raises(DataFileError) as err:
        prepare(card, out, data_root=data, shards=True, overwrite=True, **KW)
    assert str(err.value).endswith(f"the earlier shard set in {out} is unchanged (the new one was discarded)")
    assert "S003_R04.edf (subject S003) hold the same recording" in str(err.value)
    assert read_index(out) == idx and sorted(p.name for p in tmp_path.iterdir()) == ["data", "own.yaml", "set"]


def test_same_subject_copy_by_content_is_written_once_with_a_warning(tmp_path, mmidb, caplog):
    data = tmp_path / "data"
    data.mkdir()
    _export(mmidb(1, 4), data / "S001_R99_raw.fif")
    _data(tmp_path, {"S001_R04.edf": mmidb(1, 4)})
    with caplog.at_level(logging.WARNING, logger="neurokit"):
        counts, attrs = _store(prepare(_card(tmp_path), tmp_path / "x.h5", data_root=data, **KW))
    assert counts == {"S001": 15} and [s["path"] for s in attrs["sources"]] == [str(mmidb(1, 4).resolve())]
    assert f"{data / 'S001_R99_raw.fif'}: the same samples, though the files differ" in caplog.text
    assert f"as {data / 'S001_R04.edf'} (subject S001); written once, from {data / 'S001_R04.edf'}" in caplog.text
    assert "duplicate_recordings" not in attrs


def test_real_different_recordings_are_not_flagged(tmp_path, mmidb, caplog):
    """Two runs of one subject, two subjects, a crop and a crop one sample later: far apart, never flagged."""
    files = {"S001_R04.edf": mmidb(1, 4), "S001_R08.edf": mmidb(1, 8), "S002_R04.edf": mmidb(2, 4)}
    files["S003_R04.edf"] = mmidb(3, 4)
    raws = {k: read_eeg(v) for k, v in files.items()}
    fps = {k: raw_fingerprint(r) for k, r in raws.items()}
    assert {k: (r.n_times, len(r.ch_names), r.info["sfreq"]) for k, r in raws.items()} == {
        "S001_R04.edf": (20000, 64, 160.0),
        "S001_R08.edf": (20000, 64, 160.0),
        "S002_R04.edf": (19680, 64, 160.0),
        "S003_R04.edf": (20000, 64, 160.0),
    }
    near = {
        (a, b): fingerprint_distance(fps[a], fps[b])
        for a in fps
        for b in fps
        if a < b and raws[a].n_times == raws[b].n_times
    }
    assert len(near) == 3 and min(near.values()) > 1000 * SIGNAL_TOLERANCE  # measured 2.3-3.0 × the RMS
    assert fingerprint_distance(fps["S001_R04.edf"], fps["S002_R04.edf"]) == np.inf  # other length
    # S001R04 cropped (other length), and two crops of equal length one sample apart (S004, S005)
    data = _data(tmp_path, files)
    full = mne.io.read_raw_edf(mmidb(1, 4), preload=True, verbose="error")
    full.copy().crop(0, 100).save(data / "S006_R04_raw.fif", verbose="error")
    full.copy().crop(0, 19998 / 160).save(data / "S004_R04_raw.fif", verbose="error")
    full.copy().crop(1 / 160, 19999 / 160).save(data / "S005_R04_raw.fif", verbose="error")
    shifted = fingerprint_distance(*(raw_fingerprint(read_eeg(data / f"S00{i}_R04_raw.fif")) for i in (4, 5)))
    assert shifted > 10 * SIGNAL_TOLERANCE  # measured 0.025
    assert fingerprint_distance(fps["S001_R04.edf"], raw_fingerprint(read_eeg(data / "S006_R04_raw.fif"))) == np.inf
    with caplog.at_level(logging.WARNING, logger="neurokit"):
        counts, attrs = _store(prepare(_card(tmp_path), tmp_path / "x.h5", data_root=data, **KW))
    assert sorted(counts) == ["S001", "S002", "S003", "S004", "S005", "S006"] and len(attrs["sources"]) == 7
    assert "same samples" not in caplog.text and "same recording" not in caplog.text
    assert "duplicate_recordings" not in attrs


def test_streamed_recordings_are_fingerprinted_as_in_memory(tmp_path, mmidb):
    """Long recordings go through the preparer chunk by chunk: their fingerprint is the same."""
    data = tmp_path / "data"
    data.mkdir()
    _export(mmidb(1, 4), data / "S009_R04_raw.fif")
    _data(tmp_path, {"S001_R04.edf": mmidb(1, 4)})
    card = _card(tmp_path)
    with pytest.raises(DataFileError, match=r"S001_R04.edf \(subject S001\) and .*S009_R04_raw.fif \(subject S009\)"):
        prepare(card, tmp_path / "s.h5", data_root=data, stream_above_mb=0.1, **KW)
    kw = dict(data_root=data, allow_duplicate_recordings=True, **KW)
    streamed = _store(prepare(card, tmp_path / "s.h5", stream_above_mb=0.1, **kw))
    in_memory = _store(prepare(card, tmp_path / "m.h5", **kw))
    assert all(s["applied"].get("streamed_chunk_s") for s in streamed[1]["sources"])
    assert not any(s["applied"].get("streamed_chunk_s") for s in in_memory[1]["sources"])
    (a,), (b,) = streamed[1]["duplicate_recordings"], in_memory[1]["duplicate_recordings"]
    assert a["files"] == b["files"] and a["subjects"] == b["subjects"] == ["S001", "S009"]
    assert a["distance"] == pytest.approx(b["distance"], rel=1e-6) and 0 < a["distance"] < 1e-7


# ------------------------------------------------------------------------------------------ surface fMRI
FSA5 = "fsaverage5_rest/sub-010188_ses-02_task-rest_acq-AP_run-01.fsa5.{}.first100TR.mgz"


def _gifti_copy(src, dst, frames=None):
    """The frames of the MGH file ``src`` as a GIFTI time series (float32, no TR), the first ``frames`` only."""
    import nibabel as nib

    data = np.asarray(nib.load(src).dataobj, dtype=np.float32).reshape(-1, nib.load(src).shape[-1])[:, :frames]
    meta = {"AnatomicalStructurePrimary": "CortexLeft"}
    arrays = [
        nib.gifti.GiftiDataArray(np.ascontiguousarray(c), intent="NIFTI_INTENT_TIME_SERIES", meta=meta) for c in data.T
    ]
    nib.save(nib.gifti.GiftiImage(darrays=arrays), str(dst))
    return dst


@pytest.mark.slow
def test_surface_run_in_another_format_under_another_subject_is_refused(tmp_path, surface_root, caplog):
    lh, rh = (surface_root / FSA5.format(h) for h in ("lh", "rh"))
    copy = _gifti_copy(lh, tmp_path / "sub-999_task-rest.lh.func.gii")
    kw = dict(progress=False, hemi="L")
    with pytest.raises(DataFileError) as err:
        prepare("fsaverage5_rest", tmp_path / "x.h5", files=[lh, copy], **kw)
    msg = str(err.value)
    assert f"{lh} (subject 010188) and {copy} (subject 999) hold the same recording" in msg
    assert "10242 vertices × 100 frames, statistics within" in msg and f"{tmp_path / 'x.h5'} was not written" in msg
    assert not (tmp_path / "x.h5").exists() and not (tmp_path / "x.h5.partial").exists()
    # kept on purpose: both written and recorded; the other hemisphere and a shorter copy are not the same
    short = _gifti_copy(lh, tmp_path / "sub-998_task-rest.lh.func.gii", frames=90)
    with caplog.at_level(logging.WARNING, logger="neurokit"):
        out = prepare(
            "fsaverage5_rest", tmp_path / "y.h5", files=[lh, copy, short], allow_duplicate_recordings=True, **kw
        )
    counts, attrs = _store(out)
    assert counts == {"010188": 33, "998": 30, "999": 33}
    (dup,) = attrs["duplicate_recordings"]
    assert dup["match"] == "signal" and dup["files"] == [str(lh), str(copy)] and dup["subjects"] == ["010188", "999"]
    assert dup["distance"] < 1e-12  # float32 in both files
    from neurokit.preprocessing.duplicates import signal_fingerprint
    from neurokit.io.surface import read_surface

    fps = [signal_fingerprint(read_surface(p).data, None) for p in (lh, rh)]
    assert fingerprint_distance(*fps) > 1000 * SIGNAL_TOLERANCE


def test_surface_shard_set_keeps_its_runs_and_resume_compares_with_them(tmp_path):
    """Runs already on ico6 (no resampling): a shard set stopped by a copy keeps the runs written before, and a
    resumed run still finds the copy among them (their fingerprints are in the shards)."""
    import nibabel as nib

    from neurokit.cards.recipes import SurfaceRecipe
    from neurokit.store.shards import read_index
    from neurokit.preprocessing.duplicates import SignalDuplicates
    from neurokit.preprocessing.surface.store import SurfaceRun, write_surface_store

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((40962, 1, 1, 6)).astype(np.float32) for _ in range(2))
    for name, x in (("a.lh.mgz", a), ("b.lh.mgz", b)):
        nib.save(nib.MGHImage(x, np.eye(4)), str(tmp_path / name))
    meta = {"AnatomicalStructurePrimary": "CortexLeft"}
    darrays = [
        nib.gifti.GiftiDataArray(np.ascontiguousarray(a[:, 0, 0, t]), intent="NIFTI_INTENT_TIME_SERIES", meta=meta)
        for t in range(6)
    ]
    nib.save(nib.gifti.GiftiImage(darrays=darrays), str(tmp_path / "c.lh.func.gii"))  # a, in another format
    runs = [SurfaceRun(tmp_path / "a.lh.mgz", "1"), SurfaceRun(tmp_path / "b.lh.mgz", "2")]
    copy = SurfaceRun(tmp_path / "c.lh.func.gii", "3")
    out = tmp_path / "set"

    def write(runs, allow=False, **kw):
        check = SignalDuplicates(allow, rows="vertices", times="frames")
        rec = SurfaceRecipe(grid="ico6/ico3", tubelet=3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # no TR in these files
            return write_surface_store(out, runs, rec, mesh="ico6", shards=True, signals=check, **kw)

    with pytest.raises(DataFileError) as err:
        write(runs + [copy])
    assert f"{tmp_path / 'a.lh.mgz'} (subject 1) and {tmp_path / 'c.lh.func.gii'} (subject 3) hold the same" in str(
        err.value
    )
    assert f"the 2 recordings written before are kept in {out}; then rerun the same command with resume=True" in str(
        err.value
    )
    assert len(read_index(out)["shards"]) == 2
    with pytest.raises(DataFileError, match=r"a.lh.mgz \(subject 1\) and .*c.lh.func.gii \(subject 3\)"):
        write(runs + [copy], resume=True)
    write(runs + [copy], allow=True, resume=True)
    idx = read_index(out)
    assert idx["complete"] and len(idx["shards"]) == 3
    (dup,) = idx["duplicate_recordings"]
    assert dup["subjects"] == ["1", "3"] and dup["files"] == [
        str(tmp_path / "a.lh.mgz"),
        str(tmp_path / "c.lh.func.gii"),
    ]
