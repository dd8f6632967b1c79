"""What every command shares: the consoles, one-line errors in the CLI's words, logging, the flag-aware
command class and option parsers."""

from __future__ import annotations

import json
import functools
import logging
import re
import warnings
from pathlib import Path
from typing import Any, Callable, List, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperCommand

from neurokit._utils.errors import NeurokitError

console = Console(soft_wrap=True)  # paths in messages are not cut at the terminal width


err = Console(stderr=True, soft_wrap=True)  # one line per message, also when stderr is a file or a pipe


def is_main_rank() -> bool:
    import os

    return os.environ.get("RANK", "0") == "0"


#: ``neuro -v`` / ``neuro --quiet`` (the app's own options, before the command): more or less than the default
VERBOSITY = {"verbose": False, "quiet": False}


def setup_logging(verbose: bool) -> None:
    """Logging of a command, as MNE's ``verbose`` means it: warnings by default; ``-v`` (the command's, or ``neuro
    -v``) adds the INFO lines (each file, each stage) and MNE's own; ``neuro --quiet`` keeps errors only and no
    progress. Log lines and Python warnings are shown in the CLI's words (:func:`cli_words`)."""
    from rich.logging import RichHandler

    class CliWordsHandler(RichHandler):
        def format(self, record: logging.LogRecord) -> str:
            return cli_words(super().format(record))

    from neurokit._utils.progress import set_quiet

    quiet = VERBOSITY["quiet"]
    verbose = (verbose or VERBOSITY["verbose"]) and not quiet
    set_quiet(quiet)
    try:
        import mne

        mne.set_log_level("INFO" if verbose else "ERROR" if quiet else "WARNING")
    except ImportError:  # pragma: no cover - mne is a dependency
        pass
    if quiet:  # Python warnings too (a run's own, MNE's, scikit-learn's): --quiet promises none
        warnings.simplefilter("ignore")
    logging.basicConfig(
        level=logging.ERROR if quiet else logging.INFO if verbose else logging.WARNING,
        format="%(message)s",
        handlers=[CliWordsHandler(console=err, show_path=False)],
        force=True,
    )
    if not getattr(warnings.formatwarning, "cli_words", False):
        python_format = warnings.formatwarning

        def formatwarning(message, *args, **kwargs):
            return python_format(cli_words(str(message)), *args, **kwargs)

        formatwarning.cli_words = True  # type: ignore[attr-defined]
        warnings.formatwarning = formatwarning


#: Python parameter name → the CLI flag(s) that set it, where the two names differ (``splits`` → the three subject
#: options). Messages raised below the CLI name the parameter (``allow_partial=True``, ``spheres=``);
#: :func:`cli_words` shows them to a command's user with the flag: the running command's own option of that name
#: first, then this table, then the option of that name on another command (``hop`` of ``neuro embed-stimuli`` in
#: a pretraining message).
PARAMETER_FLAGS: dict[str, str] = {
    "splits": "--train-subjects/--val-subjects/--test-subjects",
    "label_fraction": "--label-fractions",
    "allow_partial": "--allow-partial-init",
    "spheres": "--sphere-l/--sphere-r",
    "crop_start_s": "--crop-start",
    "crop_end_s": "--crop-end",
    "min_duration_s": "--min-duration",
    "stream_above_mb": "--stream-above",
    "lag_s": "--lag",
    "ckpt_every": "--checkpoint-every",
    "size": "--model-size",
    "n_negatives": "--negatives",
    "n_queries": "--queries",
}


def _is_option(prm) -> bool:
    return bool(getattr(prm, "opts", None)) and str(prm.opts[0]).startswith("-")


def _all_options() -> dict:
    """Parameter name → the option of that name on the ``neuro`` commands (names whose options differ between
    commands are left out); empty before a command runs."""
    group = NeuroCommand.root
    if group is None:
        return {}
    return _options_of(group)


@functools.lru_cache(maxsize=4)
def _options_of(group) -> dict:
    found: dict = {}
    for cmd in group.commands.values():  # type: ignore[attr-defined]
        for c in (getattr(cmd, "commands", None) or {"": cmd}).values():
            for prm in filter(_is_option, c.params):
                found.setdefault(prm.name, []).append(prm)
    return {n: ps[0] for n, ps in found.items() if len({p.opts[0] for p in ps}) == 1}


def parameter_flag(name: str, value: str | None = None) -> str | None:
    """The CLI's way to say ``name=value`` (``value`` as written, quotes removed; ``None``: the option alone): the
    running command's option of that name, else :data:`PARAMETER_FLAGS`, else another command's option of that
    name; ``None`` when none knows ``name``.

    ``overwrite=True`` → ``--overwrite``, ``hemi='L'`` → ``--hemi L``, ``frozen=False`` → ``--no-frozen`` (a flag's
    off side), ``splits=`` → ``--train-subjects/--val-subjects/--test-subjects``."""
    cmd = NeuroCommand.running
    prm = next((p for p in (cmd.params if cmd else []) if p.name == name and _is_option(p)), None)
    if prm is None and name in PARAMETER_FLAGS:
        opt = PARAMETER_FLAGS[name]
        return opt if value in (None, "True") or "/" in opt else f"{opt} {value}"
    prm = prm or _all_options().get(name)
    if prm is None:
        return None
    if value is None:
        return prm.opts[0]
    if getattr(prm, "is_flag", False):
        if value in ("True", "False") and prm.secondary_opts:
            return prm.opts[0] if value == "True" else prm.secondary_opts[0]
        return prm.opts[0]
    return f"{prm.opts[0]} {value}"


def cli_words(text: str) -> str:
    """A message from below the CLI in the CLI's words: each parameter it names as ``name=value`` or ``name=``
    becomes the running command's option (:func:`parameter_flag`: ``overwrite=True`` → ``--overwrite``,
    ``hemi='L'`` → ``--hemi L``, ``allow_partial=True`` → ``--allow-partial-init``), and
    ``[PosixPath('a.h5')]`` → ``a.h5``. The old convention ``name=value (CLI: --flag)`` still reads as ``--flag``
    (no message should be written so: drop this rule when none is left)."""
    text = re.sub(r"[\w.]+=[^\s,;()]+(?: or [\w.]+=[^\s,;()]+)? \(CLI: ([^)]+)\)", r"\1", text)
    text = re.sub(r"\[((?:\w*Path\('[^']*'\)(?:, )?)+)\]", lambda m: m.group(1), text)
    text = re.sub(r"\w*Path\('([^']*)'\)", r"\1", text)
    # a mapping or list written as Python (``splits={'train': [...], ...}``): the option(s) alone
    text = re.sub(
        r"\b([a-z][a-z0-9_]*)=(\{[^{}]*\}|\[[^\[\]]*\])",
        lambda m: parameter_flag(m.group(1)) or m.group(0),
        text,
    )

    def flag(m):
        value = m.group(3) if m.group(3) is not None else m.group(2)
        return parameter_flag(m.group(1), value) or m.group(0)

    return re.sub(r"\b([a-z][a-z0-9_]*)=(?:'([^']*)'|([\w.-]+(?::[\w.-]+)*)|(?=[\s,;:)]|$))", flag, text)


def fail(exc: Exception) -> None:
    err.print(f"[bold red]error:[/] {escape(cli_words(str(exc)))}")
    raise typer.Exit(code=2)


def run_or_exit(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except (NeurokitError, OSError, ValueError) as exc:  # OSError: permissions, full disk, missing files
        fail(exc)
    except RuntimeError as exc:  # libraries that report a full disk without an errno (PyTorch's zip writer)
        from neurokit._utils.disk import is_disk_full

        if not is_disk_full(exc):
            raise
        fail(OSError(f"disk full ({(str(exc).splitlines() or [''])[0][:120]}); free space, then run the command again"))
    except KeyboardInterrupt as exc:
        msg = getattr(exc, "message", None) or "interrupted; nothing was saved"
        err.print(f"[bold yellow]interrupted:[/] {escape(cli_words(msg.removeprefix('interrupted').lstrip(': ')))}")
        raise typer.Exit(code=130) from None


def model_families(pretrain: bool) -> str:
    """The model families ``--model`` takes, from the registry (:data:`neurokit.models.registry.MODELS`; those with a
    pretraining objective, :data:`neurokit.training.objectives.OBJECTIVES`, for ``pretrain``), each with the data it
    trains on: ``"cbramod (EEG), sit (surface fMRI) or clip (surface fMRI, needs --stimuli)"``."""
    from neurokit.models.registry import MODELS
    from neurokit.training.objectives import OBJECTIVES

    data = {"eeg": "EEG", "surface": "surface fMRI"}
    names = [n for n in MODELS if n in OBJECTIVES] if pretrain else list(MODELS)
    parts = [
        f"{n} ({data.get(MODELS[n].modality, MODELS[n].modality)}"
        + (", needs --stimuli" if pretrain and OBJECTIVES[n].pair is not None else "")
        + ")"
        for n in names
    ]
    return ", ".join(parts[:-1]) + f" or {parts[-1]}" if len(parts) > 1 else "".join(parts)


#: option help that needs imports a run does not make (the model registry imports torch), filled in when the help
#: is shown: ``{NAME}`` in an option's help becomes ``HELP_TEXT[NAME]()``
HELP_TEXT: dict[str, Callable[[], str]] = {
    "pretrain_models": lambda: model_families(pretrain=True),
    "finetune_models": lambda: model_families(pretrain=False),
}


class NeuroCommand(TyperCommand):
    """A command whose on/off flags given a value (``--frozen False``) get a message saying how flags work,
    instead of click's "unexpected extra argument"; its options' help may hold ``{NAME}`` of :data:`HELP_TEXT`."""

    def format_help(self, ctx, formatter):
        for prm in self.params:
            text = getattr(prm, "help", None)
            if text and "{" in text:
                prm.help = re.sub(r"\{(\w+)\}", lambda m: HELP_TEXT[m[1]]() if m[1] in HELP_TEXT else m[0], text)
        return super().format_help(ctx, formatter)

    BOOL_WORDS = {"true", "false", "yes", "no", "on", "off", "0", "1"}
    running: "NeuroCommand | None" = None  # the command being run (for cli_words)
    root: Any = None  # the ``neuro`` group it runs under (every command's options, for cli_words)

    def parse_args(self, ctx, args):
        NeuroCommand.running = self
        NeuroCommand.root = ctx.find_root().command
        flags = {
            o: prm for prm in self.params if getattr(prm, "is_flag", False) for o in (*prm.opts, *prm.secondary_opts)
        }
        for i, a in enumerate(args):
            name, _, val = a.partition("=")
            nxt = val or (args[i + 1] if i + 1 < len(args) else "")
            if name in flags and nxt.lower() in self.BOOL_WORDS:
                prm = flags[name]
                off = f" or {prm.secondary_opts[0]} to turn it off" if prm.secondary_opts else " (leave it out for off)"
                raise typer.BadParameter(
                    f"{name} is an on/off flag and takes no value (got {nxt!r}): give {prm.opts[0]} to turn it on{off}",
                    ctx=ctx,
                    param=prm,
                )
        return super().parse_args(ctx, args)


def parse_subjects(text: Optional[str]) -> Optional[List[str]]:
    """``--subjects`` → store subject ids: numbers and ranges (``1-3,7``) become ``S001`` …, other parts are ids
    as written (``sub-01,sub-02``); ``None`` (not given) means every subject. An empty value, a backwards range or
    one of more than a million subjects exits with one line (:func:`~neurokit.cards.parse_ranges`)."""
    if text is None:
        return None
    from neurokit.cards import parse_ranges

    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or all(re.fullmatch(r"[0-9]+(\s*-\s*[0-9]+)?", p) for p in parts):
        return [f"S{s:03d}" for s in run_or_exit(parse_ranges, text)]
    return parts


def parse_splits(train: Optional[str], val: Optional[str], test: Optional[str]) -> Optional[dict]:
    """``--train/--val/--test-subjects`` → ``{"train": [...], "val": [...], "test": [...]}`` (``None`` when none is
    given); one or two of the three: exit 2 asking for all three."""
    if train is None and val is None and test is None:
        return None
    if not (train and val and test):
        fail(ValueError("give all three of --train-subjects, --val-subjects and --test-subjects"))
    return {"train": parse_subjects(train), "val": parse_subjects(val), "test": parse_subjects(test)}


#: short column headers of the metrics (tables fit 80 columns); :func:`metric_legend` spells them out
SHORT_METRICS = {
    "balanced_accuracy": "bal.acc",
    "cohen_kappa": "kappa",
    "f1_weighted": "F1 w.",
    "auroc": "AUROC",
    "auc_pr": "AUC-PR",
    "average_precision": "AP",
    "pearson_r": "r",
    "r2": "R²",
    "rmse": "RMSE",
    "accuracy": "acc",
    "roc_auc": "ROC AUC",
}


def short_metric(name: str) -> str:
    """The column header of metric ``name`` (``balanced_accuracy`` → ``bal.acc``)."""
    return SHORT_METRICS.get(name, name)


def metric_legend(names) -> str:
    """A caption spelling out the short headers used for ``names`` (empty when none is shortened)."""
    parts = [
        f"{short_metric(n)} = {n.replace('_', ' ')}"
        for n in names
        if short_metric(n) != n and short_metric(n).lower() != n.replace("_", " ").lower()
    ]
    return "; ".join(parts)


def metrics_table(title: str, metrics: dict, undefined: dict | None = None) -> Table:
    """Metric name → value; a metric in ``undefined`` (name → reason) shows its reason instead of a number."""
    t = Table(title=title)
    t.add_column("metric")
    t.add_column("value", justify="right")
    for k, v in metrics.items():
        if isinstance(v, float):
            t.add_row(k, f"{v:.4f}")
        elif v is None and undefined and k in undefined:
            t.add_row(k, str(undefined[k]))
    return t


def option_given(ctx, name: str) -> bool:
    """Whether the user gave option ``name`` (on the command line or through its environment variable)."""
    src = ctx.get_parameter_source(name)
    return src is not None and src.name in ("COMMANDLINE", "ENVIRONMENT")


def options_given(ctx) -> set[str]:
    """The options the user gave, by their first flag (``--folds``, ``--task``…)."""
    return {
        str(prm.opts[0])
        for prm in ctx.command.params
        if getattr(prm, "opts", None) and str(prm.opts[0]).startswith("-") and option_given(ctx, prm.name)
    }


def record_command(ctx, out: Path, *, report: str = "report.json") -> None:
    """Add the command line to the run's record (:func:`neurokit.pipelines.outputs.record_run`): ``cli``, the
    command, every one of its options with the value it took (given or defaulted; in a resumed run, an option not
    given again shows the run's setting it kept) and the flags given, in ``OUT/run_config.json`` and the ``config``
    section of ``OUT/<report>``. Written by the main rank only."""
    from neurokit.pipelines.outputs import record_run

    if not is_main_rank() or not Path(out).is_dir():
        return
    options = dict(ctx.params)
    if options.get("resume"):  # an option not given again took the resumed run's setting, not the flag's default
        try:
            settings = json.loads((Path(out) / "run_config.json").read_text()).get("settings") or {}
        except (OSError, ValueError):
            settings = {}
        # a setting kept at the top level (read_order, seed) or inside a group (optim's lr, model_kwargs' n_layers)
        kept = {k: v for group in settings.values() if isinstance(group, dict) for k, v in group.items()}
        kept.update(settings)
        for k, v in kept.items():
            if k in options and not option_given(ctx, k) and (v is None or isinstance(v, (str, int, float, bool))):
                options[k] = v
    cli = {"command": f"neuro {ctx.info_name}", "options": options, "given": sorted(options_given(ctx))}
    record_run(out, {"cli": cli}, report=report)


def check_json_out(path: Optional[Path]) -> None:
    """Refuse a ``--json`` path that cannot be written (a folder) before any work is done."""
    if path is not None and path.is_dir():
        fail(ValueError(f"--json {path}: is a folder; give the path of a .json file to write"))


def parse_fractions(text: str) -> list[float]:
    """``"0.02,0.1,1"`` → ``[0.02, 0.1, 1.0]``; a value that is not a number in (0, 1] raises ConfigError."""
    from neurokit._utils.errors import ConfigError

    out = []
    for part in text.split(","):
        try:
            f = float(part)
        except ValueError:
            raise ConfigError(f"--label-fractions {text}: {part.strip()!r} is not a number (e.g. 0.02,0.1,1)") from None
        if not 0 < f <= 1:
            raise ConfigError(f"--label-fractions {text}: {f:g} is not in (0, 1] (fractions of the training labels)")
        out.append(f)
    return out
