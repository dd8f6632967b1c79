"""Data cards: one YAML file per dataset with its source, licence, citation, channels, rates,
events → labels, splits and preprocessing recipe.

Cards ship inside the wheel (``neurokit/data_cards``); in a source checkout they are read from the
repository's ``data_cards/`` folder. A path to a user's own ``.yaml`` works wherever a name does.

The package: :mod:`~neurokit.cards.card` (the card, its tasks and loading), :mod:`~neurokit.cards.schema` (the keys a
card may hold), :mod:`~neurokit.cards.recipes` (preprocessing recipes), :mod:`~neurokit.cards.split_rules` (splits by
rule) and :mod:`~neurokit.cards.layouts` (where recordings lie, one module per layout kind).
"""

from __future__ import annotations

from neurokit.cards.card import (
    MAX_SUBJECTS,
    REQUIRED,
    DataCard,
    TaskEvents,
    bids_card,
    cards_dir,
    format_ranges,
    list_cards,
    load_card,
    parse_ranges,
    resolve_data_root,
)
from neurokit.cards.layouts.folder import SUBJECT_PATTERN, SUBJECT_RULE, run_of, subject_of

__all__ = [
    "MAX_SUBJECTS",
    "REQUIRED",
    "SUBJECT_PATTERN",
    "SUBJECT_RULE",
    "DataCard",
    "TaskEvents",
    "bids_card",
    "cards_dir",
    "format_ranges",
    "list_cards",
    "load_card",
    "parse_ranges",
    "resolve_data_root",
    "run_of",
    "subject_of",
]
