"""A scikit-learn classifier around fine-tuning a neurokit backbone (CBraMod on EEG, SiT on surface tubelets),
so that tools built on scikit-learn (MOABB's evaluations, ``cross_val_score``, ``GridSearchCV``) benchmark it
beside their own pipelines.

``fit(X, y)`` takes EEG trials ``(n_trials, n_channels, n_times)`` at ``sfreq`` (resampled to 200 Hz, scaled to
CBraMod's unit of 100 µV and cut into 200-sample patches, a trailing part shorter than a patch dropped) or MNE
``Epochs`` (their EEG channels, rate and event codes); for other models ``X`` holds the store-shaped samples
themselves (SiT: ``(n, tubelets, frames, vertices)``). Training follows ``neuro finetune``'s recipe (AdamW with a
backbone and a head learning rate, cosine schedule to ``min_lr``, gradient clipping, label smoothing), for a fixed
number of epochs and without a validation split: the estimator keeps the last state, as scikit-learn fits do.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin


logger = logging.getLogger("neurokit")

#: CBraMod's rate and patch length
TARGET_SFREQ = 200.0
PATCH = 200
#: default ``scale``: volts (MNE, MOABB) → CBraMod's unit of 100 µV
VOLTS_TO_CBRAMOD = 1e4


class FoundationClassifier(ClassifierMixin, TransformerMixin, BaseEstimator):
    """Fine-tune a neurokit backbone with a classification head, as a scikit-learn classifier.

    Parameters
    ----------
    model : {"cbramod", "sit"}
        Backbone family of a model trained from scratch (``init`` names its own).
    init : str or path, optional
        Pretrained weights: a ``neuro pretrain`` checkpoint, the CBraMod release's state dict or a Hub name
        ``hub:ORG/NAME[@REV]`` (as :func:`~neurokit.pipelines.finetune.finetune`'s ``init``). Default: from scratch.
    model_kwargs : dict, optional
        Architecture of a from-scratch backbone (e.g. ``{"n_layers": 2}``).
    sfreq : float, optional
        Rate of array inputs, Hz (ignored for ``Epochs``, which carry theirs). CBraMod inputs are resampled
        to 200 Hz (``mne.filter.resample``). Arrays carry no rate, so CBraMod refuses them without it: under MOABB,
        the paradigm's (``FoundationClassifier(sfreq=paradigm.resample)``), or ``return_epochs=True``.
    scale : float
        Factor from the input's unit to CBraMod's (100 µV): ``1e4`` for volts (MNE, MOABB; the default),
        ``0.01`` for µV. Unused for ``Epochs`` (always volts) and for models other than CBraMod.
    head : str
        ``"auto"`` (the family's default: ``all_patch_reps`` for CBraMod, ``avgpool`` for SiT), ``"avgpool"`` or
        ``"all_patch_reps"``.
    epochs, batch_size : int
        Training length (CBraMod: 50 epochs of 64).
    lr_backbone : float
        Backbone learning rate (CBraMod: 1e-4).
    lr_head : float, optional
        Head learning rate; default ``1e-3·√(batch_size/256)``, the CBraMod release's rule.
    weight_decay, min_lr, clip_grad, label_smoothing, dropout : float
        As :class:`~neurokit.training.config.FinetuneConfig` (0.05, 1e-6, 1.0, 0.1, 0.1).
    frozen : bool
        Train the head only (the backbone keeps ``init``'s weights; :meth:`transform` then gives its frozen
        features).
    device : str
        ``"cpu"``, ``"cuda"``, ``"cuda:K"`` or ``"auto"``.
    seed : int
        Seed of the initialisation and of the batch order.

    Attributes
    ----------
    classes_ : ndarray
        The labels seen by :meth:`fit`, in sorted order (``predict`` returns them).
    model_ : torch.nn.Module
        The fine-tuned backbone and head (:class:`~neurokit.models.heads.FinetuneModel`).
    sample_shape_ : tuple of int
        One sample's shape after preparation, e.g. ``(C, N, 200)``.
    fit_seconds_ : float
        Training time, s.
    sfreq_ : float or None
        The rate of the trials fitted on (``sfreq``, or the ``Epochs``' own): arrays given to ``predict`` without
        ``sfreq`` are read at it.

    Raises
    ------
    ValueError
        Inputs of the wrong shape, trials shorter than one 200-sample patch at 200 Hz, fewer than two
        classes, a channel count other than the one fitted (``predict``), or a call before ``fit``.
    ConfigError
        Unknown model family, head or options (from the registry and heads).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(0, 1e-5, (8, 3, 400))  # 8 trials, 3 channels, 2 s at 200 Hz, volts
    >>> clf = FoundationClassifier(sfreq=200.0, model_kwargs={"n_layers": 1}, epochs=1, batch_size=4).fit(X, [0, 1] * 4)
    >>> clf.predict_proba(X).shape, clf.transform(X).shape
    ((8, 2), (8, 200))
    """

    def __init__(
        self,
        model: str = "cbramod",
        init: str | None = None,
        model_kwargs: dict | None = None,
        sfreq: float | None = None,
        scale: float = VOLTS_TO_CBRAMOD,
        head: str = "auto",
        epochs: int = 50,
        batch_size: int = 64,
        lr_backbone: float = 1e-4,
        lr_head: float | None = None,
        weight_decay: float = 0.05,
        min_lr: float = 1e-6,
        clip_grad: float = 1.0,
        label_smoothing: float = 0.1,
        dropout: float = 0.1,
        frozen: bool = False,
        device: str = "cpu",
        seed: int = 0,
    ) -> None:
        self.model = model
        self.init = init
        self.model_kwargs = model_kwargs
        self.sfreq = sfreq
        self.scale = scale
        self.head = head
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr_backbone = lr_backbone
        self.lr_head = lr_head
        self.weight_decay = weight_decay
        self.min_lr = min_lr
        self.clip_grad = clip_grad
        self.label_smoothing = label_smoothing
        self.dropout = dropout
        self.frozen = frozen
        self.device = device
        self.seed = seed

    # ------------------------------------------------------------------ inputs
    def _samples(self, X, reset: bool = False) -> tuple[np.ndarray, list[str] | None, np.ndarray | None]:
        """``(samples float32 (n, *sample_shape), ch_names or None, event codes of Epochs or None)``. Arrays are
        validated as scikit-learn validates them (``validate_data``: dense, numeric, finite, not empty; the channel
        count — ``n_features_in_`` — set at ``fit`` (``reset``) and checked afterwards)."""
        import mne

        codes = None
        ch_names = None
        if isinstance(X, mne.BaseEpochs):
            picks = mne.pick_types(X.info, eeg=True, exclude="bads")
            if not len(picks):
                raise ValueError("Epochs hold no EEG channel (neurokit's EEG models read EEG channels)")
            data, sfreq, scale = X.get_data(picks=picks), float(X.info["sfreq"]), VOLTS_TO_CBRAMOD
            ch_names = [X.ch_names[i] for i in picks]
            codes = X.events[:, 2]
        else:
            from sklearn.utils.validation import validate_data

            X = validate_data(self, X, reset=reset, allow_nd=True, dtype="numeric", ensure_all_finite=False)
            if self.sfreq is not None and not (isinstance(self.sfreq, (int, float)) and self.sfreq > 0):
                raise ValueError(f"sfreq={self.sfreq!r}: give the arrays' sampling rate in Hz (> 0)")
            rate = self.sfreq if self.sfreq is not None else getattr(self, "sfreq_", None)
            if rate is None and self.model == "cbramod":
                raise ValueError(
                    "X: an array of trials carries no sampling rate: give FoundationClassifier(sfreq=...) in Hz "
                    "(under MOABB the paradigm's rate, e.g. sfreq=paradigm.resample), or pass mne.Epochs "
                    "(MOABB: return_epochs=True); trials are resampled to 200 Hz from it"
                )
            data, scale = np.asarray(X, dtype=np.float64), float(self.scale)
            sfreq = float(rate) if rate is not None else TARGET_SFREQ
        if not np.isfinite(data).all():  # as scikit-learn's validation: NaN/inf are refused, naming how many trials
            bad = int((~np.isfinite(data.reshape(len(data), -1))).any(axis=1).sum())
            raise ValueError(
                f"X holds NaN or infinity in {bad} of {len(data)} trials; neurokit's models need finite input"
            )
        if self.model != "cbramod":
            if data.ndim < 3:
                raise ValueError(f"X: {self.model} takes store-shaped samples (n, ...); got shape {data.shape}")
            return np.ascontiguousarray(data, dtype=np.float32), ch_names, codes
        if data.ndim == 2:  # (n_trials, n_times): trials of one channel (scikit-learn's 2-D arrays)
            data = data[:, None, :]
        if data.ndim != 3:
            raise ValueError(
                f"X: expected EEG trials (n_trials, n_channels, n_times), one-channel trials (n_trials, n_times) "
                f"or mne.Epochs; got shape {data.shape}"
            )
        given = data.shape[-1]
        if sfreq != TARGET_SFREQ:
            data = mne.filter.resample(data, up=TARGET_SFREQ, down=sfreq, axis=-1, verbose="error")
        n_patches = data.shape[-1] // PATCH
        if n_patches < 1:
            raise ValueError(
                f"X: trials of n_features = {given} samples at {sfreq:g} Hz ({data.shape[-1]} at 200 Hz) are shorter "
                f"than one {PATCH}-sample patch (1 s); CBraMod needs at least 1 s per trial"
            )
        data = data[..., : n_patches * PATCH] * scale
        return data.reshape(*data.shape[:2], n_patches, PATCH).astype(np.float32), ch_names, codes

    def _device(self) -> torch.device:
        dev = self.device
        if dev == "auto":
            dev = "cuda" if torch.cuda.is_available() else "cpu"
        return torch.device(dev)

    def _check_fitted(self) -> None:
        from sklearn.exceptions import NotFittedError  # a ValueError and an AttributeError, as sklearn raises

        if not hasattr(self, "model_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet; call fit(X, y) first")

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None) -> "FoundationClassifier":
        """Fine-tune on trials ``X`` with labels ``y`` (any hashable labels; ``Epochs``: their event codes when
        ``y`` is None). Returns ``self``."""
        from sklearn.preprocessing import LabelEncoder

        from neurokit.models.heads import FinetuneModel, Head, backbone_features
        from neurokit.models.registry import build_backbone, get_model_spec
        from neurokit.training.losses import supervised_loss
        from neurokit.training.optim import head_lr, lr_groups, two_rate_optim
        from neurokit.training.objectives import get_objective

        import mne

        self.__dict__.pop("sfreq_", None)  # a refit learns its rate anew
        for name in ("epochs", "batch_size"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name}={v!r}: give a whole number, 1 or more")
        x, ch_names, codes = self._samples(X, reset=True)
        # the rate of the trials fitted on (Epochs carry theirs): arrays given to predict later are read at it
        self.sfreq_ = float(X.info["sfreq"]) if isinstance(X, mne.BaseEpochs) else self.sfreq
        if y is None:
            if codes is None:  # scikit-learn's words for it
                raise ValueError(
                    f"{type(self).__name__} requires y to be passed, but the target y is None (arrays carry no "
                    "labels; mne.Epochs carry theirs as event codes)"
                )
            y = codes
        from sklearn.utils.multiclass import check_classification_targets

        y = np.asarray(y)
        if len(y) != len(x):
            raise ValueError(f"X has {len(x)} trials, y {len(y)} labels")
        check_classification_targets(y)  # continuous targets refused, as any scikit-learn classifier does
        enc = LabelEncoder().fit(y)
        self.classes_ = enc.classes_
        if len(self.classes_) < 2:
            raise ValueError(f"y holds one class ({self.classes_[0]!r}); a classifier needs at least two")
        yi = enc.transform(y)
        kind = "binary" if len(self.classes_) == 2 else "multiclass"
        n_out = 1 if kind == "binary" else len(self.classes_)
        dev = self._device()
        torch.manual_seed(self.seed)
        spec = get_model_spec(self.model)
        attrs = {"modality": spec.modality, "ch_names": ch_names}
        backbone, self.init_info_ = build_backbone(
            self.init,
            model=self.model,
            model_kwargs=self.model_kwargs or {},
            store_attrs=attrs,
            sample_shape=x.shape[1:],
        )
        backbone.to(dev)
        with torch.no_grad():
            backbone.eval()
            feat_shape = tuple(backbone_features(backbone, torch.from_numpy(x[:1]).to(dev)).shape[1:])
        head_kind = (
            get_objective(self.init_info_.get("model", self.model)).default_head if self.head == "auto" else self.head
        )
        model = FinetuneModel(backbone, Head(head_kind, feat_shape, n_out, self.dropout), squeeze=n_out == 1).to(dev)
        if self.frozen:
            for p in backbone.parameters():
                p.requires_grad_(False)
        lr_head = self.lr_head if self.lr_head is not None else head_lr(self.batch_size)
        groups = lr_groups(backbone, model.head, self.lr_backbone, lr_head)
        # the one training loop of every neurokit model (neuro finetune's): AdamW with the backbone and head rates,
        # per-step cosine schedule to min_lr, gradient clipping; no run folder and no validation (a scikit-learn fit)
        from neurokit.training.distributed import DistInfo
        from neurokit.training.trainer import Trainer

        rates = [grp["lr"] for grp in groups]
        ocfg = two_rate_optim(rates, weight_decay=self.weight_decay, min_lr=self.min_lr, clip_grad=self.clip_grad)
        smoothing = self.label_smoothing

        def loss(module, b):
            return supervised_loss(kind, module(b.x), b.y, smoothing)

        trainer = Trainer(
            model,
            torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(yi)),
            loss,
            model_name=self.init_info_.get("model", self.model),
            optim=ocfg,
            batch_size=max(1, min(self.batch_size, len(x))),
            epochs=self.epochs,
            param_groups=groups,
            seed=self.seed,
            info=DistInfo(device=dev),
            stage="fit",
            progress=False,
        )
        res = trainer.fit()
        self.fit_seconds_ = res.seconds
        self.model_ = model.eval()
        self.kind_ = kind
        self.sample_shape_ = tuple(x.shape[1:])
        self.ch_names_ = ch_names
        return self

    # ------------------------------------------------------------------ outputs
    def _run(self, X, features: bool = False) -> np.ndarray:
        from neurokit.models.heads import backbone_features

        self._check_fitted()
        x, _, _ = self._samples(X)
        if tuple(x.shape[1:]) != self.sample_shape_ and self.model_.head.kind == "all_patch_reps":
            raise ValueError(
                f"X: samples of shape {tuple(x.shape[1:])} differ from the {self.sample_shape_} fitted "
                "(channels and trial length are fixed by the all_patch_reps head)"
            )
        dev = self._device()
        outs = []
        self.model_.eval()
        with torch.no_grad():
            for i in range(0, len(x), max(1, self.batch_size)):
                xb = torch.from_numpy(x[i : i + self.batch_size]).to(dev)
                if features:
                    f = backbone_features(self.model_.backbone, xb)
                    outs.append(f.flatten(1, -2).mean(dim=1).float().cpu())
                else:
                    outs.append(self.model_(xb).float().cpu())
        return torch.cat(outs).numpy()

    def decision_function(self, X) -> np.ndarray:
        """Logits: ``(n,)`` for two classes (positive = ``classes_[1]``), ``(n, n_classes)`` otherwise."""
        return self._run(X)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities ``(n, n_classes)`` (sigmoid of the logit for two classes, softmax otherwise)."""
        z = self._run(X)
        if self.kind_ == "binary":
            from scipy.special import expit

            p = expit(z.astype(np.float64))  # no overflow for large logits
            return np.stack([1 - p, p], axis=1)
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z.astype(np.float64))
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        """Predicted labels ``(n,)`` from :attr:`classes_`."""
        self._check_fitted()
        return self.classes_[self.predict_proba(X).argmax(axis=1)]

    def transform(self, X) -> np.ndarray:
        """Backbone features averaged over tokens, ``(n, d_model)``, in the input's float precision (float32 for
        ``Epochs``; with ``frozen=True``: ``init``'s)."""
        out = self._run(X, features=True)
        kind = getattr(X, "dtype", None)
        return out.astype(kind, copy=False) if kind is not None and np.dtype(kind).kind == "f" else out

    def __sklearn_tags__(self):
        """Trials ``(n, channels, times)`` (or store-shaped samples) in, not 2-D feature tables: scikit-learn's
        checks that build 2-D data do not apply; NaN/inf are refused; labels are classes."""
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.device != "cpu"
        tags.input_tags.two_d_array = True  # (n, times): one-channel trials, so scikit-learn's checks run
        tags.input_tags.three_d_array = True
        tags.input_tags.allow_nan = False
        return tags

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        self._check_fitted()
        d = self.model_.head.feature_shape[-1]
        return np.asarray([f"feature{i}" for i in range(d)], dtype=object)
