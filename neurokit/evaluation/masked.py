"""The held-out masked reconstruction loss of pretraining read against its baselines: the run's history entries,
their lines in words and the verdict a run's summary stores.

A pretraining run scores its model, at each epoch, on held-out windows with
:func:`~neurokit.training.objectives.heldout_masked_loss`, beside predict-zero and predict-mean (which learn
nothing but the signal's scale) and the fitted or averaged predictors of
:mod:`~neurokit.training.masked_baselines` (EEG: spatial and temporal ridges; surface fMRI: the visible
neighbouring patches' mean and the nearest visible frame). Each baseline is compared through its ratio to
predict-zero on the values it predicts, so baselines that apply to only some values (a spatial ridge on the
multi-channel layout of a pool) are read fairly. :func:`masked_verdict` says whether the model beats the best of
them; ``neuro pretrain`` prints it and ``pretrain_summary.json`` stores it (``verdict``).
"""

from __future__ import annotations

from typing import Any, Iterable

#: what each entry of a run's ``heldout_history`` keeps of the held-out evaluation (the model's loss, the baselines)
HELDOUT_KEYS = (
    "epoch",
    "heldout_loss",
    "heldout_zero",
    "heldout_mean",
    "heldout_spatial",
    "heldout_temporal",
    "heldout_spatial_zero",
    "heldout_temporal_zero",
    "heldout_neighbours",
    "heldout_frame",
    "heldout_neighbours_zero",
    "heldout_frame_zero",
    "heldout_spline",
    "heldout_spline_zero",
    "heldout_kernel",
    "heldout_kernel_zero",
    "heldout_ridge",
    "heldout_ridge_zero",
    "heldout_n",
    "heldout_unavailable",
    "heldout_scoring",
    "heldout_apart",
    "heldout_fitted",
    "heldout_layouts",
)

#: the baselines of :func:`heldout_line`, in its order: key suffix → name
BASELINE_NAMES = {
    "zero": "predict-zero",
    "mean": "predict-mean",
    "spatial": "spatial ridge",
    "temporal": "temporal ridge",
    "neighbours": "neighbouring patches' mean",
    "frame": "nearest visible frame",
    "spline": "spherical spline",
    "kernel": "Gaussian kernel from the 8 nearest visible vertices",
    "ridge": "ridge from the visible vertices",
}

#: the verdict's words, by outcome
BELOW_EVERY = "below every baseline"
BELOW_SCALE = "below predict-zero and predict-mean, not below every baseline"
NOT_BELOW_SCALE = "not below predict-zero and predict-mean: the model learned no more than the scale"

#: under corpus normalisation, held-out windows whose predict-zero is outside this range are of another power than
#: the training windows (which have unit power): :func:`masked_verdict` adds a note
POWER_RANGE = (0.5, 2.0)


def heldout_history(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The held-out evaluations among a run's ``records`` (the trainer's per-epoch records), each with the entries of
    :data:`HELDOUT_KEYS` only.

    Parameters
    ----------
    records : iterable of dict
        The run's records (:attr:`Trainer.records <neurokit.training.trainer.Trainer>`); those without
        ``heldout_loss`` are left out.

    Returns
    -------
    list of dict
        One entry per held-out evaluation, in order, with :func:`baseline_ratios` added: ``loss_ratio`` (the
        model's held-out loss over predict-zero), ``baselines`` (key of :data:`BASELINE_NAMES` → that baseline's
        ratio to predict-zero on the values it predicts), ``best_baseline`` (the key of the lowest) and
        ``best_baseline_ratio``.

    Examples
    --------
    >>> heldout_history([{"epoch": 1, "loss": 2.0}, {"epoch": 1, "heldout_loss": 0.8, "heldout_zero": 1.0, "lr": 1e-4}])
    [{'epoch': 1, 'heldout_loss': 0.8, 'heldout_zero': 1.0, 'loss_ratio': 0.8, 'baselines': {'zero': 1.0}, 'best_baseline': 'zero', 'best_baseline_ratio': 1.0}]
    """
    out = []
    for r in records:
        if "heldout_loss" in r:
            h = {k: r[k] for k in HELDOUT_KEYS if k in r}
            out.append({**h, **baseline_ratios(h)})
    return out


def baseline_ratios(h: dict[str, Any]) -> dict[str, Any]:
    """The model's and every baseline's ratio to predict-zero in one held-out entry, and the best baseline.

    Parameters
    ----------
    h : dict
        An entry of a run's ``heldout_history`` (``heldout_loss``, ``heldout_zero`` and the baselines present).

    Returns
    -------
    dict
        ``loss_ratio``; ``baselines``: key of :data:`BASELINE_NAMES` → ratio to predict-zero on the values it
        predicts (predict-zero 1); ``best_baseline``: the key of the lowest ratio (the first of
        :data:`BASELINE_NAMES` on a tie); ``best_baseline_ratio``.

    Examples
    --------
    >>> baseline_ratios({"heldout_loss": 0.5, "heldout_zero": 2.0, "heldout_mean": 2.0, "heldout_kernel": 0.6})
    {'loss_ratio': 0.25, 'baselines': {'zero': 1.0, 'mean': 1.0, 'kernel': 0.3}, 'best_baseline': 'kernel', 'best_baseline_ratio': 0.3}
    """
    ratios = {
        k: 1.0 if k == "zero" else _ratio_to_zero(h, k) for k in BASELINE_NAMES if h.get(f"heldout_{k}") is not None
    }
    best = min(ratios, key=lambda k: (ratios[k], list(BASELINE_NAMES).index(k)))
    return {
        "loss_ratio": h["heldout_loss"] / h["heldout_zero"],
        "baselines": ratios,
        "best_baseline": best,
        "best_baseline_ratio": ratios[best],
    }


def _ratio_to_zero(h: dict[str, Any], k: str) -> float:
    """Baseline ``k``'s loss over predict-zero on the values it predicts (``heldout_k_zero`` where it covers only
    some of them)."""
    return h[f"heldout_{k}"] / h.get(f"heldout_{k}_zero", h["heldout_zero"])


def heldout_line(h: dict[str, Any]) -> str:
    """One entry of ``heldout_history`` in words: the held-out masked loss and each baseline, with their ratios to
    predict-zero (a fitted baseline that applied to only some layouts, to predict-zero on those: ``heldout_K_zero``).

    Parameters
    ----------
    h : dict
        An entry of a run's ``heldout_history`` (:func:`heldout_history`), or one layout's figures of its
        ``heldout_layouts``: ``heldout_loss``, ``heldout_zero`` and the baselines present.

    Returns
    -------
    str
        One line, ending with the epoch when ``h`` has one.

    Examples
    --------
    >>> heldout_line({"epoch": 3, "heldout_loss": 0.8, "heldout_zero": 1.0, "heldout_mean": 1.6, "heldout_spatial": 0.75})
    'held-out masked loss 0.8 (0.800× predict-zero) vs predict-zero 1 · predict-mean 1.6 (1.600×) · spatial ridge 0.75 (0.750×) (epoch 3)'
    """
    zero = h["heldout_zero"]

    def ratio(k: str) -> str:
        own = h.get(f"heldout_{k}_zero")  # a baseline that covers only some values: its ratio is to their power
        if own is None:
            return f" ({h['heldout_' + k] / zero:.3f}×)"
        return f" ({h['heldout_' + k] / own:.3f}× the predict-zero {own:.4g} of the values it covers)"

    parts = [
        f"{name} {h['heldout_' + k]:.4g}" + ("" if k == "zero" else ratio(k))
        for k, name in BASELINE_NAMES.items()
        if h.get("heldout_" + k) is not None
    ]
    parts += [
        f"{BASELINE_NAMES.get(k, k)}: not computed ({why})" for k, why in (h.get("heldout_unavailable") or {}).items()
    ]
    where = "; ".join(
        f"{label} {h[key]}"
        for key, label in (("heldout_scoring", "scored on"), ("heldout_apart", "held out:"))
        if h.get(key)
    )
    return (
        f"held-out masked loss {h['heldout_loss']:.4g} ({h['heldout_loss'] / zero:.3f}× predict-zero) vs "
        + " · ".join(parts)
        + (f" (epoch {h['epoch']})" if "epoch" in h else "")
        + (f" — {where}" if where else "")
    )


def heldout_lines(h: dict[str, Any]) -> list[str]:
    """:func:`heldout_line` of the pooled figures, then, when the run had several layouts (``heldout_layouts``), one
    line per layout (its name, then its own loss beside its own predict-zero and baselines).

    Parameters
    ----------
    h : dict
        An entry of a run's ``heldout_history``.

    Returns
    -------
    list of str
        The pooled line, then one indented line per layout.

    Examples
    --------
    >>> h = {"epoch": 1, "heldout_loss": 0.9, "heldout_zero": 1.0, "heldout_mean": 1.2,
    ...      "heldout_layouts": {"1ch:a.h5": {"heldout_loss": 1.0, "heldout_zero": 1.0, "heldout_mean": 1.1},
    ...                          "21ch:b.h5": {"heldout_loss": 0.6, "heldout_zero": 1.0, "heldout_mean": 1.5}}}
    >>> print("\\n".join(heldout_lines(h)))
    held-out masked loss 0.9 (0.900× predict-zero) vs predict-zero 1 · predict-mean 1.2 (1.200×) (epoch 1)
      1ch:a.h5: held-out masked loss 1 (1.000× predict-zero) vs predict-zero 1 · predict-mean 1.1 (1.100×)
      21ch:b.h5: held-out masked loss 0.6 (0.600× predict-zero) vs predict-zero 1 · predict-mean 1.5 (1.500×)
    """
    return [heldout_line(h)] + [f"  {name}: {heldout_line(v)}" for name, v in (h.get("heldout_layouts") or {}).items()]


def masked_verdict(h: dict[str, Any], *, normalize: str | None = None) -> dict[str, Any]:
    """Whether the held-out masked loss of ``h`` is below its best baseline, and below the scale alone.

    Every baseline is read through its ratio to predict-zero on the values it predicts (predict-zero's own ratio is
    1); the best baseline is the one of lowest ratio (the first of :data:`BASELINE_NAMES` on a tie). The model beats
    it when its own ratio to predict-zero is lower: it is then "below every baseline". A loss below predict-zero and
    predict-mean but not below a fitted baseline learned more than the signal's scale, and less than a linear
    interpolation; one not below predict-zero and predict-mean learned no more than the scale.

    Parameters
    ----------
    h : dict
        An entry of a run's ``heldout_history`` (the last one is the run's verdict): ``heldout_loss``,
        ``heldout_zero``, ``heldout_mean`` and the fitted baselines present, and ``heldout_layouts`` when the run
        had several layouts.
    normalize : str, optional
        The run's input normalisation (``PretrainConfig.normalize``). Under ``"corpus"`` the training windows have
        unit power, so held-out windows whose predict-zero is outside :data:`POWER_RANGE` get a ``note``.

    Returns
    -------
    dict
        ``epoch`` (of ``h``, when it has one); ``loss_ratio``, the held-out loss over predict-zero;
        ``best_baseline``, the name of the best baseline (:data:`BASELINE_NAMES`), ``best_baseline_key`` its key,
        and ``best_baseline_ratio``, its ratio to predict-zero; ``baselines``, every baseline's key → ratio; ``beats_best_baseline`` and ``beats_scale`` (below predict-zero and predict-mean);
        ``says``, the verdict in words (:data:`BELOW_EVERY`, :data:`BELOW_SCALE` or :data:`NOT_BELOW_SCALE`);
        ``note`` where the held-out windows' power is another than the training windows'; and ``layouts``, name →
        the same verdict on that layout's own figures, when ``h`` has ``heldout_layouts``.

    Raises
    ------
    KeyError
        ``h`` without ``heldout_loss`` or ``heldout_zero``.

    Examples
    --------
    >>> v = masked_verdict({"heldout_loss": 0.8, "heldout_zero": 1.0, "heldout_mean": 1.2, "heldout_spatial": 0.7})
    >>> v["best_baseline"], v["best_baseline_ratio"], v["beats_best_baseline"], v["says"]
    ('spatial ridge', 0.7, False, 'below predict-zero and predict-mean, not below every baseline')
    """
    zero = h["heldout_zero"]
    r = baseline_ratios(h)
    loss_ratio, best, best_ratio = r["loss_ratio"], r["best_baseline"], r["best_baseline_ratio"]
    beats_best = loss_ratio < best_ratio
    beats_scale = h["heldout_loss"] < min(zero, h["heldout_mean"])
    out: dict[str, Any] = {
        **({"epoch": h["epoch"]} if "epoch" in h else {}),
        "loss_ratio": loss_ratio,
        "best_baseline": BASELINE_NAMES[best],
        "best_baseline_key": best,
        "best_baseline_ratio": best_ratio,
        "baselines": r["baselines"],
        "beats_best_baseline": beats_best,
        "beats_scale": beats_scale,
        "says": BELOW_EVERY if beats_best else BELOW_SCALE if beats_scale else NOT_BELOW_SCALE,
    }
    # corpus normalisation scales the training windows to unit power, so their masked predict-zero is ≈ 1; held-out
    # subjects far louder or quieter give losses on another scale than the training loss: say why
    low, high = POWER_RANGE
    if normalize == "corpus" and not low <= zero <= high:
        out["note"] = (
            f"the held-out windows have {zero:.3g}× the power of the training windows (predict-zero "
            f"{zero:.4g} where training windows give ≈ 1): their subjects are {'louder' if zero > 1 else 'quieter'} "
            "than the training subjects, so compare the held-out loss with its baselines, not with the training loss"
        )
    if h.get("heldout_layouts"):
        out["layouts"] = {name: masked_verdict(v) for name, v in h["heldout_layouts"].items()}
    return out


def verdict_words(verdict: dict[str, Any]) -> str:
    """A verdict in words, naming the best baseline and both ratios.

    Parameters
    ----------
    verdict : dict
        :func:`masked_verdict`'s result.

    Returns
    -------
    str

    Examples
    --------
    >>> verdict_words(masked_verdict({"heldout_loss": 0.5, "heldout_zero": 1.0, "heldout_mean": 1.0, "heldout_ridge": 0.4}))
    'below predict-zero and predict-mean, not below every baseline (best baseline: ridge from the visible vertices, 0.400× predict-zero; the model 0.500×)'
    """
    return (
        f"{verdict['says']} (best baseline: {verdict['best_baseline']}, {verdict['best_baseline_ratio']:.3f}× "
        f"predict-zero; the model {verdict['loss_ratio']:.3f}×)"
    )
