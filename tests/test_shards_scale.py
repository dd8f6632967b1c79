"""Shard sets that scale and behave as one store (issue 38, item 3): corpus-level facts kept once, the index
appended (a journal) instead of rewritten, shards opened once and lazily, pretraining on a set as on the single
store of the same recordings, rejected recordings recorded, and the allocator setting on Dask workers."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from neurokit._utils import parallel
from neurokit._utils.errors import StoreError
from neurokit.data.corpus import ScaledDataset, corpus_ids, corpus_scales, heldout_scales
from neurokit.data.dataset import PatchDataset
from neurokit.store.shards import (
    INDEX,
    JOURNAL,
    SET_FORMAT,
    ShardSetWriter,
    ShardStore,
    merge_shard_sets,
    open_stores,
    read_index,
)
from neurokit.store.patch_store import PatchStore, PatchStoreWriter
from neurokit.data.selection import holdout_split, select_layouts
from neurokit.training.config import PretrainConfig
from neurokit.preprocessing.eeg import prepare as prep
from neurokit.preprocessing.options import PrepareOptions

SHAPE = (2, 1, 200)
N_SUBJECTS = 12
PER_REC = 3  # windows per recording


def _attrs(n_subjects: int = N_SUBJECTS) -> dict:
    return {
        "modality": "eeg",
        "card": "synthetic",
        "card_body": {"name": "synthetic", "tasks": {"rest": {}}},
        "task": "rest",
        "ch_names": ["C3", "C4"],
        "sfreq": 200.0,
        "patch_size": 200,
        "units": "100 uV",
        "recipe": {"window_s": 1.0},
        # the corpus-wide list every shard used to carry: one entry per subject
        "subject_files": {f"s{i:02d}": [f"s{i:02d}.edf"] for i in range(n_subjects)},
    }


def _recordings(n_subjects: int = N_SUBJECTS, per_rec: int = PER_REC):
    """``(subject, windows)`` per recording: window ``k`` of the corpus holds ``k`` in its first value and a
    subject-dependent amplitude elsewhere (so the scales depend on which windows are read)."""
    rng = np.random.default_rng(0)
    out, k = [], 0
    for i in range(n_subjects):
        x = rng.normal(0, 1 + i, (per_rec, *SHAPE)).astype(np.float32)
        x[:, 0, 0, 0] = np.arange(k, k + per_rec)
        k += per_rec
        out.append((f"s{i:02d}", x))
    return out


def _write_single(path, recs):
    with PatchStoreWriter(path, SHAPE, attrs=_attrs(len(recs))) as w:
        for subj, x in recs:
            w.append(x, onsets=np.arange(len(x), dtype=float), subject=subj, session="", run="1")
    return path


def _write_set(folder, recs, *, close: bool = True):
    w = ShardSetWriter(folder, SHAPE, attrs=_attrs(len(recs)))
    for subj, x in recs:
        with w.shard(f"/data/{subj}.edf", sources=[{"path": f"/data/{subj}.edf"}]) as sw:
            sw.append(x, onsets=np.arange(len(x), dtype=float), subject=subj, session="", run="1")
    if close:
        w.close()
    return folder, w


def test_set_pretrains_as_the_single_store(tmp_path):
    """Same corpus (one), same held-out subjects (whole subjects), same corpus-level scales."""
    recs = _recordings()
    single = _write_single(tmp_path / "one.h5", recs)
    folder, _ = _write_set(tmp_path / "set", recs)
    cfg = PretrainConfig(split="all", val_fraction=0.25, seed=3)
    got = {}
    for name, src in (("single", single), ("set", folder)):
        ((ds, _),) = select_layouts([src], split=cfg.split)
        assert len(set(corpus_ids(ds))) == 1  # a shard set is one corpus, not one per recording
        train, held, phrase = holdout_split(ds, cfg.val_fraction, cfg.seed)
        assert held is not None and phrase.startswith(f"{len(held)} windows (3 of 12 subjects of ")
        tr_subj, held_subj = set(train.meta("subject")), set(held.meta("subject"))
        assert not tr_subj & held_subj and len(tr_subj | held_subj) == N_SUBJECTS  # whole subjects held out
        scales = heldout_scales(train, held)
        assert len(scales) == 1
        got[name] = (sorted(held_subj), len(train), len(held), next(iter(scales.values())), train.meta("subject"))
    assert got["set"][:3] == got["single"][:3]
    assert len(got["set"][1:3]) == 2 and got["set"][1] + got["set"][2] == N_SUBJECTS * PER_REC
    assert got["set"][3] == pytest.approx(got["single"][3], rel=1e-12)
    assert np.array_equal(got["set"][4], got["single"][4])
    # the RMS is the training windows' own: computed by hand over the same windows
    ((ds, _),) = select_layouts([folder], split=cfg.split)
    train, _, _ = holdout_split(ds, cfg.val_fraction, cfg.seed)
    xs = np.stack([train[i][0].numpy().astype(np.float64) for i in range(len(train))])
    assert got["set"][3] == pytest.approx(float(np.sqrt((xs**2).mean())), rel=1e-9)


def test_corpus_scales_read_a_bounded_sample(tmp_path, monkeypatch):
    """corpus_scales reads at most max_windows windows of a set, not every window."""
    folder, _ = _write_set(tmp_path / "set", _recordings())
    ds = PatchDataset(folder)
    read = []
    real = PatchDataset.__getitem__
    monkeypatch.setattr(PatchDataset, "__getitem__", lambda self, k: read.append(k) or real(self, k))
    scales = corpus_scales(ds, max_windows=7)
    assert len(read) == 7 and len(set(read)) == 7 and list(scales) == [str(folder)]


def test_corpus_facts_kept_once_and_shards_opened_lazily(tmp_path):
    folder, _ = _write_set(tmp_path / "set", _recordings())
    idx = read_index(folder)
    assert idx["version"] == 2 and idx["complete"] and len(idx["shards"]) == N_SUBJECTS
    assert len(idx["corpus"]["subject_files"]) == N_SUBJECTS  # once, in the index
    assert not (folder / JOURNAL).exists()  # folded into index.json at close
    for sh in idx["shards"]:  # the per-shard attributes decoded on opening hold no corpus-wide list
        raw = PatchStore(folder / sh["file"])
        assert "subject_files" not in raw.attrs and "participants" not in raw.attrs
        assert len(raw.attrs["sources"]) == 1
    stores = open_stores([folder])
    assert all(isinstance(s, ShardStore) for s in stores)
    assert [s.loaded for s in stores] == [True] + [False] * (N_SUBJECTS - 1)  # only the first one opened
    ds = PatchDataset(folder)
    assert len(ds) == N_SUBJECTS * PER_REC and [s.loaded for s in ds.stores].count(True) == 1
    x, _ = ds[7 * PER_REC + 1]  # one random read opens its own shard, and only it
    assert float(x[0, 0, 0]) == 7 * PER_REC + 1
    assert [i for i, s in enumerate(ds.stores) if s.loaded] == [0, 7]
    batch = ds.__getitems__([3 * PER_REC, 7 * PER_REC])  # a batch read opens its shards only, not every shard's
    assert batch.x[:, 0, 0, 0].tolist() == [3 * PER_REC, 7 * PER_REC]
    assert [i for i, s in enumerate(ds.stores) if s.loaded] == [0, 3, 7]
    # the corpus-level facts still read as each shard's attributes
    assert ds.stores[7].attrs["subject_files"]["s03"] == ["s03.edf"]
    assert ds.stores[7].info.extra["subject_files"] == idx["corpus"]["subject_files"]


def test_index_is_appended_not_rewritten(tmp_path):
    folder, w = _write_set(tmp_path / "set", _recordings(5), close=False)
    head = json.loads((folder / INDEX).read_text())
    assert [s["file"] for s in head["shards"]] == ["shard-000000.h5"]  # written once, with the first shard
    lines = (folder / JOURNAL).read_text().splitlines()
    assert [json.loads(x)["shard"]["file"] for x in lines] == [f"shard-{k:06d}.h5" for k in range(1, 5)]
    idx = read_index(folder)  # the journal read back with the index
    assert [s["key"] for s in idx["shards"]] == [f"/data/s{i:02d}.edf" for i in range(5)] and not idx["complete"]
    with open(folder / JOURNAL, "a") as f:  # a line torn by a kill while appending: its shard never counted
        f.write('{"shard": {"fi')
    assert len(read_index(folder)["shards"]) == 5
    w.close()
    assert len(json.loads((folder / INDEX).read_text())["shards"]) == 5 and not (folder / JOURNAL).exists()


def test_set_written_before_the_journal_still_opens(tmp_path):
    """A version-1 set: no version, no corpus, every shard carrying the corpus-wide subject_files."""
    folder = tmp_path / "old"
    folder.mkdir()
    recs = _recordings(4)
    shards = []
    for k, (subj, x) in enumerate(recs):
        name = f"shard-{k:06d}.h5"
        with PatchStoreWriter(folder / name, SHAPE, attrs=_attrs(4)) as w:
            w.append(x, subject=subj, session="", run="1")
        shards.append({"file": name, "key": f"/data/{subj}.edf", "n_samples": len(x)})
    shared = {k: v for k, v in _attrs(4).items() if k != "subject_files" and k != "patch_size"}
    (folder / INDEX).write_text(json.dumps({"format": SET_FORMAT, "complete": True, "attrs": shared, "shards": shards}))
    idx = read_index(folder)
    assert idx["version"] == 1 and idx["corpus"] == {} and idx["rejected"] == []
    ds = PatchDataset(folder)
    assert len(ds) == 4 * PER_REC and sorted(set(ds.meta("subject"))) == ["s00", "s01", "s02", "s03"]
    assert ds.stores[2].attrs["subject_files"]["s03"] == ["s03.edf"]
    # resumed by this version: the old shards stay, new ones are journalled
    w = ShardSetWriter(folder, SHAPE, attrs=_attrs(4), resume=True)
    assert w.keys == {s["key"] for s in shards} and w.n == 4 * PER_REC
    # a set of a later index version is refused, naming the version and the remedy
    (folder / INDEX).write_text(json.dumps({"format": SET_FORMAT, "version": 9, "complete": True, "shards": []}))
    with pytest.raises(StoreError, match=r"index version 9, newer than this neurokit reads \(2\); upgrade neurokit"):
        open_stores([folder])


def test_rejected_recording_is_recorded_and_skipped_on_resume(tmp_path):
    recs = _recordings(3)
    folder = tmp_path / "set"
    w = ShardSetWriter(folder, SHAPE, attrs=_attrs(3))
    for subj, x in recs:
        with w.shard(
            f"/data/{subj}.edf", reason="every window rejected: 9 window(s) above reject_uv (100 µV)", n_rejected=9
        ) as sw:
            if subj != "s01":  # s01: every window rejected
                sw.append(x, subject=subj, session="", run="1")
    w.close()
    idx = read_index(folder)
    assert [s["key"] for s in idx["shards"]] == ["/data/s00.edf", "/data/s02.edf"]
    assert idx["rejected"] == [
        {
            "key": "/data/s01.edf",
            "n_samples": 0,
            "n_rejected": 9,
            "reason": "every window rejected: 9 window(s) above reject_uv (100 µV)",
        }
    ]
    assert idx["n_rejected_recordings"] == 1 and sorted(p.name for p in folder.glob("*.h5")) == [
        "shard-000000.h5",
        "shard-000001.h5",
    ]
    # the set's summary counts the windows of the recording that has no shard (as a single store's would)
    from neurokit.data.provenance import kept_summary

    summ = kept_summary(PatchDataset(folder).stores)
    # 9 rejected windows recorded by each of the 3 recordings; the files with rejections: the one without a shard
    # (these test shards record no sources, which is where a prepared shard names its file's rejections)
    assert (summ["kept"], summ["rejected"], summ["files_with_rejections"]) == (2 * len(recs[0][1]), 27, 1)
    # prepare --resume: the recordings already done include the rejected one (it is not read again)
    done = prep._recordings_done(folder, PrepareOptions(shards=True, resume=True))
    assert done == {"/data/s00.edf", "/data/s01.edf", "/data/s02.edf"}
    # a merge keeps it
    merged = read_index(merge_shard_sets([folder], tmp_path / "m"))
    assert [r["key"] for r in merged["rejected"]] == ["/data/s01.edf"] and len(merged["shards"]) == 2
    assert ShardSetWriter(folder, SHAPE, attrs=_attrs(3), resume=True).keys == done


def test_a_set_of_rejections_only_says_so(tmp_path):
    w = ShardSetWriter(tmp_path / "set", SHAPE, attrs=_attrs(1))
    with w.shard("/data/a.edf", n_rejected=4):
        pass
    with pytest.raises(
        StoreError, match=r"no samples were written \(every window of the 1 recording\(s\) read was rejected\); raise"
    ):
        w.close()


@pytest.mark.parametrize("scaled", [False, True])
def test_dataloader_workers_read_every_window_once(tmp_path, scaled):
    folder, _ = _write_set(tmp_path / "set", _recordings())
    ds = PatchDataset(folder)
    data = ScaledDataset(ds, {str(folder): 1.0}) if scaled else ds
    loader = torch.utils.data.DataLoader(data, batch_size=5, shuffle=True, num_workers=2)
    for _ in range(2):  # every epoch
        seen = sorted(int(v) for x, _ in loader for v in x[:, 0, 0, 0])
        assert seen == list(range(N_SUBJECTS * PER_REC))


def test_dask_worker_drops_the_nanny_allocator_variable(monkeypatch):
    monkeypatch.setattr(parallel, "_ALLOCATOR_SET", set())
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", parallel.nanny_environ()["MALLOC_TRIM_THRESHOLD_"])
    assert parallel.allocator_on_worker() is True  # glibc on Linux
    assert "MALLOC_TRIM_THRESHOLD_" not in os.environ
    # a user's own value (not the nanny's) is kept, and neurokit then leaves the allocator alone
    monkeypatch.setattr(parallel, "_ALLOCATOR_SET", set())
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    parallel.allocator_on_worker()
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "131072"
    assert parallel.AllocatorKept(abs)(-2) == 2


def test_prepare_records_a_recording_with_every_window_rejected_and_resume_skips_it(eeg_root, tmp_path, monkeypatch):
    """Through prepare --shards: a recording whose windows are all rejected gets an index entry (zero windows, the
    reason); --resume does not read it again."""
    import dataclasses

    from neurokit.pipelines.prepare import prepare

    real = prep._eeg_job
    victim = "S002R08"

    def rejecting(job):  # every window of one recording above the amplitude limit
        res = real(job)
        if victim in job.path and "windows" in res:
            w = res["windows"]
            res["windows"] = dataclasses.replace(
                w, patches=w.patches[:0], labels=w.labels[:0], onsets=w.onsets[:0], n_rejected=len(w.labels)
            )
        return res

    monkeypatch.setattr(prep, "_eeg_job", rejecting)
    kw = dict(data_root=eeg_root, subjects=[2], shards=True, progress=False, channels="sensorimotor")
    out = prepare("physionet_mi", tmp_path / "set", **kw)
    idx = read_index(out)
    (rej,) = idx["rejected"]
    assert rej["key"].endswith(f"{victim}.edf") and rej["n_samples"] == 0 and rej["n_rejected"] > 0
    assert rej["reason"].startswith(f"every window rejected: {rej['n_rejected']} window(s) above reject_uv (")
    assert idx["n_rejected_recordings"] == 1 and not any(victim in s["key"] for s in idx["shards"])
    read = []
    monkeypatch.setattr(prep, "_eeg_job", lambda job: read.append(job.path) or real(job))
    prepare("physionet_mi", out, resume=True, **kw)
    assert read == [] and read_index(out)["rejected"] == [rej]  # nothing read again: every recording is in the set


def test_block_order_reads_a_set_whose_shards_are_not_open_yet(tmp_path):
    # the read-ahead set on a shard before its file opens survives the opening (it once reset to 0 and divided by it)
    from neurokit.training.optim import EpochSampler, make_loader

    folder, _ = _write_set(tmp_path / "set", _recordings())
    ds = PatchDataset(folder)
    assert not all(st.loaded for st in ds.stores)
    n = N_SUBJECTS * PER_REC
    sampler = EpochSampler(n, batch_size=4, seed=1, order="block", block=4, buffer=8, drop_last=False)
    got = [int(v) for x, _ in make_loader(ds, sampler, 4) for v in x[:, 0, 0, 0]]
    assert got == list(sampler) and sorted(got) == list(range(n))
    assert all(st.readahead == 4 for st in ds.stores if st.loaded)
