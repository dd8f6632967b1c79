"""Every command in the README's fenced ``bash`` blocks runs as written (issue 8, item 9).

The commands run in order in a temporary folder ``repo/`` next to a ``shared`` link to the shared data, so
``../shared/...`` paths work as written. To stay cheap, :data:`SMALL` appends small settings to the commands
it matches (a later option overrides an earlier one), and ``neuro``/``torchrun -m neurokit`` run in-process
(torchrun itself is tested in ``test_pipelines_eeg.py``). ``pip install`` and ``python -m pytest`` are not run.
A block preceded by a ``<!-- norun: why -->`` line is skipped.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from neurokit.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: the guide's pages in the documentation site's order: their commands run after the README's
GUIDE = [
    "index",
    "reading",
    "cards",
    "preprocessing",
    "stores",
    "models",
    "pretraining",
    "finetuning",
    "m4oe",
    "surface",
    "retrieval",
    "kernels",
    "scale",
    "compare",
]


def documented_text() -> str:
    """The README, then the guide's pages (``docs/guide/*.md``), as one text."""
    return "\n".join([README.read_text()] + [(ROOT / "docs" / "guide" / f"{p}.md").read_text() for p in GUIDE])


#: (regex on the command as written, arguments appended); the first match applies
SMALL: list[tuple[str, list[str]]] = [
    (
        r"^neuro quickstart",
        [
            "--pretrain-epochs",
            "1",
            "--finetune-epochs",
            "1",
            "--n-layers",
            "1",
            "--channels",
            "C3,Cz,C4",
            "--seeds",
            "2",
            "--label-fractions",
            "0.1,1",
            "--max-pool",
            "600",
        ],
    ),
    (r"^neuro prepare physionet_mi", ["--subjects", "1,2,7,9", "--channels", "C3,Cz,C4"]),
    (r"^neuro pretrain .*--model sit", ["--n-layers", "1", "--max-steps", "1", "--batch-size", "4", "--no-progress"]),
    (r"^neuro pretrain .*--resume", ["--max-steps", "3", "--no-progress"]),
    (r"^neuro pretrain", ["--n-layers", "1", "--max-steps", "2", "--batch-size", "8", "--no-progress"]),
    (r"^neuro finetune", ["--epochs", "1", "--batch-size", "16", "--no-progress"]),
]
NOT_RUN = (r"^pip install", r"^python -m pytest")


def readme_commands(text: str) -> list[str]:
    """Commands of the ```bash blocks not marked ``<!-- norun``, comments dropped, ``&&`` chains split."""
    cmds: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```bash":
            prev = next((l.strip() for l in reversed(lines[:i]) if l.strip()), "")
            j = i + 1
            while lines[j].strip() != "```":
                j += 1
            if not prev.startswith("<!-- norun"):
                for line in lines[i + 1 : j]:
                    line = re.sub(r"\s+#.*$", "", line).strip()
                    if line and not line.startswith("#"):
                        cmds += [c.strip() for c in line.split("&&")]
            i = j
        i += 1
    return [c for c in cmds if not any(re.match(p, c) for p in NOT_RUN)]


def _argv(cmd: str) -> list[str]:
    argv = shlex.split(cmd)
    if argv[0] == "torchrun":  # torchrun --nproc_per_node=G -m neurokit ARGS: the same ARGS in one process
        argv = ["neuro", *argv[argv.index("neurokit") + 1 :]]
    assert argv[0] == "neuro", f"README command {cmd!r}: only neuro/torchrun commands can be run by this test"
    as_neuro = shlex.join(argv)
    extra = next((a for p, a in SMALL if re.match(p, as_neuro)), [])
    return argv[1:] + extra


def test_guide_pages_are_all_read():
    pages = {p.stem for p in (ROOT / "docs" / "guide").glob("*.md")}
    assert pages == set(GUIDE), f"tests/test_readme.py GUIDE and docs/guide differ: {sorted(pages ^ set(GUIDE))}"


def test_readme_commands_parse():
    assert _argv("torchrun --nproc_per_node=4 -m neurokit pretrain s.h5 -o x")[-2:] == ["8", "--no-progress"]
    cmds = readme_commands(documented_text())
    assert "neuro cards list" in cmds and not any("pip" in c or "HCP_7T" in c for c in cmds)
    assert any(c.startswith("torchrun") for c in cmds)
    text = "```bash\nneuro a  # x\n```\n<!-- norun: no -->\n\n```bash\nneuro b\n```\n```bash\npip install -e . && neuro c\n```"
    assert readme_commands(text) == ["neuro a", "neuro c"]


@pytest.fixture(scope="module")
def readme_run(shared, tmp_path_factory):
    """Run the README's commands in order; return the work folder and each command's output."""
    root = tmp_path_factory.mktemp("readme")
    (root / "shared").symlink_to(shared)
    work = root / "repo"
    work.mkdir()
    runner = CliRunner()
    outputs = {}
    old = Path.cwd()
    os.chdir(work)
    try:
        for cmd in readme_commands(documented_text()):
            t0 = time.process_time()
            r = runner.invoke(app, _argv(cmd), env={"COLUMNS": "200"})
            print(f"[{time.process_time() - t0:6.1f} s CPU] {cmd}")
            assert r.exit_code == 0, f"README command failed: {cmd}\n{r.output}\n{r.exception!r}"
            outputs[cmd] = r.output
        r = runner.invoke(
            app, _argv(next(c for c in outputs if c.startswith("neuro quickstart"))), env={"COLUMNS": "200"}
        )
        outputs["quickstart again"] = r
    finally:
        os.chdir(old)
    return work, outputs


@pytest.mark.slow
def test_readme_flow_is_leak_free(readme_run):
    work, out = readme_run
    pt = next(v for k, v in out.items() if k.startswith("neuro pretrain runs/mi.h5 -o runs/pt "))
    assert "train split (subjects S001, S002;" in pt
    rep = json.loads((work / "runs/ft/report.json").read_text())
    assert rep["splits"]["test"] == {"subjects": ["S009"]} and rep["init_weights"]["complete"]
    ev = next(v for k, v in out.items() if k.startswith("neuro evaluate"))
    assert "test split metrics" in ev and f"{rep['test']['auroc']:.4f}" in ev


@pytest.mark.slow
def test_quickstart_reruns_and_reuses(readme_run):
    work, out = readme_run
    r = out["quickstart again"]
    assert r.exit_code == 0, r.output
    assert "reusing runs/quickstart/physionet_mi_left_right_imagery_C3-Cz-C4.h5" in r.output
    assert "(reused: the run in OUT was complete)" in r.output
    # 5 arms (pretrained, scratch, EEGNet, the two linear probes) × 2 fractions × 2 seeds, every one reused
    assert r.output.count("reused 20 of 20 runs (same settings, init and data)") == 2


@pytest.mark.slow
def test_quickstart_compares_pretrained_with_scratch(readme_run):
    """Issue 17 item 6: the quick start prints, per task, pretrained and from-scratch rows, the paired difference
    with its spread over seeds, at each label fraction, beside the baselines and chance."""
    work, out = readme_run
    text = next(v for k, v in out.items() if k.startswith("neuro quickstart"))
    cmp = json.loads((work / "runs/quickstart/compare_bonn_epilepsy_seizure/comparison.json").read_text())
    assert cmp["arms"] == ["pretrained", "scratch", "eegnet", "linear-probe", "linear-probe-random"]
    assert cmp["fractions"] == ["0.1", "1"] and cmp["seeds"] == [0, 1] and cmp["metric"] == "auroc"
    d = cmp["differences"]["pretrained − scratch"]["0.1"]["auroc"]
    runs = {(r["arm"], r["seed"]): r["auroc"] for r in cmp["runs"] if r["fraction"] == "0.1"}
    diffs = [runs[("pretrained", s)] - runs[("scratch", s)] for s in (0, 1)]
    assert d["mean"] == pytest.approx(np.mean(diffs)) and d["std"] == pytest.approx(np.std(diffs, ddof=1))
    assert d["better"] == sum(x > 0 for x in diffs) and d["n"] == 2
    for line in ("Δ pretrained − scratch", "better in seeds", "band power + LR", "chance", "labels 10%", "labels 100%"):
        assert line in text
    assert max(len(line) for line in text.splitlines() if "labels" in line or line.startswith("Δ")) <= 80


@pytest.mark.slow
def test_readme_surface_finetune_on_hemisphere_task(readme_run):
    """Item 12: the README's surface fine-tuning command runs on the shared fsaverage5 data."""
    from neurokit.store.patch_store import PatchStore

    work, _ = readme_run
    s = PatchStore(work / "runs/fsa5.h5")
    assert s.attrs["label_names"] == ["left", "right"] and len(s) == 64 and np.bincount(s.labels).tolist() == [32, 32]
    assert sorted(set(s.meta["run"])) == ["01b1", "01b2", "01b3"]
    assert all((s.labels[s.meta["hemi"] == h] == i).all() for i, h in enumerate("LR"))
    rep = json.loads((work / "runs/sit_ft/report.json").read_text())
    assert rep["kind"] == "binary" and rep["split_by"] == "run"
    assert rep["n_samples"] == {"train": 40, "val": 12, "test": 12} and rep["init_weights"]["complete"]


@pytest.mark.slow
def test_readme_eegmat_through_eeg_folder(readme_run):
    """Item 13: the eegmat recordings go through the eeg_folder card with window, crops and notch from the CLI."""
    from neurokit.store.patch_store import PatchStore

    work, _ = readme_run
    s = PatchStore(work / "runs/eegmat.h5")
    assert s.sample_shape == (19, 5, 200) and len(s.attrs["sources"]) == 6
    assert {k: s.attrs["recipe"][k] for k in ("window_s", "crop_start_s", "crop_end_s", "line_freq")} == {
        "window_s": 5.0,
        "crop_start_s": 0.0,
        "crop_end_s": 0.0,
        "line_freq": 50.0,
    }
    # 182 s (Subject04_1: 170 s) and 62 s per subject: 36 (34) + 12 five-second windows before amplitude rejection
    assert len(s) + s.attrs["n_rejected"] == 2 * (36 + 12) + 34 + 12
