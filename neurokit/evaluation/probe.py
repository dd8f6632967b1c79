"""Linear probing: the cheap test of a frozen representation (as CBraMod, LaBraM, BIOT and EEGPT report it).

A logistic regression (scikit-learn; L2, lbfgs) on standardised pooled backbone features, its inverse
regularisation ``C`` chosen on the validation split by the task's selection metric
(:data:`neurokit.evaluation.metrics.SELECTION`); a regression task takes a ridge regression (``alpha = 1/C``).
The fitted probe is returned as one linear map on the raw features (the standardisation folded in), so it can
be stored as the weights of an ``avgpool`` head.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from neurokit.evaluation.metrics import SELECTION, library_warnings_said, score

#: inverse regularisation strengths tried on the validation split
PROBE_CS = tuple(float(c) for c in np.logspace(-4, 3, 8))


@dataclass
class LinearProbe:
    """A fitted probe: ``scores = features @ weight.T + bias`` (binary and regression: one output).

    Made by :func:`fit_linear_probe`.

    Attributes
    ----------
    weight : numpy.ndarray, shape (n_outputs, D)
        The linear map on the raw (unstandardised) features.
    bias : numpy.ndarray, shape (n_outputs,)
        Its offset.
    C : float
        The inverse regularisation strength chosen on the validation split.
    selection_metric : str
        The metric that chose it (:data:`~neurokit.evaluation.metrics.SELECTION` of the task's kind).
    val_best : float
        Its value on the validation split.
    records : list of dict
        One row per ``C`` tried: ``{"C": C, "val_<metric>": value}``.

    Examples
    --------
    >>> p = LinearProbe(np.array([[1.0, -1.0]]), np.array([0.5]), 1.0, "auroc", 0.9)
    >>> p.scores(np.array([[2.0, 1.0]])).tolist()
    [1.5]
    """

    weight: np.ndarray  # (n_outputs, D)
    bias: np.ndarray  # (n_outputs,)
    C: float
    selection_metric: str
    val_best: float
    records: list[dict] = field(default_factory=list)  # one per C: {"C", "val_<metric>"…}

    @property
    def best(self) -> float:
        """:attr:`val_best`, under the name of a Trainer result's selection value (fine-tuning reports both alike)."""
        return self.val_best

    @property
    def best_epoch(self) -> int:
        """0: a probe is fitted in closed form, without epochs (a Trainer result's ``best_epoch`` counts from 1)."""
        return 0

    def scores(self, features: np.ndarray) -> np.ndarray:
        """Probe outputs of pooled features.

        Parameters
        ----------
        features : numpy.ndarray, shape (n, D)
            Pooled backbone features.

        Returns
        -------
        numpy.ndarray, shape (n,) or (n, n_classes)
            Logits (binary: of class 1) or regression predictions.
        """
        out = np.asarray(features, dtype=np.float64) @ self.weight.T + self.bias
        return out[:, 0] if out.shape[1] == 1 else out


def fit_linear_probe(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_val: np.ndarray,
    y_val: np.ndarray,
    kind: str,
    *,
    Cs=PROBE_CS,
    seed: int = 0,
) -> LinearProbe:
    """Fit a linear probe on pooled features, choosing ``C`` on the validation split.

    Parameters
    ----------
    x_train, x_val : float arrays ``(n, D)``
        Pooled frozen features (:func:`neurokit.training.predict.extract_features`).
    y_train, y_val : arrays ``(n,)``
        Class indices (``binary``/``multiclass``) or targets (``regression``).
    kind : ``"binary"``, ``"multiclass"`` or ``"regression"``
    Cs : sequence of float
        Inverse regularisation strengths tried (default :data:`PROBE_CS`, 1e-4 … 1e3).
    seed : int
        Solver seed.

    Returns
    -------
    LinearProbe
        The probe fitted on the training split with the best ``C`` (ties: the smaller ``C``, the stronger
        regularisation), as a linear map on the raw features.

    Raises
    ------
    ValueError
        A training split of one class (logistic regression cannot be fitted), or no ``C`` in ``Cs``.

    Examples
    --------
    >>> rng = np.random.default_rng(0); y = np.arange(40) % 2; x = rng.normal(size=(40, 3)) + y[:, None]
    >>> fit_linear_probe(x[:30], y[:30], x[30:], y[30:], "binary").scores(x[30:]).shape
    (10,)
    """
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.preprocessing import StandardScaler

    if kind != "regression" and len(np.unique(y_train)) < 2:
        raise ValueError(f"linear probe: the training split holds one class only ({np.unique(y_train).tolist()})")
    scaler = StandardScaler().fit(x_train)
    xt, xv = scaler.transform(x_train), scaler.transform(x_val)
    metric = SELECTION[kind]
    best, records = None, []
    for C in Cs:
        if kind == "regression":
            m = Ridge(alpha=1.0 / C).fit(xt, y_train)
            w, b = np.atleast_2d(m.coef_), np.atleast_1d(m.intercept_)
        else:
            with library_warnings_said(f"linear probe C={C:g}"):
                m = LogisticRegression(C=C, max_iter=2000, random_state=seed).fit(xt, y_train.astype(int))
            w, b = m.coef_, m.intercept_  # binary: (1, D) log-odds of class 1; multi-class: (K, D)
        out = xv @ w.T + b
        v = score(kind, y_val, out[:, 0] if out.shape[1] == 1 else out).get(metric, float("nan"))
        records.append({"C": float(C), f"val_{metric}": float(v)})
        if best is None or (np.isfinite(v) and (not np.isfinite(best[0]) or v > best[0])):
            best = (float(v), float(C), w, b)
    if best is None:
        raise ValueError(f"linear probe: Cs is empty ({list(Cs)}): give at least one inverse regularisation strength")
    v, C, w, b = best
    # fold the standardisation in: w·(x − μ)/σ + b = (w/σ)·x + (b − Σ w μ/σ)
    weight = w / scaler.scale_
    bias = b - (w * scaler.mean_ / scaler.scale_).sum(axis=1)
    return LinearProbe(weight=weight, bias=bias, C=C, selection_metric=metric, val_best=v, records=records)
