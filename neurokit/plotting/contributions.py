"""Modality contributions of an M4oE report as a figure."""
from __future__ import annotations

import json
from pathlib import Path

from neurokit._utils.errors import ConfigError


def plot_contributions(report: str | Path | dict, out: str | Path) -> Path:
    """Bar chart of each task's mean modality shares with the per-sample values as dots.

    Parameters
    ----------
    report : path to ``report.json`` of ``neuro finetune --head m4oe`` or ``neuro evaluate --json``, or
        the dict itself
    out : PNG path

    Raises
    ------
    ConfigError
        The report holds no ``modality_contributions`` (not an M4oE run).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    src = report if isinstance(report, dict) else None
    if src is None:
        p = Path(report)
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such report")
        try:
            src = json.loads(p.read_text())
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{p}: not a JSON report ({exc})") from exc
    tasks = {n: t for n, t in (src.get("tasks") or {}).items() if isinstance(t, dict) and "modality_contributions" in t}
    if not tasks:
        raise ConfigError(f"{report if not isinstance(report, dict) else 'report'}: no modality_contributions "
                          "(an M4oE run's report.json from `neuro finetune --head m4oe`)")
    mods = list(dict.fromkeys(m for t in tasks.values() for m in t["modality_contributions"]["modalities"]))
    fig, ax = plt.subplots(figsize=(max(4.5, 1.5 + 1.4 * len(tasks)), 3.4))
    width = 0.8 / len(mods)
    rng = np.random.default_rng(0)
    colors = plt.get_cmap("tab10")
    for j, m in enumerate(mods):
        xs, means = [], []
        for i, (n, t) in enumerate(tasks.items()):
            mc = t["modality_contributions"]
            if m not in mc["mean"]:
                continue
            x = i + (j - (len(mods) - 1) / 2) * width
            xs.append(x)
            means.append(mc["mean"][m])
            vals = [s[m] for s in mc.get("per_sample", []) if m in s]
            if vals:
                ax.scatter(x + rng.uniform(-width / 4, width / 4, len(vals)), vals, s=4, color="k", alpha=0.25, zorder=3)
        ax.bar(xs, means, width * 0.9, label=m, color=colors(j), zorder=2)
    ax.set_xticks(range(len(tasks)), list(tasks), rotation=15, ha="right", fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of MToE routing mass")
    ax.set_title("Modality contributions\n(share of routing mass, not causal importance)", fontsize=9)
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="y", alpha=0.3, zorder=0)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
