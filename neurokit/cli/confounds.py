"""``neuro check-confounds``: are a store's labels decodable from eye-movement channels?"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer
from rich.markup import escape
from rich.table import Table

from neurokit.cli.common import (
    check_json_out,
    console,
    fail,
    run_or_exit,
    setup_logging,
)


#: exit status of ``neuro check-confounds`` when the check fires (0: it did not fire or could not check;
#: 2: an error, as every command), so a script can stop before training on a confounded store
CONFOUND_EXIT_CODE = 1


def check_confounds_cmd(
    stores: List[Path] = typer.Argument(..., help="Labelled EEG patch store(s)."),
    split: str = typer.Option("train", help="Split to test, as fine-tuning splits the store: train, val, test or all."),
    permutations: int = typer.Option(
        999, "--permutations", help="Label permutations of the test, within subjects (999: smallest p-value 0.001)."
    ),
    seed: int = typer.Option(0, help="Seed of the permutations."),
    json_out: Optional[Path] = typer.Option(
        None, "--json", show_default="none", help="Also write the result to this JSON file."
    ),
    no_fail: bool = typer.Option(
        False,
        "--no-fail",
        show_default="off",
        help=f"Exit 0 when the check fires (default: exit {CONFOUND_EXIT_CODE}, so a script can tell).",
    ),
) -> None:
    """Test whether the labels are decodable from eye-movement proxies (EOG or frontal channels, F8 − F7): a
    cross-validated ridge classifier on their per-window mean and log-variance, folds grouped by subject; it
    fires at permutation p < 0.01 and AUROC >= 0.60. Prints the figures and the verdict; exit status 1 when it
    fires (0 with --no-fail), 0 when it does not or cannot check, 2 on an error."""
    setup_logging(False)
    check_json_out(json_out)
    if split not in ("train", "val", "test", "all"):
        fail(ValueError(f"--split {split}: choose train, val, test or all"))
    if permutations < 1:
        fail(ValueError(f"--permutations {permutations}: must be >= 1"))
    from neurokit.evaluation.confounds import check_confounds

    res = run_or_exit(check_confounds, list(stores), split, n_permutations=permutations, seed=seed)
    print_confounds(res)
    if json_out:
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps(res.to_dict(), indent=2))
    if res.fired and not no_fail:
        raise typer.Exit(code=CONFOUND_EXIT_CODE)


def print_confounds(res) -> None:
    """The figures of a :class:`~neurokit.evaluation.confounds.ConfoundCheck` and its verdict."""
    if not res.checked:
        console.print(f"eye-movement confound check: {escape(res.message)}")
        return
    t = Table(title=f"eye-movement proxies, {res.split} split ({res.n_windows} windows, {res.n_subjects} subjects)")
    t.add_column("feature")
    t.add_column("AUROC", justify="right")
    t.add_row(f"classifier on {len(res.features)} features ({res.cv})", f"{res.auroc:.3f}")
    for name, a in res.single_aurocs.items():
        t.add_row(f"{name} alone", f"{a:.3f}")
    console.print(t)
    console.print(
        f"permutation test: p = {res.p_value:.3g} ({res.n_permutations} permutations within subjects); "
        f"fires at p < {res.alpha:g} and AUROC >= {res.min_auroc:.2f}"
    )
    tag = "[bold yellow]confound:[/]" if res.fired else "[green]no confound found:[/]"
    console.print(f"{tag} {escape(res.message)}")
