"""Weights by name: hub:ORG/NAME[@REVISION] resolved through huggingface_hub from a local Hub cache built
in tmp (nothing is downloaded: the suite runs with NEUROKIT_OFFLINE=1), revision pinning, hash and key
coverage checks, and what a fine-tuning checkpoint records."""

import hashlib
import io
import os

import numpy as np
import pytest
import torch

from neurokit.models import CBraMod
from neurokit.models.hub import HubError, fetch_weights, parse_hub_spec, resolve_hub

REPO = "neurokit-test/cbramod-tiny"
COMMIT_A, COMMIT_B = "a" * 40, "b" * 40


def _blob(sd):
    buf = io.BytesIO()
    torch.save(sd, buf)
    data = buf.getvalue()
    return data, hashlib.sha256(data).hexdigest()


def _hub_cache(root, repo, snapshots, refs):
    """The layout huggingface_hub keeps: blobs named by the LFS object id (SHA-256), snapshots/<commit>/FILE
    linked to them, refs/<branch or tag> holding a commit hash."""
    d = root / ("models--" + repo.replace("/", "--"))
    for commit, files in snapshots.items():
        for name, sd in files.items():
            data, sha = _blob(sd)
            (d / "blobs").mkdir(parents=True, exist_ok=True)
            (d / "blobs" / sha).write_bytes(data)
            link = d / "snapshots" / commit / name
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(os.path.relpath(d / "blobs" / sha, link.parent))
    (d / "refs").mkdir(parents=True, exist_ok=True)
    for ref, commit in refs.items():
        (d / "refs" / ref).write_text(commit)
    return d


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """Two releases of a 1-layer CBraMod: v1 (commit a…a) and main (commit b…b)."""
    torch.manual_seed(0)
    a, b = CBraMod(n_layers=1).state_dict(), CBraMod(n_layers=1).state_dict()
    root = tmp_path_factory.mktemp("hf") / "hub"
    _hub_cache(
        root,
        REPO,
        {COMMIT_A: {"pretrained_weights.pth": a}, COMMIT_B: {"pretrained_weights.pth": b, "README.md": {}}},
        {"main": COMMIT_B, "v1": COMMIT_A},
    )
    return root, a, b


@pytest.fixture
def hf_env(hub, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(hub[0]))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return hub


def _same(model_sd, sd):
    return all(torch.equal(model_sd[k], v) for k, v in sd.items())


def test_resolution_and_revision_pinning(hf_env):
    root, a, b = hf_env
    path, info = resolve_hub(f"hub:{REPO}")  # default branch, the only weights file
    assert info["commit"] == COMMIT_B and info["filename"] == "pretrained_weights.pth" and info["revision"] is None
    assert info["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest() and info["hash_checked_against"] == "lfs"
    assert path.parent.name == COMMIT_B and str(root) in str(path)
    for rev in ("v1", COMMIT_A):  # a tag and a commit hash pin the older release
        p, i = resolve_hub(f"hub:{REPO}@{rev}")
        assert i["commit"] == COMMIT_A and i["revision"] == rev
    m = CBraMod.from_pretrained(f"hub:{REPO}", revision="v1", n_layers=1)
    assert _same(m.state_dict(), a) and not _same(m.state_dict(), b)
    assert m.pretrained_info["commit"] == COMMIT_A and m.pretrained_info["loaded"] == m.pretrained_info["total"] == len(
        a
    )
    assert _same(CBraMod.from_pretrained(REPO, n_layers=1).state_dict(), b)  # bare ORG/NAME works too
    assert str(parse_hub_spec("hub:org/name/sub/w.pth@v2")) == "hub:org/name/sub/w.pth@v2"


def test_offline_missing_hash_and_coverage_errors(hf_env, tmp_path):
    root, a, b = hf_env
    with pytest.raises(HubError, match=r"hub:org/absent: not in the Hub cache .* offline mode is on"):
        resolve_hub("hub:org/absent")
    with pytest.raises(HubError, match="no revision|not in the Hub cache"):
        resolve_hub(f"hub:{REPO}@v9")
    with pytest.raises(HubError, match="give Hub weights as hub:ORG/NAME"):
        parse_hub_spec("hub:justaname")
    with pytest.raises(HubError, match=r"SHA-256 [0-9a-f]{64} differs from the expected 0{64}"):
        resolve_hub(f"hub:{REPO}", sha256="0" * 64)
    # weights of another configuration (1 layer) do not cover a 2-layer model
    with pytest.raises(HubError, match=r"covers \d+/\d+ model tensors \(missing \['encoder.layers.1"):
        CBraMod.from_pretrained(f"hub:{REPO}", n_layers=2)
    # a damaged cache entry: the blob no longer matches its LFS object id
    bad = tmp_path / "hub"
    d = _hub_cache(bad, REPO, {COMMIT_A: {"pretrained_weights.pth": a}}, {"main": COMMIT_A})
    blob = next((d / "blobs").iterdir())
    blob.write_bytes(blob.read_bytes()[:-10] + b"0123456789")
    with pytest.raises(HubError, match="differs from its Git LFS object id .* damaged"):
        resolve_hub(f"hub:{REPO}", cache_dir=bad)
    _, local = fetch_weights(str(next((root / ("models--" + REPO.replace("/", "--")) / "blobs").iterdir())))
    assert local["hash_checked_against"] is None and len(local["sha256"]) == 64


def test_finetune_records_hub_weights(hf_env, tmp_path):
    from neurokit.store.patch_store import PatchStoreWriter
    from neurokit.models.checkpoint import load_checkpoint
    from neurokit.training.config import FinetuneConfig
    from neurokit.pipelines.finetune import finetune

    rng = np.random.default_rng(0)
    with PatchStoreWriter(tmp_path / "s.h5", (2, 1, 200), attrs={"label_names": ["a", "b"]}) as w:
        for s in ("S001", "S002", "S003"):
            w.append(rng.normal(size=(8, 2, 1, 200)).astype(np.float32), np.array([0, 1] * 4), subject=s, run="R01")
    cfg = FinetuneConfig(
        model_kwargs={"n_layers": 1},
        epochs=1,
        batch_size=8,
        head="avgpool",
        progress=False,
        device="cpu",
        splits={"train": ["S001"], "val": ["S002"], "test": ["S003"]},
    )
    rep = finetune(tmp_path / "s.h5", tmp_path / "ft", cfg, init=f"hub:{REPO}@v1")
    ck = load_checkpoint(tmp_path / "ft" / "best.pt")
    w = ck["init_weights"]
    assert w["name"] == f"hub:{REPO}@v1" and w["revision"] == "v1" and w["commit"] == COMMIT_A
    assert w["sha256"] == resolve_hub(f"hub:{REPO}@v1")[1]["sha256"] and rep["init_weights"] == w
    assert ck["model_config"]["n_layers"] == 1
