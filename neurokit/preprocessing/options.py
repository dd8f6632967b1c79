"""Options of the preparers, typed: what every preparer takes (:class:`PrepareOptions`) and what one
modality adds (:class:`EEGOptions`, :class:`SurfaceOptions`).

Both preparers have the same shape, ``(card, out, options, modality_options) -> Path``
(:func:`~neurokit.preprocessing.eeg.prepare.prepare_eeg`,
:func:`~neurokit.preprocessing.surface.prepare.prepare_surface`); :func:`build_options` makes the two
objects from the keyword arguments of :func:`neurokit.pipelines.prepare.prepare` (and so of ``neuro prepare``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Sequence

from neurokit._utils.errors import ConfigError


@dataclass(frozen=True)
class PrepareOptions:
    """What to prepare and how, for every modality.

    Attributes
    ----------
    data_root : str | Path | None
        Folder the card's layout is relative to (default ``$NEUROKIT_DATA``).
    task : str | None
        Card task (labels, splits); default the card's first task.
    files : sequence of path | None
        Explicit recordings instead of the card's layout.
    subjects : sequence of int | None
        Only these subjects.
    overwrite : bool
        Replace an existing store (or shard set).
    progress : bool
        Show progress (EEG: a bar; surface: a line per file and hemisphere).
    skip_bad : bool
        Log and skip files that raise :class:`~neurokit._utils.errors.DataFileError` instead of stopping (and, for a
        float16 store, recordings beyond float16's range: :class:`~neurokit._utils.errors.Float16OverflowError`).
    shards : bool
        Write ``out`` as a shard set (a folder, one store per recording: :mod:`neurokit.store.shards`).
    resume : bool
        With ``shards``: add only the recordings the set at ``out`` lacks.
    n_jobs : int
        Recordings processed by this many local worker processes (-1: every core). EEG only.
    allow_duplicate_recordings : bool
        Keep the same recording under different subjects (identical files by SHA-256, or files whose bytes differ
        but whose samples match: an edited header, another format) recorded in the store's
        ``duplicate_recordings``, instead of refusing them (:mod:`neurokit.preprocessing.duplicates`).
    scheduler : str | distributed.Client | None
        A Dask scheduler (address) to send recordings to instead (default ``$DASK_SCHEDULER_ADDRESS``). EEG only.
    """

    data_root: str | Path | None = None
    task: str | None = None
    files: Sequence[str | Path] | None = None
    subjects: Sequence[int] | None = None
    overwrite: bool = False
    progress: bool = True
    skip_bad: bool = False
    shards: bool = False
    resume: bool = False
    n_jobs: int = 1
    scheduler: Any = None
    allow_duplicate_recordings: bool = False


@dataclass(frozen=True)
class EEGOptions:
    """What an EEG preparation adds to :class:`PrepareOptions`.

    Attributes
    ----------
    channels : sequence of str | None
        10-05 labels to keep, in this order (overrides the recipe's ``channels``).
    window_s, crop_start_s, crop_end_s, min_duration_s : float | None
        Override the card recipe's (s); ``None`` keeps it.
    line_freq : float | None
        Override the notch frequency (Hz; 0: no notch); ``None`` keeps the card's.
    encoding : str | None
        Encoding of EDF/BDF annotations (overrides the card's ``reading`` block).
    units : str | dict | None
        Unit of channels whose unit is blank or unknown: one unit, or label → unit (overrides the card's).
    override_units : bool
        ``units`` replaces the unit every EEG channel's header states (a header whose units lie;
        :func:`~neurokit.io.read_eeg`'s ``override_units``).
    stream_above_mb : float | None
        Recordings larger than this (MiB of float64 samples; default 256) are streamed in bounded memory;
        ``inf``: never.
    interpolate_bads : bool
        BIDS: interpolate the channels ``channels.tsv`` marks bad (default); ``False`` leaves them marked bad
        (:func:`~neurokit.io.bids.read_bids_eeg`).
    drop_channels : sequence of str | None
        BIDS: channels removed before the interpolation (file labels or 10-05 names).
    on_ch_mismatch : str | None
        BIDS: mne-bids' rule for a ``channels.tsv`` whose names differ from the file's (``raise``, ``reorder``,
        ``rename``; :func:`~neurokit.io.bids.read_bids_eeg`); ``None``: mne-bids' default (raise).
    allow_truncated : bool
        Read the part of a truncated EDF/BDF/BrainVision file that is there, with a warning, instead of refusing
        it (:func:`~neurokit.io.read_eeg`'s ``allow_truncated``).
    event_repeated : str | None
        Override the recipe's ``event_repeated`` (``error``, ``first``, ``drop``, ``keep``); ``None`` keeps it.
    dtype : str
        The dtype the windows are stored in: ``"float32"`` (default) or ``"float16"`` (half the bytes; values
        beyond ±65504 refused or clipped as the recipe's ``float16_overflow`` says; readers return float32).
    """

    channels: Sequence[str] | None = None
    window_s: float | None = None
    crop_start_s: float | None = None
    crop_end_s: float | None = None
    line_freq: float | None = None
    min_duration_s: float | None = None
    encoding: str | None = None
    units: str | dict | None = None
    override_units: bool = False
    stream_above_mb: float | None = None
    interpolate_bads: bool = True
    drop_channels: Sequence[str] | None = None
    on_ch_mismatch: str | None = None
    allow_truncated: bool = False
    event_repeated: str | None = None
    dtype: str = "float32"

    def recipe_overrides(self) -> dict[str, Any]:
        """The recipe fields these options override (``None``: keep the card's)."""
        return dict(
            event_repeated=self.event_repeated,
            window_s=self.window_s,
            crop_start_s=self.crop_start_s,
            crop_end_s=self.crop_end_s,
            line_freq=self.line_freq,
            min_duration_s=self.min_duration_s,
        )

    def read_overrides(self) -> dict[str, Any]:
        """Options of :func:`~neurokit.io.read_eeg` these options set (over the card's ``reading`` block)."""
        out: dict[str, Any] = {k: v for k, v in (("encoding", self.encoding), ("units", self.units)) if v is not None}
        if self.override_units:
            out["override_units"] = True
        return {**out, "allow_truncated": True} if self.allow_truncated else out

    def bids_overrides(self) -> dict[str, Any]:
        """Options of :func:`~neurokit.io.bids.read_bids_eeg` these options set (``{}``: its defaults)."""
        out: dict[str, Any] = {} if self.interpolate_bads else {"interpolate_bads": False}
        if self.drop_channels:
            out["drop_channels"] = list(self.drop_channels)
        if self.on_ch_mismatch:
            out["on_ch_mismatch"] = self.on_ch_mismatch
        return out

    def stream_above_bytes(self) -> float | None:
        """:attr:`stream_above_mb` in bytes (``None``: the default).

        Raises
        ------
        ConfigError
            Not a size ≥ 0 (NaN included).
        """
        mb = self.stream_above_mb
        if mb is None:
            return None
        if not mb >= 0:  # NaN fails this too
            raise ConfigError(f"stream_above_mb={mb}: give a size in MiB ≥ 0 (inf: never stream)")
        return mb * 2**20


@dataclass(frozen=True)
class SurfaceOptions:
    """What a surface preparation adds to :class:`PrepareOptions`.

    Attributes
    ----------
    spheres : dict | None
        ``{"L": path, "R": path}``: registered spheres of the data's mesh (override the card's).
    mesh : str | None
        The data's mesh (``"ico6"``, ``"fs_LR_59k"``, a name of one's own with ``spheres``); default from
        the vertex count.
    hemi : str | None
        Only this hemisphere (``L``/``R``).
    """

    spheres: dict | None = None
    mesh: str | None = None
    hemi: str | None = None


#: the options object each modality adds to :class:`PrepareOptions`
MODALITY_OPTIONS = {"eeg": EEGOptions, "surface": SurfaceOptions}
#: options of :class:`PrepareOptions` a modality's preparer does not take (surface runs in one process)
NOT_TAKEN = {"eeg": (), "surface": ("n_jobs", "scheduler")}


def _names(cls) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


def option_names(modality: str) -> frozenset[str]:
    """Keyword arguments the preparer of ``modality`` takes (those of :func:`build_options`).

    Parameters
    ----------
    modality : {"eeg", "surface"}
        The card's modality.

    Returns
    -------
    frozenset of str
        The fields of :class:`PrepareOptions` the preparer uses and those of its modality's options.

    Raises
    ------
    ConfigError
        A modality without a preparer.

    Examples
    --------
    >>> "mesh" in option_names("surface"), "n_jobs" in option_names("surface"), "n_jobs" in option_names("eeg")
    (True, False, True)
    """
    if modality not in MODALITY_OPTIONS:
        raise ConfigError(f"no preparer for modality {modality!r}; known: {', '.join(MODALITY_OPTIONS)}")
    shared = set(_names(PrepareOptions)) - set(NOT_TAKEN[modality])
    return frozenset(shared | set(_names(MODALITY_OPTIONS[modality])))


def build_options(modality: str, **kwargs: Any) -> tuple[PrepareOptions, EEGOptions | SurfaceOptions]:
    """The options objects of a preparation, from keyword arguments (missing ones take their defaults).

    Parameters
    ----------
    modality : {"eeg", "surface"}
        The card's modality.
    **kwargs
        Fields of :class:`PrepareOptions` and of :class:`EEGOptions` or :class:`SurfaceOptions`
        (see :func:`option_names`).

    Returns
    -------
    prepare : PrepareOptions
        The options every preparer shares.
    own : EEGOptions or SurfaceOptions
        The modality's own options.

    Raises
    ------
    ConfigError
        A modality without a preparer, or an option its preparer does not take (named).

    Examples
    --------
    >>> prepare, own = build_options("surface", mesh="ico6")
    >>> own
    SurfaceOptions(spheres=None, mesh='ico6', hemi=None)
    """
    extra = sorted(set(kwargs) - option_names(modality))
    if extra:
        raise ConfigError(f"modality {modality}: option(s) {', '.join(extra)} do not apply to it")
    shared = {k: v for k, v in kwargs.items() if k in _names(PrepareOptions)}
    own = {k: v for k, v in kwargs.items() if k not in shared}
    return PrepareOptions(**shared), MODALITY_OPTIONS[modality](**own)
