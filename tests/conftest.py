"""Test configuration: the one place that finds the read-only ``../shared`` folder.

``NEUROKIT_SHARED`` overrides the location; otherwise ``<repo>/../shared`` is used. Tests read the
recordings and fixtures where they lie and write only under pytest's temporary folders.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("NEUROKIT_OFFLINE", "1")  # tests never download


def shared_root() -> Path:
    env = os.environ.get("NEUROKIT_SHARED")
    root = Path(env) if env else REPO.parent / "shared"
    if not root.is_dir():
        msg = f"shared data folder not found at {root} (set NEUROKIT_SHARED)"
        if os.environ.get("CI"):
            pytest.fail(msg)  # CI always has ../shared: never let a missing copy pass as green
        pytest.skip(msg)
    return root


@pytest.fixture(scope="session")
def shared() -> Path:
    return shared_root()


@pytest.fixture(scope="session")
def eeg_root(shared) -> Path:
    return shared / "data" / "eeg"


@pytest.fixture(scope="session")
def surface_root(shared) -> Path:
    return shared / "data" / "surface"


@pytest.fixture(scope="session")
def fixtures_root(shared) -> Path:
    return shared / "fixtures"


@pytest.fixture(scope="session")
def lr_store(eeg_root, tmp_path_factory):
    """Left- vs right-fist imagery of S001-S002, sensorimotor channels, written once per session."""
    from neurokit.pipelines.prepare import prepare

    out = tmp_path_factory.mktemp("stores") / "lr.h5"
    return prepare(
        "physionet_mi",
        out,
        data_root=eeg_root,
        task="left_right_imagery",
        subjects=[1, 2],
        channels="sensorimotor",
        progress=False,
    )


@pytest.fixture(scope="session", autouse=True)
def _neurokit_cache(tmp_path_factory):
    """Derived arrays (resampling matrices) go to a temporary cache folder, never to ~/.cache."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NEUROKIT_CACHE", str(tmp_path_factory.mktemp("nkcache")))
        yield


@pytest.fixture(scope="module")
def two_torch_threads():
    """At most two torch threads for a module's tests (models built and trained on the 2-core CI machine),
    restored afterwards. Use with ``pytestmark = pytest.mark.usefixtures("two_torch_threads")``."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(min(2, before))
    yield
    torch.set_num_threads(before)


@pytest.fixture
def prepare_folder(tmp_path):
    """``run(root, pattern, preprocessing, tasks=None)``: ``neuro prepare`` through a folder card written here (the
    files of ``root`` matching ``pattern``, the EEG recipe ``preprocessing``, ``tasks`` or one unlabelled task) into
    ``tmp_path/s.h5``; returns the store (the command must succeed)."""
    import yaml
    from typer.testing import CliRunner

    from neurokit.cli.main import app
    from neurokit.store.patch_store import PatchStore

    def run(root, pattern: str, preprocessing: dict, tasks: dict | None = None):
        card = {
            "name": "folder_test", "modality": "eeg", "title": "test", "source": "test", "licence": "none",
            "citation": ["none"], "layout": {"kind": "folder", "pattern": pattern},
            "tasks": tasks or {"pretrain": {"description": "unlabelled", "classes": []}},
            "preprocessing": preprocessing,
        }  # fmt: skip
        path = tmp_path / "card.yaml"
        path.write_text(yaml.safe_dump(card))
        r = CliRunner().invoke(app, ["prepare", str(path), "--data-root", str(root), "-o", str(tmp_path / "s.h5")])
        assert r.exit_code == 0, r.output
        return PatchStore(tmp_path / "s.h5")

    return run
