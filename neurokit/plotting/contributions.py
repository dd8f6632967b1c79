"""Modality contributions of an M4oE report as a figure."""

from __future__ import annotations

import json
from pathlib import Path

from neurokit._utils.errors import ConfigError


def plot_contributions(report: str | Path | dict, out: str | Path) -> Path:
    """Modality contributions of each task: routing shares beside the ablation contribution.

    Left: the mean share of MToE routing mass per task and modality (bars) with the per-sample shares
    (dots). Right, where the report holds ``ablation_contributions`` (neurokit ≥ this release): the mean
    increase of the task's loss when the modality's tokens are masked (bars) with the per-sample
    increases (dots); routing is not causality, the ablation measures what the head loses.

    Parameters
    ----------
    report : path to ``report.json`` of ``neuro finetune --head m4oe`` or ``neuro evaluate --json``, or
        the dict itself
    out : PNG path (its folder is made)

    Returns
    -------
    Path
        The PNG written.

    Raises
    ------
    FileNotFoundError
        No such report.
    ConfigError
        Not JSON, or no ``modality_contributions`` (not an M4oE run).

    Examples
    --------
    >>> plot_contributions("runs/m4oe/report.json", "runs/m4oe/contributions.png")  # doctest: +SKIP
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if isinstance(report, dict):
        src = report
    else:
        p = Path(report)
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such report")
        try:
            src = json.loads(p.read_text())
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{p}: not a JSON report ({exc})") from exc
    tasks = {n: t for n, t in (src.get("tasks") or {}).items() if isinstance(t, dict) and "modality_contributions" in t}
    if not tasks:
        raise ConfigError(
            f"{report if not isinstance(report, dict) else 'report'}: no modality_contributions "
            "(an M4oE run's report.json from `neuro finetune` with head='m4oe')"
        )
    mods = list(dict.fromkeys(m for t in tasks.values() for m in t["modality_contributions"]["modalities"]))
    ablated = {
        n: t["ablation_contributions"]
        for n, t in tasks.items()
        if "mean_loss_increase" in (t.get("ablation_contributions") or {})
    }
    width_one = max(4.5, 1.5 + 1.4 * len(tasks))
    fig, axes = plt.subplots(1, 2 if ablated else 1, figsize=(width_one * (2 if ablated else 1), 3.4), squeeze=False)
    colors = plt.get_cmap("tab10")
    ax = axes[0, 0]
    _bars(ax, {n: t["modality_contributions"] for n, t in tasks.items()}, mods, "mean", colors)
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of MToE routing mass")
    ax.set_title("Routing shares\n(share of routing mass, not causal importance)", fontsize=9)
    if ablated:
        ax2 = axes[0, 1]
        _bars(ax2, ablated, mods, "mean_loss_increase", colors)
        ax2.axhline(0, color="k", lw=0.6)
        ax2.set_ylabel("task loss increase without the modality")
        ax2.set_title("Ablation\n(modality's tokens masked; per sample and mean)", fontsize=9)
    handles, labels = ax.get_legend_handles_labels()
    axes[0, -1].legend(handles, labels, fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def _bars(ax, per_task: dict, mods: list[str], key: str, colors) -> None:
    """Grouped bars of ``per_task[task][key][modality]`` with the ``per_sample`` values as dots."""
    import numpy as np

    width = 0.8 / len(mods)
    rng = np.random.default_rng(0)
    for j, m in enumerate(mods):
        xs, means = [], []
        for i, t in enumerate(per_task.values()):
            v = (t.get(key) or {}).get(m)
            if v is None or not np.isfinite(v):
                continue
            x = i + (j - (len(mods) - 1) / 2) * width
            xs.append(x)
            means.append(v)
            vals = [s[m] for s in t.get("per_sample", []) if s.get(m) is not None]
            if vals:
                ax.scatter(
                    x + rng.uniform(-width / 4, width / 4, len(vals)), vals, s=4, color="k", alpha=0.25, zorder=3
                )
        ax.bar(xs, means, width * 0.9, label=m, color=colors(j), zorder=2)
    ax.set_xticks(range(len(per_task)), list(per_task), rotation=15, ha="right", fontsize=8)
    ax.grid(axis="y", alpha=0.3, zorder=0)
