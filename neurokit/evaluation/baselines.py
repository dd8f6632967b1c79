"""Classical baselines scored on the same split and with the same metrics as fine-tuning, so a report
shows at once whether the foundation model earns its cost.

- ``csp_lda``: band-pass 8–32 Hz → OAS covariance matrices → common spatial patterns
  (:class:`pyriemann.spatialfilters.CSP`, ``nfilter=6``, log-variance) → linear discriminant analysis
  (``solver="svd"``): MOABB's ``CSP`` pipeline (``pipelines/CSP.yml``) on its motor-imagery paradigms'
  band (Blankertz et al. 2008). Multichannel.
- ``riemann_lr``: band-pass 8–32 Hz → OAS covariance matrices → tangent space at their Riemannian mean
  (:class:`pyriemann.tangentspace.TangentSpace`; Barachant et al. 2013) → logistic regression.
  Multichannel.
- ``bandpower_lr``: log band power per channel (Welch; δ 1–4, θ 4–8, α 8–13, β 13–30, γ 30–45 Hz)
  → standardised → logistic regression (ridge regression for regression tasks). Any channel count;
  the one that applies to few-channel data such as the single-channel Bonn segments.
- ``patchmean_lr`` (surface fMRI and any non-EEG store): the mean of each patch (each tubelet's vertices)
  → standardised → logistic regression (ridge for regression). The EEG baselines do not apply there.
- ``train_mean`` (regression tasks only): every window predicted the mean target of the training split, the
  floor a regression must clear (its R² on a test split is ≤ 0: the training mean is not the test's own).

Inputs are the store's patches joined back into ``(n, C, N·200)`` series at the store's rate. The band of the
spatial methods (:data:`MI_BAND`, MOABB's ``MotorImagery``/``LeftRightImagery`` default ``fmin=8, fmax=32``)
is applied as MOABB applies it, ``mne.filter.filter_data(..., method="iir")`` (4th-order Butterworth run
forward and backward), here on each window rather than on the continuous recording; ``band=None`` keeps
the store's band.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from neurokit._utils.errors import ConfigError
from neurokit.evaluation.metrics import library_warnings_said

logger = logging.getLogger("neurokit")

#: the name each baseline goes by in printed tables, figures and the README (the ids stay the options' values)
BASELINE_TITLES = {
    "csp_lda": "CSP + LDA",
    "riemann_lr": "tangent space + LR",
    "bandpower_lr": "band power + LR",
    "patchmean_lr": "patch mean + LR",
}
#: the names of the baselines on a regression task (those that fit a ridge there, not a logistic regression)
REGRESSION_TITLES = {
    "train_mean": "training mean",
    "bandpower_lr": "band power + ridge",
    "patchmean_lr": "patch mean + ridge",
}


BANDS = ((1, 4), (4, 8), (8, 13), (13, 30), (30, 45))
METHODS = ("csp_lda", "riemann_lr", "bandpower_lr", "patchmean_lr")
#: the baselines of regression tasks only, scored beside :data:`METHODS` that apply (not a ``--method`` choice)
REGRESSION_METHODS = ("train_mean",)
MULTICHANNEL = ("csp_lda", "riemann_lr")
#: the EEG methods; ``patchmean_lr`` is the one for other modalities
EEG_METHODS = ("csp_lda", "riemann_lr", "bandpower_lr")
#: band-pass of the spatial (motor-imagery) methods, Hz: MOABB's motor-imagery paradigms' fmin, fmax
MI_BAND = (8.0, 32.0)
#: pyriemann CSP filters in MOABB's CSP pipeline
CSP_FILTERS = 6


def applicable(n_channels: int, kind: str, modality: str = "eeg") -> list[str]:
    """Baselines that fit ``n_channels``, a task ``kind`` and a store ``modality``: spatial methods need ≥ 2
    channels and classes; band power fits every EEG store; a non-EEG store gets ``patchmean_lr``; a regression
    is also judged against predicting the training mean (``train_mean``).

    Parameters
    ----------
    n_channels : int
        Channels of the store's samples.
    kind : {"binary", "multiclass", "regression"}
        The task's kind.
    modality : str
        The store's modality (``"eeg"``, ``"surface"``).

    Returns
    -------
    list of str
        Baseline names (:data:`METHODS`, plus ``"train_mean"`` for a regression), in the order they are run.

    Examples
    --------
    >>> applicable(1, "binary"), applicable(64, "binary"), applicable(320, "binary", "surface")
    (['bandpower_lr'], ['csp_lda', 'riemann_lr', 'bandpower_lr'], ['patchmean_lr'])
    >>> applicable(17, "regression")
    ['train_mean', 'bandpower_lr']
    """
    if modality != "eeg":
        return ["train_mean", "patchmean_lr"] if kind == "regression" else ["patchmean_lr"]
    if kind == "regression":
        return ["train_mean", "bandpower_lr"]
    return (list(MULTICHANNEL) if n_channels >= 2 else []) + ["bandpower_lr"]


def bandpass(x: np.ndarray, sfreq: float, band: tuple[float, float] = MI_BAND) -> np.ndarray:
    """Band-pass series ``(n, C, T)`` (float64, any unit) as MOABB's paradigms do:
    ``mne.filter.filter_data(x, sfreq, *band, method="iir")``, a 4th-order Butterworth filter applied forward
    and backward (zero phase; the magnitude response is squared, −6 dB at the edges).

    Parameters
    ----------
    x : numpy.ndarray, shape (n, C, T)
        Series (any unit; filtered along the last axis).
    sfreq : float
        Sampling rate of ``x``, Hz.
    band : tuple of (float, float)
        Low and high edges, Hz (default :data:`MI_BAND`, 8–32 Hz).

    Returns
    -------
    numpy.ndarray, shape (n, C, T)
        The filtered series, float64, same unit.

    Raises
    ------
    ConfigError
        The band is not ``0 < low < high < sfreq / 2``.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.arange(400) / 200.0
    >>> y = bandpass(np.sin(2 * np.pi * 20 * t)[None, None], 200.0)
    >>> bool(abs(y[0, 0, 100:300]).max() > 0.95)
    True
    """
    from mne.filter import filter_data

    lo, hi = _check_band(band, sfreq)
    return filter_data(np.asarray(x, dtype=np.float64), sfreq, lo, hi, method="iir", verbose="error")


def _check_band(band: tuple[float, float], sfreq: float) -> tuple[float, float]:
    lo, hi = float(band[0]), float(band[1])
    if not 0 < lo < hi < sfreq / 2:
        raise ConfigError(
            f"baseline band {tuple(band)}: needs 0 < low < high < {sfreq / 2:g} Hz (half the store's rate)"
        )
    return lo, hi


def patch_means(x: np.ndarray) -> np.ndarray:
    """Features ``(n, C·N)``: the mean of each patch of samples ``(n, C, N, P)`` (surface: each tubelet's vertices).

    Parameters
    ----------
    x : numpy.ndarray, shape (n, C, N, P)
        Samples as stored: ``C`` channels (or tubelets) of ``N`` patches of ``P`` values.

    Returns
    -------
    numpy.ndarray, shape (n, C * N)
        Each patch's mean, float64, in the unit of ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> patch_means(np.arange(8.0).reshape(1, 2, 1, 4)).tolist()
    [[1.5, 5.5]]
    """
    x = np.asarray(x, dtype=np.float64)
    return x.reshape(x.shape[0], -1, x.shape[-1]).mean(axis=-1)


def _series(x: np.ndarray) -> np.ndarray:
    """``(n, C, N, P)`` patches → ``(n, C, N·P)`` float64 series."""
    return np.asarray(x, dtype=np.float64).reshape(x.shape[0], x.shape[1], -1)


def bandpower_features(x: np.ndarray, sfreq: float) -> np.ndarray:
    """Log band power ``(n, C · len(BANDS))`` of series ``(n, C, T)`` (Welch, 1-s Hann segments).

    Parameters
    ----------
    x : numpy.ndarray, shape (n, C, T)
        Series, µV (any unit: the features shift by a constant).
    sfreq : float
        Sampling rate, Hz.

    Returns
    -------
    numpy.ndarray, shape (n, C * B)
        ``log(mean power + 1e-12)`` in each of the ``B`` bands of :data:`BANDS` that lies below the Nyquist
        frequency, band-major (all channels of band 1, then band 2…).

    Examples
    --------
    >>> import numpy as np
    >>> bandpower_features(np.random.default_rng(0).normal(size=(3, 2, 400)), 200.0).shape
    (3, 10)
    """
    from scipy.signal import welch

    f, p = welch(x, fs=sfreq, nperseg=min(x.shape[-1], int(sfreq)), axis=-1)
    feats = []
    for lo, hi in BANDS:
        sel = (f >= lo) & (f < hi)
        if not sel.any():
            continue
        feats.append(np.log(p[..., sel].mean(axis=-1) + 1e-12))
    return np.concatenate(feats, axis=1) if feats else np.zeros((x.shape[0], 0))


def make_estimator(method: str, kind: str, sfreq: float, seed: int = 0, band: tuple[float, float] | None = MI_BAND):
    """The sklearn pipeline of one baseline.

    Parameters
    ----------
    method : str
        One of :data:`METHODS`.
    kind : {"binary", "multiclass", "regression"}
    sfreq : float
        Rate of the series, Hz.
    seed : int
        Seed of the logistic regression.
    band : (float, float) or None
        Band-pass (Hz) before the spatial methods (``csp_lda``, ``riemann_lr``); default :data:`MI_BAND`,
        MOABB's motor-imagery band. ``None``: the store's band.

    Returns
    -------
    sklearn.pipeline.Pipeline
        Fitted on series ``(n, C, T)`` (EEG methods) or patches ``(n, C, N, P)`` (``patchmean_lr``).

    Raises
    ------
    ConfigError
        An unknown method, ``train_mean`` for a classification, or a band outside ``(0, sfreq / 2)``.

    Examples
    --------
    >>> [name for name, _ in make_estimator("csp_lda", "binary", 200.0).steps]
    ['functiontransformer', 'covariances', 'csp', 'lineardiscriminantanalysis']
    """
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, StandardScaler

    lr = LogisticRegression(max_iter=2000, C=1.0, class_weight="balanced", random_state=seed)
    if method == "train_mean":
        if kind != "regression":
            raise ConfigError(
                f"baseline 'train_mean' predicts a regression target; this is a {kind} task: use {', '.join(METHODS)}"
            )
        from sklearn.dummy import DummyRegressor

        return make_pipeline(FunctionTransformer(patch_means), DummyRegressor(strategy="mean"))
    spatial = []
    if method in MULTICHANNEL and band is not None:
        _check_band(band, sfreq)  # checked when the pipeline is made, not at the first fit
        spatial = [FunctionTransformer(bandpass, kw_args={"sfreq": sfreq, "band": tuple(band)})]
    if method == "csp_lda":
        from pyriemann.estimation import Covariances
        from pyriemann.spatialfilters import CSP

        return make_pipeline(
            *spatial,
            Covariances(estimator="oas"),
            CSP(nfilter=CSP_FILTERS, log=True),
            LinearDiscriminantAnalysis(solver="svd"),
        )
    if method == "riemann_lr":
        from pyriemann.estimation import Covariances
        from pyriemann.tangentspace import TangentSpace

        return make_pipeline(
            *spatial, Covariances(estimator="oas"), TangentSpace(metric="riemann"), StandardScaler(), lr
        )
    if method == "bandpower_lr":
        feats = FunctionTransformer(bandpower_features, kw_args={"sfreq": sfreq})
        return make_pipeline(feats, StandardScaler(), Ridge(alpha=1.0) if kind == "regression" else lr)
    if method == "patchmean_lr":
        return make_pipeline(
            FunctionTransformer(patch_means), StandardScaler(), Ridge(alpha=1.0) if kind == "regression" else lr
        )
    raise ConfigError(f"baseline {method!r}; allowed: {', '.join(METHODS)}")


def _scores(est, x: np.ndarray, kind: str) -> np.ndarray:
    if kind == "regression":
        return est.predict(x)
    s = est.decision_function(x)
    return s if kind == "binary" else np.asarray(s).reshape(len(x), -1)


def chance_metrics(kind: str, n_classes: int) -> dict[str, float]:
    """What a classifier that ignores the input scores in expectation.

    Parameters
    ----------
    kind : {"binary", "multiclass", "regression"}
        The task's kind.
    n_classes : int
        Number of classes (unused for a regression).

    Returns
    -------
    dict of str to float
        Chance ``balanced_accuracy`` and ``cohen_kappa`` (and ``auroc`` for a binary task); ``{"r2": 0.0}`` for a
        regression.

    Examples
    --------
    >>> chance_metrics("binary", 2)
    {'balanced_accuracy': 0.5, 'cohen_kappa': 0.0, 'auroc': 0.5}
    """
    if kind == "regression":
        return {"r2": 0.0}
    out = {"balanced_accuracy": 1.0 / n_classes, "cohen_kappa": 0.0}
    if kind == "binary":
        out["auroc"] = 0.5
    return out


def baseline_verdict(
    kind: str, test: dict, baselines: dict | None, chance: dict | None, metric: str | None = None
) -> dict | None:
    """Whether a fine-tuned model beats the classical baselines and chance on its test split, on one metric: the
    run's selection metric when it is scored (AUROC for a binary task, Cohen's κ for several classes, R² for a
    regression), else balanced accuracy.

    Parameters
    ----------
    kind : {"binary", "multiclass", "regression"}
        The task's kind.
    test : dict
        The model's test metrics (metric → value; ``None`` for an undefined one).
    baselines : dict or None
        ``run_baselines``' result: baseline id → ``{"test": {metric: value}, …}`` (entries without test metrics,
        a baseline that could not run, are left out).
    chance : dict or None
        :func:`chance_metrics`.
    metric : str, optional
        The metric to judge on (default: as above).

    Returns
    -------
    dict or None
        ``metric``, ``model`` (its value), ``best`` (the best baseline's title, or ``None`` without baselines),
        ``best_value``, ``chance``, ``beats_best`` and ``beats_chance`` (strictly above); ``None`` when the model's
        metric is undefined.

    Examples
    --------
    >>> v = baseline_verdict("binary", {"auroc": 0.836, "balanced_accuracy": 0.5},
    ...                      {"bandpower_lr": {"test": {"auroc": 0.9}}}, {"auroc": 0.5})
    >>> v["best"], v["beats_best"], v["beats_chance"]
    ('band power + LR', False, True)
    """
    default = {"binary": "auroc", "multiclass": "cohen_kappa", "regression": "r2"}.get(kind, "balanced_accuracy")
    metric = metric if metric and test.get(metric) is not None else default
    if test.get(metric) is None:
        metric = "balanced_accuracy"
    model = test.get(metric)
    if model is None:
        return None
    titles = REGRESSION_TITLES if kind == "regression" else BASELINE_TITLES
    scored = {
        titles.get(k, k): float(r["test"][metric])
        for k, r in (baselines or {}).items()
        if isinstance(r, dict) and isinstance(r.get("test"), dict) and r["test"].get(metric) is not None
    }
    best = max(scored, key=lambda k: scored[k]) if scored else None
    ch = (chance or {}).get(metric)
    return {
        "metric": metric,
        "model": float(model),
        "best": best,
        "best_value": scored.get(best) if best else None,
        "chance": ch,
        "beats_best": bool(best is None or model > scored[best]),
        "beats_chance": bool(ch is None or model > ch),
    }


def run_baselines(
    parts: dict,
    kind: str,
    *,
    sfreq: float,
    methods: Sequence[str] | None = None,
    seed: int = 0,
    band: tuple[float, float] | None = MI_BAND,
) -> dict[str, dict[str, Any]]:
    """Fit each baseline on ``parts["train"]`` and score ``val`` and ``test``.

    Parameters
    ----------
    parts : dict of str to PatchDataset
        Split name → labelled samples (:class:`~neurokit.data.dataset.PatchDataset`); ``"train"`` is required,
        ``"val"`` and ``"test"`` are scored when present.
    kind : {"binary", "multiclass", "regression"}
        The task's kind.
    sfreq : float
        Rate of the stored series, Hz (200 Hz for CBraMod stores).
    methods : sequence of str | None
        Names from :data:`METHODS`; ``None``: :func:`applicable` to the channel count and modality; an empty
        sequence fits none (EEGNet alone: :func:`neurokit.pipelines.compare.baseline_with_eegnet` trains it
        beside them).
    seed : int
        Seed of the logistic regressions.
    band : tuple of (float, float) | None
        Band-pass of the spatial methods, Hz (default :data:`MI_BAND`, 8–32 Hz); ``None`` keeps the store's band.

    Returns
    -------
    dict of str to dict
        ``{method: {"val": metrics, "test": metrics, "seconds": s}}`` (metrics as in
        :func:`neurokit.evaluation.metrics.score`); a baseline that cannot be fitted (e.g. one class in the
        training split) reports ``{"error": message}`` instead. A store that is not EEG (surface fMRI) gets
        ``patchmean_lr`` only: band power, CSP and covariances are EEG methods.

    Raises
    ------
    ConfigError
        An unknown method, a multichannel method on one channel, an EEG method asked for a non-EEG store, an
        empty split.

    Examples
    --------
    >>> from neurokit.data.dataset import PatchDataset
    >>> parts = {k: PatchDataset(["lr.h5"], labelled=True, subjects=s)
    ...          for k, s in {"train": ["S001"], "test": ["S002"]}.items()}  # doctest: +SKIP
    >>> run_baselines(parts, "binary", sfreq=200.0)["csp_lda"]["test"]["balanced_accuracy"]  # doctest: +SKIP
    0.71
    """
    import time

    from mne.utils import use_log_level

    from neurokit.evaluation.metrics import score

    modality = parts["train"].info.modality or "eeg"
    if modality != "eeg":  # band power, CSP and covariances are EEG methods: patch means beside a surface model
        eeg = [m for m in methods or () if m in EEG_METHODS]
        if eeg:
            raise ConfigError(
                f"baselines {', '.join(eeg)} are EEG methods; this store holds {modality} samples (use patchmean_lr)"
            )
        logger.info("classical EEG baselines skipped: the store holds %s samples; patchmean_lr instead", modality)
    # surface samples are large (tubelets × frames × vertices): keep only each patch's mean, read in chunks
    reduce = (lambda a: np.asarray(a, dtype=np.float32).mean(axis=-1, keepdims=True)) if modality != "eeg" else None
    raw = {k: (_load(d, reduce), np.asarray(d.labels)) for k, d in parts.items()}
    data = {k: (x if modality != "eeg" else _series(x), y) for k, (x, y) in raw.items()}
    n_ch = data["train"][0].shape[1]
    methods = list(methods) if methods is not None else applicable(n_ch, kind, modality)
    for m in methods:
        if m not in METHODS and not (m in REGRESSION_METHODS and kind == "regression"):
            raise ConfigError(f"baseline {m!r}; allowed: {', '.join(METHODS)}")
        if m in MULTICHANNEL and n_ch < 2:
            raise ConfigError(f"baseline {m!r} needs >= 2 channels; the store has {n_ch} (use bandpower_lr)")
    if "patchmean_lr" in methods and modality == "eeg":
        data_p = {k: (x, y) for k, (x, y) in raw.items()}  # patch means work on the stored patches
    out: dict[str, dict[str, Any]] = {}
    for m in methods:
        t0 = time.perf_counter()
        est = make_estimator(m, kind, sfreq, seed, band=band)
        src = data_p if m == "patchmean_lr" and modality == "eeg" else data
        xtr, ytr = src["train"]
        try:
            with use_log_level("error"), library_warnings_said(f"baseline {m}"):  # CSP logs every covariance
                est.fit(xtr, ytr if kind != "regression" else ytr.astype(float))
        except (ValueError, np.linalg.LinAlgError) as exc:
            out[m] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        res: dict[str, Any] = {}
        for split in ("val", "test"):
            if split in src:
                x, y = src[split]
                res[split] = score(kind, y, _scores(est, x, kind))
        res["seconds"] = time.perf_counter() - t0
        out[m] = res
    return out


def _load(ds, reduce=None, chunk: int = 256) -> np.ndarray:
    """All patches of a :class:`PatchDataset` as one array, read store by store in index order (``reduce``:
    applied to each chunk of ``chunk`` samples as it is read)."""
    xs = []
    for si, st in enumerate(ds.stores):
        idx = np.sort(np.asarray([i for s, i in ds.index if s == si], dtype=np.int64))
        for a in range(0, len(idx), chunk):
            part = st.patches(idx[a : a + chunk])
            xs.append(reduce(part) if reduce is not None else part)
    if not xs:
        raise ConfigError("empty split")
    # PatchDataset keeps store order then sample order, which is what the sorted reads return
    return np.concatenate(xs)


def baseline(
    store: str | Path | Sequence[str | Path],
    *,
    methods: Sequence[str] | None = None,
    splits: dict[str, list[str]] | None = None,
    seed: int = 0,
    band: tuple[float, float] | None = MI_BAND,
) -> dict[str, Any]:
    """``neuro baseline STORE``: classical baselines on a labelled store, split as fine-tuning splits it
    (card subjects, or ``splits``).

    Parameters
    ----------
    store : str | pathlib.Path | sequence of str or pathlib.Path
        A labelled patch store (``.h5`` file or shard-set folder) written by ``neuro prepare``, or several stores
        of one task read as one.
    methods : sequence of str | None
        Names from :data:`METHODS`; ``None``: those :func:`applicable` to the store.
    splits : dict of str to list of str | None
        Split name → subject ids (``{"train": [...], "val": [...], "test": [...]}``); ``None``: the splits the
        store's card records.
    seed : int
        Seed of the logistic regressions.
    band : tuple of (float, float) | None
        The spatial methods' band-pass, Hz (:data:`MI_BAND`); ``None``: the store's band.

    Returns
    -------
    dict
        ``{"task", "card", "kind", "band", "label_names", "chance", "split_by", "n_samples", "baselines"}``:
        ``chance`` from :func:`chance_metrics`, ``baselines`` from :func:`run_baselines`, ``n_samples`` per split.

    Raises
    ------
    ConfigError
        A store without labelled samples, an empty split, a training split with one class, or a refused method
        (:func:`run_baselines`).
    FileNotFoundError
        No store at ``store``.

    Examples
    --------
    >>> res = baseline("lr.h5", band=None)  # doctest: +SKIP
    """
    from neurokit.data.dataset import PatchDataset, open_labelled
    from neurokit.data.splits import check_training_classes, resolve_splits

    ds_all, names, n_classes, kind = open_labelled(store)
    stores = [st.path for st in ds_all.stores]
    how, kw = resolve_splits(ds_all, splits)
    parts = {k: PatchDataset(ds_all.stores, labelled=True, **v) for k, v in kw.items()}
    for k, d in parts.items():
        if len(d) == 0:
            raise ConfigError(f"{stores[0]}: split {k!r} is empty ({kw[k]})")
    if "train" in parts:  # as fine-tuning refuses it: no baseline can be fitted to one class
        try:
            check_training_classes(parts["train"].labels, names, kw["train"])
        except ConfigError as exc:
            raise ConfigError(f"{stores[0]}: {exc}") from None
    sfreq = float(ds_all.info.sfreq or 200.0)
    res = run_baselines(parts, kind, sfreq=sfreq, methods=methods, seed=seed, band=band)
    return {
        "task": ds_all.info.task,
        "card": ds_all.info.card,
        "kind": kind,
        "band": list(band) if band else None,
        "label_names": names,
        "chance": chance_metrics(kind, n_classes),
        "split_by": how,
        "n_samples": {k: len(d) for k, d in parts.items()},
        "baselines": res,
    }
