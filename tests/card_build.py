"""A data card of one's own for tests: the required blocks filled in, the layout, tasks and recipe given."""

from __future__ import annotations

import yaml

from neurokit.cards import DataCard, load_card


def write_card(tmp_path, *, layout: dict, tasks: dict, preprocessing: dict, name: str = "own") -> DataCard:
    """Write ``tmp_path / f"{name}.yaml"`` (an EEG card) and load it."""
    card = {
        "name": name,
        "modality": "eeg",
        "title": "t",
        "source": "s",
        "licence": "l",
        "citation": ["c"],
        "layout": layout,
        "tasks": tasks,
        "preprocessing": preprocessing,
    }
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(card))
    return load_card(p)
