"""Shard sets (issue 12 items 3 and 5): per-run surface shards that survive a full disk or a bad file and
resume to the bytes of a one-shot run, merge checks, and per-member keys of archive recordings (Bonn)."""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from neurokit._utils.errors import DataFileError, StoreError
from neurokit.cli.main import app
from neurokit.data.dataset import PatchDataset
from neurokit.store.shards import ShardSetWriter, merge_shard_sets, read_index
from neurokit.store.patch_store import PatchStoreWriter
from neurokit.pipelines.prepare import prepare
from neurokit.cards.recipes import SurfaceRecipe
from neurokit.preprocessing.surface.store import SurfaceRun, write_surface_store

FSA5 = "fsaverage5_rest/sub-010188_ses-02_task-rest_acq-AP_run-01.fsa5.{h}h.first100TR.mgz"
HEMI = dict(task="hemisphere", progress=False)  # 2 files × 3 frame blocks: 6 runs, 64 tubelets


def _files(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _fail_on_call(monkeypatch, method: str, k: int, exc: BaseException | None = None):
    """``PatchStoreWriter.<method>`` raises ``exc`` (default ENOSPC, as h5py does on a full disk) on its
    ``k``-th call."""
    real, calls = getattr(PatchStoreWriter, method), []

    def full(self, *a, **kw):
        calls.append(1)
        if len(calls) == k:
            raise exc or OSError(
                errno.ENOSPC,
                "Can't write data (file write failed: errno = 28, error message = 'No space left on device')",
            )
        return real(self, *a, **kw)

    monkeypatch.setattr(PatchStoreWriter, method, full)


@pytest.fixture(scope="module")
def fsa_root(surface_root):
    return surface_root / "fsaverage5_rest"


@pytest.fixture(scope="module")
def fsa_set(fsa_root, tmp_path_factory):
    """The fsaverage5 card's labelled task as a shard set, written in one go."""
    return prepare("fsaverage5_rest", tmp_path_factory.mktemp("sets") / "once", data_root=fsa_root, shards=True, **HEMI)


def test_surface_set_survives_a_full_disk_and_resumes_to_the_same_bytes(fsa_root, fsa_set, tmp_path, monkeypatch):
    """``neuro prepare --shards``: the disk fills while the second run is written; the first run's shard is
    kept, the message says to free space and rerun with --resume, and the resumed set is byte for byte the
    one-shot set (one shard per run; keys tell a file's hemisphere and frame blocks apart)."""
    idx = read_index(fsa_set)
    assert idx["complete"] and [s["n_samples"] for s in idx["shards"]] == [20, 6, 6, 20, 6, 6]
    keys = [s["key"] for s in idx["shards"]]
    assert keys[0] == f"{(fsa_root.parent / FSA5.format(h='l')).resolve()}::hemi-L::frames-0-60" and len(set(keys)) == 6
    out = tmp_path / "set"
    cmd = [
        "prepare",
        "fsaverage5_rest",
        "--data-root",
        str(fsa_root),
        "--task",
        "hemisphere",
        "-o",
        str(out),
        "--shards",
    ]
    runner = CliRunner()
    with monkeypatch.context() as m:
        _fail_on_call(m, "append_frames", 2)  # run 1 (frames 0-59 of lh) is one block; run 2's first block fails
        r = runner.invoke(app, cmd)
    msg = " ".join(r.output.split())
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert "disk full while writing" in msg and "frames-60-80" in msg.replace(" ", "")
    assert "the 1 recording written before is kept" in msg and "rerun the same command with --resume" in msg
    left = read_index(out)
    assert not left["complete"] and left["shards"] == idx["shards"][:1]
    assert sorted(p.name for p in out.iterdir()) == ["index.json", "shard-000000.h5"]  # no partial file
    with pytest.raises(StoreError, match=r"unfinished shard set .* resume=True"):
        PatchDataset(out)
    r = runner.invoke(app, cmd)  # without --resume: refused, nothing touched
    assert r.exit_code != 0 and "--resume" in r.output and len(read_index(out)["shards"]) == 1
    r = runner.invoke(app, [*cmd, "--resume"])
    assert r.exit_code == 0, r.output
    assert "64 samples of shape (3, 1280, 45)" in " ".join(r.output.split())
    assert _files(out) == _files(fsa_set)


@pytest.mark.slow
def test_surface_set_bad_file_resume_merge_and_training(surface_root, tmp_path):
    """write_surface_store(shards=True): a bad file mid-run keeps the runs before it and says how to go on;
    --resume skips them; merge joins compatible sets (a PatchDataset over them reads the single store's
    samples) and refuses another recipe; pretrain (vsMAE) and finetune read the merged folder as one store."""
    from neurokit.training.config import FinetuneConfig
    from neurokit.pipelines.finetune import finetune
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain

    rec = SurfaceRecipe(grid="ico2", tubelet=3)
    lh, rh = (surface_root / FSA5.format(h=h) for h in "lr")
    bad = tmp_path / "sub-02_bad.lh.mgz"
    bad.write_bytes(lh.read_bytes()[:400])  # truncated
    runs = [
        SurfaceRun(lh, "010188", "02", seg, label=0, frames=(lo, lo + 12))
        for seg, lo in (("a", 0), ("b", 40), ("c", 80))
    ]
    kw = dict(label_names=["left", "right"], card="fsaverage5_rest", shards=True)
    with pytest.raises(
        DataFileError,
        match=r"sub-02_bad\.lh\.mgz.*the 2 recordings written before are kept in .*"
        r"rerun the same command with resume=True",
    ):
        write_surface_store(tmp_path / "L", [*runs[:2], SurfaceRun(bad, "02", label=0), runs[2]], rec, **kw)
    assert len(read_index(tmp_path / "L")["shards"]) == 2
    bad.unlink()
    before = (tmp_path / "L" / "shard-000000.h5").stat().st_mtime_ns
    a = write_surface_store(tmp_path / "L", runs, rec, resume=True, **kw)
    assert [s["key"].rsplit("::", 1)[1] for s in read_index(a)["shards"]] == [
        "frames-0-12",
        "frames-40-52",
        "frames-80-92",
    ]
    assert (a / "shard-000000.h5").stat().st_mtime_ns == before  # kept, not rewritten
    b = write_surface_store(
        tmp_path / "R", [SurfaceRun(rh, "010188", "02", r.run, label=1, frames=r.frames) for r in runs], rec, **kw
    )
    merged = merge_shard_sets([a, b], tmp_path / "LR")
    right = [SurfaceRun(rh, "010188", "02", r.run, label=1, frames=r.frames) for r in runs]
    single = write_surface_store(tmp_path / "one.h5", runs + right, rec, **{**kw, "shards": False})
    ds, ref = PatchDataset(merged), PatchDataset(single)
    assert len(ds) == 24 and ds.labels.tolist() == [0] * 12 + [1] * 12  # 4 tubelets of 3 frames per run
    assert len(ds.stores) == 6 and ds.index.dtype == np.int64 and ds.index.shape == (24, 2)
    for col in ("subject", "run", "hemi", "onset"):
        np.testing.assert_array_equal(ds.meta(col), ref.meta(col))
    for k in range(len(ds)):
        assert torch.equal(ds[k][0], ref[k][0]) and ds[k][1] == ref[k][1]
    shard, one = ds.stores[4].attrs, ref.attrs  # a shard holds its run's own facts
    assert (shard["hemispheres"], shard["mesh"], shard["tr"], one["hemispheres"]) == (
        ["R"],
        "fsaverage5",
        1.0,
        ["L", "R"],
    )
    assert [len(st.attrs["sources"]) for st in ds.stores] == [1] * 6
    other = write_surface_store(tmp_path / "z", runs[:1], SurfaceRecipe(grid="ico2", tubelet=3, zscore=False), **kw)
    with pytest.raises(StoreError, match="differs from .* in recipe; only sets of one card and recipe merge"):
        merge_shard_sets([a, other], tmp_path / "bad")
    assert not (tmp_path / "bad").exists()
    small = {"depth": 1, "decoder_depth": 1}
    pt = pretrain(
        [merged],
        tmp_path / "pt",
        PretrainConfig(
            model="sit",
            model_kwargs=small,
            epochs=1,
            max_steps=1,
            batch_size=4,
            split="all",
            progress=False,
            device="cpu",
        ),
    )
    assert "24 samples of every subject" in pt["data"]
    rep = finetune(
        [merged],
        tmp_path / "ft",
        FinetuneConfig(
            model="sit", head="avgpool", epochs=1, batch_size=8, baselines=False, progress=False, device="cpu"
        ),
        init=pt["checkpoint"],
    )
    assert rep["split_by"] == "run" and rep["n_samples"] == {"train": 8, "val": 8, "test": 8}


def test_full_disk_from_hdf5_itself_keeps_the_set(tmp_path):
    """A real ENOSPC out of HDF5 (the next shard's file is /dev/full): the shard before is kept and the
    error says what to do; the failed shard leaves no file."""
    if not os.path.exists("/dev/full"):
        pytest.skip("needs /dev/full (Linux)")
    w = ShardSetWriter(tmp_path / "s", (2, 3), attrs={"modality": "eeg", "card": "x", "recipe": {"a": 1}})
    with w.shard("rec-1") as sw:
        sw.append(np.ones((4, 2, 3)), subject="1")
    os.symlink("/dev/full", tmp_path / "s" / "shard-000001.h5.partial")
    with pytest.raises(
        StoreError,
        match=r"disk full while writing rec-2; the 1 recording written before is kept .*"
        r"Free space, then rerun the same command with resume=True",
    ):
        with w.shard("rec-2") as sw:
            sw.append(np.ones((4, 2, 3)), subject="2")
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["index.json", "shard-000000.h5"]
    w2 = ShardSetWriter(tmp_path / "s", (2, 3), attrs={"modality": "eeg", "card": "x", "recipe": {"a": 1}}, resume=True)
    assert w2.keys == {"rec-1"}
    with pytest.raises(StoreError, match="cannot resume: the set was made with other card content, recipe"):
        ShardSetWriter(
            tmp_path / "s",
            (2, 3),
            attrs={"card": "x", "card_body": {"v": 2}, "recipe": {"a": 2}, "modality": "eeg"},
            resume=True,
        )


def test_bonn_members_are_recordings_of_their_own(eeg_root, tmp_path, monkeypatch):
    """The Bonn card's segments live in one ZIP per set: each member is its own shard (key path::member),
    a Ctrl-C during the fifth keeps four, and --resume reads only the six members still missing."""
    import neurokit.preprocessing.eeg.prepare as prep
    from neurokit._utils.errors import Interrupted

    kw = dict(data_root=eeg_root, subjects=[1, 2], shards=True, progress=False)  # 2 segments × 5 set ZIPs
    with monkeypatch.context() as m:
        _fail_on_call(m, "append", 5, KeyboardInterrupt())
        with pytest.raises(
            Interrupted, match="the 4 recordings written are kept; run the same command with resume=True"
        ):
            prepare("bonn_epilepsy", tmp_path / "b", **kw)
    kept = _files(tmp_path / "b")
    assert len(read_index(tmp_path / "b")["shards"]) == 4
    real, read = prep._eeg_job, []
    monkeypatch.setattr(prep, "_eeg_job", lambda job: read.append(job[3]) or real(job))
    out = prepare("bonn_epilepsy", tmp_path / "b", resume=True, **kw)
    keys = [s["key"] for s in read_index(out)["shards"]]
    zips = {k.split("::")[0] for k in keys}
    assert zips == {str((eeg_root / "bonn" / f"{s}.zip").resolve()) for s in "FNOSZ"}
    members = sorted(k.split("::")[1] for k in keys)
    assert len(keys) == len(set(keys)) == 10 and [m[1:4] for m in members] == ["001", "002"] * 5
    assert sorted(read) == sorted(set(members) - {k.split("::")[1] for k in keys[:4]}) and len(read) == 6
    # the index (and its journal, folded into index.json at close) changes; every shard file stays as it was
    assert all(_files(out)[name] == data for name, data in kept.items() if name not in ("index.json", "index.jsonl"))
    ds = PatchDataset(out)
    assert len(ds) == 50 and sorted(set(ds.meta("subject"))) == ["seg001", "seg002"]  # 5 windows of 4 s per segment


def test_reading_a_set_of_many_shards_keeps_few_files_open(tmp_path):
    """Random reads over 40 shards: at most OPEN_FILES.limit (32) files stay open (each holds a chunk cache
    and a descriptor), and a store closed to make room reads the same values when it reopens."""
    from neurokit.store.patch_store import OPEN_FILES

    w = ShardSetWriter(tmp_path / "s", (2, 3), attrs={"modality": "eeg", "card": "x"})
    for i in range(40):
        with w.shard(f"rec-{i}") as sw:
            sw.append(np.full((2, 2, 3), i, dtype=np.float32), np.array([i % 2, 1 - i % 2]), subject=str(i))
    ds = PatchDataset(w.close())
    order = np.random.default_rng(0).permutation(80)
    got = {int(k): float(ds[int(k)][0][0, 0]) for k in order}
    assert got == {k: float(k // 2) for k in range(80)}
    last = {int(k) // 2: t for t, k in enumerate(order)}  # shard → when it was last read
    closed = {i for i, st in enumerate(ds.stores) if st._h5 is None}
    assert OPEN_FILES.limit == 32 and closed == set(sorted(last, key=last.get)[:8])  # the least recently read
    i = min(closed)
    assert float(ds[2 * i + 1][0][0, 0]) == i and ds.stores[i]._h5 is not None


def test_a_missing_or_damaged_shard_is_named_and_rebuilt_by_resume(eeg_root, tmp_path):
    """Issue 44 item 6: after a shard was deleted (or half-truncated), readers and ``prepare --resume`` all said
    ``shard-000004.h5: no such store``. Readers now name the set, the recording and the remedy; a resume rebuilds the
    shard from its recording under its own name (the set equals a one-shot run, byte for byte); a resume of a
    finished set with a changed option is refused, naming the option and both values."""
    runner = CliRunner()
    kw = dict(data_root=eeg_root, subjects=[1, 2], shards=True, progress=False)
    out = prepare("bonn_epilepsy", tmp_path / "b", **kw)
    once = _files(out)
    shards = read_index(out)["shards"]
    cmd = ["prepare", "bonn_epilepsy", "--data-root", str(eeg_root), "--subjects", "1,2", "--shards", "-o", str(out)]
    for k, damage in ((0, "truncate"), (4, "delete")):
        p = out / shards[k]["file"]
        if damage == "delete":
            p.unlink()
        else:
            p.write_bytes(once[p.name][: len(once[p.name]) // 2])
        with pytest.raises(StoreError) as e:
            ds = PatchDataset(out)
            [ds[i] for i in range(len(ds))]
        msg = str(e.value)
        assert msg.startswith(f"{p}: ") and f"a shard of the set {out} (recording {shards[k]['key']})" in msg, msg
        assert msg.endswith(
            "rerun the prepare command that made the set with resume=True to rebuild it from its recording"
        )
        r = runner.invoke(app, ["pretrain", str(out), "-o", str(tmp_path / "pt"), "--split", "all", "--no-progress"])
        text = " ".join(r.output.split())
        assert r.exit_code == 2 and f"{p.name}:" in text and "with --resume to rebuild it" in text, text
        r = runner.invoke(app, [*cmd, "--resume"])
        assert r.exit_code == 0, r.output
        assert "rebuilt from its recording" in " ".join(r.output.split())
        assert _files(out) == once, damage
    r = runner.invoke(app, [*cmd, "--resume", "--window-s", "2"])
    text = " ".join(r.output.split())
    assert r.exit_code == 2 and "cannot resume: the set was made with other recipe" in text, text
    assert "(--window-s 4.0 in the set, --window-s 2.0 given)" in text and _files(out) == once, text


def test_a_shard_whose_recording_is_not_given_is_not_rebuilt_silently(tmp_path):
    """A resume that cannot rebuild a damaged shard (its recording is not among the run's) refuses to finish."""
    w = ShardSetWriter(tmp_path / "s", (2, 3), attrs={"modality": "eeg", "card": "x"})
    for i in range(3):
        with w.shard(f"rec-{i}") as sw:
            sw.append(np.full((2, 2, 3), i, dtype=np.float32), np.array([0, 1]), subject=str(i))
    w.close()
    (tmp_path / "s" / "shard-000001.h5").unlink()
    w = ShardSetWriter(tmp_path / "s", (2, 3), attrs={"modality": "eeg", "card": "x"}, resume=True)
    assert w.keys == {"rec-0", "rec-2"} and list(w.rebuilding) == ["rec-1"]
    with pytest.raises(StoreError, match=r"shard\(s\) shard-000001.h5 is missing or damaged, and its recording is not"):
        w.close()
    with w.shard("rec-1") as sw:
        sw.append(np.full((2, 2, 3), 1, dtype=np.float32), np.array([0, 1]), subject="1")
    w.close()
    assert [s["file"] for s in read_index(tmp_path / "s")["shards"]] == [f"shard-00000{i}.h5" for i in range(3)]
    assert [float(PatchDataset(tmp_path / "s")[i][0][0, 0]) for i in range(0, 6, 2)] == [0.0, 1.0, 2.0]
