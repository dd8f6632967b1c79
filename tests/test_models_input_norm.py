"""Input amplitude normalisation (pretraining on pooled corpora): the arithmetic of each mode on hand-made arrays,
the per-corpus scales of a pooled store, and a pretraining checkpoint that hands its normalisation to fine-tuning."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from neurokit._utils.errors import ConfigError
from neurokit.data.corpus import ScaledDataset, corpus_ids, corpus_scales
from neurokit.data.dataset import PatchDataset
from neurokit.store.patch_store import PatchStoreWriter
from neurokit.models.cbramod import CBraMod
from neurokit.models.input_norm import InputNorm, fit_input_norm, rms_of

pytestmark = pytest.mark.usefixtures("two_torch_threads")


def _x():
    # one window, two channels, two patches of two values
    return torch.tensor([[[[3.0, -3.0], [3.0, -3.0]], [[1.0, 1.0], [-1.0, 1.0]]]])


def test_window_mode_divides_by_the_window_rms():
    x = _x()
    rms = math.sqrt((4 * 9 + 4 * 1) / 8)  # sqrt(5)
    assert torch.allclose(InputNorm("window")(x), x / rms)
    assert float(InputNorm("window")(x).pow(2).mean()) == pytest.approx(1.0)


def test_channel_mode_divides_each_channel_by_its_rms():
    y = InputNorm("channel")(_x())
    assert y[0, 0].tolist() == [[1.0, -1.0], [1.0, -1.0]]  # channel 0: RMS 3
    assert y[0, 1].tolist() == [[1.0, 1.0], [-1.0, 1.0]]  # channel 1: RMS 1
    flat = torch.zeros(1, 1, 2, 2)  # a flat channel stays zero (divided by EPS, not by 0)
    assert InputNorm("channel")(flat).abs().max() == 0


def test_corpus_mode_divides_by_its_recorded_scale_and_none_is_identity():
    x = _x()
    assert torch.equal(InputNorm("none")(x), x)
    n = InputNorm("corpus", scale=2.0)
    assert torch.equal(n(x), x / 2)
    assert set(n.state_dict()) == {"scale"}  # saved with the model
    assert InputNorm("window").state_dict() == {}  # the paper's weights load unchanged
    with pytest.raises(ConfigError, match="allowed: none, window, channel, corpus"):
        InputNorm("batch")


def test_cbramod_without_normalisation_keeps_the_released_keys():
    assert not any("input_norm" in k for k in CBraMod(n_layers=1).state_dict())
    m = CBraMod(n_layers=1, input_norm="window")
    x = torch.randn(2, 3, 2, 200)
    m.eval()
    with torch.no_grad():  # the window mode makes the encoder blind to the input's amplitude
        assert torch.allclose(m.forward_features(x), m.forward_features(50 * x), atol=1e-5)


def _pool(path, rows):
    """A pooled store: ``rows`` of (origin stem, subject, constant value) single-channel windows."""
    with PatchStoreWriter(
        path,
        (1, 2, 200),
        attrs=dict(
            modality="eeg",
            card="pooled",
            ch_names=["any"],
            sfreq=200.0,
            pooled_from=[{"store": "a.h5"}, {"store": "b.h5"}],
        ),
    ) as w:
        for stem, subj, v in rows:
            w.append(np.full((1, 1, 2, 200), v, dtype=np.float32), subject=f"{stem}:{subj}")
    return path


def test_corpus_scales_of_a_pooled_store(tmp_path):
    path = _pool(tmp_path / "pool.h5", [("a", "1", 3.0), ("a", "2", 4.0), ("b", "1", 0.5)])
    ds = PatchDataset(path)
    ids = corpus_ids(ds)
    assert [i.split("#")[1] for i in ids] == ["a", "a", "b"]
    sc = corpus_scales(ds)
    assert sc[ids[0]] == pytest.approx(math.sqrt((9 + 16) / 2))  # RMS over every value of corpus a: 3.5355
    assert sc[ids[2]] == pytest.approx(0.5)
    scaled = ScaledDataset(ds, sc)
    assert float(scaled[2][0].max()) == pytest.approx(1.0)
    assert float(scaled[0][0].max()) == pytest.approx(3.0 / math.sqrt(12.5))


def test_fit_input_norm_sets_the_downstream_corpus_scale():
    m = CBraMod(n_layers=1, input_norm="corpus")
    data = [(torch.full((2, 1, 200), 2.0), 0), (torch.full((2, 1, 200), -4.0), 1)]
    assert rms_of(data) == pytest.approx(math.sqrt(10.0))
    assert fit_input_norm(m, data) == {"mode": "corpus", "scale": pytest.approx(math.sqrt(10.0))}
    assert float(m.input_norm.scale) == pytest.approx(math.sqrt(10.0))
    assert fit_input_norm(CBraMod(n_layers=1), data) == {"mode": "none"}


@pytest.mark.parametrize("mode", ["channel", "corpus"])
def test_pretraining_checkpoint_hands_its_normalisation_to_finetuning(lr_store, tmp_path, mode):
    """A checkpoint pretrained with --normalize MODE: build_backbone restores the mode, fine-tuning fits the corpus
    scale to the downstream training split and records it in the report."""
    from neurokit.models.registry import build_backbone
    from neurokit.training.config import FinetuneConfig
    from neurokit.pipelines.finetune import finetune
    from neurokit.training.config import PretrainConfig
    from neurokit.pipelines.pretrain import pretrain

    cfg = PretrainConfig(
        model_kwargs={"n_layers": 1},
        epochs=1,
        max_steps=2,
        batch_size=8,
        device="cpu",
        progress=False,
        split="all",
        normalize=mode,
    )
    res = pretrain(lr_store, tmp_path / "pt", cfg)
    assert res["normalize"]["mode"] == mode
    ds = PatchDataset(lr_store)
    bb, info = build_backbone(res["checkpoint"], model="cbramod", store_attrs=ds.attrs, sample_shape=ds.sample_shape)
    assert bb.input_norm.mode == mode and info["model_config"]["input_norm"] == mode
    ft = FinetuneConfig(
        epochs=1,
        batch_size=16,
        device="cpu",
        progress=False,
        baselines=False,
        head="avgpool",
        splits={"train": ["S001"], "val": ["S002"], "test": ["S002"]},
    )
    rep = finetune(lr_store, tmp_path / "ft", ft, init=res["checkpoint"])
    assert rep["input_norm"]["mode"] == mode
    if mode == "corpus":
        want = rms_of(PatchDataset(lr_store, subjects=["S001"]))
        assert rep["input_norm"]["scale"] == pytest.approx(want)
        from neurokit.models.heads import load_finetuned

        model, _ = load_finetuned(tmp_path / "ft" / "best.pt")  # evaluation sees the fine-tuned store's scale
        assert float(model.backbone.input_norm.scale) == pytest.approx(want)
