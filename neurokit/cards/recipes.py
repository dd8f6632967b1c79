"""Preprocessing recipes: how a data card's recordings become stored samples, one typed object per modality
(:class:`EEGRecipe` for EEG, :class:`SurfaceRecipe` for cortical-surface fMRI). Both are written into every
store and checkpoint, and validated when built."""

from __future__ import annotations

import math

import logging
from dataclasses import asdict, dataclass, fields
from typing import Any

from neurokit._utils.errors import ConfigError
from neurokit.geometry.patches import parse_grid, patch_grid_name
from neurokit.store.patch_store import FLOAT16_OVERFLOW

logger = logging.getLogger("neurokit")


PATCH_SIZE = 200


TARGET_SFREQ = 200.0

#: ``event_repeated`` values of an EEG recipe: what two event windows at one time do
EVENT_REPEATED = ("error", "first", "drop", "keep")

#: ``eog_removal`` values of an EEG recipe (:mod:`neurokit.preprocessing.eeg.eog`)
EOG_METHODS = ("none", "ica", "regression")


@dataclass
class EEGRecipe:
    """Preprocessing parameters of one EEG dataset (from its data card's ``preprocessing`` block).

    Attributes
    ----------
    sfreq : float
        Output sampling rate in Hz (200 for CBraMod: one patch = 1 s).
    l_freq, h_freq : float | None
        Band-pass edges in Hz; ``None`` disables that edge. ``h_freq`` is lowered to 0.9 × Nyquist of the
        recording when it lies above 0.95 × Nyquist (a warning says so).
    line_freq : float | None
        Notch frequency in Hz (50 or 60); ``None`` for no notch. Harmonics below Nyquist are notched too.
    reference : str | None
        ``"average"`` for the common average reference, or ``None`` to keep the recorded reference. A recording
        with bipolar channels (labels such as ``Fp1-F7``: :func:`~neurokit.geometry.channels.is_bipolar`) is
        refused under ``"average"``, naming them.
    scale : float
        Factor applied to volts: ``1e4`` gives units of 100 µV (µV / 100), CBraMod's input unit.
    window_s : float
        Window length in seconds (a whole number of patches).
    stride_s : float | None
        Hop between sliding windows (continuous data); ``None`` = ``window_s``.
    reject_uv : float | None
        Drop a window when any ``|sample|`` exceeds this many µV (after filtering); ``None`` keeps all.
    crop_start_s, crop_end_s : float
        Seconds dropped at the start and at the end of each recording before windowing.
    channels : list[str] | None
        10-05 labels to keep, in this order; ``None`` keeps every EEG channel in file order.
    events : dict[str, int] | None
        Annotation description → class index. Windows start at each matching annotation's onset.
        ``None`` means continuous sliding windows (pretraining).
    event_windows : str
        ``"onset"`` (default): one window starting at each matching annotation's onset. ``"tile"``:
        windows tiling each matching annotation from its onset to its end, ``stride_s`` apart (labelled
        stretches such as a whole Bonn segment or a rest block).
    min_sfreq : float
        Recordings sampled below this rate (Hz) are refused: their band would be a small part of what
        the model sees at 200 Hz. Default 64 Hz (EEG rarely comes slower; EEGMMIDB has 128 and 160 Hz).
    resample_first : bool
        Resample to ``sfreq`` before filtering (CBraMod's TUEG pretraining order) instead of after the
        band-pass and notch (its PhysioNet-MI order).
    min_duration_s : float
        Recordings shorter than this (s) are dropped (:class:`RecordingDropped`), as CBraMod drops TUEG
        recordings under 5 min. Default 0: keep all.
    eog_removal : str
        Eye-movement artefact removal through MNE (:mod:`neurokit.preprocessing.eeg.eog`), after the
        reference, filters and resampling: ``"none"`` (default), ``"ica"`` (ICA fitted on a 1 Hz high-passed
        copy, components found by ``find_bads_eog`` against ``eog_channels`` removed; deterministic) or
        ``"regression"`` (``EOGRegression``; needs real EOG channels and ``reference: average``).
    eog_channels : list[str] | None
        Channels standing for eye movements (EOG channels, or frontal proxies such as ``F8-F7``, ``Fp1``);
        ``None``: the recording's EOG channels, else (ICA) ``F8-F7``, ``Fp1``, ``Fp2``. Only with
        ``eog_removal``.
    exclude_channels : list[str] | None
        EEG channels dropped just before windowing (after EOG removal, which may use them as proxies).
    bipolar : list[str] | None
        Bipolar derivations ``"A-B"`` (channel A minus channel B, named ``"A-B"``) made after filtering,
        resampling, EOG removal and exclusion; the recording keeps only them, in this order (e.g. the 16 TCP
        derivations of TUH and CHB-MIT, ``Fp1-F7``, ``F7-T7``…). A and B are channel names after renaming (the
        10-05 labels: ``EEG T3-REF`` reads as ``T7``); with ``channels``, both must be among them. Filters are
        linear and per channel, so deriving after them equals deriving before (CBraMod's TUAB/TUEV scripts
        derive last). ``None``: no derivation.
    event_repeated : str
        Two event windows at one time (a marker repeated, or two markers at one instant): ``"error"`` (default,
        as MNE's ``Epochs``) refuses the file naming the times and markers; ``"first"`` keeps the first marker
        at each time (MNE's ``event_repeated="drop"``); ``"drop"`` keeps a repeated marker once and drops the
        windows whose markers conflict. ``"keep"`` stores a window per marker, repeats included (the CBraMod
        release's TUEV and CHB-MIT scripts do this: one TUEV event marked on several channels gives as many
        identical windows, all of one recording and so of one split). What was dropped or repeated is counted in
        the store's notes.
    event_offset_s : float
        Event windows (``event_windows: onset``) start this many seconds after each marker's onset; negative:
        before it (CBraMod's TUEV windows start 2 s before each 1-s event: ``-2.0`` with ``window_s: 5``).
        Windows that would start before the recording or run past its end are dropped and counted.
    resample_windows : bool
        Leave the recording at its own rate, cut each window of ``window_s`` seconds at that rate and resample
        the window alone to ``window_s × sfreq`` samples with :func:`scipy.signal.resample` (FFT, treating the
        window as periodic), as the CBraMod release's CHB-MIT loader does (10 s at 256 Hz → 2,000 samples).
        Default ``False``: the whole recording is resampled (MNE's method) before windowing.
    missing_channels : str
        A recording without a channel of ``channels``: ``"error"`` (default) refuses it naming the channels;
        ``"skip"`` leaves it out, says so naming the file and the channels, and lists it in the store's
        ``dropped`` (the CBraMod release's TUH scripts skip such files without a word).
    units_check : str
        A recording whose amplitudes are outside scalp EEG's range (robust RMS below 0.1 µV or above 5 mV: a header
        whose units lie, :func:`~neurokit.preprocessing.eeg.windows.check_units`): ``"warn"`` (default) names the
        file, the channels, the figure and the likely unit error; ``"error"`` (a card's strict setting) refuses the
        file with that message; ``"off"`` checks nothing (non-scalp recordings).
    reject_by_annotation : bool
        Drop windows that overlap an annotation whose description starts with ``BAD`` (any case; MNE's
        ``reject_by_annotation`` convention, e.g. ``BAD_muscle``), counted per file in the store's
        ``sources`` (``n_bad_annotation``) and in its ``n_bad_annotation`` attribute. Zero-length
        ``BAD boundary`` marks of joined pieces are not spans (no window crosses a gap anyway). Default
        ``True``; ``False`` keeps them.
    float16_overflow : str
        A store prepared with ``dtype="float16"`` (half the bytes) holds values up to ±65504 (6.55 V in 100 µV
        units): ``"refuse"`` (default) refuses a recording with a value beyond, naming it and the count;
        ``"clip"`` clips such values to ±65504, counted in the store's ``n_float16_clipped`` and said per
        recording. Never stored as inf. No effect on a float32 store.
    """

    sfreq: float = TARGET_SFREQ
    l_freq: float | None = 0.3
    h_freq: float | None = 75.0
    line_freq: float | None = 60.0
    reference: str | None = None
    scale: float = 1e4
    window_s: float = 4.0
    stride_s: float | None = None
    reject_uv: float | None = None
    crop_start_s: float = 0.0
    crop_end_s: float = 0.0
    channels: list[str] | None = None
    events: dict[str, int] | None = None
    min_sfreq: float = 64.0
    resample_first: bool = False
    min_duration_s: float = 0.0
    event_windows: str = "onset"
    eog_removal: str = "none"
    eog_channels: list[str] | None = None
    exclude_channels: list[str] | None = None
    reject_by_annotation: bool = True
    bipolar: list[str] | None = None
    event_repeated: str = "error"
    event_offset_s: float = 0.0
    resample_windows: bool = False
    missing_channels: str = "error"
    units_check: str = "warn"
    float16_overflow: str = "refuse"

    def __post_init__(self) -> None:
        self._check_eog()
        self._check_bipolar()
        if self.event_repeated not in EVENT_REPEATED:
            raise ConfigError(f"event_repeated={self.event_repeated!r}: allowed values are {', '.join(EVENT_REPEATED)}")
        if not (isinstance(self.event_offset_s, (int, float)) and math.isfinite(self.event_offset_s)):
            raise ConfigError(f"event_offset_s={self.event_offset_s!r}: give a number of seconds (negative: before)")
        if self.event_offset_s and self.event_windows != "onset":
            raise ConfigError("event_offset_s applies to event_windows: onset (windows at each marker), not tile")
        if self.resample_windows and self.resample_first:
            raise ConfigError("resample_windows and resample_first exclude each other: choose one resampling")
        if self.units_check not in ("warn", "error", "off"):
            raise ConfigError(f"units_check={self.units_check!r}: allowed values are 'warn', 'error' and 'off'")
        if self.float16_overflow not in FLOAT16_OVERFLOW:
            raise ConfigError(
                f"float16_overflow={self.float16_overflow!r}: allowed values are {', '.join(map(repr, FLOAT16_OVERFLOW))}"
            )
        if self.missing_channels not in ("error", "skip"):
            raise ConfigError(f"missing_channels={self.missing_channels!r}: allowed values are 'error' and 'skip'")
        if self.event_windows not in ("onset", "tile"):
            raise ConfigError(f"event_windows={self.event_windows!r}: allowed values are 'onset' and 'tile'")
        if self.sfreq != TARGET_SFREQ:
            logger.warning("sfreq=%s: CBraMod expects 200 Hz patches", self.sfreq)
        n = self.window_s * self.sfreq / PATCH_SIZE
        if self.window_s <= 0 or abs(n - round(n)) > 1e-9:
            raise ConfigError(
                f"window_s={self.window_s} is not a whole number of {PATCH_SIZE}-sample patches at "
                f"{self.sfreq} Hz; use a multiple of {PATCH_SIZE / self.sfreq:g} s"
            )
        if self.reference not in (None, "average"):
            raise ConfigError(f"reference={self.reference!r}: allowed values are None and 'average'")
        for key in ("crop_start_s", "crop_end_s", "min_duration_s"):
            v = getattr(self, key)  # seconds: a number, 0 or more
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
                raise ConfigError(f"{key}={v!r}: give a number of seconds, 0 or more")
        if self.l_freq is not None and self.h_freq is not None and self.l_freq >= self.h_freq:
            raise ConfigError(f"l_freq={self.l_freq} must be below h_freq={self.h_freq}")

    def bipolar_pairs(self) -> list[tuple[str, str]]:
        """``bipolar`` as ``(anode, cathode)`` pairs (empty without derivations)."""
        return [tuple(d.split("-", 1)) for d in self.bipolar or []]  # type: ignore[misc]

    def _check_bipolar(self) -> None:
        if self.bipolar is None:
            return
        bad = [d for d in self.bipolar if not isinstance(d, str) or d.count("-") != 1 or "" in d.split("-")]
        if isinstance(self.bipolar, str) or bad or not self.bipolar:
            raise ConfigError(
                f"bipolar={self.bipolar!r}: give a list of derivations 'A-B' (channel A minus channel B), "
                f"e.g. [Fp1-F7, F7-T7]{'; not of that form: ' + ', '.join(map(str, bad)) if bad else ''}"
            )
        if len(set(self.bipolar)) < len(self.bipolar):
            raise ConfigError(f"bipolar lists a derivation twice: {self.bipolar}")
        if self.channels:
            missing = sorted({c for pair in self.bipolar_pairs() for c in pair} - set(self.channels))
            if missing:
                raise ConfigError(f"bipolar derivations use {missing}, not among the recipe's channels")
        if self.reference == "average":
            raise ConfigError("bipolar derivations cancel any common reference: give reference: null with bipolar")

    def _check_eog(self) -> None:
        if self.eog_removal not in EOG_METHODS:
            raise ConfigError(f"eog_removal={self.eog_removal!r}: allowed values are {', '.join(EOG_METHODS)}")
        if self.eog_channels is not None and self.eog_removal == "none":
            raise ConfigError("eog_channels applies only with eog_removal: ica or regression (eog_removal is none)")
        if self.eog_removal == "regression" and self.reference != "average":
            raise ConfigError(
                "eog_removal: regression needs reference: average (MNE's EOGRegression works on referenced EEG)"
            )
        for key in ("eog_channels", "exclude_channels"):
            v = getattr(self, key)
            if v is not None and (isinstance(v, str) or not all(isinstance(c, str) for c in v)):
                raise ConfigError(f"{key}={v!r}: give a list of channel names")
        if self.channels and self.exclude_channels:
            both = [c for c in self.exclude_channels if c not in self.channels]
            if both:
                raise ConfigError(
                    f"exclude_channels {both} are not in the recipe's channels; list only channels "
                    "that the recipe keeps"
                )

    @property
    def n_patches(self) -> int:
        return int(round(self.window_s * self.sfreq / PATCH_SIZE))

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "EEGRecipe":
        """The recipe of a card's ``preprocessing`` block.

        Parameters
        ----------
        d : dict | None
            Recipe field → value; missing fields keep their defaults (``None``: every default).

        Returns
        -------
        EEGRecipe

        Raises
        ------
        ConfigError
            Unknown keys (naming the allowed ones) or values out of range.
        """
        d = dict(d or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"unknown preprocessing keys {unknown}; allowed: {sorted(known)}")
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        """The recipe as a dict (written into stores and checkpoints). The EOG and exclusion options are left
        out at their defaults, so that a recipe without them reads as before they existed."""
        d = asdict(self)
        for key, default in _OPTIONAL_DEFAULTS.items():
            if d[key] == default:
                del d[key]
        return d


#: recipe fields written only when set (see :meth:`EEGRecipe.to_dict`)
_OPTIONAL_DEFAULTS = {
    "eog_removal": "none",
    "eog_channels": None,
    "exclude_channels": None,
    "bipolar": None,
    "event_repeated": "error",
    "event_offset_s": 0.0,
    "resample_windows": False,
    "missing_channels": "error",
    "units_check": "warn",
    "float16_overflow": "refuse",
}


@dataclass
class SurfaceRecipe:
    """How surface fMRI becomes stored samples (written into every store's attrs).

    Attributes
    ----------
    grid : str
        Patch grid ``"ico6/icoK"``, K in 1…5 (ico2: 320 × 153, ico3: 1280 × 45).
    tubelet : int
        Frames per sample ``T`` (≥ 1).
    stride : int or None
        Frames between consecutive tubelet starts (default: ``tubelet``, no overlap).
    zscore : bool
        Per-frame z-scoring over the cortex mask.
    mirror_right : bool
        Mirror the right hemisphere onto the left template (x → −x).
    mask_threshold : float
        A template vertex is cortex when more than this fraction of its resampling weight is.
    """

    grid: str = "ico6/ico2"
    tubelet: int = 3
    stride: int | None = None
    zscore: bool = True
    mirror_right: bool = True
    mask_threshold: float = 0.5

    def __post_init__(self) -> None:
        template, k = parse_grid(self.grid)
        self.grid = patch_grid_name(k, template)
        if int(self.tubelet) < 1:
            raise ConfigError(f"tubelet must be ≥ 1 frame, got {self.tubelet}")
        if self.stride is not None and int(self.stride) < 1:
            raise ConfigError(f"stride must be ≥ 1 frame, got {self.stride}")
        if not 0.0 <= self.mask_threshold < 1.0:
            raise ConfigError(f"mask_threshold must be in [0, 1), got {self.mask_threshold}")

    @property
    def template_order(self) -> int:
        return parse_grid(self.grid)[0]

    @property
    def grid_order(self) -> int:
        return parse_grid(self.grid)[1]

    @property
    def step(self) -> int:
        return int(self.stride or self.tubelet)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "SurfaceRecipe":
        """The recipe of a card's ``preprocessing`` block (without its ``spheres``, which are not part of it).

        Parameters
        ----------
        d : dict | None
            Recipe field → value; missing fields keep their defaults.

        Returns
        -------
        SurfaceRecipe

        Raises
        ------
        ConfigError
            Unknown keys (naming the allowed ones) or values out of range.
        """
        d = dict(d or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"unknown surface preprocessing key(s) {unknown}; allowed: {sorted(known)} and spheres")
        return cls(**d)

    def to_dict(self) -> dict:
        return asdict(self)
