"""``neuro cards list|show``: the data cards."""

from __future__ import annotations

import json

import typer
from rich.markup import escape
from rich.table import Table

from neurokit.cli.common import NeuroCommand, console, run_or_exit

cards_app = typer.Typer(help="List and show data cards.", no_args_is_help=True, rich_markup_mode=None)


# ------------------------------------------------------------------------------------------- cards
@cards_app.command("list", cls=NeuroCommand)
def cards_list() -> None:
    """List the packaged data cards."""
    from neurokit.cards import list_cards, load_card

    cards = [load_card(n) for n in list_cards()]
    t = Table(title="data cards")
    # names and tasks are what users type: those columns are as wide as their longest entry, never cut
    t.add_column("name", no_wrap=True, min_width=max(len(c.name) for c in cards))
    t.add_column("modality")
    t.add_column("title", overflow="fold")
    t.add_column("tasks", no_wrap=False, min_width=max(len(task) for c in cards for task in c.tasks) + 1)
    t.add_column("licence", overflow="fold")
    for c in cards:
        t.add_row(
            escape(c.name),
            c.modality,
            escape(str(c.raw.get("title", ""))),
            escape(", ".join(c.tasks)),
            escape(str(c.raw.get("licence", ""))),
        )
    console.print(t, crop=False)


@cards_app.command("show", cls=NeuroCommand)
def cards_show(
    name: str = typer.Argument(..., help="Card name (see `neuro cards list`) or path to a .yaml card."),
) -> None:
    """Print one data card."""
    from neurokit.cards import load_card

    c = run_or_exit(load_card, name)
    console.print(
        c.path.read_text() if c.path else json.dumps(c.raw, indent=2), markup=False, highlight=False, soft_wrap=True
    )
