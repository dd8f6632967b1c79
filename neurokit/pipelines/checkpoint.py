"""Checkpoints: model configuration and weights, optimiser, scheduler and RNG state, data card and
preprocessing recipe, in one ``torch.save`` file written atomically."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

FORMAT = "neurokit-checkpoint/1"


def save_checkpoint(path: str | Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` (plus format tag) to ``path`` via a temporary file and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save({"format": FORMAT, **payload}, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(path: str | Path, map_location="cpu") -> dict[str, Any]:
    """Load a neurokit checkpoint, or wrap a bare state_dict (e.g. CBraMod's ``pretrained_weights.pth``)
    as ``{"model": "cbramod", "state_dict": sd}``.

    Raises
    ------
    FileNotFoundError, ValueError
        Missing file, or a file that is neither a neurokit checkpoint nor a state_dict.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such checkpoint")
    try:
        obj = torch.load(path, map_location=map_location, weights_only=False)
    except Exception as exc:
        raise ValueError(f"{path}: not a readable PyTorch checkpoint ({exc})") from exc
    if isinstance(obj, dict) and obj.get("format") == FORMAT:
        return obj
    if isinstance(obj, dict) and "state_dict" in obj and isinstance(obj["state_dict"], dict):
        obj = obj["state_dict"]
    if isinstance(obj, dict) and all(isinstance(v, torch.Tensor) for v in obj.values()):
        sd = {k.removeprefix("module."): v for k, v in obj.items()}
        return {"format": "state_dict", "model": "cbramod", "model_config": {}, "state_dict": sd}
    raise ValueError(f"{path}: neither a neurokit checkpoint nor a state_dict")


def check_channels(want, have, *, store, checkpoint) -> None:
    """Raise :class:`~neurokit._errors.ChannelMismatchError` when a store's channels (names or order)
    differ from those a checkpoint was trained on; ``None`` on either side (no channel list) passes."""
    from .._errors import ChannelMismatchError

    if want is None or have is None or list(want) == list(have):
        return
    missing = [c for c in want if c not in have]
    extra = [c for c in have if c not in want]
    order = ", same names in another order" if not missing and not extra else ""
    raise ChannelMismatchError(
        f"{store}: channel set differs from the checkpoint {checkpoint}: trained on channels {list(want)[:6]}… "
        f"({len(want)}); the store has {list(have)[:6]}… ({len(have)}) (missing {missing[:8]}, extra {extra[:8]}{order}). "
        "Prepare the store with the checkpoint's channel list (card preprocessing.channels, CLI --channels)."
    )


def rng_state() -> dict[str, Any]:
    st = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        st["cuda"] = torch.cuda.get_rng_state_all()
    return st


def set_rng_state(st: dict[str, Any]) -> None:
    if "torch" in st:
        torch.set_rng_state(st["torch"])
    if "cuda" in st and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(st["cuda"])
