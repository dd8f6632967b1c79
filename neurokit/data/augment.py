"""EEG data augmentation on patch tensors, applied on the fly during fine-tuning.

Every transform takes a batch of EEG patch tensors ``x`` of shape ``(B, C, N, P)`` (float32, 100 µV
units; ``N`` patches of ``P`` samples make one ``N·P``-sample signal per channel) and explicit
per-sample parameters, so its effect can be checked on a known signal; :class:`Augmenter` draws those
parameters from one seeded ``torch.Generator`` (a run with the same seed sees the same augmentations).

The set is the standard one of the EEG augmentation literature (Rommel et al., "Data augmentation for
learning predictive models on EEG: a systematic comparison", J Neural Eng 19:066020, 2022; braindecode's
``augmentation`` module): time shift, amplitude scaling, additive Gaussian noise, channel dropout,
frequency shift (Rommel et al., eq. 3: the analytic signal times ``exp(2πi Δf t)``), and mixup
(Zhang et al., ICLR 2018: convex combinations of two trials and of their labels).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import torch

from neurokit._utils.errors import ConfigError


# ------------------------------------------------------------------------------------- transforms
def _flat(x: torch.Tensor) -> torch.Tensor:
    B, C, N, P = x.shape
    return x.reshape(B, C, N * P)


def time_shift(x: torch.Tensor, shifts: torch.Tensor) -> torch.Tensor:
    """Delay each sample's signal by ``shifts[b]`` samples (negative: advance), zero-filled at the edge.

    The ``N`` patches of a channel are shifted as one ``N·P``-sample signal.

    Parameters
    ----------
    x : torch.Tensor, shape (B, C, N, P)
        A batch of EEG patch tensors (100 µV units): ``C`` channels of ``N`` patches of ``P`` samples.
    shifts : torch.Tensor of int, shape (B,)
        Shift of each sample, in samples.

    Returns
    -------
    torch.Tensor, shape (B, C, N, P)
        A new tensor, dtype and device of ``x``.

    Examples
    --------
    >>> x = torch.arange(1.0, 5.0).reshape(1, 1, 2, 2)
    >>> time_shift(x, torch.tensor([1])).flatten().tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    y = _flat(x)
    T = y.shape[-1]
    t = torch.arange(T, device=x.device)
    src = t[None, :] - shifts.to(x.device)[:, None]  # (B, T): output sample t comes from t - shift
    ok = (src >= 0) & (src < T)
    out = torch.gather(y, 2, src.clamp(0, T - 1)[:, None, :].expand_as(y)) * ok[:, None, :]
    return out.reshape(x.shape)


def amplitude_scale(x: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
    """Multiply each sample by ``factors[b]`` (float ``(B,)``).

    Parameters
    ----------
    x : torch.Tensor, shape (B, C, N, P)
        A batch of EEG patch tensors (100 µV units): ``C`` channels of ``N`` patches of ``P`` samples.
    factors : torch.Tensor, shape (B,)
        The factor of each sample.

    Returns
    -------
    torch.Tensor, shape (B, C, N, P)
        A new tensor, dtype and device of ``x``.

    Examples
    --------
    >>> amplitude_scale(torch.ones(2, 1, 1, 2), torch.tensor([2.0, 0.5])).flatten().tolist()
    [2.0, 2.0, 0.5, 0.5]
    """
    return x * factors.to(x.device, x.dtype)[:, None, None, None]


def gaussian_noise(x: torch.Tensor, std: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Add white Gaussian noise of standard deviation ``std[b]`` (in the data's units) to each sample.

    Parameters
    ----------
    x : torch.Tensor, shape (B, C, N, P)
        A batch of EEG patch tensors (100 µV units): ``C`` channels of ``N`` patches of ``P`` samples.
    std : torch.Tensor, shape (B,)
        The noise's standard deviation for each sample, in the units of ``x``.
    generator : torch.Generator | None
        A CPU generator the noise is drawn from; ``None``: PyTorch's global one.

    Returns
    -------
    torch.Tensor, shape (B, C, N, P)
        A new tensor, dtype and device of ``x``.

    Examples
    --------
    >>> y = gaussian_noise(torch.zeros(2, 1, 1, 4), torch.tensor([0.0, 1.0]), torch.Generator().manual_seed(0))
    >>> bool((y[0] == 0).all()), bool((y[1] != 0).any())
    (True, True)
    """
    noise = torch.randn(x.shape, generator=generator, dtype=torch.float32).to(x.device, x.dtype)
    return x + noise * std.to(x.device, x.dtype)[:, None, None, None]


def channel_dropout(x: torch.Tensor, drop: torch.Tensor) -> torch.Tensor:
    """Zero the channels where ``drop`` (bool ``(B, C)``) is true.

    Parameters
    ----------
    x : torch.Tensor, shape (B, C, N, P)
        A batch of EEG patch tensors (100 µV units): ``C`` channels of ``N`` patches of ``P`` samples.
    drop : torch.Tensor of bool, shape (B, C)
        ``True`` for each channel to zero.

    Returns
    -------
    torch.Tensor, shape (B, C, N, P)
        A new tensor, dtype and device of ``x``.

    Examples
    --------
    >>> channel_dropout(torch.ones(1, 2, 1, 1), torch.tensor([[True, False]])).flatten().tolist()
    [0.0, 1.0]
    """
    return x * (~drop.to(x.device))[:, :, None, None].to(x.dtype)


def frequency_shift(x: torch.Tensor, delta_hz: torch.Tensor, sfreq: float) -> torch.Tensor:
    """Shift every frequency of each sample's signal by ``delta_hz[b]`` Hz (Rommel et al. 2022, eq. 3).

    The analytic signal (FFT with the negative frequencies zeroed and the positive ones doubled) is
    multiplied by ``exp(2πi Δf t)`` and its real part kept; a 10 Hz sine becomes a 12 Hz sine for
    ``Δf = 2``.

    Parameters
    ----------
    x : torch.Tensor, shape (B, C, N, P)
        A batch of EEG patch tensors (100 µV units): ``C`` channels of ``N`` patches of ``P`` samples.
    delta_hz : torch.Tensor, shape (B,)
        The shift of each sample, Hz (negative: down).
    sfreq : float
        Sampling rate, Hz (200 for CBraMod patches).

    Returns
    -------
    torch.Tensor, shape (B, C, N, P)
        A new tensor, dtype and device of ``x``.

    Examples
    --------
    >>> t = torch.arange(400) / 200.0
    >>> y = frequency_shift(torch.sin(2 * torch.pi * 10 * t).reshape(1, 1, 2, 200), torch.tensor([2.0]), 200.0)
    >>> int(torch.fft.rfft(y.flatten()).abs().argmax()) / 2  # the peak, Hz (0.5-Hz bins)
    12.0
    """
    y = _flat(x).float()
    T = y.shape[-1]
    spec = torch.fft.fft(y, dim=-1)
    h = torch.zeros(T, device=x.device)
    h[0] = 1.0
    if T % 2 == 0:
        h[T // 2] = 1.0
        h[1 : T // 2] = 2.0
    else:
        h[1 : (T + 1) // 2] = 2.0
    analytic = torch.fft.ifft(spec * h, dim=-1)
    t = torch.arange(T, device=x.device, dtype=torch.float32) / sfreq
    phase = torch.exp(2j * torch.pi * delta_hz.to(x.device, torch.float32)[:, None] * t[None, :])  # (B, T)
    return (analytic * phase[:, None, :]).real.to(x.dtype).reshape(x.shape)


def mixup(x: torch.Tensor, lam: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
    """``lam[b]·x[b] + (1 − lam[b])·x[perm[b]]``; the loss mixes the labels with the same weights.

    Parameters
    ----------
    x : torch.Tensor, shape (B, C, N, P)
        A batch of EEG patch tensors (100 µV units): ``C`` channels of ``N`` patches of ``P`` samples.
    lam : torch.Tensor, shape (B,)
        The weight of each sample's own signal, in [0, 1].
    perm : torch.Tensor of int, shape (B,)
        The sample each is mixed with.

    Returns
    -------
    torch.Tensor, shape (B, C, N, P)
        A new tensor, dtype and device of ``x``.

    Examples
    --------
    >>> x = torch.tensor([0.0, 4.0]).reshape(2, 1, 1, 1)
    >>> mixup(x, torch.tensor([0.75, 1.0]), torch.tensor([1, 0])).flatten().tolist()
    [1.0, 4.0]
    """
    lam = lam.to(x.device, x.dtype)[:, None, None, None]
    return lam * x + (1 - lam) * x[perm.to(x.device)]


# ------------------------------------------------------------------------------------- config + driver
#: the settings with an upper bound: (bound, whether the bound itself is allowed, what the bound keeps)
AUGMENT_BOUNDS = {
    "scale": (1.0, False, "factors U(1-s, 1+s) stay positive"),
    "channel_dropout": (1.0, False, "the probability that a channel is zeroed"),
    "p": (1.0, True, "the probability that each transform is applied to a sample"),
}


@dataclass
class AugmentConfig:
    """Augmentation settings; every transform is off at 0 (the default).

    Attributes
    ----------
    time_shift : float
        Largest shift in seconds; each selected sample is shifted by U(−s, s).
    scale : float
        Amplitude factors U(1 − s, 1 + s).
    noise : float
        Gaussian noise standard deviation in µV.
    channel_dropout : float
        Probability that a channel of a selected sample is zeroed.
    freq_shift : float
        Largest frequency shift in Hz; U(−f, f).
    mixup : float
        α of the Beta(α, α) mixing weights; pairs with a random permutation of the batch.
    p : float
        Probability that each transform (except mixup, applied to every batch) is applied to a sample.
    """

    time_shift: float = 0.0
    scale: float = 0.0
    noise: float = 0.0
    channel_dropout: float = 0.0
    freq_shift: float = 0.0
    mixup: float = 0.0
    p: float = 0.5

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            top, closed, what = AUGMENT_BOUNDS.get(f.name, (math.inf, False, ""))
            if not isinstance(v, (int, float)) or not (0 <= v <= top if closed else 0 <= v < top):
                shown = f"{v:g}" if isinstance(v, (int, float)) else repr(v)
                allowed = "a number >= 0" if top == math.inf else f"in [0, {top:g}{']' if closed else ')'} ({what})"
                raise ConfigError(f"augment {f.name}={shown} must be {allowed}")

    @property
    def enabled(self) -> bool:
        return any(getattr(self, f.name) for f in fields(self) if f.name != "p")

    @classmethod
    def parse(cls, spec: str | dict | None) -> "AugmentConfig":
        """``"time_shift=0.1,noise=5,mixup=0.2"`` (or a dict) → config. Names: see the attributes.

        Parameters
        ----------
        spec : str | dict | AugmentConfig | None
            ``name=value`` pairs separated by commas (``-`` in names read as ``_``), a dict, or a config (returned
            as is); empty or ``None``: every transform off.

        Returns
        -------
        AugmentConfig

        Raises
        ------
        ConfigError
            An unknown name, a name without a value, or a value out of range.

        Examples
        --------
        >>> AugmentConfig.parse("time_shift=0.1,noise=5").noise
        5.0
        """
        if isinstance(spec, AugmentConfig):
            return spec
        if not spec:
            return cls()
        if isinstance(spec, dict):
            items = dict(spec)
        else:
            items = {}
            for part in str(spec).split(","):
                if not part.strip():
                    continue
                name, sep, val = part.partition("=")
                try:
                    items[name.strip().replace("-", "_")] = float(val) if sep else None
                except ValueError:
                    items[name.strip()] = val
        known = {f.name for f in fields(cls)}
        bad = sorted(set(items) - known)
        if bad:
            raise ConfigError(
                f"unknown augmentation {bad}; allowed: {', '.join(sorted(known))} (e.g. 'time_shift=0.1,noise=5')"
            )
        missing = [k for k, v in items.items() if v is None]
        if missing:
            raise ConfigError(f"augmentation {missing} needs a value, e.g. '{missing[0]}=0.1'")
        return cls(**items)

    def to_dict(self) -> dict:
        return asdict(self)


class Augmenter:
    """Draws the transforms' parameters from a seeded CPU ``torch.Generator`` and applies them.

    Parameters
    ----------
    cfg : AugmentConfig
    sfreq : float
        Sampling rate of the patches (Hz).
    units_per_uv : float
        Data units per µV (CBraMod's 100 µV unit: 0.01).
    seed : int
    """

    def __init__(self, cfg: AugmentConfig, *, sfreq: float = 200.0, units_per_uv: float = 0.01, seed: int = 0) -> None:
        self.cfg, self.sfreq, self.units_per_uv = cfg, float(sfreq), float(units_per_uv)
        self.generator = torch.Generator().manual_seed(int(seed))

    def _pick(self, B: int) -> torch.Tensor:
        return torch.rand(B, generator=self.generator) < self.cfg.p

    def _uniform(self, B: int, half: float) -> torch.Tensor:
        return (torch.rand(B, generator=self.generator) * 2 - 1) * half

    def __call__(self, x: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor] | None]:
        """Augment the batch ``x`` ``(B, C, N, P)``. Returns ``(x, mix)``: ``mix`` is ``None``, or
        ``(lam, perm)`` with which the loss mixes each sample's label with its partner's."""
        c, B = self.cfg, x.shape[0]
        if c.time_shift:
            sel = self._pick(B)
            shifts = torch.round(self._uniform(B, c.time_shift * self.sfreq)).long() * sel
            x = time_shift(x, shifts)
        if c.scale:
            sel = self._pick(B)
            x = amplitude_scale(x, torch.where(sel, 1 + self._uniform(B, c.scale), torch.ones(B)))
        if c.noise:
            sel = self._pick(B)
            x = gaussian_noise(x, sel.float() * c.noise * self.units_per_uv, self.generator)
        if c.channel_dropout:
            sel = self._pick(B)
            drop = (torch.rand(B, x.shape[1], generator=self.generator) < c.channel_dropout) & sel[:, None]
            x = channel_dropout(x, drop)
        if c.freq_shift:
            sel = self._pick(B)
            x = frequency_shift(x, self._uniform(B, c.freq_shift) * sel, self.sfreq)
        mix = None
        if c.mixup:
            lam = _beta(B, c.mixup, self.generator)
            perm = torch.randperm(B, generator=self.generator)
            x = mixup(x, lam, perm)
            mix = (lam.to(x.device), perm.to(x.device))
        return x, mix


def make_augmenter(augment: str | dict | None, ds, *, seed: int = 0, mixup: bool = True):
    """The training batches' :class:`Augmenter` for the store(s) of ``ds``, at their rate and units.

    Parameters
    ----------
    augment : str or dict, optional
        The augmentation (:meth:`AugmentConfig.parse`); ``None`` or nothing enabled: no augmenter.
    ds : PatchDataset
        The training data (:class:`~neurokit.data.dataset.PatchDataset`): its modality, sample shape, sampling
        rate and recipe ``scale`` (data units per volt; CBraMod's 1e4 when absent).
    seed : int
        Seed of the augmenter's generator.
    mixup : bool
        Whether the loss can mix labels (``False``: the M4oE head's multi-task loss, which refuses mixup).

    Returns
    -------
    Augmenter or None
        ``None`` when ``augment`` enables no transform.

    Raises
    ------
    ConfigError
        A store that is not an EEG patch store ``(C, N, P)``, or mixup where the loss cannot mix labels.
    """
    aug = AugmentConfig.parse(augment)
    if not aug.enabled:
        return None
    if not mixup and aug.mixup:
        raise ConfigError(
            f"augment='mixup={aug.mixup:g}': the M4oE head's multi-task loss does not mix labels; drop mixup from the "
            "augmentation (the other transforms apply)"
        )
    if ds.info.modality != "eeg" or len(ds.sample_shape) != 3:
        raise ConfigError(
            f"augmentation is defined for EEG patch stores (C, N, P); this store holds "
            f"{ds.info.modality} samples {ds.sample_shape}"
        )
    scale = float(ds.info.recipe.get("scale") or 1e4)  # data units per volt
    return Augmenter(aug, sfreq=float(ds.info.sfreq or 200.0), units_per_uv=scale * 1e-6, seed=seed)


def _beta(n: int, alpha: float, generator: torch.Generator) -> torch.Tensor:
    """Beta(α, α) draws from the seeded generator: scipy's inverse CDF of seeded uniforms (torch's Beta
    sampler takes no generator)."""
    from scipy.stats import beta

    u = torch.rand(n, generator=generator, dtype=torch.float64).numpy()
    return torch.from_numpy(beta.ppf(u, alpha, alpha)).float()
