"""Issue 28 item 3: every remedy within reach. Each ``--option`` that a message in neurokit's source names is an
option of a command that can print that message (typer introspection of the ``neuro`` app); BIDS bad channels
that cannot be interpolated have their remedies on ``neuro prepare``; ``neuro baseline`` refuses a one-class
training split as ``neuro finetune`` does."""

import ast
import re
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

import neurokit
from neurokit.cli.main import app

SRC = Path(neurokit.__file__).parent

#: which commands print the messages of a module (by path prefix under neurokit/, longest match wins); a module
#: not listed may be reached from any command
PRINTED_BY = {
    "cli/prepare.py": ["prepare"],
    "cli/train.py": ["pretrain", "finetune"],
    "cli/evaluate.py": ["evaluate", "baseline"],
    "cli/confounds.py": ["check-confounds"],
    "cli/plots.py": ["plot-report", "plot-contributions", "plot-surface"],
    "cli/stimuli.py": ["embed-stimuli", "retrieve"],
    "cli/quickstart.py": ["quickstart"],
    "cli/main.py": [""],
    "io/": ["prepare"],
    "datasets/": ["prepare"],
    "cards/": ["prepare", "quickstart"],
    "preprocessing/": ["prepare", "quickstart"],
    "pipelines/prepare.py": ["prepare", "quickstart"],
    "pipelines/pretrain.py": ["pretrain", "quickstart"],
    "pipelines/finetune.py": ["finetune", "quickstart"],
    "pipelines/multitask.py": ["finetune"],
    "pipelines/compare.py": ["finetune", "quickstart", "baseline"],  # baseline: baseline_with_eegnet
    "pipelines/evaluate.py": ["evaluate"],
    "pipelines/retrieval.py": ["retrieve"],
    "evaluation/retrieval.py": ["retrieve"],
    "pipelines/outputs.py": ["finetune"],
    "evaluation/baselines.py": ["baseline", "finetune"],
    "evaluation/schemes.py": ["finetune", "evaluate"],
    "evaluation/confounds.py": ["check-confounds", "finetune"],
    "training/": ["pretrain", "finetune"],
    "models/checkpoint.py": ["finetune", "evaluate"],
    "models/weights.py": ["finetune"],
    "models/heads.py": ["finetune", "evaluate"],
    "models/registry.py": ["pretrain", "finetune"],
    "models/sit.py": ["pretrain"],
    "stimuli/": ["embed-stimuli", "retrieve"],
    "plotting/": ["plot-report", "plot-contributions", "plot-surface", "finetune"],
    "data/pairs.py": ["pretrain", "retrieve", "embed-stimuli"],
    "data/splits.py": ["finetune", "baseline", "quickstart"],
}

OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9](?![\w-])")
NAMED_COMMAND = re.compile(r"\bneuro ([a-z][a-z-]+)")


def command_options() -> dict[str, set[str]]:
    """Command name → its long options (both sides of a ``--x/--no-x`` flag); ``""``: the app's own."""
    group = typer.main.get_command(app)
    out = {"": {o for p in group.params for o in p.opts + p.secondary_opts}}
    for name, cmd in group.commands.items():
        subs = getattr(cmd, "commands", None) or {name: cmd}
        for c in subs.values():
            out.setdefault(name, set()).update(o for p in c.params for o in p.opts + p.secondary_opts)
    return out


def messages():
    """``(module, line, text)`` of every string in a ``raise`` or a call (messages, warnings, logs) of the source."""
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.Raise, ast.Call)):
                continue
            parts = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            text = " ".join(parts)
            if "--" in text:
                yield rel, node.lineno, text


def printed_by(rel: str, known: dict) -> list[str]:
    keys = [k for k in PRINTED_BY if rel.startswith(k)]
    return PRINTED_BY[max(keys, key=len)] if keys else sorted(known)


def remedy_faults() -> list[str]:
    known = command_options()
    faults: list[str] = []
    for rel, line, text in messages():
        for seg_cmd, seg in _segments(text):
            cmds = [seg_cmd] if seg_cmd is not None else printed_by(rel, known)
            for opt in OPTION.findall(seg):
                fault = f"{rel}:{line}: {opt} is not an option of {' / '.join(c or 'neuro' for c in cmds)}"
                if not any(opt in known.get(c, set()) for c in cmds) and fault not in faults:
                    faults.append(fault)
    return faults


def _segments(text: str):
    """The text cut at each ``neuro CMD`` it names: ``(CMD, text up to the next one)``; before the first: ``None``."""
    cuts = [(m.start(), m.group(1)) for m in NAMED_COMMAND.finditer(text)]
    first = cuts[0][0] if cuts else len(text)
    yield None, text[:first]
    for (start, cmd), (end, _) in zip(cuts, [*cuts[1:], (len(text), "")]):
        seg = text[start:end]
        stop = min([i for i in (seg.find(c) for c in (";", ")", "`", ". ")) if i > 0] + [len(seg)])
        yield (cmd if cmd in command_options() else None), seg[:stop]  # the command's own clause
        yield None, seg[stop:]


def test_every_option_a_message_names_exists_on_its_command():
    faults = remedy_faults()
    assert not faults, "\n".join(faults)


#: a Python keyword written as a remedy (``allow_nan=True``, ``hemi='L'``)
PY_KWARG = re.compile(r"\b([a-z][a-z0-9_]*)=(True|False|None|'[^']*'|\.\.\.|[0-9][0-9.]*)")
#: modules whose messages only the Python API prints (no command reaches them with a Python keyword as the fix)
API_ONLY = (
    "kernels/",
    "models/cbramod.py",
    "models/clip.py",
    "models/sit.py",
    "models/m4oe.py",
    "models/registry.py",  # from_pretrained(...)
    "models/serialization.py",  # says how it reads (torch.load(weights_only=True)), names no remedy
    "data/augment.py",  # examples of --augment's own value
    "cli/train.py",
    "training/estimator.py",  # the scikit-learn estimator: Python (MOABB) only
)


def all_messages():
    """``(module, line, text)`` of every string in a ``raise`` or a call of the source (not only those naming an
    option)."""
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Raise, ast.Call)):
                parts = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
                yield rel, node.lineno, " ".join(parts)


def command_parameters() -> dict[str, set[str]]:
    """Command name → the Python names of its options (``surf_mesh`` for ``--surf``)."""
    group = typer.main.get_command(app)
    out: dict[str, set[str]] = {}
    for name, cmd in group.commands.items():
        for c in (getattr(cmd, "commands", None) or {name: cmd}).values():
            out.setdefault(name, set()).update(p.name for p in c.params if p.name)
    return out


def _reachable(name: str, cmds: list[str], known: dict, params: dict, table: dict) -> bool:
    """Whether one of ``cmds`` sets parameter ``name``: the flag(s) ``table`` gives it, else its option of that name."""
    if name in table:
        return all(any(f in known.get(c, set()) for c in cmds) for f in table[name].split("/"))
    return any(name in params.get(c, set()) for c in cmds)


def python_only_remedies(found=None) -> list[str]:
    """Messages a command prints that name a Python keyword as the remedy without the command's way to do it: an
    ``--option`` or the card's key in the message, or a keyword the CLI turns into an option of the command (or of
    a command the message names) (:func:`neurokit.cli.common.cli_words`: ``hemi='L'`` → ``--hemi L`` under ``neuro
    prepare``; ``allow_partial=True`` → ``--allow-partial-init`` through
    :data:`~neurokit.cli.common.PARAMETER_FLAGS`)."""
    from neurokit.cli.common import PARAMETER_FLAGS

    known = command_options()
    params = command_parameters()
    faults = []
    for rel, line, text in found if found is not None else all_messages():
        if rel.startswith(API_ONLY) or not PY_KWARG.search(text):
            continue
        if "--" in text or "card's" in text:
            continue
        cmds = printed_by(rel, known) + [c for c in NAMED_COMMAND.findall(text) if c in known]

        if all(_reachable(m.group(1), cmds, known, params, PARAMETER_FLAGS) for m in PY_KWARG.finditer(text)):
            continue  # the CLI says it with the command's own option
        kw = PY_KWARG.search(text).group(0)
        fault = f"{rel}:{line}: names {kw} and no way to do it from the command"
        if fault not in faults:
            faults.append(fault)
    return faults


def test_no_message_a_command_prints_names_only_a_python_keyword():
    """Issue 35 item 8: ``normalize_names=False``, ``allow_nan=True``, ``eeg_only=False`` were named to users of
    ``neuro prepare`` with no option to do it."""
    faults = python_only_remedies()
    assert not faults, "\n".join(faults)
    planted = [("io/eeg.py", 1, "read it with normalize_names=False"), ("io/eeg.py", 2, "x=True (--x)")]
    planted += [("models/weights.py", 3, "pass allow_partial=True"), ("plotting/surface.py", 4, "surf_mesh='a.gii'")]
    assert python_only_remedies(planted) == [
        "io/eeg.py:1: names normalize_names=False and no way to do it from the command"
    ]


def test_the_collector_sees_a_wrong_option(monkeypatch):
    """A planted message naming an option its command lacks is found (the check above can fail)."""
    planted = [("io/bids.py", 1, "read with interpolate_bads=False (CLI: --no-interpolate-bad)")]
    planted.append(("cli/evaluate.py", 2, "run neuro finetune --allow-seen to score them"))
    monkeypatch.setattr(__import__(__name__), "messages", lambda: iter(planted))
    assert remedy_faults() == [
        "io/bids.py:1: --no-interpolate-bad is not an option of prepare",
        "cli/evaluate.py:2: --allow-seen is not an option of finetune",
    ]


# ------------------------------------------------------------------------------------- BIDS bad channels
def test_bids_bad_channel_remedies_are_options_of_neuro_prepare(tmp_path):
    pytest.importorskip("mne_bids")
    from test_io_bids_interpolation import _bids

    path = _bids(tmp_path, ["Xref"])  # Xref: an EEG channel without a sensor position, marked bad
    root = str(tmp_path / "bids")

    def prepare(name, *extra):
        args = ["prepare", "--bids", root, "--task", "rest", "-o", str(tmp_path / name), *extra]
        return CliRunner().invoke(app, args, env={"COLUMNS": "300"})

    r = prepare("a.h5")
    msg = " ".join(r.output.split())
    assert r.exit_code == 2 and "bad channel(s) ['Xref'] (channels.tsv) have no sensor position" in msg
    assert "--no-interpolate-bads" in msg and "--drop-channels Xref" in msg
    assert str(path.parent / "sub-01_task-rest_channels.tsv") in msg  # the file to edit, named
    from neurokit.store.patch_store import PatchStore

    for opts in (["--no-interpolate-bads"], ["--drop-channels", "xref"]):  # either way on: Xref is not stored
        r = prepare(f"{opts[0]}.h5", *opts)
        assert r.exit_code == 0, r.output
        assert PatchStore(tmp_path / f"{opts[0]}.h5").info.ch_names == ("C3", "Cz", "C4", "Fz", "Pz", "Oz")
    # not a BIDS recording: refused, naming the option that does apply
    r = CliRunner().invoke(app, ["prepare", "physionet_mi", "-o", str(tmp_path / "x.h5"), "--drop-channels", "Fp1"])
    assert r.exit_code == 2 and "--drop-channels: for BIDS recordings" in " ".join(r.output.split())


# ------------------------------------------------------------------------------------- baseline, one class
def test_baseline_refuses_a_one_class_training_split(tmp_path):
    from test_pipelines_eeg import one_class_subject_store

    store = one_class_subject_store(tmp_path / "s.h5")
    args = ["baseline", str(store), "--train-subjects", "S1", "--val-subjects", "S2", "--test-subjects", "S3"]
    r = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    msg = " ".join(r.output.split())
    assert r.exit_code == 2, r.output
    assert "split 'train' holds one class only ('rest', 6 samples of subjects S1)" in msg
    assert "--train-subjects" in msg and "ValueError" not in msg


def test_the_named_reading_remedy_works_from_the_command(tmp_path):
    """The clash message's remedy, the card's ``reading: {normalize_names: false}``, is within reach of ``neuro
    prepare``: refused without it (naming the remedy), stored with it under the file's own labels."""
    import numpy as np
    import yaml
    from edf_build import write_edf

    data = tmp_path / "data"
    data.mkdir()
    x = np.random.default_rng(0).normal(0, 20, (4, 200 * 12))
    write_edf(data / "rec.edf", x, 200.0, ["C3", "T3", "T7", "Cz"])
    card = {
        "name": "own", "modality": "eeg", "title": "t", "source": "s", "licence": "l", "citation": ["c"],
        "layout": {"kind": "folder", "pattern": "*.edf"}, "tasks": {"pre": {"classes": []}},
        "preprocessing": {"l_freq": None, "h_freq": None, "line_freq": None, "window_s": 4.0},
    }  # fmt: skip
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(card))
    args = ["prepare", str(tmp_path / "c.yaml"), "--data-root", str(data), "-o", str(tmp_path / "a.h5")]
    r = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert r.exit_code != 0 and "the card's reading: {normalize_names: false}" in " ".join(r.output.split())
    card["reading"] = {"normalize_names": False}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(card))
    r = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    assert r.exit_code == 0, r.output
    from neurokit.store.patch_store import PatchStore

    assert list(PatchStore(tmp_path / "a.h5").info.ch_names) == ["C3", "T3", "T7", "Cz"]
