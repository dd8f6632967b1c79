"""Issue 28 item 6: figures a person can read. Every figure the gallery (``examples/``) and the CLI
(``neurokit.plotting``: ``neuro plot-report``, ``plot-contributions``, ``plot-surface``) draw is measured: no two
tick labels of an axis overlap (their bounding boxes from the renderer, ``Text.get_window_extent``) and no
legend covers data (bars, markers, curve points)."""

from __future__ import annotations

import runpy
from itertools import combinations
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from test_plotting_report import scheme_run  # noqa: E402, F401  (the hand-made two-fold run, a fixture here)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))


def _tick_labels(axis):
    lo, hi = sorted(axis.get_view_interval())
    span = (hi - lo) * 1e-6
    for tick in axis.get_major_ticks() + axis.get_minor_ticks():
        loc = tick.get_loc()
        if loc is None or not lo - span <= loc <= hi + span or not tick.get_visible():
            continue
        for lab in (tick.label1, tick.label2):
            if lab.get_visible() and lab.get_text().strip():
                yield lab


def _area(a, b) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(w, 0.0) * max(h, 0.0)


def tick_overlaps(fig: Figure) -> list[str]:
    """``"axes 'title' x: 'a' overlaps 'b'"`` for each pair of tick labels of one axis whose boxes share > 1 px²."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    faults = []
    for ax in fig.axes:
        if not ax.axison:  # no axis drawn (a 3-D sphere view): no tick labels to read
            continue
        for name in ("xaxis", "yaxis"):
            labels = [(t.get_text(), t.get_window_extent(r)) for t in _tick_labels(getattr(ax, name))]
            for (ta, ba), (tb, bb) in combinations(labels, 2):
                if _area(ba, bb) > 1.0:
                    faults.append(f"axes {ax.get_title()!r} {name[0]}: {ta!r} overlaps {tb!r}")
    return faults


def _data_points(ax):
    """Display coordinates of what an axes shows as data: bar tops, markers, the vertices of curves (lines drawn
    across the axes, such as ``axhline``, are reference lines, not data)."""
    pts = []
    for p in ax.patches:
        if isinstance(p, Rectangle) and p.get_height() != 0 and p.get_width() != 0 and p.get_visible():
            b = p.get_window_extent()
            pts += [(b.x0 + f * b.width, b.y1 if p.get_height() > 0 else b.y0) for f in (0.1, 0.5, 0.9)]
            pts += [(b.x0 + b.width / 2, b.y0 + f * b.height) for f in (0.25, 0.5, 0.75)]
    for line in ax.lines:
        if line.get_transform() != ax.transData or not line.get_visible():
            continue
        xy = line.get_xydata()
        if len(xy):
            pts += [tuple(p) for p in ax.transData.transform(xy[np.isfinite(xy).all(axis=1)])]
    for c in ax.collections:
        offs = c.get_offsets()
        if len(offs) and c.get_visible() and c.get_offset_transform() == ax.transData:
            pts += [tuple(p) for p in ax.transData.transform(np.asarray(offs))]
    return pts


def legends_on_data(fig: Figure) -> list[str]:
    """``"axes 'title': legend covers N data points"`` for each legend drawn over data of its axes."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    faults = []
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None or not leg.get_visible():
            continue
        box = leg.get_window_extent(r)
        inside = [p for p in _data_points(ax) if box.x0 < p[0] < box.x1 and box.y0 < p[1] < box.y1]
        if inside:
            faults.append(f"axes {ax.get_title()!r}: legend covers {len(inside)} data point(s)")
    return faults


def measure(fig: Figure) -> list[str]:
    return tick_overlaps(fig) + legends_on_data(fig)


@pytest.fixture
def saved_figures(monkeypatch):
    """Every figure a plotting function saves, measured at ``savefig`` (before it is closed)."""
    found: list[str] = []
    real = Figure.savefig

    def savefig(self, fname, *args, **kwargs):
        found.extend(f"{Path(str(fname)).name}: {f}" for f in measure(self))
        return real(self, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return found


# ------------------------------------------------------------------------------------ the measure itself
def test_the_measure_finds_overlapping_ticks_and_a_legend_on_bars():
    fig, ax = plt.subplots(figsize=(3, 2))
    names = [f"mean(Fp{i})" for i in range(12)]
    ax.bar(range(12), np.linspace(0.5, 1.0, 12), label="AUROC")
    ax.set_xticks(range(12), names)
    ax.legend(loc="upper right")
    faults = measure(fig)
    assert any("'mean(Fp0)' overlaps 'mean(Fp1)'" in f for f in faults)
    assert any("legend covers" in f for f in faults)
    ax.set_xticks(range(12), names, rotation=90)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.set_size_inches(6, 3)
    assert measure(fig) == []
    plt.close(fig)


# ------------------------------------------------------------------------------------ the CLI's figures
def test_report_figures_are_readable(saved_figures, scheme_run, tmp_path):  # noqa: F811
    from neurokit.plotting.report import plot_report

    files = plot_report(scheme_run, tmp_path / "figs")
    assert len(files) >= 3
    assert saved_figures == [], "\n".join(saved_figures)


def test_contributions_figure_is_readable(saved_figures, tmp_path):
    from neurokit.plotting.contributions import plot_contributions

    rng = np.random.default_rng(0)
    mods = ["eeg", "ecg", "emg"]

    def task():
        share = rng.dirichlet(np.ones(3), 20)
        inc = rng.normal(0.05, 0.03, (20, 3))
        return {
            "modality_contributions": {
                "modalities": mods,
                "mean": dict(zip(mods, share.mean(0).tolist())),
                "per_sample": [dict(zip(mods, s.tolist())) for s in share],
            },
            "ablation_contributions": {
                "modalities": mods,
                "mean_loss_increase": dict(zip(mods, inc.mean(0).tolist())),
                "per_sample": [dict(zip(mods, s.tolist())) for s in inc],
            },
        }

    names = ["tuab:abnormal", "tuev:events_6class", "sleep_edf:stages", "chbmit:seizure"]
    plot_contributions({"tasks": {n: task() for n in names}}, tmp_path / "c.png")
    assert saved_figures == [], "\n".join(saved_figures)


@pytest.mark.slow
def test_label_efficiency_and_surface_figures_are_readable(saved_figures, surface_root, tmp_path):
    from neurokit.plotting.report import plot_label_efficiency
    from neurokit.plotting.surface import plot_surface

    fr = ["0.02", "0.1", "1"]
    arms = ["pretrained", "scratch", "linear-probe", "linear-probe-random"]
    cmp = {
        "metric": "auroc",
        "fractions": fr,
        "seeds": [0, 1, 2],
        "arms": arms,
        "summary": {a: {f: {"auroc": {"mean": 0.6 + 0.1 * i, "std": 0.05}} for i, f in enumerate(fr)} for a in arms},
        "baselines": {f: {"bandpower_lr": {"auroc": 0.9}, "riemann_lr": {"auroc": 0.7}} for f in fr},
        "chance": {"auroc": 0.5},
        "runs": [],
    }
    plot_label_efficiency(cmp, tmp_path / "le.png")
    fsa5 = surface_root / "fsaverage5_rest/sub-010188_ses-02_task-rest_acq-AP_run-01.fsa5.rh.first100TR.mgz"
    plot_surface(fsa5, tmp_path / "s.png", frame=2)
    assert saved_figures == [], "\n".join(saved_figures)


# ------------------------------------------------------------------------------------ the gallery's figures
@pytest.mark.slow
@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_gallery_figures_are_readable(example, shared, tmp_path, monkeypatch):
    monkeypatch.setenv("NEUROKIT_SHARED", str(shared))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(plt, "show", lambda *a, **k: None)
    plt.close("all")
    faults: list[str] = []
    real = Figure.savefig
    monkeypatch.setattr(
        Figure, "savefig", lambda self, f, *a, **k: (faults.extend(measure(self)), real(self, f, *a, **k))[1]
    )
    runpy.run_path(str(example), run_name="__main__")
    figs = [plt.figure(n) for n in plt.get_fignums()]
    assert figs or faults == [], f"{example.name} drew no figure"
    for i, fig in enumerate(figs):
        faults += [f"figure {i + 1}: {f}" for f in measure(fig)]
    plt.close("all")
    assert faults == [], f"{example.name}:\n" + "\n".join(faults)
