"""The tables a command prints: metrics beside baselines and chance, M4oE contributions, evaluation-scheme folds."""

from __future__ import annotations

import json
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from neurokit.cli.common import console, metric_legend, metrics_table, short_metric

#: the metrics the comparison tables show, in order
COMPARE = ("balanced_accuracy", "cohen_kappa", "auroc", "r2")
#: the metrics the comparison tables show when every run is a regression (CBraMod's: Pearson r, R², RMSE)
COMPARE_REGRESSION = ("pearson_r", "r2", "rmse")


def print_report(rep: dict, out: Path) -> None:
    sp = ", ".join(f"{k}: {len(next(iter(v.values())))} {rep['split_by']}(s)" for k, v in rep["splits"].items())
    task = f"task {rep['task']} " if rep.get("task") else ""
    classes = f", classes {rep['label_names']}" if rep.get("label_names") else ""
    if rep.get("init_weights"):
        w = rep["init_weights"]
        console.print(
            f"init: loaded {w['loaded']}/{w['total']} backbone tensors from {rep['init']}"
            + (
                ""
                if w["complete"]
                else f" ([yellow]partial[/]: {len(w['missing'])} missing, {len(w['unexpected'])} unexpected)"
            )
            + (  # a foundation model's file: its task head / pretraining-only tensors, named
                f"; set aside {len(w['set_aside'])} task-head/pretraining tensors ({escape(', '.join(w['set_aside'][:3]))}"
                f"{'…' if len(w['set_aside']) > 3 else ''})"
                if w.get("set_aside")
                else ""
            )
        )
    elif not rep.get("init"):
        console.print(
            "init: none — the backbone starts from random weights (a from-scratch run); give --init a pretrained "
            "checkpoint to fine-tune one"
        )
    if rep.get("input_adaptation"):  # a foundation model: how the store was fed to it
        console.print(f"input: {escape(rep['input_adaptation']['line'])}")
    console.print(f"{task}({rep['kind']}{escape(classes)}); split by {rep['split_by']} — {sp}")
    if rep.get("label_fraction"):
        console.print(label_fraction_line(rep["label_fraction"]))
    if rep.get("probe"):
        console.print(
            f"linear probe: C = {rep['probe']['C']:g} chosen on validation {rep['selection_metric']} = "
            f"{rep['val_best']:.4f}"
        )
    else:
        console.print(
            f"selected epoch {rep['best_epoch']} on validation {rep['selection_metric']} = {rep['val_best']:.4f}"
        )
    console.print(
        metrics_table(
            f"{run_title(rep)}: test metrics ({rep['n_samples']['test']} samples)", rep["test"], rep.get("undefined")
        )
    )
    print_not_a_result(rep)
    if rep.get("paper"):
        console.print(paper_table(rep))
    if (rep.get("confounds") or {}).get("fired"):
        console.print(f"[bold yellow]eye-movement confound:[/] {escape(rep['confounds']['message'])}")
    if rep.get("baselines") or rep.get("chance"):
        console.print(
            comparison_table(
                "test split: model vs classical baselines vs chance", {rep.get("task") or "": rep}, run_title(rep)
            )
        )
    if rep.get("verdict"):
        console.print(verdict_line(rep["verdict"], run_title(rep)))
    if "pretraining_overlap" in rep and (rep.get("init") or rep["pretraining_overlap"] is not None):
        console.print(overlap_line(rep["pretraining_overlap"], len(rep.get("pretraining_sources") or [])))
    if rep.get("split_recordings") is not None:
        console.print(split_recordings_line(rep["split_recordings"]))
    console.print(f"report: {out / 'report.json'}; checkpoint: {out / 'best.pt'}")


def verdict_line(v: dict, model: str) -> str:
    """The run's verdict (:func:`~neurokit.evaluation.baselines.baseline_verdict`) as one line: on which metric the
    model stands where, against the best classical baseline and chance."""
    m = short_metric(v["metric"])
    if v.get("best"):
        side = "above" if v["beats_best"] else "[bold yellow]below[/]"
        rival = f"{side} the best classical baseline ({escape(v['best'])}: {v['best_value']:.3f})"
    else:
        rival = "no classical baseline scored"
    ch = (
        ""
        if v.get("chance") is None
        else f"; chance {v['chance']:.3f}" + ("" if v["beats_chance"] else " ([bold yellow]not beaten[/])")
    )
    return f"verdict on test {m}: {escape(model)} {v['model']:.3f}, {rival}{ch}"


def print_not_a_result(rep: dict, name: str | None = None) -> None:
    """The "not a result" note of a report or score whose predictions carry no information (one predicted class,
    equal scores, one class scored: ``rep["degenerate"]``); nothing otherwise. ``name``: the task, for M4oE."""
    if rep.get("degenerate"):
        task = f"{escape(name)}: " if name else ""
        console.print(f"[bold yellow]not a result:[/] {task}{escape(rep['degenerate'])}")


def overlap_line(overlap: list | None, n_sources: int = 0) -> str:
    """The pretraining-overlap check as one line: none found, the test recordings found, or not checkable."""
    if overlap is None:
        return "pretraining overlap: not checked (the initial weights record no pretraining sources)"
    if not overlap:
        among = f"the {n_sources} pretraining sources" if n_sources else "the pretraining sources"
        return f"pretraining overlap: none (no test recording among {among}, by SHA-256)"
    names = ", ".join(
        escape(Path(o["path"]).name + (f"[{o['member']}]" if o.get("member") else "")) for o in overlap[:10]
    )
    more = f" and {len(overlap) - 10} more" if len(overlap) > 10 else ""
    return (
        f"[bold yellow]pretraining overlap:[/] {len(overlap)} test recording(s) were in the model's pretraining "
        f"data: {names}{more}; the test score may be optimistic"
    )


def split_recordings_line(check: dict, test: str = "test") -> str:
    """The store's own splits compared by content (:func:`~neurokit.data.provenance.check_split_recordings`) as
    one line: none shared, or the recordings shared and whether a test split holding one was scored anyway."""
    shared = check.get("shared") or []
    if not shared:
        return f"split recordings: none shared (the {check.get('checked', 0)} recordings of the splits, by SHA-256)"
    names = ", ".join(
        escape(" = ".join(dict.fromkeys(f"{Path(v).name} ({k})" for k, v in s["splits"].items()))) for s in shared[:5]
    )
    more = f" and {len(shared) - 5} more" if len(shared) > 5 else ""
    allowed = (
        f"; the {test} split holds some: scored anyway (--allow-duplicate-recordings), not a result"
        if check.get("allowed")
        else ""
    )
    return f"[bold yellow]split recordings:[/] {len(shared)} recording(s) in two splits: {names}{more}{allowed}"


def comparison_table(title: str, runs: dict, label: str | None = None) -> Table:
    """One row per (task, method): the fine-tuned model, each baseline, chance; test metrics (a regression's:
    :data:`COMPARE_REGRESSION`)."""
    regression = bool(runs) and all(r.get("kind") == "regression" for r in runs.values())
    cols = COMPARE_REGRESSION if regression else COMPARE
    t = Table(title=title, caption=metric_legend(cols))
    t.add_column("task", overflow="fold", max_width=24)
    t.add_column("method", overflow="fold")
    for m in cols:
        t.add_column(short_metric(m), justify="right")

    def row(task, name, metrics):
        t.add_row(
            task,
            name,
            *(
                f"{metrics[m]:.3f}"
                if isinstance(metrics.get(m), float)
                else "undefined"
                if m in metrics and metrics[m] is None
                else ""
                for m in cols
            ),
        )

    for task, rep in runs.items():  # the task named once, on its first row
        row(task, label or run_title(rep), rep["test"])
        for b, r in (rep.get("baselines") or {}).items():
            name = row_title(b, rep.get("kind"))
            if "test" in r:
                row("", name, r["test"])
            else:
                t.add_row("", name, f"failed: {r.get('error', '')}"[:60], *[""] * (len(cols) - 1))
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
    console.print(
        f"{title} + M4oE head over {', '.join(rep['tasks'])}; selected epoch {rep['best_epoch']} "
        f"(validation {rep['selection_metric']} = {rep['val_best']:.4f})"
    )
    console.print(
        comparison_table(
            f"test split per task: {title} + M4oE vs classical baselines vs chance", rep["tasks"], f"{title}+M4oE"
        )
    )
    for name, r in rep["tasks"].items():
        print_not_a_result(r, name)
    console.print(contributions_table(rep["tasks"]))
    console.print(f"report: {out / 'report.json'}; checkpoint: {out / 'best.pt'} (resume: {out / 'last.pt'})")


def contributions_table(tasks: dict) -> Table:
    t = Table(
        title="modality contributions (mean share of MToE routing mass, not causal importance; ablation: "
        "task loss increase when the modality is masked)"
    )
    t.add_column("task", overflow="fold")
    t.add_column("routing shares")
    t.add_column("ablation: loss increase")
    for name, r in tasks.items():
        mc = r["modality_contributions"]
        ab = (r.get("ablation_contributions") or {}).get("mean_loss_increase") or {}
        t.add_row(
            name,
            ", ".join(f"{m} {v:.3f}" for m, v in mc["mean"].items()),
            ", ".join(f"{m} {v:+.3f}" for m, v in ab.items()) or "—",
        )
    return t


def print_scheme_report(rep: dict, out: Path | None = None) -> None:
    """Per-fold table (MOABB's subject/session/score/time, and the test metrics) and mean ± std."""
    names = [m for m in COMPARE if m in rep["folds"][0]["test"]]  # all metrics: report.json
    t = Table(title=f"{rep['scheme']}: {len(rep['folds'])} folds")
    cols = ("fold", "subject", "session", rep["folds"][0]["score_metric"], *names)
    t.caption = metric_legend(cols[3:])
    for col in cols:
        t.add_column(
            short_metric(col), justify="right" if col not in ("fold", "subject", "session") else "left", overflow="fold"
        )
    for f in rep["folds"]:
        t.add_row(
            f["fold"],
            f["subject"],
            f["session"],
            _num(f["score"]),
            *(_num(f["test"].get(k, float("nan"))) for k in names),
        )
    m, s = rep["mean"], rep["std"]
    t.add_section()
    t.add_row("mean", "", "", _num(m["score"]), *(_num(m.get(k, float("nan"))) for k in names))
    t.add_row("± std", "", "", _num(s["score"]), *(_num(s.get(k, float("nan"))) for k in names))
    console.print(t)
    if out is not None:
        console.print(f"report: {out / 'report.json'}; MOABB-style results: {out / 'results.csv'}")


def _num(v) -> str:
    """A metric cell: 3 decimals, or ``undefined`` for ``None`` (a metric the split cannot define)."""
    return "undefined" if v is None else f"{v:.3f}"


def label_fraction_line(info: dict) -> str:
    """What a ``label_fraction`` run learnt from, in one line."""
    how = (
        f"whole subjects {', '.join(info['subjects'])}"
        if info["mode"] == "subjects"
        else "windows stratified by class and subject"
    )
    counts = ", ".join(f"{k}: {v}" for k, v in info["class_counts"].items())
    return (
        f"label fraction {info['fraction']:g}: {info['n_train']} of {info['n_train_full']} training windows "
        f"({how}; per class {counts})"
    )


#: width of the comparison table's first column and of each fraction's column (3 fractions fit 80 columns)
_ARM_W, _CELL_W, _PER_BLOCK = 34, 15, 3

#: the names the comparison's rows go by, printed and in the README's table (the ids stay in comparison.json)
ARM_TITLES = {
    "scratch": "from scratch",
    "linear-probe": "linear probe: pretrained features",
    "linear-probe-random": "linear probe: random features",
    "eegnet": "EEGNet-8,2",
}


def row_title(name: str, kind: str | None = None) -> str:
    """The printed name of a comparison arm or a classical baseline (:data:`ARM_TITLES`,
    :data:`~neurokit.evaluation.baselines.BASELINE_TITLES`; on a ``kind`` ``"regression"`` task the ridge ones'
    :data:`~neurokit.evaluation.baselines.REGRESSION_TITLES`; others as they are): ``"riemann_lr"`` →
    ``"tangent space + LR"``."""
    from neurokit.evaluation.baselines import BASELINE_TITLES, REGRESSION_TITLES

    reg = REGRESSION_TITLES.get(name) if kind == "regression" else None
    return ARM_TITLES.get(name) or reg or BASELINE_TITLES.get(name) or name


def _difference_title(name: str, titles: dict | None = None) -> str:
    """``"pretrained − scratch"`` → ``"Δ pretrained − scratch"``; ``"linear-probe − linear-probe-random"`` →
    ``"Δ probe: pretrained − random"``; ``"pretrained-lora − scratch"`` → ``"Δ lora − scratch"``; ``"pretrained − eegnet"`` → ``"Δ pretrained − EEGNet"``."""
    a, b = name.split(" − ")
    if titles and a in titles:  # a model comparison: its rows' names (CBraMod (pretrained) − EEGNet-8,2)
        return f"Δ {titles[a].split(' (')[0]} − {titles.get(b, row_title(b)).split(' (')[0]}"
    if a == "linear-probe":
        return "Δ probe: pretrained − random"
    short = "pretrained" if a == "pretrained" else a.replace("pretrained-", "")
    return f"Δ {short} − {'scratch' if b == 'scratch' else 'EEGNet' if b == 'eegnet' else 'random'}"


def comparison_lines(res: dict, metric: str | None = None) -> list[str]:
    """The comparison as text lines of at most 80 characters: one row per arm (test ``metric`` mean ± std over
    seeds at each label fraction), the paired differences (Δ mean ± std, seeds better / seeds), the classical
    baselines and chance; fractions in blocks of three.

    Parameters
    ----------
    res : dict
        :func:`neurokit.pipelines.compare.compare_pretraining`'s result (or its ``comparison.json``).
    metric : str, optional
        Default the task's selection metric (``res["metric"]``).
    """
    metric = metric or res["metric"]
    fracs = res["fractions"]
    titles = res.get("arm_titles") or {}
    lines = [
        f"test {metric}: mean ± std over {len(res['seeds'])} seed(s) ({res['kind']}; seeds "
        f"{', '.join(map(str, res['seeds']))})"[:80]
    ]

    def ms(st, signed=False):
        if not st or st.get("mean") is None:
            return "undefined"
        return f"{st['mean']:{'+' if signed else ''}.3f} ± {st['std']:.3f}"

    for lo in range(0, len(fracs), _PER_BLOCK):
        block = fracs[lo : lo + _PER_BLOCK]
        lines.append("")
        lines.append(f"{'arm':<{_ARM_W}}" + "".join(f"{'labels ' + f'{float(f):.0%}':>{_CELL_W}}" for f in block))
        lines.append("-" * (_ARM_W + _CELL_W * len(block)))
        na = res.get("not_applicable") or {}
        for arm in res["arms"]:
            by_f = res["summary"].get(arm, {})
            lines.append(
                f"{titles.get(arm, row_title(arm))[: _ARM_W - 1]:<{_ARM_W}}"
                + "".join(f"{na[arm] if arm in na else ms(by_f.get(f, {}).get(metric)):>{_CELL_W}}" for f in block)
            )
        for name, by_f in res["differences"].items():
            lines.append(
                f"{_difference_title(name, titles)[: _ARM_W - 1]:<{_ARM_W}}"
                + "".join(f"{ms(by_f.get(f, {}).get(metric), True):>{_CELL_W}}" for f in block)
            )
            lines.append(
                f"{'  better in seeds':<{_ARM_W}}"
                + "".join(f"{_better(by_f.get(f, {}).get(metric)):>{_CELL_W}}" for f in block)
            )
        names = list(dict.fromkeys(n for f in block for n in res.get("baselines", {}).get(f, {})))
        for n in names:
            lines.append(
                f"{(('best baseline: ' if res.get('classical') else '') + row_title(n))[: _ARM_W - 1]:<{_ARM_W}}"
                + "".join(f"{_cell(res['baselines'].get(f, {}).get(n, {}).get(metric)):>{_CELL_W}}" for f in block)
            )
        if res.get("chance") and metric in res["chance"]:
            lines.append(f"{'chance':<{_ARM_W}}" + "".join(f"{res['chance'][metric]:>{_CELL_W}.3f}" for f in block))
    lines += verdict_lines(res, metric)
    return lines


def verdict_lines(res: dict, metric: str) -> list[str]:
    """Per pretrained arm and fraction, one line of at most 80 characters: does it beat the best of scratch,
    EEGNet and the classical baselines (:func:`neurokit.evaluation.comparison.verdicts`), and in how many seeds."""
    from neurokit.evaluation.comparison import verdicts

    table = verdicts(res, metric)
    if not table:
        return []
    if res.get("contenders") is not None:  # a model comparison
        rivals = " and ".join(["EEGNet" if r == "eegnet" else r for r in res.get("rivals") or []] + ["the baselines"])
        lines = ["", f"does each foundation model beat the best of {rivals}?"]
    else:
        lines = ["", "does the pretrained model beat the best of scratch, eegnet and the baselines?"]
    for arm, by_f in table.items():
        for f, v in by_f.items():
            head = f"{(res.get('arm_titles') or {}).get(arm, arm).split(' (')[0]} at {float(f):.0%}: "
            if v["beats"] is None:
                lines.append(f"{head}no rival or no score to compare")
                continue
            word = "yes" if v["beats"] else "no"
            best = row_title(v["best"]) if res.get("contenders") is not None else v["best"]
            line = f"{head}{word}, {v['mean']:.3f} vs {best} {v['best_mean']:.3f}; above it in {v['better']} of {v['n']} seeds"
            # the quick start's lines keep their width; a comparison of named models says them whole
            lines.append(line if res.get("contenders") is not None else line[:80])
    return lines


def _better(st) -> str:
    return "" if not st or not st.get("n") else f"{st['better']} of {st['n']}"


def _cell(v) -> str:
    return "undefined" if v is None else f"{v:.3f}"


def degenerate_summary(res: dict) -> str | None:
    """The runs of a comparison whose test predictions were one class, per arm and fraction (``None``: none), e.g.
    ``"one predicted class for every test window in scratch at 2% (3 of 3 seeds): balanced accuracy and kappa are
    not results there; AUROC still ranks"``."""
    one: dict[tuple, list] = {}
    for r in res["runs"]:
        if r.get("degenerate"):
            one.setdefault((r["arm"], r["fraction"]), []).append(r["seed"])
    if not one:
        return None
    n = len(res["seeds"])
    what = "; ".join(f"{arm} at {float(f):.0%} ({len(s)} of {n} seeds)" for (arm, f), s in one.items())
    return (
        f"one predicted class for every test window in {what}: balanced accuracy and kappa are not results "
        "there; AUROC still ranks"
    )


def print_comparison(res: dict, out: Path) -> None:
    """Print :func:`comparison_lines`, the label subsets taken and where the files are."""
    for line in comparison_lines(res):
        console.print(escape(line), highlight=False, soft_wrap=True)
    one_class = degenerate_summary(res)
    if one_class:
        console.print(f"[bold yellow]not a result:[/] {escape(one_class)}", highlight=False)
    modes = sorted({sub.get("mode") for by_seed in res.get("subsets", {}).values() for sub in by_seed.values()})
    console.print(
        f"label subsets: {', '.join(m for m in modes if m)}; per-run rows: {out / 'comparison.csv'}; "
        f"all numbers: {out / 'comparison.json'}",
        highlight=False,
    )


def paper_table(rep: dict) -> Table:
    """The run's test metrics beside the figures the papers report for the dataset (the card's ``paper``): one row
    for this run, one per published model (``paper: LaBraM-Base``), the metrics in the card's order; the source of
    each published row (the paper and its table) numbered in the caption."""
    paper = rep.get("paper") or {}
    sources = rep.get("paper_sources") or {}
    metrics = list(rep.get("paper_metrics") or []) or sorted({m for figs in paper.values() for m in figs})
    t = Table(title="test split: this run vs the papers' reported figures (not rerun here)")
    t.add_column("")
    for m in metrics:
        t.add_column(m, justify="right")
    mine = rep.get("test") or {}
    t.add_row("this run", *(_num(mine[m]) if mine.get(m) is not None else "-" for m in metrics))
    notes: list[str] = []
    for model, figs in paper.items():
        mark = ""
        if sources.get(model):
            notes.append(f"[{len(notes) + 1}] {sources[model]}")
            mark = f" [{len(notes)}]"
        t.add_row(f"paper: {model}{mark}", *(f"{figs[m]:.4f}" if m in figs else "-" for m in metrics))
    if notes:
        t.caption = "\n".join(notes)
        t.caption_justify = "left"
    return t


def settings_line(res: dict) -> str:
    """What every run of a model comparison shared (:func:`neurokit.pipelines.compare_models.compare_models`'s
    ``settings``), in one line."""
    st = res.get("settings") or {}
    eeg = f" (EEGNet: {st['eegnet_epochs']} epochs at its authors' lr 1e-3)" if st.get("eegnet_epochs") else ""
    return (
        f"every model: the same split (by {st.get('split_by')}), seeds {', '.join(map(str, res['seeds']))}, label "
        f"fractions {', '.join(res['fractions'])}; {st.get('epochs')} epochs{eeg}, batch {st.get('batch_size')}, "
        f"lr {st.get('lr_backbone'):.3g} backbone / {st.get('lr_head'):.3g} head, {st.get('schedule')}; the classical "
        "baselines fitted once per fraction, the best chosen on validation"
    )


def published_lines(res: dict, metric: str | None = None) -> list[str]:
    """The figures the papers report for the compared models on this dataset (the card's ``paper``: not rerun here;
    their splits, preprocessing and schedules), one line each with its source; none when the card gives none."""
    paper = res.get("paper") or {}
    if not paper:
        return []
    metric = metric or res["metric"]
    sources = res.get("paper_sources") or {}
    lines = [f"published test {metric} on this dataset (the papers' figures, not rerun here):"]
    for model, figs in paper.items():
        value = f"{figs[metric]:.4f}" if metric in figs else "-"
        others = ", ".join(f"{m} {v:.4f}" for m, v in figs.items() if m != metric)
        lines.append(f"  {model}: {value}" + (f" ({others})" if others else "") + f" — {sources.get(model, '?')}")
    return lines


def print_model_comparison(res: dict, out: Path) -> None:
    """``neuro compare``'s output: the shared settings, the quick start's table (:func:`print_comparison`), the
    classical baseline chosen, the papers' figures for the compared models, and how each model was fed."""
    console.print(escape(settings_line(res)), highlight=False, soft_wrap=True)
    print_comparison(res, out)
    for fk, c in (res.get("classical") or {}).items():
        if c.get("best"):
            console.print(
                f"best classical baseline at {float(fk):.0%} of the labels: {escape(row_title(c['best']))} "
                f"(highest {c['chosen_on']} of {len(c['all'])})",
                highlight=False,
            )
    reused = sum(bool(r.get("reused")) for r in res["runs"])
    if reused:
        console.print(f"reused {reused} of {len(res['runs'])} runs (same settings, init and data)", highlight=False)
    for line in published_lines(res):
        console.print(escape(line), highlight=False, soft_wrap=True)
    for how in (res.get("adaptations") or {}).values():  # each model's input contract applied to the store
        said = how.get("line") if isinstance(how, dict) else None
        console.print(f"fed as: {escape(said or json.dumps(how, default=str))}", highlight=False, soft_wrap=True)
