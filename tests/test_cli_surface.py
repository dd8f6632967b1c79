"""``neuro prepare`` / ``pretrain --model sit`` / ``plot-surface`` on the real surface data."""

from __future__ import annotations

import os

import numpy as np
import pytest
from typer.testing import CliRunner

from neurokit.cli.main import app
from neurokit.store.patch_store import PatchStore

runner = CliRunner()


def flat(text: str) -> str:
    """CLI output without whitespace (rich wraps long lines, even inside paths)."""
    return "".join(text.split())


def test_prepare_fsaverage5(surface_root, tmp_path):
    store = tmp_path / "fsa5.h5"
    r = runner.invoke(
        app, ["prepare", "fsaverage5_rest", "--data-root", str(surface_root / "fsaverage5_rest"), "-o", str(store)]
    )
    assert r.exit_code == 0, r.output
    st = PatchStore(store)
    assert (len(st), st.sample_shape, st.attrs["task"]) == (66, (3, 1280, 45), "pretrain")
    assert st.attrs["card_body"]["name"] == "fsaverage5_rest"
    assert set(st.meta["subject"]) == {"010188"} and set(st.meta["hemi"]) == {"L", "R"}


@pytest.mark.slow
def test_prepare_hcp7t_layout_and_pretrain(surface_root, tmp_path):
    """The HCP 7T card's layout, with the real CIFTI dtseries standing in for a movie run; then
    ``neuro pretrain --model sit`` on the store."""
    root = tmp_path / "hcp"
    run_dir = root / "100610/MNINonLinear/Results/tfMRI_MOVIE2_7T_PA"
    run_dir.mkdir(parents=True)
    os.symlink(
        surface_root / "cifti/sub-MSC01_test.dtseries.nii",
        run_dir / "tfMRI_MOVIE2_7T_PA_Atlas_MSMAll_hp2000_clean.dtseries.nii",
    )
    for h in "LR":
        os.symlink(
            surface_root / f"hcp_fs_LR32k/S1200.{h}.sphere.32k_fs_LR.surf.gii",
            root / f"S1200.{h}.sphere.32k_fs_LR.surf.gii",
        )
    store = tmp_path / "hcp.h5"
    r = runner.invoke(app, ["prepare", "hcp7t_movie", "--data-root", str(root), "-o", str(store)])
    assert r.exit_code == 0, r.output
    st = PatchStore(store)
    # 5 frames, 3-frame tubelets with hop 1 → 3 per hemisphere
    assert len(st) == 6 and st.sample_shape == (3, 1280, 45)
    assert set(st.meta["subject"]) == {"100610"} and set(st.meta["run"]) == {"2"}
    assert st.attrs["mesh"] == "fs_LR_32k" and st.attrs["tr"] == 1.0
    np.testing.assert_allclose(st.meta["onset"][:3], [0, 1, 2])
    r = runner.invoke(
        app,
        [
            "pretrain",
            str(store),
            "--model",
            "sit",
            "--model-size",
            "tiny",
            "--n-layers",
            "1",
            "--mask-ratio",
            "0.9",
            "--max-steps",
            "1",
            "--batch-size",
            "2",
            "--no-progress",
            "--device",
            "cpu",
            "-o",
            str(tmp_path / "pt"),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "pretrained 1 steps" in r.output and (tmp_path / "pt" / "last.pt").exists()
    # no optimiser option given: the reference's (AdamW 3e-4, weight decay 0.01, constant, no clipping)
    import json

    import torch

    ck = torch.load(tmp_path / "pt" / "last.pt", map_location="cpu", weights_only=True)
    assert ck["train_config"]["optim"] == {
        "lr": 3e-4,
        "weight_decay": 0.01,
        "min_lr": 1e-5,
        "clip_grad": 0.0,
        "warmup_steps": 0,
        "schedule": "constant",
    }
    line = json.loads((tmp_path / "pt" / "metrics.jsonl").read_text().splitlines()[-1])
    assert line["lr"] == 3e-4 and line["grad_norm"] is None


def test_prepare_without_spheres_fails_clearly(surface_root, tmp_path):
    root = tmp_path / "hcp"
    run_dir = root / "100610/MNINonLinear/Results/tfMRI_MOVIE1_7T_AP"
    run_dir.mkdir(parents=True)
    os.symlink(
        surface_root / "cifti/sub-MSC01_test.dtseries.nii",
        run_dir / "tfMRI_MOVIE1_7T_AP_Atlas_MSMAll_hp2000_clean.dtseries.nii",
    )
    r = runner.invoke(app, ["prepare", "hcp7t_movie", "--data-root", str(root), "-o", str(tmp_path / "x.h5")])
    assert r.exit_code == 2
    assert "sphereforhemisphereLnotfound" in flat(r.output) and "S1200.L.sphere.32k_fs_LR.surf.gii" in flat(r.output)
    assert not (tmp_path / "x.h5").exists()


def test_plot_surface_png(surface_root, tmp_path):
    import matplotlib.image as mpimg

    out = tmp_path / "frame.png"
    fsa5 = surface_root / "fsaverage5_rest/sub-010188_ses-02_task-rest_acq-AP_run-01.fsa5.rh.first100TR.mgz"
    r = runner.invoke(app, ["plot-surface", str(fsa5), "--frame", "2", "-o", str(out)])  # nilearn's inflated fsaverage5
    assert r.exit_code == 0, r.output
    img = mpimg.imread(out)
    assert img.shape[0] > 300 and img.shape[1] > 600
    rgb = img[..., :3].reshape(-1, 3)
    assert len(np.unique(np.round(rgb, 2), axis=0)) > 100  # a coloured surface, not a blank canvas
    r = runner.invoke(
        app, ["plot-surface", str(surface_root / "cifti/sub-MSC01_test.dtseries.nii"), "--hemi", "L", "-o", str(out)]
    )
    assert r.exit_code == 2 and "nopackagedinflatedsurfaceformesh'fs_LR_32k'" in flat(r.output)
    r = runner.invoke(app, ["plot-surface", str(fsa5), "--frame", "100", "-o", str(out)])
    assert r.exit_code == 2 and "frame100outofrange" in flat(r.output)
