"""The ``neuro`` command line: a thin shell over :mod:`neurokit.pipelines`, one module per command group
(:mod:`~neurokit.cli.cards`, :mod:`~neurokit.cli.prepare`, :mod:`~neurokit.cli.train`, :mod:`~neurokit.cli.evaluate`,
:mod:`~neurokit.cli.plots`, :mod:`~neurokit.cli.stimuli`, :mod:`~neurokit.cli.quickstart`, :mod:`~neurokit.cli.compare`); this module assembles them.

Run ``neuro --help`` or ``neuro COMMAND --help``; every option shows its default.
"""

from __future__ import annotations

import typer

from neurokit.cli import cards, compare, confounds, evaluate, plots, prepare, quickstart, stimuli, train
from neurokit.cli.common import NeuroCommand, console

app = typer.Typer(
    name="neuro",
    help="neurokit: raw EEG / surface fMRI → patch stores → foundation models (CBraMod, SiT).",
    no_args_is_help=True,
    rich_markup_mode=None,  # click's plain help: wraps at the terminal width, never cuts an option name
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(cards.cards_app, name="cards")


def _version(value: bool) -> None:
    if value:
        from neurokit._utils.version import VERSION as __version__

        console.print(f"neurokit {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Say more: each file and stage (INFO), MNE's own messages (neuro -v CMD …)."
    ),
    quiet: bool = typer.Option(
        False,
        "--quiet",
        "-q",
        help="Say less: no progress and no warnings; results and errors stay (neuro --quiet CMD …).",
    ),
) -> None:
    """neurokit: raw EEG / surface fMRI → patch stores → foundation models (CBraMod, SiT)."""
    from neurokit._utils.progress import set_quiet
    from neurokit.cli.common import VERBOSITY

    NeuroCommand.running = None  # set again by the command about to run (a group's commands may be plain ones)
    VERBOSITY.update(verbose=verbose, quiet=quiet)
    set_quiet(quiet)


app.command(cls=NeuroCommand)(prepare.prepare)
app.command(cls=NeuroCommand)(train.pretrain)
app.command(cls=NeuroCommand)(train.finetune)
app.command(cls=NeuroCommand)(compare.compare)
app.command(cls=NeuroCommand)(evaluate.evaluate)
app.command(cls=NeuroCommand)(evaluate.baseline)
app.command("check-confounds", cls=NeuroCommand)(confounds.check_confounds_cmd)
app.command("plot-report", cls=NeuroCommand)(plots.plot_report)
app.command("plot-contributions", cls=NeuroCommand)(plots.plot_contributions)
app.command("plot-surface", cls=NeuroCommand)(plots.plot_surface)
app.command("embed-stimuli", cls=NeuroCommand)(stimuli.embed_stimuli_cmd)
app.command(cls=NeuroCommand)(stimuli.retrieve)
app.command(cls=NeuroCommand)(quickstart.quickstart)


def main() -> None:  # pragma: no cover
    app(prog_name="neuro")


if __name__ == "__main__":  # pragma: no cover
    main()
