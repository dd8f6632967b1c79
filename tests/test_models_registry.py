"""The model registry's entry points: ``create_model`` per family (sizes and configurations), ``from_pretrained``
and the classes' ``from_pretrained`` round trips on neurokit checkpoints (bit-identical outputs), fine-tuning
checkpoints and bare state dicts, and the refusals: unknown names and options, another family's checkpoint,
and files that would run code on loading (read with ``weights_only=True``)."""

from __future__ import annotations

import pickle

import pytest
import torch

import neurokit
from neurokit._utils.errors import ConfigError, WeightsError
from neurokit.models import CBraMod, SiT, VSMAE
from neurokit.models.checkpoint import save_checkpoint
from neurokit.models.clip import SurfaceCLIP
from neurokit.models.hub import HubError
from neurokit.models.pretrained import PretrainedError
from neurokit.models.registry import create_model, from_pretrained, list_models

SIT_KW = dict(size="tiny", n_layers=1, n_chans=2, n_patches=20, vertices_per_patch=45)
CLIP_KW = dict(n_layers=1, n_chans=2, n_patches=20, vertices_per_patch=45, video_dim=8, audio_dim=4, embed_dim=16)
FAMILIES = {"cbramod": dict(n_layers=1), "sit": SIT_KW, "clip": CLIP_KW}


pytestmark = pytest.mark.usefixtures("two_torch_threads")


def _count(m: torch.nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def _sit_params(D, depth, heads, dim_head, token_dim, cls_token):
    """Parameters of a SiT encoder without head, counted from its definition."""
    inner = heads * dim_head
    attn = 2 * D + D * 3 * inner + inner * D + D
    ff = 2 * D + D * 4 * D + 4 * D + 4 * D * D + D
    return token_dim * D + D + depth * (attn + ff) + 2 * D + (D if cls_token else 0)


def _head_params(i, e):
    return i * e + e + e * e + e + 2 * e


def _save(path, model, family, **extra):
    return save_checkpoint(
        path,
        {
            "kind": "pretrain",
            "model": family,
            "model_config": model.config.to_dict(),
            "state_dict": model.state_dict(),
            **extra,
        },
    )


def _outputs(model, family):
    """Outputs on a fixed input: CBraMod's reconstruction, vsMAE's prediction under a seeded mask, CLIP's
    three embeddings, a SiT's pooled features."""
    g = torch.Generator().manual_seed(7)
    model.eval()
    with torch.no_grad():
        if family == "cbramod":
            return model(torch.randn(2, 3, 2, 200, generator=g))
        x = torch.randn(2, 2, 20, 45, generator=g)
        if family == "sit":
            return model(x, generator=torch.Generator().manual_seed(1)).pred
        if family == "clip":
            o = model(x, torch.randn(2, 8, generator=g), torch.randn(2, 4, generator=g))
            return torch.cat([o.fmri, o.video, o.audio], dim=1)
        return model(x)


def test_create_model_sizes_and_configs():
    m = create_model("cbramod")
    assert isinstance(m, CBraMod) and _count(m) == 4_924_000  # the paper's size
    m = create_model("cbramod", n_layers=2)
    assert m.config.n_layers == 2 and len(m.encoder.layers) == 2

    v = create_model("sit", **SIT_KW)
    enc = v.encoder.config
    assert isinstance(v, VSMAE) and (enc.dim, enc.heads, enc.depth, enc.pool) == (192, 3, 1, "mean")
    assert (enc.n_chans, enc.n_patches, enc.vertices_per_patch, v.config.mask_ratio) == (2, 20, 45, 0.75)
    assert _count(v.encoder) == _sit_params(192, 1, 3, 64, 2 * 45, cls_token=False)
    small = create_model("sit", **{**SIT_KW, "size": "small", "mask_ratio": 0.9})
    assert small.encoder.config.dim == 384 and small.config.mask_ratio == 0.9

    c = create_model("clip", **CLIP_KW)
    assert isinstance(c, SurfaceCLIP) and c.config.fmri.pool == "cls" and c.config.video_dim == 8
    assert _count(c.encoder) == _sit_params(192, 1, 3, 64, 2 * 45, cls_token=True)
    assert _count(c) == _count(c.encoder) + _head_params(192, 16) + _head_params(8, 16) + _head_params(4, 16)
    paper = create_model("clip", n_layers=1)  # the paper's input: 3 frames of 1280 ico3 patches of 45 vertices
    assert (paper.config.fmri.n_chans, paper.config.fmri.n_patches, paper.config.fmri.vertices_per_patch) == (
        3,
        1280,
        45,
    )

    assert neurokit.create_model is create_model and neurokit.from_pretrained is from_pretrained
    assert neurokit.models.create_model is create_model and neurokit.models.from_pretrained is from_pretrained
    assert list_models() == ["biot", "cbramod", "clip", "codebrain", "eegnet", "eegpt", "labram", "luna", "reve", "sit"]


def test_unknown_names_and_options_are_refused():
    with pytest.raises(
        ConfigError,
        match=r"unknown model 'vit'; known: biot, cbramod, clip, codebrain, eegnet, eegpt, labram, luna, reve, sit",
    ):
        create_model("vit")
    with pytest.raises(
        ConfigError,
        match=r"unknown model 'vit'; known: biot, cbramod, clip, codebrain, eegnet, eegpt, labram, luna, reve, sit",
    ):
        from_pretrained("unused.pt", model="vit")
    with pytest.raises(ConfigError, match=r"unknown cbramod option\(s\) \['n_layer'\]; allowed: .*n_layers"):
        create_model("cbramod", n_layer=2)
    with pytest.raises(ConfigError, match=r"unknown sit option\(s\) \['embed_dim'\]; allowed: .*vertices_per_patch"):
        create_model("sit", embed_dim=3)
    with pytest.raises(ConfigError, match="unknown SiT size='huge'"):
        create_model("clip", size="huge")


@pytest.mark.parametrize("family", ["cbramod", "sit", "clip"])
def test_pretrain_checkpoint_round_trip(tmp_path, family):
    torch.manual_seed(0)
    model = create_model(family, **FAMILIES[family])
    path = _save(tmp_path / "last.pt", model, family, history=[{"loss": 1.0}], recipe={"h_freq": 75.0})
    want = _outputs(model, family)

    back = from_pretrained(path)
    assert type(back) is type(model) and back.config.to_dict() == model.config.to_dict()
    assert torch.equal(_outputs(back, family), want)
    info = back.pretrained_info
    assert (info["model"], info["kind"], info["complete"]) == (family, "pretrain", True) and len(info["sha256"]) == 64

    cls = {"cbramod": CBraMod, "sit": VSMAE, "clip": SurfaceCLIP}[family]
    assert torch.equal(_outputs(cls.from_pretrained(str(path)), family), want)
    assert torch.equal(_outputs(create_model(family, pretrained=path), family), want)
    if family != "cbramod":  # the SiT encoder of a vsMAE or CLIP checkpoint
        enc = SiT.from_pretrained(path)
        assert torch.equal(_outputs(enc, "encoder"), _outputs(model.encoder, "encoder"))
        head = SiT.from_pretrained(path, n_outputs=3)
        assert head.config.n_outputs == 3 and head.head.out_features == 3
        assert torch.equal(
            head.forward_features(torch.ones(1, 2, 20, 45)), enc.forward_features(torch.ones(1, 2, 20, 45))
        )


def test_finetune_checkpoint_gives_the_backbone_and_bare_state_dicts(tmp_path):
    torch.manual_seed(0)
    vsmae = create_model("sit", **SIT_KW)
    enc = vsmae.encoder
    sd = {**{f"backbone.{k}": v for k, v in enc.state_dict().items()}, "head.weight": torch.zeros(2, 192)}
    p = save_checkpoint(
        tmp_path / "best.pt",
        {
            "kind": "finetune",
            "model": "sit",
            "model_config": vsmae.config.to_dict(),
            "head": {"kind": "avgpool"},
            "state_dict": sd,
        },
    )
    for back in (from_pretrained(p), SiT.from_pretrained(p)):
        assert isinstance(back, SiT) and back.pretrained_info["kind"] == "finetune"
        assert torch.equal(_outputs(back, "encoder"), _outputs(enc, "encoder"))
    with pytest.raises(ConfigError, match="fine-tuning checkpoint .* SiT.from_pretrained"):
        VSMAE.from_pretrained(p)
    with pytest.raises(ConfigError, match="fine-tuned checkpoint"):
        create_model("sit", pretrained=p)

    cb = create_model("cbramod", n_layers=2)
    bare = tmp_path / "pretrained_weights.pth"
    torch.save(cb.state_dict(), bare)  # as the released CBraMod weights: no family, no configuration
    for back in (from_pretrained(bare), CBraMod.from_pretrained(str(bare)), create_model("cbramod", pretrained=bare)):
        assert back.config.n_layers == 2 and torch.equal(_outputs(back, "cbramod"), _outputs(cb, "cbramod"))
    with pytest.raises(HubError, match=r"covers \d+/\d+ model tensors \(missing \['encoder.layers.2"):
        CBraMod.from_pretrained(str(bare), n_layers=3)
    partial = from_pretrained(bare, n_layers=3, allow_partial=True)
    assert partial.pretrained_info["loaded"] < partial.pretrained_info["total"]


def test_another_familys_checkpoint_is_refused(tmp_path):
    p = _save(tmp_path / "cbramod.pt", create_model("cbramod", n_layers=1), "cbramod")
    for call, who in (
        (lambda: SiT.from_pretrained(p), "SiT.from_pretrained"),
        (lambda: VSMAE.from_pretrained(p), "VSMAE.from_pretrained"),
        (lambda: SurfaceCLIP.from_pretrained(p), "SurfaceCLIP.from_pretrained"),
        (lambda: from_pretrained(p, model="sit"), "from_pretrained"),
        (lambda: create_model("clip", pretrained=p), "create_model"),
    ):
        with pytest.raises(PretrainedError) as err:
            call()
        msg = str(err.value)
        assert "\n" not in msg and "is a CBraMod checkpoint" in msg and who in msg and "SiT" in msg, msg
    s = _save(tmp_path / "sit.pt", create_model("sit", **SIT_KW), "sit")
    with pytest.raises(PretrainedError, match=r"is a SiT checkpoint .*CBraMod.from_pretrained reads CBraMod"):
        CBraMod.from_pretrained(str(s))


RAN = []


def _mark(tag):
    RAN.append(tag)
    return tag


class Payload:
    """Unpickling calls ``_mark``: code chosen by the file."""

    def __reduce__(self):
        return (_mark, ("ran",))


class Plain:
    def __init__(self):
        self.w = torch.ones(2)


@pytest.mark.parametrize("payload", ["reduce", "custom_class", "raw_pickle"])
def test_files_that_would_run_code_are_refused(tmp_path, payload):
    path = tmp_path / "evil.pt"
    if payload == "reduce":
        torch.save({"state_dict": {"w": torch.ones(1)}, "extra": Payload()}, path)
    elif payload == "custom_class":
        torch.save(Plain(), path)
    else:  # a legacy (non-zip) pickle
        path.write_bytes(pickle.dumps({"w": Payload()}))
    for call in (
        lambda: from_pretrained(path),
        lambda: CBraMod.from_pretrained(str(path)),
        lambda: SiT.from_pretrained(path),
        lambda: create_model("cbramod", pretrained=path),
    ):
        with pytest.raises(PretrainedError, match=r"refused|weights_only") as err:
            call()
        assert isinstance(err.value, WeightsError) and "\n" not in str(err.value)
    assert RAN == []


def test_model_config_dict_reads_the_family_config_and_refuses_other_modules():
    from neurokit.models.config import model_config_dict
    from neurokit.models.registry import rebuild_cbramod

    cfg = model_config_dict(create_model("cbramod", n_layers=1, d_model=200))
    assert cfg["n_layers"] == 1 and cfg["d_model"] == 200
    assert rebuild_cbramod(cfg).config.n_layers == 1
    with pytest.raises(ConfigError, match="Linear has no config.to_dict"):
        model_config_dict(torch.nn.Linear(2, 2))


def test_a_family_without_create_is_refused_by_create_model(monkeypatch):
    from dataclasses import replace

    from neurokit.models import registry

    monkeypatch.setitem(registry.MODELS, "cbramod", replace(registry.MODELS["cbramod"], create=None))
    with pytest.raises(ConfigError, match="'cbramod' is sized from a store's samples only"):
        create_model("cbramod", n_layers=1)
