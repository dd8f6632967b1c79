"""braindecode's CBraMod weights into neurokit's CBraMod through the name map (issue 20 item 2b)."""

from __future__ import annotations

import pytest
import torch

from neurokit._utils.errors import WeightsError
from neurokit.models.cbramod import CBraMod
from neurokit.models.interop import load_braindecode_cbramod, map_braindecode_cbramod

# ``braindecode.models.CBraMod(n_outputs=2, n_chans=4, n_times=400, n_layer=1).state_dict()`` of braindecode 1.8.1:
# every name and shape, in its order (read off the class; braindecode is not a dependency of the tests)
_LAYER = [
    ("self_attn_s.in_proj_weight", (300, 100)),
    ("self_attn_s.in_proj_bias", (300,)),
    ("self_attn_s.out_proj.weight", (100, 100)),
    ("self_attn_s.out_proj.bias", (100,)),
    ("self_attn_t.in_proj_weight", (300, 100)),
    ("self_attn_t.in_proj_bias", (300,)),
    ("self_attn_t.out_proj.weight", (100, 100)),
    ("self_attn_t.out_proj.bias", (100,)),
    ("linear1.weight", (800, 200)),
    ("linear1.bias", (800,)),
    ("linear2.weight", (200, 800)),
    ("linear2.bias", (200,)),
    ("norm1.weight", (200,)),
    ("norm1.bias", (200,)),
    ("norm2.weight", (200,)),
    ("norm2.bias", (200,)),
]
BRAINDECODE_1_LAYER = (
    [
        ("patch_embedding.mask_encoding", (200,)),
        ("patch_embedding.positional_encoding.0.weight", (200, 1, 19, 7)),
        ("patch_embedding.positional_encoding.0.bias", (200,)),
    ]
    + [
        (f"patch_embedding.proj_in.{i}.{w}", s)
        for i, conv in ((0, (25, 1, 1, 49)), (3, (25, 25, 1, 3)), (6, (25, 25, 1, 3)))
        for w, s in (
            ("weight", conv),
            ("bias", (25,)),
        )
    ]
    + [(f"patch_embedding.proj_in.{i}.{w}", (25,)) for i in (1, 4, 7) for w in ("weight", "bias")]
    + [("patch_embedding.spectral_proj.0.weight", (200, 101)), ("patch_embedding.spectral_proj.0.bias", (200,))]
    + [(f"encoder.layers.0.{k}", s) for k, s in _LAYER]
    + [
        ("proj_out.0.weight", (200, 200)),
        ("proj_out.0.bias", (200,)),
        ("final_layer.1.weight", (2, 4 * 2 * 200)),
        ("final_layer.1.bias", (2,)),
    ]
)


def _braindecode_state(seed=0):
    g = torch.Generator().manual_seed(seed)
    return {k: torch.randn(s, generator=g) * 0.05 for k, s in BRAINDECODE_1_LAYER}


def test_braindecode_names_fill_every_neurokit_tensor_and_the_head_stays_apart():
    sd = _braindecode_state()
    assert len(sd) == 37
    backbone, head = map_braindecode_cbramod(sd)
    own = CBraMod(n_layers=1).state_dict()
    assert set(backbone) == set(own)  # one to one: nothing missing, nothing left over
    assert {k: tuple(v.shape) for k, v in backbone.items()} == {k: tuple(v.shape) for k, v in own.items()}
    assert sorted(head) == ["bias", "weight"] and tuple(head["weight"].shape) == (2, 1600)


def test_braindecode_weights_give_braindecode_features_and_logits():
    torch.manual_seed(0)
    sd = _braindecode_state()
    model, head = load_braindecode_cbramod(sd, attn_backend="torch")
    model.eval()
    assert model.config.n_layers == 1  # read from the tensor names
    for k, v in model.state_dict().items():  # every tensor is the file's
        assert torch.equal(v, sd[k]), k
    x = torch.randn(3, 4, 400)  # braindecode's input: (batch, n_chans, n_times)
    patches = x.reshape(3, 4, 2, 200)  # its Rearrange "b c (n p) -> b c n p"
    with torch.no_grad():
        feats = model(patches)
        # braindecode: proj_out(encoder(patch_embedding(x))) then Flatten + Linear; written out here by hand
        emb = model.patch_embedding(patches)
        hand = emb
        for layer in model.encoder.layers:
            hand = layer(hand)
        hand = hand @ sd["proj_out.0.weight"].T + sd["proj_out.0.bias"]
        logits = feats.flatten(1) @ head["weight"].T + head["bias"]
    torch.testing.assert_close(feats, hand)
    assert logits.shape == (3, 2)
    torch.testing.assert_close(logits, hand.flatten(1) @ sd["final_layer.1.weight"].T + sd["final_layer.1.bias"])


def test_braindecode_class_outputs_equal_when_installed():
    bd = pytest.importorskip("braindecode.models")
    torch.manual_seed(0)
    ref = bd.CBraMod(n_outputs=2, n_chans=4, n_times=400, n_layer=2).eval()
    model, head = load_braindecode_cbramod(ref.state_dict(), attn_backend="torch")
    x = torch.randn(3, 4, 400)
    with torch.no_grad():
        want = ref(x, return_features=True)["features"]
        got = model.eval()(x.reshape(3, 4, 2, 200))
        torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(got.flatten(1) @ head["weight"].T + head["bias"], ref(x), atol=1e-4, rtol=1e-4)


def test_a_state_dict_of_another_model_is_refused_by_name():
    sd = _braindecode_state()
    sd["conv_time.weight"] = torch.zeros(3)
    with pytest.raises(WeightsError, match=r"not a braindecode CBraMod.*conv_time\.weight"):
        map_braindecode_cbramod(sd)
    del sd["conv_time.weight"], sd["proj_out.0.bias"]
    with pytest.raises(WeightsError, match="proj_out.0.bias"):
        load_braindecode_cbramod(sd)
