"""The one training loop (neurokit.training.trainer): several task datasets, validation and selection, and a
run interrupted part-way through an epoch and resumed ends exactly as one never interrupted."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import TensorDataset

from neurokit._utils.errors import ConfigError, Interrupted
from neurokit.models.checkpoint import load_checkpoint
from neurokit.training.optim import OptimConfig
from neurokit.training.trainer import Trainer

g = torch.Generator().manual_seed(0)
W = torch.tensor([1.0, -2.0, 0.5, 0.0])
XA, XB, XV = (torch.randn(n, 4, generator=g) for n in (13, 10, 8))
DATA = {"a": TensorDataset(XA, XA @ W), "b": TensorDataset(XB, XB @ W + 1)}


def make(out, loss=None, **kw):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.1), nn.Linear(8, 1))

    def mse(m, b):
        return F.mse_loss(m(b.x).squeeze(-1), b.y)

    def validate(m):
        m.eval()
        with torch.no_grad():
            return {"val_neg_mse": -float(F.mse_loss(m(XV).squeeze(-1), XV @ W))}

    opts = dict(
        model_name="cbramod",
        optim=OptimConfig(lr=1e-2, min_lr=1e-3),
        batch_size={"a": 4, "b": 3},
        epochs=3,
        seed=1,
        out=out,
        ckpt_every=2,
        validate=validate,
        select="val_neg_mse",
        progress=False,
    )
    return Trainer(model, DATA, loss or mse, **{**opts, **kw})


def test_interleaved_tasks_selection_and_resume_mid_epoch(tmp_path):
    t = make(tmp_path / "a")
    assert t.per_epoch == 3 + 3 and t.total == 18 and sorted(t.task_order(0)) == ["a"] * 3 + ["b"] * 3
    full = t.fit()
    assert full.step == 18 and [r["epoch"] for r in full.records] == [1, 2, 3]
    assert set(full.records[0]) == {"epoch", "a", "b", "val_neg_mse"} and "train_loss" in full.records[0]["a"]
    assert full.best == max(r["val_neg_mse"] for r in full.records)
    assert full.records[full.best_epoch - 1]["val_neg_mse"] == full.best

    calls = []

    def dying(m, b):
        calls.append(1)
        if len(calls) == 10:  # during step 10 of 18: epoch 2, step 4 of 6; the last checkpoint holds step 8
            raise KeyboardInterrupt
        return F.mse_loss(m(b.x).squeeze(-1), b.y)

    with pytest.raises(Interrupted, match=r"interrupted at step 10: .*last.pt holds step 8 of 18; .*resume=True"):
        make(tmp_path / "b", dying).fit()
    ck = load_checkpoint(tmp_path / "b" / "last.pt")
    assert ck["step"] == 8 and ck["epoch"] == 1 and len(ck["epoch_losses"]) == 2
    t = make(tmp_path / "b")
    t.resume(ck)
    res = t.fit()
    assert res.steps_run == 10
    assert res.losses == pytest.approx(full.losses, rel=1e-6)
    assert json.dumps(res.records) == json.dumps(full.records)
    assert res.best_epoch == full.best_epoch
    for k, v in full.best_state.items():
        torch.testing.assert_close(res.best_state[k], v)
    lines = [json.loads(x) for x in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()]
    assert [x["epoch"] for x in lines] == [1, 2, 3]


def test_nothing_saved_removes_the_folder_and_too_short_runs_are_refused(tmp_path):
    def dying(m, b):
        raise KeyboardInterrupt

    with pytest.raises(Interrupted, match="before the first checkpoint: nothing saved"):
        make(tmp_path / "c", dying).fit()
    assert not (tmp_path / "c").exists()
    make(tmp_path / "d").fit()
    ck = load_checkpoint(tmp_path / "d" / "last.pt")
    short = make(tmp_path / "d", epochs=2)
    with pytest.raises(ConfigError, match="already did 18 steps"):
        short.resume(ck)
    with pytest.raises(ConfigError, match="give a smaller batch_size="):
        Trainer(
            nn.Linear(4, 1),
            TensorDataset(XA, XA @ W),
            lambda m, b: m(b.x).sum(),
            model_name="sit",
            optim=OptimConfig(),
            batch_size=64,
            epochs=1,
        )


def test_task_order_needs_named_tasks_and_dist_info_defaults_to_one_process():
    multi = make(None)
    order = multi.task_order(0)
    assert sorted(order) == ["a"] * 3 + ["b"] * 3  # 13 // 4 and 10 // 3 batches
    assert order == multi.task_order(0) and multi.info is multi.dist_info and multi.dist_info.world_size == 1
    single = Trainer(
        nn.Linear(4, 1),
        TensorDataset(XA, XA @ W),
        lambda m, b: m(b.x).sum(),
        model_name="sit",
        optim=OptimConfig(),
        batch_size=4,
        epochs=1,
        progress=False,
    )
    with pytest.raises(ValueError, match="task_order: this trainer has one dataset"):
        single.task_order(0)  # was: TypeError iterating None
