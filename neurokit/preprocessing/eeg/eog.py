"""Eye-movement (EOG) artefacts: the channels that carry them, and their removal through MNE.

A recipe's ``eog_removal`` (:class:`~neurokit.cards.recipes.EEGRecipe`) chooses the method, applied by
:func:`remove_eog` after the reference, the filters and the resampling of
:func:`~neurokit.preprocessing.eeg.windows.preprocess_raw`:

- ``"ica"``: :class:`mne.preprocessing.ICA` (FastICA, fixed ``random_state``, so the same file gives the same
  components on every run) fitted on a 1 Hz high-passed copy of the recording; the components that
  :meth:`mne.preprocessing.ICA.find_bads_eog` finds correlated with the EOG channels (or, where the recording
  has none, frontal proxies: the horizontal difference F8 − F7 and Fp1, Fp2) are removed from the recording
  itself: those MNE's z-score rule flags (threshold 3) and those with ``|r|`` ≥ :data:`ICA_MIN_CORR` with an EOG
  channel or the bipolar F8 − F7 (both on the 1–10 Hz band) (Jung et al. 2000, Psychophysiology 37:163-178; MNE's artefact tutorial).
- ``"regression"``: :class:`mne.preprocessing.EOGRegression` (Gratton, Coles & Donchin 1983,
  Electroencephalogr. Clin. Neurophysiol. 55:468-484), fitted on the recording as the recipe filtered it (on
  a 1 Hz high-passed copy too little of the slow eye movements is left to estimate the weights: a planted
  horizontal step kept AUROC 0.74 that way, ``tests/test_preprocessing_eeg_eog.py``); only with real EOG channels (channel type ``eog``): a frontal EEG channel carries brain signal
  too, and regressing it out would remove that as well.

What was done (method, channels, components removed and their scores) is returned for the store's
``sources`` entry of the file.
"""

from __future__ import annotations

import inspect

import re
import warnings
from typing import Any

import numpy as np

from neurokit._utils.errors import ChannelMismatchError, DataFileError
from neurokit.io.headers import short_list

#: frontal and lateral-frontal 10-10 channels that pick up eye movements, in pairs (left, right)
FRONTAL_PROXIES = ("Fp1", "Fp2", "AF7", "AF8", "F7", "F8")
#: the horizontal-EOG proxy ``F8 − F7`` (right minus left lateral-frontal channel)
HORIZONTAL_PAIR = ("F8", "F7")
#: the vertical-EOG (blink) proxy: the mean of the two frontopolar channels
VERTICAL_PAIR = ("Fp1", "Fp2")
#: a channel name that says EOG (HEOG, VEOG, EOG1, EOG-L…)
EOG_NAME = re.compile(r"EOG", re.I)
#: ICA's random state (FastICA's starting point): one recording gives the same components on every run
ICA_SEED = 97
#: ICA components whose source correlates at least this much (``|Pearson r|``, 1-10 Hz) with an EOG proxy are removed
ICA_MIN_CORR = 0.5
#: high-pass (Hz) of the copy ICA is fitted on (slow drifts spoil the unmixing)
FIT_L_FREQ = 1.0


def eog_typed(raw) -> list[str]:
    """Channels of ``raw`` typed ``eog`` (as :func:`~neurokit.io.read_eeg` types labels that say EOG).

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording.

    Returns
    -------
    list of str
        Their names, in the recording's order.

    Examples
    --------
    >>> import mne, numpy as np
    >>> info = mne.create_info(["Fp1", "Fp2", "Cz", "HEOG"], 100.0, ["eeg", "eeg", "eeg", "eog"])
    >>> raw = mne.io.RawArray(np.zeros((4, 100)), info, verbose=False)
    >>> eog_typed(raw)
    ['HEOG']
    """
    return [c for c, t in zip(raw.ch_names, raw.get_channel_types()) if t == "eog"]


def resolve_eog_channels(raw, names: list[str] | None, method: str, source: str) -> list[str]:
    """The channels of ``raw`` whose signal stands for eye movements in :func:`remove_eog`.

    ``names`` (the recipe's ``eog_channels``) may name channels of ``raw`` or bipolar differences ``"A-B"`` of
    two of them (``"F8-F7"``: the horizontal proxy, added to ``raw`` as an ``eog`` channel named so). Without
    ``names``: the recording's EOG-typed channels; else (ICA only) ``F8-F7`` and ``Fp1``, ``Fp2`` where
    present.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording, loaded; a bipolar proxy is added to it in place.
    names : list of str or None
        The recipe's ``eog_channels``.
    method : {"regression", "ica"}
        The recipe's ``eog_removal``.
    source : str
        The recording's name (its file), for error messages.

    Returns
    -------
    list of str
        Channel names of ``raw`` to use as EOG references.

    Raises
    ------
    ChannelMismatchError
        A named channel is missing, or (ICA) no EOG channel and no frontal proxy exists.
    DataFileError
        Regression on a recording without EOG-typed channels (or with ``names`` that are not EOG channels).

    Examples
    --------
    >>> import mne, numpy as np
    >>> info = mne.create_info(["Fp1", "Fp2", "Cz", "HEOG"], 100.0, ["eeg", "eeg", "eeg", "eog"])
    >>> raw = mne.io.RawArray(np.zeros((4, 100)), info, verbose=False)
    >>> resolve_eog_channels(raw, None, "regression", "rec.edf")
    ['HEOG']
    >>> resolve_eog_channels(raw, ["Fp1"], "ica", "rec.edf")
    ['Fp1']
    """
    typed = eog_typed(raw)
    if method == "regression":
        use = list(names) if names else typed
        not_eog = [c for c in use if c not in typed]
        if not use or not_eog:
            what = f"{short_list(not_eog)} are not EOG channels" if not_eog else "it has no EOG channel"
            raise DataFileError(
                f"{source}: eog_removal: regression needs real EOG channels (channel type eog) and {what}; "
                "regressing frontal EEG channels would remove brain signal too. Use eog_removal: ica (frontal "
                "proxies) or exclude_channels"
            )
        return use
    if names:
        out = []
        for n in names:
            if n in raw.ch_names:
                out.append(n)
                continue
            pair = n.split("-")
            if len(pair) == 2 and all(p in raw.ch_names for p in pair):
                _add_bipolar(raw, pair[0], pair[1], n)
                out.append(n)
                continue
            raise ChannelMismatchError(
                f"{source}: eog_channels names {n!r}, which is neither a channel of the recording (after the "
                f"recipe's channel list) nor a difference 'A-B' of two of them; channels: {short_list(raw.ch_names)}"
            )
        return out
    if typed:
        return typed
    out = []
    if all(c in raw.ch_names for c in HORIZONTAL_PAIR):
        name = "-".join(HORIZONTAL_PAIR)
        _add_bipolar(raw, *HORIZONTAL_PAIR, name)
        out.append(name)
    out += [c for c in VERTICAL_PAIR if c in raw.ch_names]
    if not out:
        raise ChannelMismatchError(
            f"{source}: eog_removal: ica found no EOG channel and none of the frontal proxies F7 and F8, Fp1, Fp2 "
            "(among the recipe's channels); name the channels to use in the recipe's eog_channels"
        )
    return out


def keep_eeg_and_eog(raw, source: str) -> None:
    """Keep only the EEG and EOG channels of ``raw``, in place.

    Used on recordings read with ``eeg_only=False`` for EOG removal.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording; modified in place.
    source : str
        The recording's name (its file), for error messages.

    Raises
    ------
    DataFileError
        No EEG channel.

    Examples
    --------
    >>> import mne, numpy as np
    >>> info = mne.create_info(["Cz", "HEOG", "ECG"], 100.0, ["eeg", "eog", "ecg"])
    >>> raw = mne.io.RawArray(np.zeros((3, 100)), info, verbose=False)
    >>> keep_eeg_and_eog(raw, "rec.edf")
    >>> raw.ch_names
    ['Cz', 'HEOG']
    """
    types = raw.get_channel_types()
    keep = [c for c, t in zip(raw.ch_names, types) if t in ("eeg", "eog")]
    if not any(t == "eeg" for t in types):
        raise DataFileError(f"{source}: no EEG channels (channel types found: {', '.join(sorted(set(types)))})")
    if len(keep) < len(raw.ch_names):
        raw.pick(keep)


def read_options(recipe) -> dict:
    """Extra :func:`~neurokit.io.read_eeg` options a recipe needs.

    EOG channels are read (not dropped as non-EEG) when the recipe removes EOG artefacts.

    Parameters
    ----------
    recipe : EEGRecipe
        The card's preprocessing recipe (:class:`~neurokit.cards.recipes.EEGRecipe`).

    Returns
    -------
    dict
        ``{"eeg_only": False}`` when ``recipe.eog_removal`` is not ``"none"``, else ``{}``.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> read_options(SimpleNamespace(eog_removal="ica")), read_options(SimpleNamespace(eog_removal="none"))
    ({'eeg_only': False}, {})
    """
    return {"eeg_only": False} if recipe.eog_removal != "none" else {}


def _add_bipolar(raw, a: str, b: str, name: str) -> None:
    """Add ``a − b`` to ``raw`` (loaded) as an ``eog`` channel called ``name`` (dropped again before windowing)."""
    import mne

    x = raw.get_data(picks=[a]) - raw.get_data(picks=[b])
    info = mne.create_info([name], raw.info["sfreq"], ["eog"])
    extra = mne.io.RawArray(x, info, first_samp=raw.first_samp, verbose="error")
    raw.add_channels([extra], force_update_info=True)


def remove_eog(raw, method: str, names: list[str] | None, source: str) -> dict[str, Any]:
    """Remove eye-movement artefacts from ``raw`` (loaded, volts) in place with ``method``
    (:data:`~neurokit.cards.recipes.EOG_METHODS`).

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording after reference and filters; EEG channels and, possibly, EOG-typed channels. Proxy
        channels made here (``F8-F7``) are added as ``eog`` channels; the caller drops every ``eog`` channel
        before windowing.
    method : str
        ``"ica"`` or ``"regression"`` (``"none"`` does nothing and returns ``{}``).
    names : list of str or None
        The recipe's ``eog_channels`` (:func:`resolve_eog_channels`).
    source : str
        The recording's name (its file), for error messages.

    Returns
    -------
    dict
        For the store's ``sources`` entry: ``method``, ``eog_channels``; ICA: ``n_components``,
        ``components_removed`` (indices), ``scores`` (channel → ``|correlation|`` of each removed component with
        it), ``random_state``; regression: ``max_abs_coef`` (channel → largest ``|coefficient|`` over EEG channels).

    Raises
    ------
    ChannelMismatchError, DataFileError
        As :func:`resolve_eog_channels`.

    Examples
    --------
    >>> done = remove_eog(raw, "ica", ["F8-F7", "Fp1", "Fp2"], "S001R04.edf")  # doctest: +SKIP
    >>> done["components_removed"]  # doctest: +SKIP
    [0]
    """
    if method == "none":
        return {}
    import mne

    eog = resolve_eog_channels(raw, names, method, source)
    eeg = mne.pick_types(raw.info, eeg=True, exclude="bads")
    if method == "regression":  # fitted on the recording as filtered by the recipe: slow eye movements included
        from mne.preprocessing import EOGRegression
        from mne.utils import use_log_level

        with use_log_level("error"):
            reg = EOGRegression(picks="eeg", picks_artifact=eog, proj=False).fit(raw)
            reg.apply(raw, copy=False)
        coef = np.abs(np.asarray(reg.coef_))  # (n_eeg, n_eog)
        return {
            "method": "regression",
            "eog_channels": eog,
            "max_abs_coef": {c: float(coef[:, i].max()) for i, c in enumerate(eog)},
        }
    from mne.preprocessing import ICA

    fit_copy = raw.copy().filter(FIT_L_FREQ, None, picks="all", verbose="error")

    rank = len(eeg) - (1 if raw.info.get("custom_ref_applied") else 0)
    n_comp = int(max(1, min(rank, 20)))
    # MNE 1.13 names the seed ``rng`` (``random_state`` deprecated); earlier releases know only ``random_state``
    seed = {"rng": ICA_SEED} if "rng" in inspect.signature(ICA).parameters else {"random_state": ICA_SEED}
    ica = ICA(n_components=n_comp, method="fastica", max_iter="auto", **seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ica.fit(fit_copy, picks=eeg, verbose="error")
    for msg in sorted({str(w.message) for w in caught}):
        if "converge" in msg:
            msg = (
                f"ICA (FastICA, {n_comp} components) did not converge within its iterations; the components "
                "removed may be imprecise"
            )
        warnings.warn(f"{source}: {msg}", RuntimeWarning, stacklevel=3)
    bad, scores = ica.find_bads_eog(fit_copy, ch_name=eog, verbose="error")  # MNE's rule: |z| of |r| above 3
    scores = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    # with 20 components a clear horizontal component (|r| 0.74 with F8 − F7 in EEGMMIDB S001R04) can stay under
    # the z-score rule: a component correlated at |r| >= ICA_MIN_CORR with an EOG channel or a bipolar proxy is
    # removed too (not with a single EEG channel such as Fp1: its own brain components correlate with it)
    eog_rows = np.array([c in eog_typed(raw) for c in eog])
    strong = (np.abs(scores[eog_rows]) >= ICA_MIN_CORR).any(axis=0)
    bad = sorted({int(i) for i in bad} | {int(k) for k in np.flatnonzero(strong)})
    if bad:
        ica.apply(raw, exclude=bad, verbose="error")
    return {
        "method": "ica",
        "eog_channels": eog,
        "n_components": n_comp,
        "random_state": ICA_SEED,
        "components_removed": bad,
        "scores": {c: [round(float(abs(scores[i, k])), 4) for k in bad] for i, c in enumerate(eog)},
    }


def drop_channels(raw, exclude: list[str] | None, source: str, dropped_before: list[str] | None = None) -> list[str]:
    """Drop every ``eog``-typed channel and the ``exclude`` channels from ``raw`` before windowing, in place.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording; modified in place.
    exclude : list of str or None
        The recipe's ``exclude_channels``.
    source : str
        The recording's name (its file), for error messages.
    dropped_before : list of str, optional
        Channels already dropped (as bad), which ``exclude`` may name without error.

    Returns
    -------
    list of str
        The channels of ``exclude`` that were dropped here.

    Raises
    ------
    ChannelMismatchError
        A channel of ``exclude`` is not in the recording (and was not dropped before), or no EEG channel is left.

    Examples
    --------
    >>> import mne, numpy as np
    >>> info = mne.create_info(["Fp1", "Fp2", "Cz", "HEOG"], 100.0, ["eeg", "eeg", "eeg", "eog"])
    >>> raw = mne.io.RawArray(np.zeros((4, 100)), info, verbose=False)
    >>> drop_channels(raw, ["Fp2"], "rec.edf")
    ['Fp2']
    >>> raw.ch_names
    ['Fp1', 'Cz']
    """
    exclude = list(exclude or [])
    gone = set(dropped_before or [])
    missing = [c for c in exclude if c not in raw.ch_names and c not in gone]
    if missing:
        raise ChannelMismatchError(
            f"{source}: exclude_channels names {short_list(missing)}, not in the recording "
            f"(channels: {short_list(raw.ch_names)})"
        )
    drop = [c for c in eog_typed(raw)] + [c for c in exclude if c in raw.ch_names]
    left = [c for c in raw.ch_names if c not in drop]
    if not left:
        raise ChannelMismatchError(f"{source}: exclude_channels leaves no EEG channel")
    if drop:
        raw.drop_channels(drop)
    return [c for c in exclude if c in drop]
