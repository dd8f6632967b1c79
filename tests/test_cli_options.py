"""`neuro finetune` / `neuro pretrain` options × heads and model families: each pair either works (tiny runs:
1 layer, 1 epoch, small synthetic stores, shared through module-scoped fixtures) or is refused with one line
and exit code 2, before any training. Nothing is silently ignored."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from neurokit.cards import load_card
from neurokit.cli.main import app
from neurokit.store.patch_store import PatchStoreWriter
from neurokit.models.checkpoint import load_checkpoint

runner = CliRunner()
FAST = ["--epochs", "1", "--batch-size", "8", "--n-layers", "1", "--no-progress", "--device", "cpu", "--no-baselines"]
PRE = ["--epochs", "1", "--max-steps", "1", "--batch-size", "8", "--n-layers", "1", "--no-progress", "--device", "cpu"]


pytestmark = pytest.mark.usefixtures("two_torch_threads")


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def refused(r, *words):
    """Exit code 2 with a single-line message naming ``words`` (and no traceback)."""
    lines = r.output.strip().splitlines()
    assert r.exit_code == 2, r.output
    assert len(lines) == 1 and lines[0].startswith("error:"), r.output
    assert all(w in lines[0] for w in words), (words, r.output)
    assert "Traceback" not in r.output


@pytest.fixture(scope="module")
def eeg_store(tmp_path_factory):
    """Bonn seizure store of 4 subjects (train seg001/seg002, val seg061, test seg081), 8 one-patch windows
    each; class 1 carries a 10 Hz rhythm."""
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("opts") / "bonn.h5"
    card = load_card("bonn_epilepsy")
    t = np.arange(200) / 200.0
    with PatchStoreWriter(
        path,
        (1, 1, 200),
        attrs=dict(
            modality="eeg",
            card="bonn_epilepsy",
            card_body=card.raw,
            task="seizure",
            label_names=card.classes("seizure"),
            ch_names=["EEG"],
            sfreq=200.0,
        ),
    ) as w:
        for s in ("seg001", "seg002", "seg061", "seg081"):
            y = np.array([0, 1] * 4)
            x = rng.normal(0, 0.3, (8, 1, 1, 200)).astype(np.float32)
            x += (y[:, None, None, None] * 1.5 * np.sin(2 * np.pi * 10 * t)).astype(np.float32)
            w.append(x, y, subject=s, run=[f"{s}_{i}" for i in range(8)])
    return path


@pytest.fixture(scope="module")
def surface_store(tmp_path_factory):
    """A surface store of one subject, four runs of 4 tubelets (3 frames × 20 patches × 15 vertices)."""
    rng = np.random.default_rng(1)
    path = tmp_path_factory.mktemp("opts") / "surf.h5"
    with PatchStoreWriter(path, (3, 20, 15), attrs=dict(modality="surface", label_names=["a", "b"], tr=1.0)) as w:
        for r in ("r1", "r2", "r3", "r4"):
            y = np.array([0, 1, 0, 1])
            x = rng.normal(0, 1, (4, 3, 20, 15)).astype(np.float32) + y[:, None, None, None]
            w.append(x, y, subject="sub01", run=r)
    return path


@pytest.fixture(scope="module")
def cbramod_ckpt(eeg_store, tmp_path_factory):
    out = tmp_path_factory.mktemp("pt") / "cbramod"
    r = cli("pretrain", eeg_store, "-o", out, "--split", "all", *PRE)
    assert r.exit_code == 0, r.output
    return out / "last.pt"


@pytest.fixture(scope="module")
def sit_ckpt(surface_store, tmp_path_factory):
    out = tmp_path_factory.mktemp("pt") / "sit"
    r = cli("pretrain", surface_store, "-o", out, "--model", "sit", "--batch-size", "4", *PRE[:4], *PRE[6:])
    assert r.exit_code == 0, r.output
    return out / "last.pt"


@pytest.fixture
def bars(monkeypatch):
    """The descriptions of the progress bars the trainer opens."""
    import neurokit.training.trainer as tr

    seen = []

    class Bar:
        def __init__(self, total, start=0, description="", enabled=True):
            seen.append(description)

        def update(self, **info):
            pass

        def close(self):
            pass

    monkeypatch.setattr(tr, "TrainProgress", Bar)
    return seen


# ------------------------------------------------------------------------------- refused, no training
M4OE = ["--head", "m4oe", "--task", "bonn_epilepsy:seizure"]
SUBJ = ["--train-subjects", "seg001", "--val-subjects", "seg061", "--test-subjects", "seg081"]


@pytest.mark.parametrize(
    "args,words",
    [
        ([*M4OE, "--scheme", "loso"], ["--scheme loso", "--head m4oe"]),
        ([*M4OE, "--folds", "3"], ["--folds", "m4oe"]),
        ([*M4OE, *SUBJ], ["subject splits", "m4oe"]),
        ([*M4OE, "--augment", "noise=5,mixup=0.2"], ["mixup", "M4oE"]),
        ([*M4OE, "--resume", "--overwrite"], ["--resume", "--overwrite"]),
        (["--head", "avgpool", "--task", "bonn_epilepsy:seizure"], ["--task", "--head m4oe"]),
        (["--head", "avgpool", "--modality", "eeg"], ["--modality", "--head m4oe"]),
        (["--head", "all_patch_reps", "--alpha", "0.2"], ["--alpha", "--head m4oe"]),
        (["--head", "avgpool", "--focal-gamma", "2"], ["--focal-gamma", "--head m4oe"]),
        (["--head", "avgpool", "--m4oe-preset", "paper"], ["--m4oe-preset", "--head m4oe"]),
        (["--head", "avgpool", "--folds", "3"], ["--folds", "--scheme card"]),
        (["--head", "all_patch_reps", "--scheme", "loso", "--folds", "3"], ["--folds", "--scheme loso"]),
        (["--head", "avgpool", "--scheme", "loso", "--resume"], ["--resume", "--scheme loso"]),
        (["--head", "avgpool", "--scheme", "loso", *SUBJ], ["subject splits", "--scheme loso"]),
        (["--head", "avgpool", "--frozen", "--lr-backbone", "1e-3"], ["--lr-backbone", "--frozen"]),
        (["--head", "avgpool", "--allow-partial-init"], ["--allow-partial-init", "without --init"]),
        ([*M4OE, "--allow-partial-init"], ["--allow-partial-init", "without --init"]),
        (["--head", "avgpool", "--label-smoothing", "0.2"], ["--label-smoothing", "binary task"]),
        ([*M4OE, "--alpha", "-1"], ["--alpha -1", "must be >= 0"]),
        (["--head", "avgpool", "--resume"], ["nothing to resume"]),
        (["--head", "avgpool", "--train-subjects", "seg001"], ["--train-subjects", "--val-subjects"]),
        (["--head", "bogus"], ["bogus"]),
        (["--model", "bogus"], ["unknown model 'bogus'"]),
        (["--head", "avgpool", "--scheme", "bogus"], ["bogus"]),
    ],
)
def test_finetune_refuses_options_that_do_not_apply(eeg_store, tmp_path, args, words):
    r = cli("finetune", eeg_store, "-o", tmp_path / "ft", *FAST, *args)
    refused(r, *words)
    assert not (tmp_path / "ft").exists()


@pytest.mark.parametrize(
    "args,words",
    [
        (["--model-size", "small"], ["--model-size", "--model cbramod"]),
        (["--mask-ratio", "0.5"], ["--mask-ratio", "--model cbramod"]),
        (["--recipe", "reference"], ["--recipe", "--model cbramod"]),
        (["--model", "sit", "--recipe", "bogus"], ["--recipe bogus", "neurokit, reference"]),
        (["--model", "sit", "--stimuli", "x.h5"], ["--stimuli", "--model sit"]),
        (["--model", "sit", "--lag", "4"], ["--lag", "--model sit"]),
        (["--segments", "first_half"], ["--segments", "--model cbramod"]),
        (["--schedule", "constant", "--min-lr", "1e-5"], ["--min-lr", "constant"]),
        (["--split", "all", "--subjects", "seg001"], ["--split", "--subjects"]),
        (["--resume", "--overwrite"], ["--resume", "--overwrite"]),
        (["--model", "bogus"], ["unknown model 'bogus'"]),
    ],
)
def test_pretrain_refuses_options_that_do_not_apply(eeg_store, tmp_path, args, words):
    r = cli("pretrain", eeg_store, "-o", tmp_path / "pt", *PRE, *args)
    refused(r, *words)
    assert not (tmp_path / "pt").exists()


def test_finetune_refuses_a_model_other_than_the_init_checkpoints(eeg_store, cbramod_ckpt, tmp_path):
    refused(
        cli(
            "finetune",
            eeg_store,
            "-o",
            tmp_path / "ft",
            "--init",
            cbramod_ckpt,
            "--model",
            "sit",
            "--head",
            "avgpool",
            *FAST[:4],
            *FAST[6:],
        ),
        "--model",
        "drop --model",
    )


def test_m4oe_refuses_a_surface_backbone(eeg_store, sit_ckpt, tmp_path):
    # a SiT checkpoint for EEG tasks: refused before any head is built, naming the family and the store's samples
    refused(
        cli("finetune", eeg_store, "-o", tmp_path / "m", *M4OE, "--init", sit_ckpt, *FAST[:4], *FAST[6:]),
        "SiT checkpoint",
        "pretrained on surface stores",
        "eeg samples",
    )


def test_single_task_refuses_a_checkpoint_of_the_other_modality(
    surface_store, eeg_store, sit_ckpt, cbramod_ckpt, tmp_path
):
    refused(
        cli("finetune", surface_store, "-o", tmp_path / "a", "--init", cbramod_ckpt, *FAST[:4], *FAST[6:]),
        "CBraMod checkpoint",
        "surface samples",
    )
    refused(
        cli("finetune", eeg_store, "-o", tmp_path / "b", "--init", sit_ckpt, *FAST[:4], *FAST[6:]),
        "SiT checkpoint",
        "eeg samples",
    )


def test_sit_refuses_eeg_augmentation(surface_store, sit_ckpt, tmp_path):
    refused(
        cli(
            "finetune",
            surface_store,
            "-o",
            tmp_path / "ft",
            "--init",
            sit_ckpt,
            "--augment",
            "noise=5",
            *FAST[:4],
            *FAST[6:],
        ),
        "augmentation",
        "EEG",
    )


# ------------------------------------------------------------------------------------------ working
@pytest.fixture(scope="module")
def avgpool_run(eeg_store, cbramod_ckpt, tmp_path_factory):
    out = tmp_path_factory.mktemp("ft") / "avgpool"
    r = cli(
        "finetune",
        eeg_store,
        "-o",
        out,
        "--init",
        cbramod_ckpt,
        "--head",
        "avgpool",
        "--augment",
        "noise=5",
        "--allow-partial-init",
        *FAST[:4],
        *FAST[6:],
    )
    assert r.exit_code == 0, r.output
    return out, r.output


def test_finetune_avgpool_with_augment_and_resume(avgpool_run, eeg_store, cbramod_ckpt):
    out, output = avgpool_run  # (--plots of single-task runs: tests/test_schemes.py)
    assert "CBraMod" in output and (out / "last.pt").exists()
    rep = json.loads((out / "report.json").read_text())
    assert rep["model"] == "cbramod" and rep["head"] == "avgpool" and [h["epoch"] for h in rep["history"]] == [1]
    cfg = load_checkpoint(out / "best.pt")["finetune_config"]
    assert cfg["model"] == "cbramod" and cfg["augment"]["noise"] == 5.0 and cfg["allow_partial_init"] is True
    common = [
        "finetune",
        eeg_store,
        "-o",
        out,
        "--init",
        cbramod_ckpt,
        "--head",
        "avgpool",
        "--augment",
        "noise=5",
        "--allow-partial-init",
        "--batch-size",
        "8",
        "--no-progress",
        "--device",
        "cpu",
        "--no-baselines",
    ]
    r = cli(*common, "--epochs", "2", "--resume")
    assert r.exit_code == 0, r.output
    rep = json.loads((out / "report.json").read_text())
    assert [h["epoch"] for h in rep["history"]] == [1, 2]
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2
    refused(cli(*common, "--epochs", "2", "--resume"), "--epochs 3 or more")
    refused(cli(*common, "--epochs", "3", "--resume", "--lr-head", "1e-2"), "lr_head")  # other settings
    refused(cli(*common, "--epochs", "1"), "--overwrite", "--resume")  # a run is there


def test_finetune_all_patch_reps_from_scratch_with_a_scheme(eeg_store, tmp_path, bars):
    r = cli(
        "finetune",
        eeg_store,
        "-o",
        tmp_path / "k",
        "--head",
        "all_patch_reps",
        "--scheme",
        "kfold-subject",
        "--folds",
        "2",
        *FAST[:6],
        "--device",
        "cpu",
        "--no-baselines",
    )
    assert r.exit_code == 0, r.output
    rep = json.loads((tmp_path / "k" / "report.json").read_text())
    assert rep["scheme"] == "kfold-subject" and len(rep["folds"]) == 2
    assert bars == ["finetune CBraMod (binary)"] * 2


def test_m4oe_with_augment_partial_init_frozen_and_plots(eeg_store, cbramod_ckpt, tmp_path, bars):
    out = tmp_path / "m"
    r = cli(
        "finetune",
        eeg_store,
        "-o",
        out,
        *M4OE,
        "--init",
        cbramod_ckpt,
        "--augment",
        "noise=5,scale=0.1",
        "--allow-partial-init",
        "--frozen",
        "--plots",
        *FAST[:6],
        "--device",
        "cpu",
        "--no-baselines",
    )
    assert r.exit_code == 0, r.output
    assert "CBraMod+M4oE" in r.output and (out / "plots" / "contributions.png").exists()
    assert bars == ["finetune CBraMod (M4oE)"]
    ck = load_checkpoint(out / "best.pt")
    assert ck["model"] == "cbramod" and ck["finetune_config"]["augment"]["scale"] == 0.1
    assert ck["finetune_config"]["allow_partial_init"] is True and ck["finetune_config"]["frozen"] is True
    again = [
        "finetune",
        eeg_store,
        "-o",
        out,
        *M4OE,
        "--init",
        cbramod_ckpt,
        "--augment",
        "noise=5,scale=0.1",
        "--allow-partial-init",
        "--frozen",
        "--epochs",
        "2",
        "--batch-size",
        "8",
        "--no-progress",
        "--device",
        "cpu",
        "--no-baselines",
        "--resume",
    ]
    refused(cli(*again, "--n-layers", "1", "--alpha", "0.5"), "alpha", "--overwrite")  # another head setting
    refused(cli(*again), "model_kwargs")  # --n-layers not given again: another backbone
    assert load_checkpoint(out / "last.pt")["finetune_config"]["head"] == "m4oe"
    assert load_checkpoint(out / "best.pt")["finetune_config"]["head"] == "m4oe"


def test_sit_finetune_is_labelled_sit_everywhere(surface_store, sit_ckpt, tmp_path, bars):
    out = tmp_path / "sit"
    r = cli(
        "finetune",
        surface_store,
        "-o",
        out,
        "--init",
        sit_ckpt,
        "--epochs",
        "1",
        "--batch-size",
        "4",
        "--device",
        "cpu",
        "--no-baselines",
    )
    assert r.exit_code == 0, r.output
    assert "SiT" in r.output and "CBraMod" not in r.output
    assert bars == ["finetune SiT (binary)"]
    rep = json.loads((out / "report.json").read_text())
    assert rep["model"] == "sit" and rep["model_title"] == "SiT" and rep["head"] == "avgpool"
    ck = load_checkpoint(out / "best.pt")
    assert ck["model"] == "sit" and ck["finetune_config"]["model"] == "sit"


def test_pretrain_progress_bar_names_the_model(surface_store, tmp_path, bars):
    r = cli(
        "pretrain",
        surface_store,
        "-o",
        tmp_path / "pt",
        "--model",
        "sit",
        "--model-size",
        "tiny",
        "--mask-ratio",
        "0.5",
        "--epochs",
        "1",
        "--max-steps",
        "1",
        "--batch-size",
        "4",
        "--n-layers",
        "1",
        "--device",
        "cpu",
    )
    assert r.exit_code == 0, r.output
    assert bars == ["pretrain SiT"]
    assert load_checkpoint(tmp_path / "pt" / "last.pt")["model_config"]["mask_ratio"] == 0.5


def test_a_resumed_pretraining_records_the_settings_it_kept(eeg_store, tmp_path):
    # --read-order block, then --resume without it: the run keeps reading in blocks, and the record says so (it said
    # the flag's default, random)
    out = tmp_path / "pt"
    base = ["pretrain", eeg_store, "-o", out, "--split", "all", "--batch-size", "8", "--n-layers", "1"]
    base += ["--no-progress", "--device", "cpu"]
    r = cli(*base, "--epochs", "1", "--read-order", "block", "--seed", "3", "--lr", "7e-4")
    assert r.exit_code == 0, r.output
    r = cli(*base, "--epochs", "2", "--resume")
    assert r.exit_code == 0, r.output
    rec = json.loads((out / "run_config.json").read_text())
    assert rec["settings"]["read_order"] == "block" and rec["settings"]["seed"] == 3
    assert rec["cli"]["options"]["read_order"] == "block" and rec["cli"]["options"]["seed"] == 3
    assert rec["settings"]["optim"]["lr"] == rec["cli"]["options"]["lr"] == 7e-4  # kept inside the optim group
    assert rec["cli"]["options"]["epochs"] == 2 and rec["cli"]["options"]["resume"] is True
    assert "--read-order" not in rec["cli"]["given"] and "--epochs" in rec["cli"]["given"]


def test_compare_takes_partial_init_weights_only_when_allowed(eeg_store, cbramod_ckpt, tmp_path):
    # a checkpoint that lacks one backbone tensor covers only part of the backbone: neuro compare names
    # --allow-partial-init when refusing it, and has that flag
    import torch

    ckpt = load_checkpoint(cbramod_ckpt)
    gone = next(k for k in ckpt["state_dict"] if "weight" in k and "head" not in k)
    del ckpt["state_dict"][gone]
    torch.save(ckpt, tmp_path / "partial.pt")
    args = [
        "compare",
        eeg_store,
        "-o",
        tmp_path / "cmp",
        "--models",
        "cbramod",
        "--init",
        f"cbramod={tmp_path / 'partial.pt'}",
    ]
    args += ["--seeds", "1", "--epochs", "1", "--batch-size", "8", "--head", "avgpool", "--device", "cpu"]
    args += ["--no-progress"]
    r = cli(*args)
    assert r.exit_code == 2 and "--allow-partial-init" in r.output and "Traceback" not in r.output, r.output
    r = cli(*args, "--allow-partial-init")
    assert r.exit_code == 0, r.output
    rep = json.loads((tmp_path / "cmp" / "cbramod" / "frac1" / "seed0" / "report.json").read_text())
    assert rep["model"] == "cbramod"
    refused(cli("compare", eeg_store, "-o", tmp_path / "c2", "--models", "cbramod", "--allow-partial-init"),
            "--allow-partial-init", "no model has init weights")  # fmt: skip
