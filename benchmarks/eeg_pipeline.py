"""EEG pipeline speed, each figure beside a baseline measured in the same run.

1. Preprocessing throughput (seconds of EEG per second of wall time), EDF → patch store, against a plain
   MNE read → filter → notch → resample loop over the same files (no windowing, no store).
2. Pretraining samples per second of CBraMod (masked-patch loss, forward + backward + AdamW) against the
   same network whose criss-cross layers are written the straightforward way, with two
   ``nn.MultiheadAttention`` modules and explicit permute/contiguous copies.

Usage::

    python benchmarks/eeg_pipeline.py --data-root ../shared/data/eeg [--subjects 1-3] [--layers 2] [--device cpu]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F


def bench_preprocessing(data_root: Path, subjects: list[int]) -> tuple[float, float]:
    import mne

    from neurokit.cards import load_card
    from neurokit.pipelines.prepare import prepare

    card = load_card("physionet_mi")
    entries = card.files(data_root, "left_right_imagery", subjects=subjects, download=False)
    seconds = sum(mne.io.read_raw_edf(e.path, verbose="error").times[-1] for e in entries)
    t = time.perf_counter()
    for e in entries:  # baseline: plain MNE
        raw = mne.io.read_raw_edf(e.path, preload=True, verbose="error")
        raw.filter(0.3, 75.0, verbose="error")
        raw.notch_filter([60.0], verbose="error")
        raw.resample(200.0, verbose="error")
    base = seconds / (time.perf_counter() - t)
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        prepare(card, Path(tmp) / "s.h5", data_root=data_root, task="left_right_imagery", subjects=subjects, progress=False)
        ours = seconds / (time.perf_counter() - t)
    return ours, base


class MHACrissCrossLayer(nn.Module):
    """The straightforward criss-cross layer: two nn.MultiheadAttention calls on permuted copies."""

    def __init__(self, d_model=200, nhead=8, dim_feedforward=800, dropout=0.1) -> None:
        super().__init__()
        self.self_attn_s = nn.MultiheadAttention(d_model // 2, nhead // 2, dropout=dropout, batch_first=True)
        self.self_attn_t = nn.MultiheadAttention(d_model // 2, nhead // 2, dropout=dropout, batch_first=True)
        self.linear1 = nn.Linear(d_model, dim_feedforward)
        self.linear2 = nn.Linear(dim_feedforward, d_model)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout, self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(self, x):
        B, C, N, D = x.shape
        h = self.norm1(x)
        xs = h[..., : D // 2].transpose(1, 2).contiguous().view(B * N, C, D // 2)
        xt = h[..., D // 2 :].contiguous().view(B * C, N, D // 2)
        xs = self.self_attn_s(xs, xs, xs, need_weights=False)[0].view(B, N, C, D // 2).transpose(1, 2)
        xt = self.self_attn_t(xt, xt, xt, need_weights=False)[0].view(B, C, N, D // 2)
        x = x + self.dropout1(torch.cat([xs, xt], dim=3))
        return x + self.dropout2(self.linear2(self.dropout(F.gelu(self.linear1(self.norm2(x))))))


def bench_pretrain(n_layers: int, batch: int, C: int, N: int, steps: int, device: str) -> tuple[float, float]:
    from neurokit.models import CBraMod
    from neurokit.pipelines.objectives import masked_patch_loss

    def run(model) -> float:
        model.to(device).train()
        opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.05)
        x = torch.randn(batch, C, N, 200, device=device)
        g = torch.Generator(device=device)
        for i in range(steps + 2):
            if i == 2:  # two warm-up steps
                if device.startswith("cuda"):
                    torch.cuda.synchronize()
                t = time.perf_counter()
            g.manual_seed(i)
            loss, _ = masked_patch_loss(model, x, g)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return steps * batch / (time.perf_counter() - t)

    torch.manual_seed(0)
    ours = CBraMod(n_layers=n_layers)
    base = CBraMod(n_layers=n_layers)
    base.encoder.layers = nn.ModuleList(MHACrissCrossLayer() for _ in range(n_layers))
    return run(ours), run(base)


def main() -> None:
    from neurokit.cards import parse_ranges

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-root", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared/data/eeg")
    ap.add_argument("--subjects", default="1-3")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--channels", type=int, default=19)
    ap.add_argument("--patches", type=int, default=30)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = ap.parse_args()
    ours, base = bench_preprocessing(a.data_root, parse_ranges(a.subjects))
    print(f"preprocessing  EDF→store : {ours:8.1f} s of EEG per s | plain MNE read-filter-resample: {base:8.1f} | ratio {ours / base:.2f}")
    ours, base = bench_pretrain(a.layers, a.batch, a.channels, a.patches, a.steps, a.device)
    print(f"pretraining ({a.device}, {a.layers} layers, B={a.batch}, C={a.channels}, N={a.patches}): "
          f"{ours:7.2f} samples/s | two-MHA baseline: {base:7.2f} | ratio {ours / base:.2f}")


if __name__ == "__main__":
    main()
