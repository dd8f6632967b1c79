"""Shared helper for the models' typed configurations (dataclasses written into every checkpoint)."""
from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, TypeVar

from neurokit._utils.errors import ConfigError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

C = TypeVar("C", bound="DataclassInstance")


def config_from_dict(cls: type[C], d: dict, what: str) -> C:
    """``cls(**d)`` for a config dataclass; keys that are not fields raise :class:`ConfigError` naming
    ``what`` (e.g. ``"vsMAE"``) and the allowed keys."""
    names = {f.name for f in fields(cls)}
    bad = sorted(set(d) - names)
    if bad:
        raise ConfigError(f"unknown {what} config key(s) {bad}; allowed: {sorted(names)}")
    return cls(**d)
