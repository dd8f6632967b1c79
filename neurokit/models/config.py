"""Shared helper for the models' typed configurations (dataclasses written into every checkpoint)."""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, TypeVar

from neurokit._utils.errors import ConfigError

if TYPE_CHECKING:
    import torch.nn as nn
    from _typeshed import DataclassInstance

C = TypeVar("C", bound="DataclassInstance")


def config_from_dict(cls: type[C], d: dict, what: str) -> C:
    """``cls(**d)`` for a config dataclass, refusing keys that are not fields.

    Parameters
    ----------
    cls : type
        A configuration dataclass (:class:`~neurokit.models.sit.SiTConfig`, …).
    d : dict
        Field name → value.
    what : str
        The model, for the message (e.g. ``"vsMAE"``).

    Returns
    -------
    object
        An instance of ``cls``.

    Raises
    ------
    ConfigError
        Keys that are not fields (the message names ``what`` and the allowed keys), or what ``cls`` itself
        raises for out-of-range values.

    Examples
    --------
    >>> from neurokit.models.cbramod import CBraModConfig
    >>> config_from_dict(CBraModConfig, {"n_layers": 2}, "CBraMod").n_layers
    2
    """
    names = {f.name for f in fields(cls)}
    bad = sorted(set(d) - names)
    if bad:
        raise ConfigError(f"unknown {what} config key(s) {bad}; allowed: {sorted(names)}")
    return cls(**d)


def model_config_dict(module: nn.Module) -> dict:
    """The configuration a model family records in checkpoints: ``module.config.to_dict()``.

    Every family (:class:`~neurokit.models.cbramod.CBraMod`, :class:`~neurokit.models.vsmae.VSMAE`,
    :class:`~neurokit.models.clip.SurfaceCLIP`…) keeps its typed configuration as ``config``, which
    ``nn.Module`` does not declare; this is the one place that reads it.

    Parameters
    ----------
    module : nn.Module
        A model of a registered family (unwrapped: not a DDP or ``torch.compile`` wrapper).

    Returns
    -------
    dict
        Plain configuration keys and values; the family's ``rebuild`` makes the same module from it.

    Raises
    ------
    ConfigError
        ``module`` has no ``config`` with a ``to_dict`` method.

    Examples
    --------
    >>> import neurokit
    >>> model_config_dict(neurokit.create_model("cbramod", n_layers=1))["n_layers"]
    1
    """
    to_dict = getattr(getattr(module, "config", None), "to_dict", None)
    if not callable(to_dict):
        raise ConfigError(f"{type(module).__name__} has no config.to_dict(): not a model of a neurokit family")
    return to_dict()
