"""Memory estimate said before a large training run (issue 20 item 4)."""

from __future__ import annotations

import logging

import torch

from neurokit.models.registry import create_model
from neurokit.training.memory import estimate_training_memory, memory_warning


def test_estimate_is_the_stated_formula():
    model = create_model("cbramod", n_layers=2)
    est = estimate_training_memory(model, (19, 10, 200), 8)
    # criss-cross: 4 heads over 19 channels in each of 10 patches, 4 over 10 patches of each channel
    attn = 4 * 10 * 19 * 19 + 4 * 19 * 10 * 10
    per = 4 * (34 * 190 * 200 + 3 * attn)
    params = sum(p.numel() for p in model.parameters())
    assert est.bytes == 8 * 2 * per + 16 * params + 80 * 2**20
    assert est.shape_text == "19 channels × 10 patches" and est.layers == 2


def test_paper_pretraining_estimate_matches_the_measured_11_8_gb():
    # issue 20: `neuro pretrain runs/mi.h5 --batch-size 128` (12 layers, 64 channels, 4-s windows) held 11.8 GB
    est = estimate_training_memory(create_model("cbramod"), (64, 4, 200), 128)
    assert 9.5 < est.gib < 12.5
    assert est.text() == "about 11 GB resident for batch 128 × 64 channels × 4 patches × 12 layers on the CPU"


def test_warning_only_when_large():
    model = create_model("cbramod", n_layers=1)
    assert memory_warning(model, (3, 4, 200), 16, available=16 * 2**30) is None
    msg = memory_warning(create_model("cbramod"), (64, 4, 200), 128, available=8 * 2**30)
    assert msg.endswith("(8 GB available); give a smaller batch_size=") and msg.startswith("about 11 GB")
    # large but well within the machine: said, without the advice
    msg = memory_warning(create_model("cbramod"), (64, 4, 200), 64, available=64 * 2**30)
    assert msg == "about 6 GB resident for batch 64 × 64 channels × 4 patches × 12 layers on the CPU (64 GB available)"


def test_sit_tokens_and_unknown_models():
    sit = create_model("sit", n_chans=3, n_patches=20, vertices_per_patch=15, dim=32, depth=2, heads=2, dim_head=16)
    est = estimate_training_memory(sit, (3, 20, 15), 4)
    assert est.shape_text == "20 tokens" and est.layers == 2
    attn = 2 * 21 * 21
    params = sum(p.numel() for p in sit.parameters())
    assert est.bytes == 4 * 2 * 4 * (34 * 21 * 32 + 3 * attn) + 16 * params + 80 * 2**20
    assert estimate_training_memory(torch.nn.Linear(3, 2), (3,), 4) is None


def test_trainer_says_it_before_training(caplog, monkeypatch):
    from neurokit.training import memory
    from neurokit.training.optim import OptimConfig
    from neurokit.training.trainer import Trainer

    class Data(torch.utils.data.Dataset):
        sample_shape = (3, 2, 200)

        def __len__(self):
            return 8

        def __getitem__(self, i):
            return torch.zeros(3, 2, 200), torch.tensor(0)

    monkeypatch.setattr(memory, "QUIET_BELOW", 0)  # every estimate is "large" for this test
    model = create_model("cbramod", n_layers=1)
    with caplog.at_level(logging.WARNING, logger="neurokit"):
        Trainer(
            model,
            Data(),
            lambda m, b: m(b.x).mean(),
            model_name="cbramod",
            optim=OptimConfig(),
            batch_size=4,
            epochs=1,
            progress=False,
        )
    assert any("resident for batch 4 × 3 channels × 2 patches × 1 layer on" in r.getMessage() for r in caplog.records)


def test_trainer_finds_the_shape_of_a_wrapped_dataset(caplog, monkeypatch):
    """Pretraining wraps its dataset (corpus scaling): the estimate reads one sample's shape (the 12-layer
    pretraining of the README said nothing before)."""
    from neurokit.training import memory
    from neurokit.training.optim import OptimConfig
    from neurokit.training.trainer import Trainer

    class Wrapped(torch.utils.data.Dataset):  # no sample_shape attribute
        def __len__(self):
            return 8

        def __getitem__(self, i):
            return torch.zeros(5, 2, 200), torch.tensor(0)

    monkeypatch.setattr(memory, "QUIET_BELOW", 0)
    with caplog.at_level(logging.WARNING, logger="neurokit"):
        Trainer(
            create_model("cbramod", n_layers=1),
            Wrapped(),
            lambda m, b: m(b.x).mean(),
            model_name="cbramod",
            optim=OptimConfig(),
            batch_size=4,
            epochs=1,
            progress=False,
        )
    assert any("batch 4 × 5 channels × 2 patches × 1 layer on" in r.getMessage() for r in caplog.records)
