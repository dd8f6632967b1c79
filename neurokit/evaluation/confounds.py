"""Are the labels decodable from eye movements? A check beside every fine-tuning (``neuro check-confounds``).

When the classes of a task come with different eye movements (EEGMMIDB shows its left/right targets on the
left or right of the screen), a model can score by reading the electro-oculogram that frontal EEG channels
pick up instead of brain activity. :func:`check_confounds` tests whether the labels can be predicted from
eye-movement proxies alone:

- **proxies**: the store's EOG channels (names containing ``EOG``); else the frontal and lateral-frontal
  channels present among Fp1, Fp2, AF7, AF8, F7, F8, with the horizontal difference ``F8 − F7`` and the
  vertical proxy ``(Fp1 + Fp2)/2`` where both channels exist;
- **features** per window and proxy: the mean over the window (slow drift / DC: a held gaze to one side) and
  the log-variance (saccades, blinks);
- **classifier**: standardised features → a ridge-regularised linear classifier (the decision function of
  scikit-learn's ``RidgeClassifier``, :func:`ridge_scores`), cross-validated on the training split with folds
  grouped by subject (:class:`~sklearn.model_selection.GroupKFold`, up to 5 folds; stratified folds of windows
  when the split holds one subject); AUROC (binary) or one-vs-rest macro AUROC (multi-class), averaged over
  folds;
- **test**: a permutation test (as :func:`sklearn.model_selection.permutation_test_score`: labels permuted
  within each subject, the whole cross-validation repeated; 999 permutations, ``p = (k + 1) / 1000`` with
  ``k`` the permutations scoring at least the observed AUROC; Ojala & Garriga 2010, JMLR 11:1833-1863).

The check **fires** when ``p < 0.01`` **and** the cross-validated AUROC is at least 0.60: the labels are
decodable from eye movements beyond chance (the p-value) and by a margin that matters (the AUROC). The
single-feature AUROC of ``mean(F8 − F7)`` (the horizontal-EOG drift; oriented, so ≥ 0.5) is reported beside
it as the figure a reader can check by hand. Evidence and remedy for EEGMMIDB: ``data_cards/physionet_mi.yaml``.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from neurokit._utils.errors import ConfigError
from neurokit.preprocessing.eeg.eog import (
    EOG_NAME,
    FRONTAL_PROXIES,
    HORIZONTAL_PAIR,
    VERTICAL_PAIR,
)

logger = logging.getLogger("neurokit")

#: the check fires when the permutation p-value is below this …
ALPHA = 0.01
#: … and the cross-validated AUROC reaches this
MIN_AUROC = 0.60
#: label permutations of the test (the smallest p-value is 1 / (N + 1) = 0.001)
N_PERMUTATIONS = 999
#: ridge penalty of the classifier (standardised features; scikit-learn's RidgeClassifier default)
RIDGE_ALPHA = 1.0
#: name of the horizontal-EOG proxy
HORIZONTAL = f"{HORIZONTAL_PAIR[0]} − {HORIZONTAL_PAIR[1]}"
#: name of the vertical-EOG proxy
VERTICAL = f"({VERTICAL_PAIR[0]} + {VERTICAL_PAIR[1]})/2"
#: the remedy the message names
REMEDY = (
    "remove EOG artefacts in the card's preprocessing (eog_removal: ica, with EOG channels or frontal proxies; "
    "eog_removal: regression where the recordings have EOG channels) or drop the frontal channels "
    "(exclude_channels), prepare the store again and check again"
)


@dataclass
class ConfoundCheck:
    """The result of :func:`check_confounds`.

    Attributes
    ----------
    checked : bool
        ``False`` when the check could not run (no proxy channel, regression labels, one class); ``message``
        says why.
    fired : bool
        Labels decodable from the proxies: ``p_value < alpha`` and ``auroc >= min_auroc``.
    message : str
        One line: the verdict with its figures (and the remedy when fired), or why nothing was checked.
    split : str
        The split the check ran on (``"train"``, ``"val"``, ``"test"``, ``"all"``).
    proxies : list of str
        Proxy signals used (channels, ``F8 − F7``, ``(Fp1 + Fp2)/2``).
    features : list of str
        Feature names, ``"mean(PROXY)"`` and ``"logvar(PROXY)"``.
    kind : str
        ``"binary"`` or ``"multiclass"``.
    n_windows, n_subjects : int
    cv : str
        The cross-validation used.
    auroc : float | None
        Cross-validated AUROC of the classifier (multi-class: one-vs-rest macro).
    p_value : float | None
        Permutation p-value of ``auroc``.
    single_feature : str | None
        The headline feature: ``mean(F8 − F7)`` where F7 and F8 exist, else the mean feature of the best proxy.
    single_auroc : float | None
        AUROC of ``single_feature`` alone, oriented (``max(a, 1 − a)``; multi-class: macro over classes).
    single_aurocs : dict
        The same for the mean feature of every proxy.
    alpha, min_auroc : float
        The firing rule.
    n_permutations : int
    """

    checked: bool
    fired: bool
    message: str
    split: str = "train"
    proxies: list[str] = field(default_factory=list)
    features: list[str] = field(default_factory=list)
    kind: str | None = None
    n_windows: int = 0
    n_subjects: int = 0
    cv: str | None = None
    auroc: float | None = None
    p_value: float | None = None
    single_feature: str | None = None
    single_auroc: float | None = None
    single_aurocs: dict[str, float] = field(default_factory=dict)
    alpha: float = ALPHA
    min_auroc: float = MIN_AUROC
    n_permutations: int = N_PERMUTATIONS

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (for ``report.json``)."""
        return asdict(self)


def proxy_signals(ch_names: Sequence[str]) -> list[tuple[str, list[tuple[int, float]]]]:
    """The eye-movement proxies a store's channels allow, each as ``(name, [(channel index, weight), …])``.

    EOG channels (names containing ``EOG``) where there are any; else the frontal channels present among
    :data:`~neurokit.preprocessing.eeg.eog.FRONTAL_PROXIES`, then ``F8 − F7`` and ``(Fp1 + Fp2)/2`` where both
    channels exist. Empty when none is present.

    Parameters
    ----------
    ch_names : sequence of str
        The store's channel names, in stored order.

    Returns
    -------
    list of (str, list of (int, float))
        Each proxy's name and the channel indices and weights whose sum is its signal.

    Examples
    --------
    >>> [n for n, _ in proxy_signals(["Fp1", "Fp2", "F7", "F8", "Cz"])]
    ['Fp1', 'Fp2', 'F7', 'F8', 'F8 − F7', '(Fp1 + Fp2)/2']
    """
    names = list(ch_names)
    eog = [i for i, c in enumerate(names) if EOG_NAME.search(c)]
    if eog:
        return [(names[i], [(i, 1.0)]) for i in eog]
    out = [(c, [(names.index(c), 1.0)]) for c in FRONTAL_PROXIES if c in names]
    if all(c in names for c in HORIZONTAL_PAIR):
        out.append((HORIZONTAL, [(names.index(HORIZONTAL_PAIR[0]), 1.0), (names.index(HORIZONTAL_PAIR[1]), -1.0)]))
    if all(c in names for c in VERTICAL_PAIR):
        out.append((VERTICAL, [(names.index(c), 0.5) for c in VERTICAL_PAIR]))
    return out


def proxy_features(x: np.ndarray, proxies) -> tuple[np.ndarray, list[str]]:
    """Per window and proxy: mean and log-variance over the window.

    Parameters
    ----------
    x : array ``(n, C, N, P)`` or ``(n, C, T)``
        Windows (store units: 100 µV).
    proxies : list from :func:`proxy_signals`

    Returns
    -------
    ``(features (n, 2·len(proxies)) float64, names)``.

    Examples
    --------
    >>> x = np.zeros((2, 2, 4)); x[:, 1] = [[1, 3, 1, 3], [0, 0, 0, 0]]
    >>> f, names = proxy_features(x, [("F8", [(1, 1.0)])])
    >>> names, f[:, 0].tolist(), np.round(f[:, 1], 3).tolist()
    (['mean(F8)', 'logvar(F8)'], [2.0, 0.0], [0.0, -27.631])
    """
    x = np.asarray(x, dtype=np.float64).reshape(x.shape[0], x.shape[1], -1)
    feats, names = [], []
    for name, parts in proxies:
        sig = sum(w * x[:, i] for i, w in parts)
        feats += [sig.mean(axis=1), np.log(sig.var(axis=1) + 1e-12)]
        names += [f"mean({name})", f"logvar({name})"]
    return np.stack(feats, axis=1), names


def oriented_auroc(y: np.ndarray, score: np.ndarray) -> float:
    """AUROC of one feature, oriented (``max(a, 1 − a)``); multi-class: macro over one-vs-rest classes.

    Parameters
    ----------
    y : numpy.ndarray, shape (n,)
        Class per window (two or more classes).
    score : numpy.ndarray, shape (n,)
        The feature's value per window.

    Returns
    -------
    float
        The AUROC, in [0.5, 1]: how well the feature alone separates the classes in either direction.

    Examples
    --------
    >>> oriented_auroc(np.array([0, 0, 1, 1]), np.array([4.0, 3.0, 2.0, 1.0]))
    1.0
    """
    from sklearn.metrics import roc_auc_score

    classes = np.unique(y)
    if len(classes) == 2:
        a = roc_auc_score(y == classes[1], score)
        return float(max(a, 1 - a))
    vals = []
    for c in classes:
        a = roc_auc_score(y == c, score)
        vals.append(max(a, 1 - a))
    return float(np.mean(vals))


def check_features(
    feats: np.ndarray,
    y: np.ndarray,
    groups: np.ndarray,
    names: list[str],
    *,
    n_permutations: int = N_PERMUTATIONS,
    alpha: float = ALPHA,
    min_auroc: float = MIN_AUROC,
    seed: int = 0,
    headline: str | None = None,
    split: str = "train",
) -> ConfoundCheck:
    """The test of :func:`check_confounds` on ready features (one row per window).

    The classifier is a ridge-regularised least-squares linear classifier on in-fold standardised features
    (``alpha`` = :data:`RIDGE_ALPHA`; one-vs-rest for several classes): the decision function of
    :class:`sklearn.linear_model.RidgeClassifier`, written as the fold's hat matrix so that every label
    permutation is scored with one matrix product (999 permutations cost less than one refit each).
    The AUROC is averaged over folds, as :func:`sklearn.model_selection.permutation_test_score` does.

    Parameters
    ----------
    feats : array ``(n, F)``
    y : int array ``(n,)``
        Class per window (two or more classes).
    groups : array ``(n,)``
        Subject per window (folds and permutations keep subjects together).
    names : list of str
        Feature names (``mean(…)``/``logvar(…)``).
    n_permutations : int
        Label permutations within subjects; ``p = (1 + #{permuted AUROC >= observed}) / (1 + n_permutations)``.
    headline : str, optional
        The feature whose single AUROC heads the message (default: ``mean(F8 − F7)`` if present, else the
        best mean feature).

    Returns
    -------
    ConfoundCheck

    Raises
    ------
    ConfigError
        ``feats``, ``y`` and ``groups`` differ in length.
    """
    from sklearn.model_selection import GroupKFold, StratifiedKFold

    feats = np.asarray(feats, dtype=np.float64)
    y = np.asarray(y).astype(int)
    groups = np.asarray(groups).astype(str)
    if len(feats) != len(y) or len(y) != len(groups):
        raise ConfigError(f"confound check: {len(feats)} feature rows, {len(y)} labels, {len(groups)} subjects")
    classes, counts = np.unique(y, return_counts=True)
    kind = "binary" if len(classes) == 2 else "multiclass"
    proxies = [n[len("mean(") : -1] for n in names if n.startswith("mean(")]
    n_groups = len(np.unique(groups))
    base: dict[str, Any] = dict(
        split=split,
        proxies=proxies,
        features=list(names),
        kind=kind,
        n_windows=len(y),
        n_subjects=n_groups,
        alpha=alpha,
        min_auroc=min_auroc,
        n_permutations=n_permutations,
    )
    if len(classes) < 2:
        return ConfoundCheck(checked=False, fired=False, message=f"not checked: one class in the {split} split", **base)
    singles = {n: oriented_auroc(y, feats[:, j]) for j, n in enumerate(names) if n.startswith("mean(")}
    if headline is None:
        headline = f"mean({HORIZONTAL})" if f"mean({HORIZONTAL})" in singles else max(singles, key=singles.__getitem__)
    if n_groups >= 2:
        k = min(5, n_groups)
        folds, cv_name, perm_groups = (
            list(GroupKFold(n_splits=k).split(feats, y, groups)),
            f"GroupKFold({k}) by subject",
            groups,
        )
    else:
        k = int(min(5, counts.min()))
        if k < 2:
            return ConfoundCheck(
                checked=False, fired=False, message="not checked: fewer than 2 windows of a class", **base
            )
        folds = list(StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(feats, y))
        cv_name, perm_groups = f"StratifiedKFold({k}) over windows (one subject)", np.zeros(len(y), dtype=str)
    # one-hot targets (binary: the second class only) for the unpermuted labels and every permutation
    rng = np.random.default_rng(seed)
    perms = [np.arange(len(y))] + [_permute_within(perm_groups, rng) for _ in range(n_permutations)]
    aurocs = np.concatenate(
        [_cv_aurocs(feats, y[np.stack(block, axis=1)], classes, folds) for block in _blocks(perms, 100)]
    )
    auroc = float(aurocs[0])
    p = float((1 + np.sum(aurocs[1:] >= auroc - 1e-12)) / (1 + n_permutations))
    fired = bool(p < alpha and auroc >= min_auroc)
    head = headline[len("mean(") : -1]
    figures = (
        f"cross-validated AUROC {auroc:.2f} from {', '.join(proxies)} (permutation p = {p:.3g}; "
        f"{len(y)} {split} windows of {n_groups} subject(s))"
    )
    if fired:
        message = (
            f"labels are decodable from eye-movement channels: AUROC {singles[headline]:.2f} from {head}, "
            f"{figures}; the model may use eye movements; remedy: {REMEDY}"
        )
    else:
        message = (
            f"no sign that the labels are decodable from eye-movement channels: {figures}; "
            f"AUROC {singles[headline]:.2f} from {head} (fires at p < {alpha:g} and AUROC >= {min_auroc:.2f})"
        )
    return ConfoundCheck(
        checked=True,
        fired=fired,
        message=message,
        cv=cv_name,
        auroc=auroc,
        p_value=p,
        single_feature=headline,
        single_auroc=singles[headline],
        single_aurocs=singles,
        **base,
    )


def _blocks(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _permute_within(groups: np.ndarray, rng) -> np.ndarray:
    """An index permutation that moves windows only within their group (subject)."""
    out = np.arange(len(groups))
    for g in np.unique(groups):
        idx = np.flatnonzero(groups == g)
        out[idx] = rng.permutation(idx)
    return out


def ridge_scores(x_train: np.ndarray, targets: np.ndarray, x_test: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    """Decision values of a ridge least-squares classifier, for many target columns at once.

    Features are standardised with the training rows' mean and standard deviation; the weights solve
    ``(XᵀX + alpha·I) w = Xᵀ(t − mean t)`` on the centred training rows (an intercept, not penalised), as
    :class:`sklearn.linear_model.RidgeClassifier` does with targets ``t`` in {−1, 1}.

    Parameters
    ----------
    x_train : array ``(n_train, F)``; targets : array ``(n_train, M)`` (any real columns); x_test : ``(n_test, F)``

    Returns
    -------
    array ``(n_test, M)``: the decision value of each test row for each target column.

    Examples
    --------
    >>> x = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> ridge_scores(x, np.array([[-1.0], [-1], [1], [1]]), np.array([[0.0], [3.0]]), alpha=0.0).ravel().round(3)
    array([-1.2,  1.2])
    """
    mu, sd = x_train.mean(axis=0), x_train.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    xtr, xte = (x_train - mu) / sd, (x_test - mu) / sd
    w = np.linalg.solve(xtr.T @ xtr + alpha * np.eye(xtr.shape[1]), xtr.T @ (targets - targets.mean(axis=0)))
    return xte @ w + targets.mean(axis=0)


def _auroc_columns(y_true: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """AUROC of each column of ``scores`` ``(n, M)`` against boolean ``y_true`` ``(n, M)`` (Mann–Whitney, ties
    counted half)."""
    from scipy.stats import rankdata

    r = rankdata(scores, axis=0)
    n1 = y_true.sum(axis=0)
    n0 = len(y_true) - n1
    return ((r * y_true).sum(axis=0) - n1 * (n1 + 1) / 2) / np.maximum(n1 * n0, 1)


def _cv_aurocs(feats: np.ndarray, labels: np.ndarray, classes: np.ndarray, folds) -> np.ndarray:
    """Cross-validated AUROC (mean over folds; multi-class: one-vs-rest macro) of each column of ``labels``
    ``(n, M)`` (the true labels and permutations of them)."""
    out = np.zeros(labels.shape[1])
    positive = classes[1:] if len(classes) == 2 else classes
    for tr, te in folds:
        per_class = []
        for c in positive:
            t = np.where(labels[tr] == c, 1.0, -1.0)
            s = ridge_scores(feats[tr], t, feats[te], RIDGE_ALPHA)
            per_class.append(_auroc_columns(labels[te] == c, s))
        out += np.mean(per_class, axis=0)
    return out / len(folds)


def check_confounds(
    data,
    split: str = "train",
    *,
    splits: dict[str, list[str]] | None = None,
    n_permutations: int = N_PERMUTATIONS,
    alpha: float = ALPHA,
    min_auroc: float = MIN_AUROC,
    seed: int = 0,
) -> ConfoundCheck:
    """Test whether the labels of a store are decodable from eye-movement proxies (module docstring: proxies,
    features, classifier, and the firing rule ``p < alpha`` and ``AUROC >= min_auroc``).

    Parameters
    ----------
    data : path, list of paths, or :class:`~neurokit.data.dataset.PatchDataset`
        Labelled EEG store(s); a dataset is checked as given (``split`` then only names it in the message).
    split : str
        ``"train"`` (default), ``"val"``, ``"test"`` or ``"all"``: the card's split (or ``splits``).
    splits : dict, optional
        Explicit subjects per split, as for fine-tuning.
    n_permutations, alpha, min_auroc : see :data:`N_PERMUTATIONS`, :data:`ALPHA`, :data:`MIN_AUROC`
    seed : int
        Seed of the permutations (and of the folds of a one-subject split).

    Returns
    -------
    ConfoundCheck
        ``checked=False`` (never an error) for a store with no EOG or frontal channel (e.g. single-channel
        Bonn), a regression task or a surface store, with the reason in ``message``.

    Raises
    ------
    ConfigError
        An unknown ``split``; a store without labelled samples.

    Examples
    --------
    >>> res = check_confounds("runs/mi.h5")  # doctest: +SKIP
    >>> res.fired, round(res.single_auroc, 2)  # doctest: +SKIP
    (True, 0.76)
    """
    from neurokit.data.dataset import PatchDataset, open_labelled
    from neurokit.data.splits import resolve_splits

    if isinstance(data, PatchDataset):
        ds, where = data, split
    else:
        if split not in ("train", "val", "test", "all"):
            raise ConfigError(f"split={split!r}: choose train, val, test or all")
        ds_all, _, _, _ = open_labelled(data if isinstance(data, (list, tuple)) else [data])
        if split == "all":
            ds = ds_all
        else:
            _, kw = resolve_splits(ds_all, splits)
            ds = PatchDataset(ds_all.stores, labelled=True, **kw[split])
        where = split
    info = ds.info
    if (info.modality or "eeg") != "eeg":
        return ConfoundCheck(
            checked=False,
            fired=False,
            split=where,
            message=f"not checked: the store holds {info.modality} samples, not EEG",
        )
    labels = np.asarray(ds.labels)
    if labels.dtype.kind == "f":
        return ConfoundCheck(checked=False, fired=False, split=where, message="not checked: a regression target")
    proxies = proxy_signals(info.ch_names or [])
    if not proxies:
        return ConfoundCheck(
            checked=False,
            fired=False,
            split=where,
            message="not checked: no EOG or frontal channels (Fp1/Fp2, AF7/AF8, F7/F8) in the store",
        )
    if len(ds) == 0:
        raise ConfigError(f"split {where!r} holds no labelled sample")
    feats, names = proxy_features(_proxy_windows(ds, proxies), _reindexed(proxies))
    return check_features(
        feats,
        labels,
        ds.meta("subject"),
        names,
        n_permutations=n_permutations,
        alpha=alpha,
        min_auroc=min_auroc,
        seed=seed,
        split=where,
    )


def _needed(proxies) -> list[int]:
    return sorted({i for _, parts in proxies for i, _ in parts})


def _reindexed(proxies):
    """The proxies with channel indices into the columns :func:`_proxy_windows` reads."""
    pos = {c: k for k, c in enumerate(_needed(proxies))}
    return [(n, [(pos[i], w) for i, w in parts]) for n, parts in proxies]


def _proxy_windows(ds, proxies) -> np.ndarray:
    """The proxy channels of every window of ``ds``, ``(n, len(needed), T)`` float32, in dataset order (read in
    batches of 1024 windows, sorted within each store)."""
    chans = _needed(proxies)
    out = None
    for si, st in enumerate(ds.stores):
        rows = np.flatnonzero(ds.index[:, 0] == si)
        if not len(rows):
            continue
        idx = ds.index[rows, 1]
        order = np.argsort(idx)
        for a in range(0, len(order), 1024):  # batches: a large store is never read whole
            part = order[a : a + 1024]
            x = np.asarray(st.patches(idx[part]))[:, chans]
            x = x.reshape(x.shape[0], x.shape[1], -1)
            if out is None:
                out = np.empty((len(ds), len(chans), x.shape[-1]), dtype=np.float32)
            out[rows[part]] = x
    if out is None:
        raise ValueError("confound check: the dataset holds no window to read the proxy channels from")
    return out
