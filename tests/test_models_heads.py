"""Heads read a backbone through neurokit.models.heads.backbone_features (issue 20 item 3)."""

import pytest
import torch
import torch.nn as nn

import neurokit
from neurokit._utils.errors import ConfigError
from neurokit.models.heads import FinetuneModel, Head, backbone_features


def test_backbone_features_is_forward_features_and_feeds_the_head():
    torch.manual_seed(0)
    bb = neurokit.create_model("cbramod", n_layers=1).eval()
    x = torch.randn(2, 3, 4, 200)
    f = backbone_features(bb, x)
    torch.testing.assert_close(f, bb.forward_features(x))
    assert f.shape == (2, 3, 4, 200)
    head = Head("avgpool", f.shape[1:], 1, dropout=0.0)
    model = FinetuneModel(bb, head, squeeze=True).eval()
    with torch.no_grad():
        want = head.net(f.flatten(1, -2).mean(dim=1)).squeeze(-1)
        torch.testing.assert_close(model(x), want)


def test_a_module_without_forward_features_is_refused_by_name():
    with pytest.raises(ConfigError, match="Linear has no forward_features method"):
        backbone_features(nn.Linear(4, 4), torch.zeros(1, 4))
    with pytest.raises(ConfigError, match="Linear has no forward_features"):  # was: AttributeError
        FinetuneModel(nn.Linear(4, 4), Head("avgpool", (1, 4), 1), squeeze=True)(torch.zeros(2, 1, 4))
