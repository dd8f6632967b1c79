"""Issue 28 item 5: the quick start's printed rows and the README's table use one naming, and the quick start says at
its start what it will do and how long that takes on 2 idle cores (the README's figure)."""

import re
from pathlib import Path

from neurokit.cli.reports import comparison_lines, row_title
from neurokit.evaluation.baselines import BASELINE_TITLES
from neurokit.pipelines.quickstart import FRACTIONS, CPU_SECONDS, stage_plan

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
ARMS = ["pretrained", "scratch", "eegnet", "linear-probe", "linear-probe-random"]


def _table_rows() -> list[str]:
    """First cells of the README's quick-start table (the bold task name dropped)."""
    start = README.index("| test AUROC (mean ± std")
    rows = [line for line in README[start:].splitlines()[2:] if line.startswith("|")]
    rows = rows[: next((i for i, r in enumerate(rows) if not r.startswith("|")), len(rows))]
    return [re.sub(r"\*\*[^*]+\*\*[^:]*: ", "", r.split("|")[1].strip()) for r in rows]


def _comparison() -> dict:
    fr = [f"{f:g}" for f in FRACTIONS]
    st = {"mean": 0.9, "std": 0.01}
    return {
        "metric": "auroc",
        "fractions": fr,
        "seeds": [0, 1, 2],
        "kind": "binary",
        "arms": ARMS,
        "summary": {a: {f: {"auroc": st} for f in fr} for a in ARMS},
        "differences": {"pretrained − scratch": {f: {"auroc": {**st, "better": 3, "n": 3}} for f in fr}},
        "baselines": {f: {m: {"auroc": 0.7} for m in ("csp_lda", "riemann_lr", "bandpower_lr")} for f in fr},
        "chance": {"auroc": 0.5},
    }


def test_printed_rows_and_the_readme_table_name_arms_and_baselines_alike():
    rows = _table_rows()
    assert rows[:7] == [
        "pretrained",
        "from scratch",
        "EEGNet-8,2",
        "Δ pretrained − scratch (better in)",
        "Δ pretrained − EEGNet (better in)",
        "linear probe: pretrained / random features",
        "band power + LR; chance",
    ]
    printed = [line[:34].strip() for line in comparison_lines(_comparison())]
    for arm in ARMS:
        assert row_title(arm) in printed
    assert row_title("scratch") == rows[1] and row_title("eegnet") == rows[2]
    assert rows[3].startswith("Δ pretrained − scratch") and rows[4].startswith("Δ pretrained − EEGNet")
    assert "Δ pretrained − scratch" in printed
    # the README joins the two probe rows: "linear probe: pretrained / random features"
    assert (row_title("linear-probe"), row_title("linear-probe-random")) == (
        "linear probe: pretrained features",
        "linear probe: random features",
    )
    for method, title in BASELINE_TITLES.items():
        if method != "patchmean_lr":
            assert title in printed
    assert "band power + LR" in rows[6] and "best baseline (tangent space + LR); chance" in rows
    assert (
        BASELINE_TITLES["riemann_lr"] == "tangent space + LR" and BASELINE_TITLES["bandpower_lr"] == "band power + LR"
    )
    ids = ("riemann_lr", "csp_lda", "bandpower_lr", "linear-probe-random", "linear-probe")
    assert not [line for line in comparison_lines(_comparison()) if any(i in line for i in ids)]


def test_the_quick_start_says_its_stages_and_the_idle_time_first():
    lines = stage_plan(seeds=3, label_fractions=FRACTIONS, pretrain_epochs=3, default=True)
    assert lines[0] == (
        "stages: prepare 2 stores; pretrain CBraMod on their training windows, each with its channels (3 epochs); "
        "compare, per task, 45 fine-tuning runs (5 arms × 3 seeds × 3 label fractions)"
    )
    assert f"about {CPU_SECONDS} s of CPU time in all" in lines[1] and "every 30 s" in lines[1]
    assert lines[2].endswith(
        "190 s in all): prepare 4 s, pretrain 33 s, compare bonn_epilepsy 76 s, compare physionet_mi 77 s"
    )
    text = README.replace("\n", " ")  # the same figures
    assert "prepare 4 s, pretrain 33 s, Bonn 76 s, EEGMMIDB 77 s" in text
    assert f"Measured: about {CPU_SECONDS} s of CPU time" in README  # the same figure
