"""Provenance by content: stores record their recordings' SHA-256 with the subject written, pretraining checkpoints
the recordings they saw (also through a pooled store), fine-tuning names test recordings the pretraining saw; and
``neuro prepare`` says how many windows it kept and why it dropped the others."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from neurokit._utils.hashing import file_sha256
from neurokit.data.dataset import PatchDataset
from neurokit.data.provenance import (
    kept_line,
    kept_summary,
    pretraining_overlap,
    used_sources,
)
from neurokit.store.patch_store import PatchStore

pytestmark = pytest.mark.usefixtures("two_torch_threads")


def test_store_sources_carry_hash_and_subject(lr_store):
    st = PatchStore(lr_store)
    src = st.info.sources
    assert {s["subject"] for s in src} == {"S001", "S002"}
    s0 = src[0]
    assert s0["sha256"] == file_sha256(s0["path"])
    assert {s["subject"] for s in used_sources(PatchDataset(lr_store, subjects=["S002"]))} == {"S002"}
    n2 = sum(1 for s in src if s["subject"] == "S002")
    assert len(used_sources(PatchDataset(lr_store, subjects=["S002"]))) == n2


def _pretrain(store, out, **kw):
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain

    cfg = PretrainConfig(
        model_kwargs={"n_layers": 1},
        epochs=1,
        max_steps=1,
        batch_size=8,
        device="cpu",
        progress=False,
        val_fraction=0.0,
        **kw,
    )
    return pretrain(store, out, cfg)


def _finetune(store, out, init):
    from neurokit.training.config import FinetuneConfig
    from neurokit.pipelines.finetune import finetune

    cfg = FinetuneConfig(
        epochs=1,
        batch_size=16,
        device="cpu",
        progress=False,
        baselines=False,
        head="avgpool",
        splits={"train": ["S001"], "val": ["S002"], "test": ["S002"]},
    )
    return finetune(store, out, cfg, init=init)


def test_finetuning_names_test_recordings_seen_in_pretraining(lr_store, tmp_path, caplog):
    from neurokit.models.checkpoint import load_checkpoint
    from neurokit.pipelines.evaluate import evaluate

    st = PatchStore(lr_store)
    s2 = sorted(s["path"] for s in st.info.sources if s["subject"] == "S002")
    # planted: pretraining on every subject, so the test subject S002's recordings were seen
    leaky = _pretrain(lr_store, tmp_path / "pt_all", split="all")
    ck = load_checkpoint(leaky["checkpoint"])
    assert sorted(s["path"] for s in ck["pretraining_sources"]) == sorted(s["path"] for s in st.info.sources)
    with caplog.at_level("WARNING", logger="neurokit"):
        rep = _finetune(lr_store, tmp_path / "ft_leak", leaky["checkpoint"])
    assert sorted(o["path"] for o in rep["pretraining_overlap"]) == s2
    assert all(o["sha256"] == file_sha256(o["path"]) for o in rep["pretraining_overlap"])
    warned = [r.getMessage() for r in caplog.records if "pretraining data" in r.getMessage()]
    assert warned and all(__import__("pathlib").Path(p).name in warned[0] for p in s2)
    ev = evaluate(tmp_path / "ft_leak" / "best.pt", lr_store, device="cpu")  # the test split again: named again
    assert sorted(o["path"] for o in ev["pretraining_overlap"]) == s2
    # clean: pretrained on S001 only -> checked, no overlap (an empty list, not None)
    clean = _pretrain(lr_store, tmp_path / "pt_s1", subjects=["S001"])
    rep = _finetune(lr_store, tmp_path / "ft_clean", clean["checkpoint"])
    assert rep["pretraining_overlap"] == []
    # from scratch: nothing recorded, nothing to check
    from neurokit.training.config import FinetuneConfig
    from neurokit.pipelines.finetune import finetune

    cfg = FinetuneConfig(
        epochs=1,
        batch_size=16,
        device="cpu",
        progress=False,
        baselines=False,
        head="avgpool",
        model_kwargs={"n_layers": 1},
        splits={"train": ["S001"], "val": ["S002"], "test": ["S002"]},
    )
    assert finetune(lr_store, tmp_path / "ft_scratch", cfg)["pretraining_overlap"] is None


def test_overlap_is_by_content_not_by_path(lr_store):
    st = PatchStore(lr_store)
    s2 = [s for s in st.info.sources if s["subject"] == "S002"]
    moved = [{"path": "/elsewhere/copy.edf", "sha256": s2[0]["sha256"]}]  # same bytes, another path
    hit = pretraining_overlap(moved, PatchDataset(lr_store, subjects=["S002"]))
    assert [(o["path"], o["pretrained_as"]) for o in hit] == [(s2[0]["path"], "/elsewhere/copy.edf")]
    assert (
        pretraining_overlap([{"path": s2[0]["path"], "sha256": "0" * 64}], PatchDataset(lr_store, subjects=["S002"]))
        == []
    )
    assert pretraining_overlap(None, PatchDataset(lr_store)) is None


def test_pooled_store_carries_the_original_recordings(lr_store, tmp_path):
    from neurokit.models.checkpoint import load_checkpoint
    from neurokit.pipelines.quickstart import pool_single_channel

    st = PatchStore(lr_store)
    pooled = pool_single_channel([(st, ["S001"])], tmp_path / "pool.h5", max_samples=40)
    p = PatchStore(pooled)
    s1 = {s["sha256"] for s in st.info.sources if s["subject"] == "S001"}
    assert {s["sha256"] for s in p.info.sources} == s1
    assert {s["subject"] for s in p.info.sources} == {"lr:S001"}
    res = _pretrain(pooled, tmp_path / "pt", split="all")
    ck = load_checkpoint(res["checkpoint"])
    assert {s["sha256"] for s in ck["pretraining_sources"]} == s1
    # a test on S002 is clean; a test on S001 names its recordings
    assert pretraining_overlap(ck["pretraining_sources"], PatchDataset(lr_store, subjects=["S002"])) == []
    assert {
        o["sha256"] for o in pretraining_overlap(ck["pretraining_sources"], PatchDataset(lr_store, subjects=["S001"]))
    } == s1
    # the pooled store reports its source store's windows kept for the training subjects
    ks = kept_summary([p])
    assert ks["kept"] == sum(s["n_windows"] for s in st.info.sources if s["subject"] == "S001")


def _edf_folder(root, n_files=2, planted=((0, 1), (0, 3), (1, 4))):
    """``n_files`` 60-s recordings of the eeg_folder card's 19 channels at 200 Hz, 10 µV 10-Hz sines; a 1-s
    400 µV burst in the middle of each planted (file, 10-s window)."""
    from edf_build import write_edf

    chans = [
        "Fp1",
        "Fp2",
        "F3",
        "F4",
        "C3",
        "C4",
        "P3",
        "P4",
        "O1",
        "O2",
        "F7",
        "F8",
        "T7",
        "T8",
        "P7",
        "P8",
        "Fz",
        "Cz",
        "Pz",
    ]
    t = np.arange(60 * 200) / 200
    for f in range(n_files):
        data = np.tile(10 * np.sin(2 * np.pi * 10 * t), (19, 1))
        for pf, win in planted:
            if pf == f:
                i = (win * 10 + 5) * 200
                data[4, i : i + 200] = 400 * np.sin(2 * np.pi * 10 * t[:200])
        (root / f"sub{f}").mkdir(parents=True)
        write_edf(root / f"sub{f}" / "rec.edf", data, 200.0, chans)
    return root


def test_prepare_prints_rejection_counts(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from neurokit.cli.main import app

    root = _edf_folder(tmp_path / "eeg")
    out = tmp_path / "c.h5"
    r = CliRunner().invoke(
        app,
        [
            "prepare",
            "eeg_folder",
            "--data-root",
            str(root),
            "-o",
            str(out),
            "--window-s",
            "10",
            "--crop-start",
            "0",
            "--crop-end",
            "0",
            "--min-duration",
            "0",
        ],
    )
    assert r.exit_code == 0, r.output
    st = PatchStore(out)
    assert len(st) == 9 and st.info.n_rejected == 3  # 2 files × 6 windows, 3 planted
    assert [s["n_rejected"] for s in st.info.sources] == [2, 1]
    ks = kept_summary([st])
    assert ks == {
        "kept": 9,
        "rejected": 3,
        "kept_fraction": 0.75,
        "reject_uv": 100.0,
        "reasons": {"a sample's |amplitude| above reject_uv = 100 µV": 3},
        "recordings_dropped": 0,
        "recordings_skipped": 0,
        "files_with_rejections": 2,
    }
    assert (
        "windows: kept 9 of 12 windows (75.0 %); dropped 3 (a sample's |amplitude| above reject_uv = 100 µV) in 2 "
        "recording(s)" in " ".join(r.output.split())
    )
    assert kept_line({**ks, "rejected": 0, "kept_fraction": 1.0, "reasons": {}}).endswith(
        "none above reject_uv = 100 µV"
    )


def test_a_store_whose_sources_name_no_subject_is_rebuilt(lr_store, eeg_root, tmp_path):
    """Stores written before sources named their subject are prepared again by prepare_or_reuse (the quick
    start): with them, every recording would count as seen by a pretraining on the pool."""
    import json
    import shutil

    import h5py

    from neurokit.pipelines.prepare import store_differences

    old = tmp_path / "old.h5"
    shutil.copy(lr_store, old)
    kw = dict(data_root=eeg_root, task="left_right_imagery", subjects=[1, 2], channels="sensorimotor")
    assert store_differences(old, "physionet_mi", **kw) == {}
    with h5py.File(old, "r+") as f:
        raw = f.attrs["sources"]
        src = json.loads((raw.decode() if isinstance(raw, bytes) else raw)[5:])
        f.attrs["sources"] = "json:" + json.dumps(
            [{k: v for k, v in s.items() if k not in ("subject", "session", "run")} for s in src]
        )
    assert store_differences(old, "physionet_mi", **kw) == {
        "sources": ("the subject of each recording", "none recorded")
    }
    # and such a store's recordings all count as used, whatever the subjects selected
    assert len(used_sources(PatchDataset(old, subjects=["S001"]))) == len(src)


def test_split_line_says_which_splits_a_partial_store_lacks(tmp_path):
    import numpy as np

    from neurokit.data import PatchDataset
    from neurokit.data.provenance import split_line
    from neurokit.store.patch_store import PatchStoreWriter

    body = {"name": "c", "tasks": {"t": {"classes": ["a", "b"], "split_unit": "run",
                                         "splits": {"train": ["r1"], "val": ["r2"], "test": ["r3"]}}}}  # fmt: skip
    attrs = dict(modality="eeg", card="c", task="t", card_body=body, label_names=["a", "b"], ch_names=["C3"],
                 sfreq=200.0)  # fmt: skip
    with PatchStoreWriter(tmp_path / "s.h5", (1, 1, 200), attrs=attrs) as w:
        w.append(np.zeros((3, 1, 1, 200), np.float32), np.array([0, 1, 0]), subject="S01", session="1", run="r1")
    line = split_line(PatchDataset(tmp_path / "s.h5"))
    assert line.startswith("train 3 · val 0 · test 0; val and test empty: the card's split names recordings")
