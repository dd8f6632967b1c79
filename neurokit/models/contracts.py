"""What each foundation model expects of its input (its *input contract*), and how a store's samples are adapted to it.

A neurokit EEG store holds patches ``(C, N, P)`` at the store's rate (cards: ``P = 200`` at 200 Hz) in the store's
units (cards: ``"100 uV"``, 100 µV → 1). The foundation models that braindecode implements (LaBraM, EEGPT, REVE,
BIOT, LUNA, CodeBrain) were each pretrained at their own rate, window, patch length and scaling, and know channels
by name (a vocabulary), by electrode position, or by position in a fixed montage. :data:`CONTRACTS` states each
contract with its source; :func:`plan_adaptation` turns a store's attributes into an :class:`Adaptation` (channels
kept, mapped or dropped, resampling, window crop, rescaling), which :class:`neurokit.models.foundation.InputAdapter`
applies to every batch and every run records (``report.json`` → ``input_adaptation``).

Unknown channels are handled as the contract says, in one log line: ``dropped`` (a vocabulary or position the
model does not know), ``mapped`` (an alias such as ``T3`` → ``T7``, or a bipolar derivation formed from two
referential electrodes) or ``refused`` (nothing the model can use is left).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any, Sequence

from neurokit._utils.errors import ConfigError

#: scalings a contract may ask for (applied to each window, after resampling)
SCALINGS = {
    "100uV": "amplitude in units of 100 µV (µV / 100), as the store holds it",
    "mV": "amplitude in mV (µV / 1000)",
    "zscore-clip15": "each channel z-scored over the window, clipped at ±15",
    "zscore": "each channel z-scored over the window",
    "q95": "each channel divided by the 95th percentile of its absolute amplitude over the window",
}
#: the scalings as the docs' table writes them
SCALING_LABELS = {
    "100uV": "µV / 100",
    "mV": "mV",
    "zscore-clip15": "z-score per channel, clip ±15",
    "zscore": "z-score per channel",
    "q95": "÷ 95th percentile of abs per channel",
}
#: how a contract names channels
CHANNEL_MODES = {
    "vocabulary": "names looked up in the model's channel vocabulary (learned embedding per name)",
    "positions": "(x, y, z) electrode positions from the montage (standard_1005, metres)",
    "bipolar-tcp": "positional tokens: the TCP bipolar montage in the release's order, formed from the electrodes",
    "any": "any channels, in the store's order (no channel identity in the model)",
}
#: the legacy 10-20 names and their 10-10 equivalents (the vocabularies use both)
ALIASES = {"T3": "T7", "T4": "T8", "T5": "P7", "T6": "P8"}


@dataclass(frozen=True)
class InputContract:
    """What one foundation model expects of its input, each fact with its source.

    Attributes
    ----------
    name : str
        The model's neurokit name (``neuro finetune --model NAME``).
    title : str
        As printed.
    braindecode : str
        The class in ``braindecode.models`` that implements it.
    sfreq : float
        Sampling rate of its pretraining data, Hz.
    window_s : float or None
        Window length of its pretraining samples, seconds (``None``: any length).
    patch : int
        Patch (token) length, samples at ``sfreq``.
    patch_step : int
        Samples between consecutive patches (``patch`` when patches do not overlap).
    scaling : str
        The amplitude scaling its pretraining used (a key of :data:`SCALINGS`).
    channels : str
        How it knows channels (a key of :data:`CHANNEL_MODES`).
    unknown : str
        What happens to a channel it does not know: ``"dropped"``, ``"mapped"`` or ``"refused"`` (``"kept"``: the
        model has no channel identity, every channel is fed).
    max_patches : int or None
        The most patches per channel its released weights have temporal embeddings for (``None``: no limit).
    source : str
        The paper and the files the facts come from.
    weights : tuple of str
        Published weights (Hugging Face names; braindecode layout).
    """

    name: str
    title: str
    braindecode: str
    sfreq: float
    window_s: float | None
    patch: int
    patch_step: int
    scaling: str
    channels: str
    unknown: str
    max_patches: int | None = None
    source: str = ""
    weights: tuple[str, ...] = ()

    def row(self) -> dict[str, str]:
        """The contract as one row of the docs' table (strings)."""
        window = "any" if self.window_s is None else f"{self.window_s:g} s"
        if self.max_patches is not None:
            window += f" (≤ {self.max_patches * self.patch / self.sfreq:g} s)"
        step = "" if self.patch_step == self.patch else f" (step {self.patch_step})"
        return {
            "model": self.title,
            "rate": f"{self.sfreq:g} Hz",
            "window": window,
            "patch": f"{self.patch}{step}",
            "channels": f"{self.channels}; unknown {self.unknown}",
            "units": SCALING_LABELS[self.scaling],
            "source": self.source,
        }


CONTRACTS: dict[str, InputContract] = {
    "labram": InputContract(
        "labram",
        "LaBraM",
        "Labram",
        200.0,
        None,
        200,
        200,
        "100uV",
        "vocabulary",
        "dropped",
        max_patches=16,
        source="Jiang et al. ICLR 2024 (LaBraM); braindecode/models/labram.py (LABRAM_CHANNEL_ORDER, 128 names; "
        "patch_size 200); github.com/935963004/LaBraM README (200 Hz, 0.1 mV units) and modeling_finetune.py "
        "(16 temporal embeddings)",
        weights=("braindecode/labram-pretrained",),
    ),
    "eegpt": InputContract(
        "eegpt",
        "EEGPT",
        "EEGPT",
        256.0,
        4.0,
        64,
        64,
        "mV",
        "vocabulary",
        "dropped",
        source="Wang et al. NeurIPS 2024 (EEGPT §4: 256 Hz, 4 s, 64-sample patches, mV); braindecode/models/eegpt.py "
        "(EEGPT_CHANNELS from standard_1020; chan_proj_type 'none' keeps the named channels)",
        weights=("braindecode/eegpt-pretrained",),
    ),
    "reve": InputContract(
        "reve",
        "REVE",
        "REVE",
        200.0,
        None,
        200,
        180,
        "zscore-clip15",
        "positions",
        "dropped",
        source="El Ouahidi et al. NeurIPS 2025 (REVE); braindecode/models/reve.py (200 Hz, patch 200 with overlap 20, "
        "z-score clipped at 15 σ, 4-D Fourier positions from the brain-bzh/reve-positions bank)",
        weights=("brain-bzh/reve-base",),
    ),
    "biot": InputContract(
        "biot",
        "BIOT",
        "BIOT",
        200.0,
        10.0,
        200,
        100,
        "q95",
        "bipolar-tcp",
        "mapped",
        source="Yang et al. NeurIPS 2023 (BIOT); braindecode/models/biot.py (200 Hz, STFT n_fft 200 hop 100, "
        "16 TCP bipolar channels in _BIOT_TARGET_CHS_TUPLES order); github.com/ycq091044/BIOT datasets/TUAB "
        "(10 s windows, each channel divided by the 95th percentile of its absolute value)",
        weights=("braindecode/biot-pretrained-prest-16chs", "braindecode/biot-pretrained-six-datasets-18chs"),
    ),
    "luna": InputContract(
        "luna",
        "LUNA",
        "LUNA",
        256.0,
        5.0,
        40,
        40,
        "zscore",
        "positions",
        "dropped",
        source="Döner et al. NeurIPS 2025 (LUNA: TUEG+Siena at 256 Hz, 5 s windows); braindecode/models/luna.py "
        "(patch_size 40; channel locations from chs_info 'loc', min-max normalised)",
        weights=("PulpBio/LUNA",),
    ),
    "codebrain": InputContract(
        "codebrain",
        "CodeBrain",
        "CodeBrain",
        200.0,
        30.0,
        200,
        200,
        "100uV",
        "any",
        "kept",
        source="Ma et al. 2025 arXiv:2506.09110 (ICLR 2026) (CodeBrain, TUEG as CBraMod: 200 Hz, 30 s, 100 µV); "
        "braindecode/models/codebrain.py (patch_size 200, s4_lmax 570 = 19 channels × 30 patches)",
        weights=("braindecode/codebrain-pretrained",),
    ),
}


def get_contract(name: str) -> InputContract:
    """The :class:`InputContract` of a foundation model.

    Parameters
    ----------
    name : str
        A key of :data:`CONTRACTS`.

    Returns
    -------
    InputContract

    Raises
    ------
    ConfigError
        Unknown name (the message lists the known ones).

    Examples
    --------
    >>> get_contract("eegpt").sfreq
    256.0
    """
    if name not in CONTRACTS:
        raise ConfigError(f"no input contract for {name!r}; known: {', '.join(CONTRACTS)}")
    return CONTRACTS[name]


def contract_table() -> str:
    """The input contracts as a Markdown table (the one in docs/guide/models.md).

    Returns
    -------
    str
        A header, a rule and one row per model of :data:`CONTRACTS`.

    Examples
    --------
    >>> contract_table().splitlines()[0]
    '| model | rate | window | patch | channels | units | source |'
    """
    rows = [c.row() for c in CONTRACTS.values()]
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "|".join("---" for _ in keys) + "|"]
    lines += ["| " + " | ".join(r[k] for k in keys) + " |" for r in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------- channel names and positions
def canonical_name(name: str) -> str:
    """A channel name as the vocabularies spell it: upper case, recording prefixes and reference suffixes cut
    (``"EEG Fp1-REF"`` → ``"FP1"``), dots dropped, legacy 10-20 names mapped (:data:`ALIASES`).

    Parameters
    ----------
    name : str

    Returns
    -------
    str

    Examples
    --------
    >>> canonical_name("EEG T3-REF"), canonical_name("Fc3."), canonical_name("FP1-F7")
    ('T7', 'FC3', 'FP1-F7')
    """
    s = name.strip().upper().replace(".", "")
    s = re.sub(r"^EEG\s*", "", s)
    s = re.sub(r"-(REF|LE|AR|AVG)$", "", s)
    if "-" in s:
        return "-".join(ALIASES.get(p, p) for p in s.split("-"))
    return ALIASES.get(s, s)


@lru_cache(maxsize=1)
def montage_positions() -> dict[str, tuple[float, float, float]]:
    """Electrode positions of MNE's ``standard_1005`` montage (head frame, metres), by :func:`canonical_name`.

    Returns
    -------
    dict
        Name → ``(x, y, z)``.

    Examples
    --------
    >>> round(montage_positions()["CZ"][2], 3) > 0
    True
    """
    import mne

    pos = mne.channels.make_standard_montage("standard_1005").get_positions()["ch_pos"]
    out: dict[str, tuple[float, float, float]] = {}
    for k, v in pos.items():
        out.setdefault(canonical_name(k), (float(v[0]), float(v[1]), float(v[2])))
    return out


def store_uv_per_unit(units: Any) -> float:
    """µV per stored unit from a store's ``units`` attribute (``"100 uV"`` → 100).

    Parameters
    ----------
    units : str or None
        ``"100 uV"``, ``"uV"``, ``"mV"``, ``"V"``…; ``None``: neurokit's default, 100 µV.

    Returns
    -------
    float

    Raises
    ------
    ConfigError
        Units that do not parse.

    Examples
    --------
    >>> store_uv_per_unit("100 uV"), store_uv_per_unit("mV"), store_uv_per_unit(None)
    (100.0, 1000.0, 100.0)
    """
    if units is None:
        return 100.0
    m = re.fullmatch(r"\s*([0-9.eE+-]*)\s*(µV|uV|mV|V)\s*", str(units))
    if m is None:
        raise ConfigError(f"store units {units!r}: expected e.g. '100 uV', 'uV', 'mV' or 'V'")
    factor = float(m.group(1)) if m.group(1) else 1.0
    return factor * {"µV": 1.0, "uV": 1.0, "mV": 1e3, "V": 1e6}[m.group(2)]


# --------------------------------------------------------------------------- the adaptation of one store
@dataclass
class Adaptation:
    """How a store's samples become a model's input (JSON-able; recorded in the model config and the run report).

    Attributes
    ----------
    model : str
        The contract's name.
    store_sfreq, model_sfreq : float
        Rates, Hz; they differ when the windows are resampled.
    store_samples, model_samples : int
        Samples per window in the store (``N·P``), and fed to the model (after resampling and the crop).
    crop : int
        Samples cut from the end of each resampled window so that whole patches remain.
    store_uv_per_unit : float
        µV per stored unit.
    scaling : str
        The contract's scaling (:data:`SCALINGS`).
    unit_factor : float
        The factor applied for ``"100uV"`` / ``"mV"`` (1.0 when the store's units already are the model's).
    store_channels : list of str
        The store's channel names.
    index : list of int
        Store channel feeding each model channel (``-1`` for none: see ``minus``).
    minus : list of int
        For bipolar derivations, the store channel subtracted (``-1``: none).
    model_channels : list of str
        The names the model receives.
    positions : list of [x, y, z] or None
        Electrode positions (metres) for models that embed positions.
    mapped : dict
        Store name → model name, for channels renamed or derived.
    dropped : list of str
        Store channels the model does not receive.
    window_note : str
        How the window compares with the pretraining window.
    channel_note : str
        How channels are identified (positions' source; BIOT's positional fallback).
    """

    model: str
    store_sfreq: float
    model_sfreq: float
    store_samples: int
    model_samples: int
    crop: int
    store_uv_per_unit: float
    scaling: str
    unit_factor: float
    store_channels: list[str]
    index: list[int]
    minus: list[int] = field(default_factory=list)
    model_channels: list[str] = field(default_factory=list)
    positions: list[list[float]] | None = None
    mapped: dict[str, str] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    window_note: str = ""
    channel_note: str = ""

    @property
    def resampled(self) -> bool:
        return self.store_sfreq != self.model_sfreq

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "line": self.line()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Adaptation":
        return cls(**{k: v for k, v in d.items() if k != "line"})

    def channel_line(self) -> str:
        """The one line saying what happened to the store's channels."""
        c = get_contract(self.model)
        mode = "positional" if c.channels == "bipolar-tcp" and not self.mapped and self.channel_note else c.channels
        s = f"{c.title}: {len(self.model_channels)} of {len(self.store_channels)} store channels fed ({mode})"
        if self.mapped:
            s += "; mapped " + ", ".join(f"{a}→{b}" for a, b in self.mapped.items())
        if self.dropped:
            s += f"; dropped {len(self.dropped)} the model does not know: {', '.join(self.dropped)}"
        return s + (f" ({self.channel_note})" if self.channel_note else "")

    def line(self) -> str:
        """One line for the log and the report: channels, rate, window and units."""
        rate = (
            f"resampled {self.store_sfreq:g} → {self.model_sfreq:g} Hz ({self.store_samples} → "
            f"{self.model_samples + self.crop} samples{f', last {self.crop} cropped' if self.crop else ''})"
            if self.resampled
            else f"{self.model_sfreq:g} Hz as stored ({self.model_samples} samples"
            f"{f', last {self.crop} cropped' if self.crop else ''})"
        )
        units = (
            f"×{self.unit_factor:g} ({self.store_uv_per_unit:g} µV/unit → {self.scaling})"
            if self.scaling in ("100uV", "mV")
            else SCALINGS[self.scaling]
        )
        return f"{self.channel_line()}; {rate}; {units}" + (f"; {self.window_note}" if self.window_note else "")


def _tcp_pairs() -> list[tuple[str, str]]:
    """The TCP bipolar derivations of BIOT's release, in its token order (braindecode biot.py)."""
    from braindecode.models.biot import _BIOT_TARGET_CHS_TUPLES  # the release's order; data, not code

    return [tuple(canonical_name(p) for p in n.split("-")) for n, _ in _BIOT_TARGET_CHS_TUPLES[:16]]  # type: ignore[misc]


def _vocabulary(contract: InputContract) -> list[str]:
    """The channel vocabulary of a ``"vocabulary"`` contract, in :func:`canonical_name` spelling."""
    if contract.name == "labram":
        from braindecode.models.labram import LABRAM_CHANNEL_ORDER

        return [canonical_name(n) for n in LABRAM_CHANNEL_ORDER]
    from braindecode.models.eegpt import EEGPT_CHANNELS

    return [canonical_name(n) for n in EEGPT_CHANNELS]


def _resampled_length(n: int, src: float, dst: float) -> int:
    """Samples after resampling ``n`` samples from ``src`` to ``dst`` Hz (torchaudio's count: ⌈n·dst/src⌉)."""
    import math

    return int(math.ceil(n * dst / src))


def plan_adaptation(
    name: str, store_attrs: dict[str, Any], sample_shape: Sequence[int], *, positions: str = "montage"
) -> Adaptation:
    """How an EEG store's ``(C, N, P)`` samples become model ``name``'s input.

    Parameters
    ----------
    name : str
        A model of :data:`CONTRACTS`.
    store_attrs : dict
        The store's attributes: ``ch_names``, ``sfreq`` (Hz; default 200), ``units`` (default ``"100 uV"``).
    sample_shape : sequence of int
        ``(C, N, P)``.
    positions : {"montage"}
        Where electrode positions come from: MNE's ``standard_1005`` (:func:`montage_positions`).

    Returns
    -------
    Adaptation

    Raises
    ------
    ConfigError
        Not ``(C, N, P)`` samples; channel names missing for a model that needs them; no channel the model knows
        (``refused``); a window too short for one patch.

    Examples
    --------
    >>> a = plan_adaptation("eegpt", {"ch_names": ["C3", "C4", "X1"], "sfreq": 200}, (3, 4, 200))
    >>> a.model_channels, a.dropped, a.model_samples
    (['C3', 'C4'], ['X1'], 1024)
    """
    c = get_contract(name)
    if len(sample_shape) != 3:
        raise ConfigError(f"{c.title} takes EEG stores of (C, N, P) samples; this store has {tuple(sample_shape)}")
    n_ch, n, p = (int(s) for s in sample_shape)
    names = [str(x) for x in (store_attrs.get("ch_names") or [])]
    if names and len(names) != n_ch:
        raise ConfigError(f"the store names {len(names)} channels but its samples have {n_ch}")
    if not names:
        if c.channels != "any":
            raise ConfigError(
                f"{c.title} knows channels by {c.channels}; this store records no channel names (ch_names)"
            )
        names = [f"ch{i}" for i in range(n_ch)]
    canon = [canonical_name(x) for x in names]
    index: list[int] = []
    minus: list[int] = []
    model_names: list[str] = []
    mapped: dict[str, str] = {}
    pos: list[list[float]] | None = None
    note = ""
    if c.channels == "vocabulary":
        vocab = set(_vocabulary(c))
        for i, (raw, cn) in enumerate(zip(names, canon)):
            if cn in vocab:
                index.append(i)
                model_names.append(cn)
                if cn != raw.strip().upper():
                    mapped[raw] = cn
    elif c.channels == "positions":
        bank = montage_positions()
        note = "positions from MNE's standard_1005 montage, metres"
        pos = []
        for i, (raw, cn) in enumerate(zip(names, canon)):
            if cn in bank:
                index.append(i)
                model_names.append(cn)
                pos.append(list(bank[cn]))
                if cn != raw.strip().upper():
                    mapped[raw] = cn
    elif c.channels == "bipolar-tcp":
        where = {cn: i for i, cn in enumerate(canon)}
        pairs = _tcp_pairs()
        if all(f"{a}-{b}" in where or (a in where and b in where) for a, b in pairs):
            for a, b in pairs:
                bip = f"{a}-{b}"
                if bip in where:
                    index.append(where[bip])
                    minus.append(-1)
                else:
                    index.append(where[a])
                    minus.append(where[b])
                    mapped[f"{names[where[a]]}−{names[where[b]]}"] = bip
                model_names.append(bip)
        else:  # not a montage the TCP derivations can be formed from: the store's channels as positional tokens
            index = list(range(n_ch))
            model_names = list(canon)
            note = (
                "the 16 TCP derivations cannot be formed from these electrodes: the store's channels are fed as "
                "positional tokens, which the released weights' channel tokens do not describe"
            )
    else:
        index = list(range(n_ch))
        model_names = list(canon)
    if not minus:
        minus = [-1] * len(index)
    used = set(index) | {m for m in minus if m >= 0}
    dropped = [names[i] for i in range(n_ch) if i not in used]
    if not index:
        raise ConfigError(
            f"{c.title}: none of the store's {n_ch} channels ({', '.join(names[:8])}…) is one it knows "
            f"({CHANNEL_MODES[c.channels]}); refused"
        )
    sfreq = float(store_attrs.get("sfreq") or 200.0)
    store_samples = n * p
    resampled = _resampled_length(store_samples, sfreq, c.sfreq) if sfreq != c.sfreq else store_samples
    if resampled < c.patch:
        raise ConfigError(
            f"{c.title}: windows of {store_samples / sfreq:g} s are shorter than one {c.patch}-sample patch at "
            f"{c.sfreq:g} Hz"
        )
    whole = c.patch + ((resampled - c.patch) // c.patch_step) * c.patch_step
    crop = resampled - whole
    window = whole / c.sfreq
    wnote = ""
    if c.window_s is not None and abs(window - c.window_s) > 1e-6:
        wnote = f"windows of {window:g} s (pretraining: {c.window_s:g} s)"
    if c.max_patches is not None and whole // c.patch > c.max_patches:
        raise ConfigError(
            f"{c.title}: {whole // c.patch} patches per channel; its released weights embed at most "
            f"{c.max_patches} ({c.max_patches * c.patch / c.sfreq:g} s)"
        )
    uv = store_uv_per_unit(store_attrs.get("units"))
    factor = uv / 100.0 if c.scaling == "100uV" else uv / 1000.0 if c.scaling == "mV" else 1.0
    return Adaptation(
        model=name,
        store_sfreq=sfreq,
        model_sfreq=c.sfreq,
        store_samples=store_samples,
        model_samples=whole,
        crop=crop,
        store_uv_per_unit=uv,
        scaling=c.scaling,
        unit_factor=factor,
        store_channels=names,
        index=index,
        minus=minus,
        model_channels=model_names,
        positions=pos,
        mapped=mapped,
        dropped=dropped,
        window_note=wnote,
        channel_note=note,
    )
