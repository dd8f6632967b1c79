"""Starting a backbone from a checkpoint refuses what cannot fit (neurokit.models.registry.build_backbone),
and the edges of weights names and configurations (review findings of the redesign)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import neurokit
from neurokit._utils.errors import ConfigError
from neurokit.evaluation.baselines import run_baselines
from neurokit.models.checkpoint import save_checkpoint
from neurokit.models.hub import fetch_weights
from neurokit.models.registry import build_backbone


@pytest.fixture(scope="module")
def cbramod_ckpt(tmp_path_factory):
    m = neurokit.create_model("cbramod", n_layers=2)
    path = tmp_path_factory.mktemp("ck") / "last.pt"
    save_checkpoint(
        path,
        {
            "kind": "pretrain",
            "model": "cbramod",
            "model_config": m.config.to_dict(),
            "state_dict": m.state_dict(),
            "store_attrs": {"modality": "eeg"},
        },
    )
    return path


def test_cbramod_checkpoint_on_a_surface_store_is_refused_naming_both(cbramod_ckpt):
    with pytest.raises(
        ConfigError,
        match=r"CBraMod checkpoint, pretrained on eeg stores; the store to fine-tune "
        r"holds surface samples \(3, 1280, 45\)",
    ):
        build_backbone(cbramod_ckpt, model="cbramod", store_attrs={"modality": "surface"}, sample_shape=(3, 1280, 45))


def test_layer_count_other_than_the_checkpoints_is_refused(cbramod_ckpt):
    with pytest.raises(ConfigError, match=r"n_layers=2; n_layers=1 sizes a backbone"):
        build_backbone(
            cbramod_ckpt,
            model="cbramod",
            model_kwargs={"n_layers": 1},
            store_attrs={"modality": "eeg"},
            sample_shape=(3, 4, 200),
        )
    bb, info = build_backbone(
        cbramod_ckpt,
        model="cbramod",
        model_kwargs={"dropout": 0.0},
        store_attrs={"modality": "eeg"},
        sample_shape=(3, 4, 200),
    )
    assert info["model_config"]["n_layers"] == 2 and info["model_config"]["dropout"] == 0.0
    assert info["weights"]["loaded"] == info["weights"]["total"]


@pytest.mark.parametrize("field, value", [("n_layers", 0), ("n_heads", 0), ("dropout", 1.0), ("n_heads", 7)])
def test_cbramod_config_out_of_range_is_refused(field, value):
    with pytest.raises(ConfigError, match=f"CBraMod .*{value}"):
        neurokit.create_model("cbramod", **{field: value})


def test_a_mistyped_local_weights_path_never_goes_to_the_hub(tmp_path, monkeypatch):
    monkeypatch.setenv("NEUROKIT_OFFLINE", "0")  # would try the network if it took the name for a Hub repository
    with pytest.raises(FileNotFoundError, match=r"runs/nope\.pt: no such weights file"):
        fetch_weights("runs/nope.pt")
    with pytest.raises(FileNotFoundError, match="is a folder, not a weights file"):
        fetch_weights(tmp_path)


def test_no_eeg_baselines_beside_a_surface_model():
    surface = SimpleNamespace(info=SimpleNamespace(modality="surface"))
    # (a surface store gets patchmean_lr instead: tests/test_evaluation_baselines.py)
    with pytest.raises(ConfigError, match="EEG methods"):
        run_baselines({"train": surface}, "binary", sfreq=200.0, methods=["bandpower_lr"])
