"""CBraMod must reproduce the reference fixture made with the released model class."""

import pytest
import torch

from neurokit.models import CBraMod


@pytest.fixture(scope="module")
def fixture(fixtures_root):
    return torch.load(fixtures_root / "cbramod_reference_fixture.pt", weights_only=True)


@pytest.fixture(scope="module")
def model(fixture):
    m = CBraMod(attn_backend="torch")
    m.load_state_dict(fixture["state_dict"])  # strict: the released key layout as is
    return m.eval()


def test_paper_configuration_size():
    m = CBraMod()
    assert sum(p.numel() for p in m.parameters()) == 4_924_000
    assert m.config.n_layers == 12 and m.config.n_heads == 8 and m.config.dim_feedforward == 800


def test_state_dict_keys_match_release(fixture):
    assert set(CBraMod().state_dict()) == set(fixture["state_dict"])


@pytest.mark.parametrize("case", ["c19_n4", "c22_n3", "c6_n30", "c19_n4_masked"])
def test_fixture_parity(model, fixture, case):
    c = fixture["cases"][case]
    with torch.no_grad():
        y = model(c["x"], mask=c.get("mask"))
    assert y.shape == c["y"].shape
    err = (y - c["y"]).abs().max().item()
    assert err <= 1e-4, f"{case}: max abs error {err:.3g}"


def test_mask_changes_output(model, fixture):
    c = fixture["cases"]["c19_n4_masked"]
    with torch.no_grad():
        unmasked = model(c["x"])
    assert (unmasked - c["y"]).abs().max().item() > 1e-2  # the mask really is applied


def test_bad_shape_message():
    with pytest.raises(ValueError, match=r"\(batch, channels, n_patches, 200\)"):
        CBraMod(n_layers=1)(torch.zeros(2, 19, 200))
