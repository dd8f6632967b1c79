"""The braindecode foundation models as neurokit backbones: the same outputs as braindecode's classes on the same
weights (two input shapes each), the store adapted as each contract says and recorded, one training step on a card's
store, random weights saved in the braindecode layout and loaded back to identical outputs, and the refusals of a
weights file that does not fit (missing, unexpected, reshaped, untouched tensors; a wrong SHA-256)."""

from __future__ import annotations

import json

import pytest
import torch

from neurokit._utils.errors import ConfigError, WeightsError
from neurokit.models.contracts import CONTRACTS, contract_table, plan_adaptation
from neurokit.models.foundation import (
    FoundationBackbone,
    _reve_position_bank,
    build_foundation,
    load_foundation_weights,
)
from neurokit.models.heads import FinetuneModel, Head
from neurokit.models.registry import build_backbone, create_model, get_model_spec

pytestmark = pytest.mark.usefixtures("two_torch_threads")

#: small sizes braindecode allows, for fast tests
SMALL = {
    "labram": {"n_layers": 1, "num_heads": 2},  # n_layers: neurokit's name of braindecode's num_layers
    "eegpt": {"depth": 1, "embed_dim": 32, "num_heads": 2},
    "reve": {"depth": 1, "embed_dim": 32, "heads": 2, "head_dim": 16},
    "biot": {"num_layers": 1, "embed_dim": 32, "num_heads": 2},
    "luna": {"depth": 1, "embed_dim": 32, "num_queries": 2, "num_heads": 2},
    "codebrain": {"num_res_layers": 1, "res_channels": 32, "skip_channels": 32, "out_channels": 32},
}
#: two store layouts: (channel names, patches of 1 s at 200 Hz)
SHAPES = [(["C3", "CZ", "C4", "FC3"], 4), (["FP1", "F3", "C3", "P3", "O1", "T3"], 5)]


def reference(name: str, bb: FoundationBackbone) -> torch.nn.Module:
    """braindecode's class built by hand for the adapted input, with a 3-class task layer, holding ``bb``'s weights."""
    import braindecode.models as bdm

    a = bb.adaptation
    kw = {"n_chans": len(a.model_channels), "n_times": a.model_samples, "n_outputs": 3, **SMALL[name]}
    if "n_layers" in kw:
        kw["num_layers"] = kw.pop("n_layers")
    if name == "eegpt":
        kw.update(chan_proj_type="none", patch_stride=64, chs_info=[{"ch_name": c} for c in a.model_channels])
    if name == "biot":
        kw["sfreq"] = 200
    with _reve_position_bank():
        ref = getattr(bdm, CONTRACTS[name].braindecode)(**kw)
    missing, unexpected = ref.load_state_dict(bb.model.state_dict(), strict=False)
    assert not unexpected and all(k.startswith("final_layer.") for k in missing), (missing, unexpected)
    return ref.eval()


def ref_logits(name: str, ref, y: torch.Tensor, bb: FoundationBackbone) -> torch.Tensor:
    """braindecode's forward of the adapted batch, with the inputs each class takes."""
    if name == "labram":
        return ref(y, ch_names=bb.adaptation.model_channels)
    if name == "reve":
        return ref(y, pos=bb.positions.expand(len(y), -1, -1))
    if name == "luna":
        return ref(y, channel_locations=bb.positions.expand(len(y), -1, -1))
    return ref(y)


def head_input(name: str, feats: torch.Tensor) -> torch.Tensor:
    """What braindecode's own task layer reads, from neurokit's features."""
    return feats[:, 0] if name in ("labram", "biot") else feats


@pytest.mark.parametrize("name", list(SMALL))
@pytest.mark.parametrize("shape", SHAPES, ids=["4ch-4s", "6ch-5s"])
def test_same_outputs_as_braindecode(name, shape):
    names, n = shape
    torch.manual_seed(0)
    bb = build_foundation(
        name, {"ch_names": names, "sfreq": 200.0, "units": "100 uV"}, (len(names), n, 200), SMALL[name]
    )
    bb.eval()
    ref = reference(name, bb)
    x = torch.randn(2, len(names), n, 200)
    with torch.no_grad():
        y = bb.model_input(x)
        ours = ref.final_layer(head_input(name, bb.forward_features(x)))
        theirs = ref_logits(name, ref, y, bb)
    assert ours.shape == theirs.shape == (2, 3)
    torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)
    if name == "labram":  # 200 Hz, 100 µV units, every name in its vocabulary (T3 as T7): the input as stored
        assert bb.adaptation.index == list(range(len(names))) and torch.equal(y, x.flatten(2))


def test_adaptation_as_each_contract_says():
    attrs = {"ch_names": ["Fp1", "F7", "T3", "T5", "O1", "Fp2", "F8", "T4", "T6", "O2", "F3", "C3", "P3", "F4", "C4",
                          "P4", "Cz", "X1"], "sfreq": 200.0, "units": "100 uV"}  # fmt: skip
    shape = (18, 10, 200)
    eegpt = plan_adaptation("eegpt", attrs, shape)
    assert (eegpt.model_sfreq, eegpt.model_samples, eegpt.crop, eegpt.unit_factor) == (256.0, 2560, 0, 0.1)
    assert eegpt.dropped == ["X1"] and eegpt.mapped["T3"] == "T7" and "resampled 200 → 256 Hz" in eegpt.line()
    luna = plan_adaptation("luna", attrs, shape)
    assert luna.model_samples == 2560 and luna.positions is not None and len(luna.positions) == 17
    biot = plan_adaptation("biot", attrs, shape)  # the 16 TCP derivations formed from the electrodes, in order
    assert biot.model_channels[:2] == ["FP1-F7", "F7-T7"] and len(biot.model_channels) == 16
    assert biot.index[0] == 0 and biot.minus[0] == 1 and biot.dropped == ["Cz", "X1"]
    reve = plan_adaptation("reve", attrs, shape)
    assert reve.model_samples == 200 + 10 * 180 and reve.crop == 0 and reve.scaling == "zscore-clip15"
    with pytest.raises(ConfigError, match="none of the store's 2 channels"):
        plan_adaptation("labram", {"ch_names": ["X1", "X2"]}, (2, 4, 200))
    with pytest.raises(ConfigError, match="at most 16"):
        plan_adaptation("labram", {"ch_names": ["C3"]}, (1, 20, 200))
    # the adapter forms BIOT's derivations and scales each one by its 95th percentile
    bb = build_foundation("biot", attrs, shape, SMALL["biot"])
    x = torch.randn(1, 18, 10, 200)
    d = x.flatten(2)[:, 0] - x.flatten(2)[:, 1]
    torch.testing.assert_close(
        bb.model_input(x)[:, 0], d / (torch.quantile(d.abs(), 0.95, dim=-1, keepdim=True) + 1e-8)
    )
    assert "| LaBraM | 200 Hz | any (≤ 16 s) | 200 | vocabulary; unknown dropped | µV / 100 |" in contract_table()
    from pathlib import Path

    doc = Path(__file__).resolve().parents[1] / "docs" / "guide" / "models.md"
    assert contract_table() in doc.read_text(), "docs/guide/models.md: paste contract_table() again"


def test_training_step_on_card_store_records_adaptation(lr_store):
    from neurokit.data.dataset import open_labelled

    ds, _, n_classes, _ = open_labelled(lr_store)
    xb = torch.stack([ds[i][0] for i in range(2)])
    yb = torch.tensor([0, 1])
    for name in SMALL:
        torch.manual_seed(0)
        bb, info = build_backbone(
            None, model=name, model_kwargs=SMALL[name], store_attrs=ds.attrs, sample_shape=ds.sample_shape
        )
        rec = info["input_adaptation"]
        assert rec["store_channels"] == list(ds.attrs["ch_names"]) and rec["line"].startswith(CONTRACTS[name].title)
        assert rec["model_sfreq"] == CONTRACTS[name].sfreq and json.dumps(rec)
        assert get_model_spec(name).contract is CONTRACTS[name] and get_model_spec(name).default_head == "avgpool"
        feats = bb.forward_features(xb[:1])
        model = FinetuneModel(bb, Head("avgpool", tuple(feats.shape[1:]), 2), squeeze=False)
        before = [p.detach().clone() for p in bb.parameters()]
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        assert torch.isfinite(loss)
        changed = sum(not torch.equal(a, b) for a, b in zip(before, bb.parameters()))
        assert changed > 0, name


def test_finetune_run_records_adaptation(lr_store, tmp_path):
    from neurokit.pipelines.finetune import finetune
    from neurokit.training.config import FinetuneConfig

    cfg = FinetuneConfig(
        model="eegpt",
        model_kwargs=SMALL["eegpt"],
        epochs=1,
        batch_size=16,
        progress=False,
        splits={"train": ["S001"], "val": ["S002"], "test": ["S002"]},
        label_fraction=0.25,
        baselines=False,
        confound_check=False,
    )
    rep = finetune(lr_store, tmp_path / "ft", cfg)
    saved = json.loads((tmp_path / "ft" / "report.json").read_text())
    assert rep["model"] == "eegpt" and saved["input_adaptation"]["model_sfreq"] == 256.0
    assert "resampled 200 → 256 Hz" in saved["input_adaptation"]["line"]
    assert saved["input_adaptation"]["unit_factor"] == pytest.approx(0.1)  # 100 µV units → mV
    from neurokit.models.heads import load_finetuned

    model, _ = load_finetuned(tmp_path / "ft" / "best.pt")  # rebuilt from the recorded config, adaptation included
    assert model.backbone.adaptation.model_samples == 1024
    # neuro evaluate says how the store is fed to the model, as the fine-tuning run did
    from typer.testing import CliRunner

    from neurokit.cli.main import app

    r = CliRunner().invoke(app, ["evaluate", str(tmp_path / "ft" / "best.pt"), str(lr_store), "--device", "cpu"],
                           env={"COLUMNS": "300"})  # fmt: skip
    assert r.exit_code == 0, r.output
    assert f"input: {saved['input_adaptation']['line']}" in " ".join(r.output.split())


@pytest.mark.parametrize("name", list(SMALL))
def test_published_layout_saved_and_loaded_back(name, tmp_path):
    """Random weights saved as braindecode's state dict (.safetensors or torch.save) load back to the same outputs,
    through create_model and through build_backbone with the file's SHA-256 pinned."""
    import hashlib

    from safetensors.torch import save_file

    names, n = SHAPES[0]
    kw = {"ch_names": names, "n_times": n * 200, **SMALL[name]}
    torch.manual_seed(1)
    bb = create_model(name, **kw).eval()
    sd = {k: v.contiguous() for k, v in bb.model.state_dict().items()}
    path = tmp_path / ("w.safetensors" if name in ("labram", "reve", "luna") else "w.pth")
    save_file(sd, str(path)) if path.suffix == ".safetensors" else torch.save(sd, path)
    x = torch.randn(2, len(names), n, 200)
    torch.manual_seed(2)  # other initial weights: only the load can make the outputs equal
    back = create_model(name, pretrained=path, **kw).eval()
    assert back.pretrained_info["loaded"] == back.pretrained_info["total"] == len(sd) - (name == "eegpt")
    with torch.no_grad():
        assert torch.equal(back.forward_features(x), bb.forward_features(x))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    attrs = {"modality": "eeg", "ch_names": names, "sfreq": 200.0, "units": "100 uV"}
    bb2, info = build_backbone(
        str(path), model=name, model_kwargs=SMALL[name], store_attrs=attrs, sample_shape=(len(names), n, 200),
        init_sha256=digest,
    )  # fmt: skip
    assert info["weights"]["complete"] and info["input_adaptation"]["model_channels"]
    with torch.no_grad():
        assert torch.equal(bb2.eval().forward_features(x), bb.forward_features(x))


def test_refusals_name_the_tensors(tmp_path):
    names = ["C3", "CZ", "C4"]
    kw = {"ch_names": names, "n_times": 800, **SMALL["codebrain"]}
    bb = create_model("codebrain", **kw)
    good = bb.model.state_dict()
    key = "patch_embedding.proj_in.0.weight"
    assert key in good

    def fresh():
        return create_model("codebrain", **kw)

    with pytest.raises(WeightsError, match=f"missing \\['{key}'"):
        load_foundation_weights(fresh(), {k: v for k, v in good.items() if k != key})
    with pytest.raises(WeightsError, match="unexpected \\['extra.weight'\\]"):
        load_foundation_weights(fresh(), {**good, "extra.weight": torch.zeros(2)})
    with pytest.raises(WeightsError, match=f"{key}: file \\(1, 1, 1\\)"):
        load_foundation_weights(fresh(), {**good, key: torch.zeros(1, 1, 1)})
    victim = fresh()  # a load that writes nothing (braindecode's BENDR fault)
    victim.model.load_state_dict = lambda *a, **k: None  # type: ignore[method-assign]
    with pytest.raises(WeightsError, match="left at their initial values"):
        load_foundation_weights(victim, good)
    # a checkpoint's task layer is set aside and named; the rest loads completely
    report, extra = load_foundation_weights(fresh(), {**good, "final_layer.1.weight": torch.zeros(3, 8)})
    assert report.complete and extra["set_aside"] == ["final_layer.1.weight"]
    path = tmp_path / "w.pt"
    torch.save(good, path)
    attrs = {"modality": "eeg", "ch_names": names, "sfreq": 200.0}
    from neurokit.models.hub import HubError

    with pytest.raises(HubError):
        build_backbone(
            str(path), model="codebrain", model_kwargs=SMALL["codebrain"], store_attrs=attrs, sample_shape=(3, 4, 200),
            init_sha256="0" * 64,
        )  # fmt: skip


def test_hub_name_from_local_cache(tmp_path, monkeypatch):
    """A Hub name resolves from the local Hugging Face cache (offline), pinned by SHA-256; braindecode's file keeps its
    task layer, which is set aside and named."""
    import hashlib
    import os

    from safetensors.torch import save_file

    names = ["C3", "CZ", "C4"]
    kw = {"ch_names": names, "n_times": 800, **SMALL["biot"]}
    torch.manual_seed(3)
    bb = create_model("biot", **kw).eval()
    sd = {**bb.model.state_dict(), "final_layer.classification_head.weight": torch.zeros(4, 32)}
    repo = tmp_path / "hub" / "models--neurokit-test--biot-tiny"
    blob = tmp_path / "w.safetensors"
    save_file({k: v.contiguous() for k, v in sd.items()}, str(blob))
    data = blob.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    (repo / "blobs").mkdir(parents=True)
    (repo / "blobs" / sha).write_bytes(data)
    snap = repo / "snapshots" / ("c" * 40)
    snap.mkdir(parents=True)
    (snap / "model.safetensors").symlink_to(os.path.relpath(repo / "blobs" / sha, snap))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("c" * 40)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    attrs = {"modality": "eeg", "ch_names": names, "sfreq": 200.0}
    back, info = build_backbone(
        "hub:neurokit-test/biot-tiny", model="biot", model_kwargs=SMALL["biot"], store_attrs=attrs,
        sample_shape=(3, 4, 200), init_sha256=sha,
    )  # fmt: skip
    assert info["weights"]["sha256"] == sha and info["weights"]["set_aside"] == [
        "final_layer.classification_head.weight"
    ]
    x = torch.randn(2, 3, 4, 200)
    with torch.no_grad():
        assert torch.equal(back.eval().forward_features(x), bb.forward_features(x))


def test_labram_weights_made_for_longer_windows_load_and_rebuild(tmp_path):
    # a file of 15-s windows (16 temporal positions) on a 4-s store: the module takes the file's first rows; the
    # checkpoint's configuration rebuilds the same shape
    import braindecode.models as bm

    from neurokit.models.foundation import build_foundation, load_foundation_weights, rebuild_foundation

    attrs = {"ch_names": ["C3", "CZ", "C4"], "sfreq": 200.0, "units": "100uV", "modality": "eeg"}
    bb = build_foundation("labram", attrs, (3, 4, 200), {"n_layers": 1})
    long = bm.Labram(n_chans=3, n_times=3000, n_outputs=0, num_layers=1)
    sd = {k: v for k, v in long.state_dict().items() if not k.startswith(("final_layer.", "head."))}
    assert sd["temporal_embedding"].shape[1] == 16 and bb.model.temporal_embedding.shape[1] == 5
    report, extra = load_foundation_weights(bb, sd, name="labram_15s.pt")
    assert report.complete and extra["sliced"] == {"temporal_embedding": [16, 5]}
    torch.testing.assert_close(bb.model.temporal_embedding, long.temporal_embedding[:, :5])
    again = rebuild_foundation(bb.config.to_dict())
    again.load_state_dict(bb.state_dict())
    x = torch.randn(2, 3, 4, 200)
    bb.eval(), again.eval()
    torch.testing.assert_close(again.forward_features(x), bb.forward_features(x))
