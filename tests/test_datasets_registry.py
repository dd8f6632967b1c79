"""The dataset readers have one registry, :data:`neurokit.datasets.registry.DATASETS`, made of imported functions:
every card with ``layout.kind: reader`` names one of its readers, every reader serves some card, each entry's
functions live in a ``neurokit.datasets`` module, and no module of neurokit finds a reader by string."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import yaml

import neurokit
from neurokit._utils.errors import CardError
from neurokit.datasets.registry import DATASETS, DatasetReader, get_reader

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(neurokit.__file__).resolve().parent


def _layouts(node):
    """Every ``layout`` mapping of a parsed card (a multi-modal card holds one per modality)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "layout" and isinstance(value, dict):
                yield value
            else:
                yield from _layouts(value)
    elif isinstance(node, list):
        for value in node:
            yield from _layouts(value)


def _reader_cards() -> dict[str, str]:
    """Card file name → the reader its ``layout.kind: reader`` names, for every card in ``data_cards/``."""
    out = {}
    for path in sorted((ROOT / "data_cards").glob("*.yaml")):
        body = yaml.safe_load(path.read_text(encoding="utf-8"))
        for layout in _layouts(body):
            if layout.get("kind") == "reader":
                out[path.name] = layout.get("reader")
    return out


def test_every_reader_card_names_a_registered_reader():
    cards = _reader_cards()
    assert cards, "no card with layout.kind: reader found in data_cards/"
    unknown = {card: name for card, name in cards.items() if name not in DATASETS}
    assert not unknown, f"cards naming a reader that neurokit.datasets.registry.DATASETS lacks: {unknown}"


def test_every_registered_reader_serves_a_card():
    used = set(_reader_cards().values())
    unused = sorted(set(DATASETS) - used)
    assert not unused, f"DATASETS entries no card in data_cards/ names: {unused}"


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_entry_functions_live_in_a_datasets_module(name):
    entry = DATASETS[name]
    assert isinstance(entry, DatasetReader)
    for what in ("entries", "read", "base_of"):
        fn = getattr(entry, what)
        assert callable(fn), f"{name}.{what} is not callable"
        module = inspect.getmodule(fn)
        assert module is not None and module.__name__.startswith("neurokit.datasets."), (
            f"DATASETS[{name!r}].{what} is defined in {getattr(module, '__name__', '?')}, not a neurokit.datasets module"
        )


def test_entries_name_their_registry_key():
    """The ``reader=`` a listing writes into its FileEntry rows is a key of DATASETS (the one the row is read by)."""
    named = set()
    for path in sorted((PACKAGE / "datasets").glob("*.py")):
        named |= set(re.findall(r'reader="([a-z0-9_]+)"', path.read_text(encoding="utf-8")))
    assert named, "no FileEntry(reader=...) found in neurokit/datasets"
    assert named <= set(DATASETS), f"listings name readers DATASETS lacks: {sorted(named - set(DATASETS))}"


def test_no_reader_is_found_by_string():
    """importlib stays out of the readers and the code that calls them."""
    for sub in ("datasets", "cards", "io", "store", "preprocessing"):
        for path in sorted((PACKAGE / sub).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            assert "importlib.import_module" not in text and "__import__(" not in text, path.relative_to(ROOT)


def test_unknown_reader_names_the_known_ones():
    with pytest.raises(CardError, match=r"unknown reader 'nope'; known: \[.*'tuab'"):
        get_reader("nope")
