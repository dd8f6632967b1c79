"""Logs people open and callbacks (issue 36 item 6): every run folder holds ``metrics.csv`` equal to its
``metrics.jsonl`` (TensorBoard events when installed), epoch records carry their time, and a stopping rule ends
training through the one Trainer without being wired into its loop."""

from __future__ import annotations

import csv
import json

import pytest
import torch
from torch import nn

from neurokit.training.callbacks import CSVLog, EarlyStopping, flatten
from neurokit.training.optim import OptimConfig
from neurokit.training.trainer import Trainer


class _Data(torch.utils.data.Dataset):
    def __init__(self, n=64):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 4, generator=g)
        self.y = (self.x[:, 0] > 0).long()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def _trainer(tmp_path, epochs=6, callbacks=(), validate=None):
    torch.manual_seed(0)
    model = nn.Linear(4, 2)

    def loss(m, b):
        return nn.functional.cross_entropy(m(b.x), b.y)

    return Trainer(
        model=model, data=_Data(), loss=loss, model_name="cbramod", optim=OptimConfig(lr=0.05), batch_size=16,
        epochs=epochs, out=tmp_path / "run", validate=validate or (lambda m: {"val": 0.5}), select="val",
        log_steps=True, progress=False, callbacks=callbacks,
    )  # fmt: skip


def test_csv_equals_the_json_lines_and_epochs_carry_their_time(tmp_path):
    res = _trainer(tmp_path, epochs=2).fit()
    lines = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    with open(tmp_path / "run" / "metrics.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(lines) == 8 + 2  # 4 steps an epoch, and 2 epoch records
    for row, line in zip(rows, lines):
        for k, v in flatten(line).items():
            assert row[k] == ("" if v is None else str(v)), k
    epochs = [x for x in lines if "train_loss" in x]
    assert [e["epoch"] for e in epochs] == [1, 2] and all(e["epoch_time_s"] >= 0 for e in epochs)
    assert "epoch_time_s" not in res.records[0]  # the history a report keeps holds no clock (resume equality)


def test_early_stopping_ends_training_after_the_epoch_and_keeps_its_checkpoint(tmp_path):
    vals = iter([0.5, 0.6, 0.6, 0.55, 0.7, 0.8])
    seen = []

    class Spy:
        def on_epoch(self, trainer, record):
            seen.append(record["epoch"])

    t = _trainer(tmp_path, epochs=6, callbacks=[EarlyStopping("val", patience=2), Spy()],
                 validate=lambda m: {"val": next(vals)})  # fmt: skip
    res = t.fit()
    assert seen == [1, 2, 3, 4] and res.step == 16 and res.best_epoch == 2  # stopped after 2 epochs without gain
    from neurokit.models.checkpoint import load_checkpoint

    assert load_checkpoint(tmp_path / "run" / "last.pt")["step"] == 16


def test_csv_log_rewrites_from_the_log(tmp_path):
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "loss": 1.0}\n{"epoch": 1, "lr": {"auroc": 0.5}}\n')
    CSVLog(tmp_path).write()
    assert (tmp_path / "metrics.csv").read_text().splitlines() == ["step,epoch,loss,lr/auroc", "1,,1.0,", ",1,,0.5"]


def test_tensorboard_events_when_installed(tmp_path):
    pytest.importorskip("tensorboard")
    _trainer(tmp_path, epochs=1).fit()
    assert list((tmp_path / "run" / "tensorboard").glob("events.out.tfevents.*"))


def test_early_stopping_on_a_metric_the_epochs_do_not_have_is_refused(tmp_path):
    """Review of issue 36: a misspelt metric never stopped anything, silently."""
    with pytest.raises(ValueError, match=r"EarlyStopping: no 'vall' in the epoch record; its numbers are epoch, "):
        _trainer(tmp_path, epochs=3, callbacks=[EarlyStopping("vall", patience=1)]).fit()
