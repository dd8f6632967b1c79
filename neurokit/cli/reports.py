"""The tables a command prints: metrics beside baselines and chance, M4oE contributions, evaluation-scheme folds."""
from __future__ import annotations

from pathlib import Path

from rich.markup import escape
from rich.table import Table

from neurokit.cli.common import console, metrics_table

#: the metrics the comparison tables show, in order
COMPARE = ("balanced_accuracy", "cohen_kappa", "auroc", "r2")


def print_report(rep: dict, out: Path) -> None:
    sp = ", ".join(f"{k}: {len(next(iter(v.values())))} {rep['split_by']}(s)" for k, v in rep["splits"].items())
    task = f"task {rep['task']} " if rep.get("task") else ""
    classes = f", classes {rep['label_names']}" if rep.get("label_names") else ""
    if rep.get("init_weights"):
        w = rep["init_weights"]
        console.print(f"init: loaded {w['loaded']}/{w['total']} backbone tensors from {rep['init']}"
                      + ("" if w["complete"] else f" ([yellow]partial[/]: {len(w['missing'])} missing, {len(w['unexpected'])} unexpected)"))
    console.print(f"{task}({rep['kind']}{escape(classes)}); split by {rep['split_by']} — {sp}")
    console.print(f"selected epoch {rep['best_epoch']} on validation {rep['selection_metric']} = {rep['val_best']:.4f}")
    console.print(metrics_table(f"{run_title(rep)}: test metrics ({rep['n_samples']['test']} samples)", rep["test"]))
    if rep.get("degenerate"):
        console.print(f"[bold yellow]not a result:[/] {escape(rep['degenerate'])}")
    if rep.get("baselines") or rep.get("chance"):
        console.print(comparison_table("test split: model vs classical baselines vs chance", {"model": rep}, run_title(rep)))
    if "pretraining_overlap" in rep:
        console.print(overlap_line(rep["pretraining_overlap"], len(rep.get("pretraining_sources") or [])))
    console.print(f"report: {out / 'report.json'}; checkpoint: {out / 'best.pt'}")


def overlap_line(overlap: list | None, n_sources: int = 0) -> str:
    """The pretraining-overlap check as one line: none found, the test recordings found, or not checkable."""
    if overlap is None:
        return "pretraining overlap: not checked (the initial weights record no pretraining sources)"
    if not overlap:
        among = f"the {n_sources} pretraining sources" if n_sources else "the pretraining sources"
        return f"pretraining overlap: none (no test recording among {among}, by SHA-256)"
    names = ", ".join(escape(Path(o["path"]).name + (f"[{o['member']}]" if o.get("member") else "")) for o in overlap[:10])
    more = f" and {len(overlap) - 10} more" if len(overlap) > 10 else ""
    return (f"[bold yellow]pretraining overlap:[/] {len(overlap)} test recording(s) were in the model's pretraining "
            f"data: {names}{more}; the test score may be optimistic")


def comparison_table(title: str, runs: dict, label: str | None = None) -> Table:
    """One row per (task, method): the fine-tuned model, each baseline, chance; test metrics."""
    t = Table(title=title)
    t.add_column("task", overflow="fold")
    t.add_column("method")
    for m in COMPARE:
        t.add_column(m, justify="right")

    def row(task, name, metrics):
        t.add_row(task, name, *(f"{metrics[m]:.3f}" if isinstance(metrics.get(m), float) else "" for m in COMPARE))

    for task, rep in runs.items():  # the task named once, on its first row
        row(task, label or run_title(rep), rep["test"])
        for b, r in (rep.get("baselines") or {}).items():
            if "test" in r:
                row("", b, r["test"])
            else:
                t.add_row("", b, f"failed: {r.get('error', '')}"[:60], *[""] * (len(COMPARE) - 1))
        if rep.get("chance"):
            row("", "chance", rep["chance"])
        t.add_section()
    return t


def run_title(rep: dict) -> str:
    """The display name of a report's model family (reports from before it was recorded: CBraMod)."""
    if rep.get("model_title"):
        return rep["model_title"]
    from neurokit.models.registry import get_model_spec

    return get_model_spec(rep.get("model") or "cbramod").title


def print_m4oe_report(rep: dict, out: Path) -> None:
    title = run_title(rep)
    console.print(f"{title} + M4oE head over {', '.join(rep['tasks'])}; selected epoch {rep['best_epoch']} "
                  f"(validation {rep['selection_metric']} = {rep['val_best']:.4f})")
    console.print(comparison_table(f"test split per task: {title} + M4oE vs classical baselines vs chance", rep["tasks"],
                                   f"{title}+M4oE"))
    console.print(contributions_table(rep["tasks"]))
    console.print(f"report: {out / 'report.json'}; checkpoint: {out / 'best.pt'} (resume: {out / 'last.pt'})")


def contributions_table(tasks: dict) -> Table:
    t = Table(title="modality contributions (mean share of MToE routing mass; not causal importance)")
    t.add_column("task", overflow="fold")
    t.add_column("modality shares")
    for name, r in tasks.items():
        mc = r["modality_contributions"]
        t.add_row(name, ", ".join(f"{m} {v:.3f}" for m, v in mc["mean"].items()))
    return t


def print_scheme_report(rep: dict, out: Path | None = None) -> None:
    """Per-fold table (MOABB's subject/session/score/time, and the test metrics) and mean ± std."""
    names = list(rep["folds"][0]["test"])
    t = Table(title=f"{rep['scheme']}: {len(rep['folds'])} folds")
    for col in ("fold", "subject", "session", rep["folds"][0]["score_metric"], *names):
        t.add_column(col, justify="right" if col not in ("fold", "subject", "session") else "left")
    for f in rep["folds"]:
        t.add_row(f["fold"], f["subject"], f["session"], f"{f['score']:.4f}", *(f"{f['test'].get(k, float('nan')):.4f}" for k in names))
    m, s = rep["mean"], rep["std"]
    t.add_row("mean ± std", "", "", f"{m['score']:.4f} ± {s['score']:.4f}", *(f"{m[k]:.4f} ± {s[k]:.4f}" for k in names))
    console.print(t)
    if out is not None:
        console.print(f"report: {out / 'report.json'}; MOABB-style results: {out / 'results.csv'}")
