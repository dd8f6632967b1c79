"""Reading EEG recordings into :class:`mne.io.Raw`, with channel names put into 10-05 form.

Every format MNE reads is accepted (EDF/EDF+, BDF, GDF, BrainVision, EEGLAB, FIF, CNT, …) through
:func:`mne.io.read_raw`, lazily (``preload=False``). Only EEG channels are kept. Channel labels are
normalised to the standard 10-05 names of MNE's ``standard_1005`` montage (``Fc5.`` → ``FC5``,
``EEG Fp1-REF`` → ``Fp1``); the old 10-20 temporal names are mapped to the 10-10 ones
(T3→T7, T4→T8, T5→P7, T6→P8) and every rename is recorded.
"""

from __future__ import annotations

import logging
import re
import warnings
from pathlib import Path
from typing import Sequence

import numpy as np

from neurokit._utils.errors import DataFileError
from neurokit.geometry.channels import (
    OLD_TO_NEW,
    ChannelRenames,
    montage_for,
    normalize_ch_name,
    strip_affixes,
)
from neurokit.io.notes import set_raw_notes

logger = logging.getLogger("neurokit")


def read_eeg(
    path: str | Path,
    *,
    preload: bool = False,
    eeg_only: bool = True,
    normalize_names: bool = True,
    set_montage: bool = True,
    allow_truncated: bool = False,
    encoding: str | None = None,
    units: str | dict[str, str] | None = None,
    override_units: bool = False,
    verbose: bool | str | None = "error",
):
    """Read one EEG recording, lazily, with EEG channels picked and 10-05 channel names.

    Headers are checked before the samples are read (:mod:`neurokit.io.headers`): EDF/BDF and
    BrainVision fields must be numbers in physical bounds and agree with each other and with the file's
    size; every format's sampling rate must lie within 1 Hz–1 MHz.

    Parameters
    ----------
    path : str | Path
        Recording in any format :func:`mne.io.read_raw` knows (``.edf``, ``.bdf``, ``.gdf``, ``.vhdr``,
        ``.set``, ``.fif``, ``.cnt``, …).
    preload : bool
        Load the samples now. Default ``False``: only the header is read (EDF+D/BDF+D files with gaps are
        always loaded).
    eeg_only : bool
        Keep only channels typed ``eeg``. EDF files type every channel as EEG, so a channel whose label
        says otherwise by a whole word (``ECG``, ``EKG-L``, ``EOG``, ``EMG``, ``Status``, ``Resp chest``…;
        :func:`non_eeg_type`) is re-typed before picking, unless the file types its channels itself (FIF,
        or ECG/EOG/EMG types present). A channel whose EDF/BDF physical unit is a known non-voltage unit
        (``G``, ``degC``, ``%``, ``bpm``…: :data:`NON_VOLTAGE_UNITS`) is typed ``misc``, with a warning.
    normalize_names : bool
        Rename channels to 10-05 labels (see :func:`normalize_ch_name`). Two labels that become one name
        (``T3`` and ``T7``) raise :class:`DataFileError`.
    set_montage : bool
        Attach the template 10-05 positions to the channels that have one.
    allow_truncated : bool
        A file shorter than its header says (a recording not stopped cleanly, a partial copy) raises
        :class:`DataFileError` by default; with ``True`` the samples that are there are read and a
        ``RuntimeWarning`` names the file.
    encoding : str | None
        Text encoding of EDF/BDF annotations (``"utf8"``, ``"latin1"``, …). ``None``: UTF-8 (the EDF+
        standard), and Latin-1 with a warning when the text is not valid UTF-8.
    units : str | dict | None
        EDF/BDF: the unit (``"uV"``, ``"mV"``, ``"V"``, ``"nV"``) of channels whose physical dimension is
        blank or not a voltage unit — one unit for all, or label → unit. ``None``: such EEG channels are
        taken as µV with a warning naming them. Channels with a voltage unit keep it, unless ``override_units``.
    override_units : bool
        EDF/BDF: ``units`` replaces the header's unit of every EEG channel it covers, stated or not (a header that
        says µV over samples in volts: ``units="V", override_units=True``); recorded in the notes' ``applied``
        as ``units_overridden``. Needs ``units``.
    verbose : bool | str | None
        MNE's logging level for the read.

    Returns
    -------
    raw : mne.io.Raw
        Data in volts, as MNE stores it. Annotations are kept. Its :class:`~neurokit.io.notes.RawNotes`
        (:func:`~neurokit.io.notes.raw_notes`) hold ``renames`` (:class:`ChannelRenames`), ``applied`` (what
        reading did: original ``sfreq``, ``encoding``, ``units_assumed``, ``bad_channels``, ``gaps``) and, for
        files with a stim channel, ``stim`` (its events). Uncalibrated channels (physical minimum = maximum) are
        in ``raw.info["bads"]``. An EDF+D/BDF+D file with gaps comes back as contiguous pieces joined by
        MNE's ``BAD boundary``/``EDGE boundary`` annotations (filters and resampling treat each piece
        alone); annotations are moved onto the pieces, those inside a gap dropped with a warning, and
        the notes' ``segments`` map each piece to its true start time.

    Raises
    ------
    FileNotFoundError
        The path does not exist.
    DataFileError
        MNE cannot read the file (unknown format, corrupt header), a header check fails, the file is
        truncated (see ``allow_truncated``), it has no EEG channel, or channel names clash; a ``.rec`` file
        that is not EDF (a Philips PAR/REC image) and an epoched EEGLAB set are named as such.

    Other warnings MNE gives while reading are re-issued as ``RuntimeWarning`` prefixed with the path.
    """
    from neurokit._utils.errors import NeurokitError

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if path.is_dir():
        raise DataFileError(f"{path}: is a folder; give one recording file (e.g. .edf, .vhdr, .set, .fif)")
    if encoding is not None:
        import codecs

        from neurokit._utils.errors import ConfigError

        try:
            codecs.lookup(encoding)
        except LookupError:
            raise ConfigError(
                f"encoding={encoding!r} is not a text encoding Python knows (e.g. utf8, latin1, cp1252)"
            ) from None
    try:
        return _read_eeg(
            path,
            preload,
            eeg_only,
            normalize_names,
            set_montage,
            allow_truncated,
            encoding,
            units,
            verbose,
            override_units,
        )
    except (NeurokitError, FileNotFoundError):
        raise
    except Exception as exc:  # any reader fault reaches the user as a neurokit error naming the file
        raise DataFileError(f"{path}: could not read this file ({describe_exception(exc)})") from exc


def describe_exception(exc: BaseException, limit: int = 300) -> str:
    """``Type: message`` in at most ``limit`` characters; an empty message (a bare ``assert``) is replaced
    by the failed source line and its place.

    Parameters
    ----------
    exc : BaseException
        A caught exception.
    limit : int
        Characters of the message kept (an ellipsis marks a cut).

    Returns
    -------
    str

    Examples
    --------
    >>> describe_exception(ValueError("bad header"))
    'ValueError: bad header'
    """
    import traceback

    msg = str(exc).strip()
    if not msg:
        tb = traceback.extract_tb(exc.__traceback__)
        if tb:
            fr = tb[-1]
            msg = f"failed check `{(fr.line or '').strip()}` in {Path(fr.filename).name}:{fr.lineno}"
    if len(msg) > limit:
        msg = msg[:limit] + "…"
    return f"{type(exc).__name__}: {msg}"


#: MNE warnings that the header checks replace with better ones, and those about annotations beyond the
#: stacked records of an EDF+D file, which are re-placed on their true pieces
_MNE_SAID_BETTER = (
    "Physical range is not defined",
    "Scaling factor will not be defined",
    "does not match the file size",
)
_MNE_GAP_NOTES = ("outside data range", "Omitted")


def _read_eeg(
    path,
    preload,
    eeg_only,
    normalize_names,
    set_montage,
    allow_truncated,
    encoding,
    units,
    verbose,
    override_units=False,
):
    """Read, check and annotate one recording; :func:`read_eeg` without its argument checks."""
    import mne

    suffix = path.suffix.lower()
    edf = suffix in (".edf", ".bdf", ".rec")
    if suffix in _NOT_EEG:
        raise DataFileError(
            f"{path}: a {suffix} file is not an EEG recording neurokit reads ({_NOT_EEG[suffix]}); give the "
            "recording as EDF, BDF, GDF, BrainVision, EEGLAB, FIF or another format MNE reads as EEG"
        )
    report = _check_header(path, suffix, allow_truncated)
    out_warnings = list(report.warnings)
    include = None
    split = report.eeg_rate_only() if edf and eeg_only else None
    by = report.eeg_rates() if edf else {}
    if len(by) > 1:
        out_warnings.append(
            "EEG channels at several rates ("
            + "; ".join(f"{r:g} Hz: {', '.join(labs[:4])}{' …' if len(labs) > 4 else ''}" for r, labs in by.items())
            + f"): MNE reads them all at the fastest rate ({max(report.rates.values()):g} Hz), resampling the others"
        )
    if split is not None:  # EEG at its own rate: MNE would resample it to the fastest signal's (a half-sample shift)
        include, left = split
        out_warnings.append(
            f"signals at other rates left out ({', '.join(f'{x} {report.rates[x]:g} Hz' for x in left[:6])}"
            f"{' …' if len(left) > 6 else ''}); the EEG is read at its own {report.rates[include[0]]:g} Hz"
        )
    raw, caught, used_encoding = _open_raw(path, edf, encoding, verbose, out_warnings, include=include)
    onsets = report.record_onsets
    gapped = (
        onsets is not None
        and len(_segments(onsets, report.record_s, len(onsets) * report.record_s, report.onset_tol)) > 1
    )
    dup_labels = _sort_read_warnings(caught, path, edf, gapped, allow_truncated, out_warnings)
    sf = _check_signal(raw, path)

    applied: dict = {"sfreq_orig": sf}
    if edf:
        applied["encoding"] = used_encoding
    _calibrate(raw, report, units, path, applied, out_warnings)
    if override_units:
        _override_units(raw, units, path, applied)
    stim = _stim_events(raw, path)

    segments = None
    if gapped:
        raw, segments = _split_gaps(raw, report, sf, path, used_encoding or "utf8", applied, out_warnings)
    if eeg_only:
        _pick_eeg(raw, path, mne)

    renames = _normalize_names(raw, dup_labels, path) if normalize_names else ChannelRenames()
    if set_montage:
        raw.set_montage(montage_for(raw.ch_names), on_missing="ignore", verbose="error")
    if raw.info["bads"]:
        applied["bad_channels"] = list(raw.info["bads"])
    set_raw_notes(
        raw,
        renames=renames,
        source=str(path),
        applied=applied,
        stim=stim,
        segments=segments if segments is not None and len(segments) > 1 else None,
    )
    if preload:
        raw.load_data(verbose="error")
    for msg in out_warnings:
        warnings.warn(f"{path}: {msg}", RuntimeWarning, stacklevel=3)
    if renames.nonstandard:
        logger.info("%s: channels without a 10-05 position: %s", path, renames.nonstandard)
    return raw


#: suffixes MNE's read_raw takes for data that are not EEG: what it would read them as
_NOT_EEG = {
    ".txt": "MNE reads .txt as BOXY optical-imaging data",
    ".snirf": "an fNIRS file",
    ".nirx": "an fNIRS file",
    ".csv": "a table of numbers: read it with numpy and make a recording with mne.io.RawArray",
}


def _check_header(path, suffix, allow_truncated):
    """Check an EDF/BDF or BrainVision header before MNE reads it; other formats give an empty report."""
    from neurokit.io.headers import HeaderReport, check_brainvision, check_edf

    if suffix == ".rec":
        with open(path, "rb") as fh:
            head = fh.read(8)
        if head not in (b"0       ", b"\xffBIOSEMI"):
            raise DataFileError(
                f"{path}: a .rec file that is not EDF (an EDF file starts with '0' and seven spaces; this one starts "
                f"with {head!r}). neurokit reads .rec files only as EDF; a Philips PAR/REC file is an MRI image, not "
                "EEG"
            )
    if suffix in (".edf", ".bdf", ".rec"):
        return check_edf(path, allow_truncated=allow_truncated)
    if suffix == ".vhdr":
        return check_brainvision(path, allow_truncated=allow_truncated)
    return HeaderReport()


def _open_raw(path, edf, encoding, verbose, out_warnings, include=None):
    """Open the file with MNE, recording its warnings; EDF annotations fall back to Latin-1 when not UTF-8.

    Returns ``(raw, caught warnings, encoding used or None)``.
    """
    import mne

    mne_verbose = "warning" if verbose == "error" else verbose
    kw: dict = {}
    if edf:
        kw["encoding"] = encoding or "utf8"
    if include is not None:
        kw["include"] = list(include)
    real, path = path, _edf_alias(path) if path.suffix.lower() == ".rec" else path  # MNE reads EDF by suffix only
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                raw = mne.io.read_raw(path, preload=False, verbose=mne_verbose, **kw)
            except Exception as exc:
                if not (edf and encoding is None and "encoding=" in str(exc)):
                    raise
                kw["encoding"] = "latin1"
                raw = mne.io.read_raw(path, preload=False, verbose=mne_verbose, **kw)
                out_warnings.append(
                    "annotation text is not valid UTF-8; decoded as Latin-1. State the encoding "
                    "with read_eeg(encoding=...), the card's reading: encoding, or encoding="
                )
    except Exception as exc:  # MNE raises many types for damaged files
        path = real
        m = re.search(r"number of trials is (\d+)", str(exc))
        if path.suffix.lower() == ".set" and m:
            raise DataFileError(
                f"{path}: an epoched EEGLAB dataset ({m.group(1)} epochs), not a continuous recording; neurokit cuts "
                "its own windows from continuous data. Give the continuous .set saved before epoching, or read the "
                "epochs with mne.read_epochs_eeglab"
            ) from exc
        raise DataFileError(
            f"{path}: MNE could not read this file ({describe_exception(exc)}). "
            "Check that it is complete (not truncated) and in a format MNE supports."
        ) from exc
    return raw, caught, kw.get("encoding")


_ALIASES = None


def _edf_alias(path: Path) -> Path:
    """A ``.edf`` link to an EDF file named ``.rec`` (MNE chooses its reader by the suffix), in a folder of this
    process removed at exit; the recording stays lazy (read from ``path``)."""
    import os
    import tempfile

    global _ALIASES
    if _ALIASES is None:
        _ALIASES = tempfile.TemporaryDirectory(prefix="neurokit-rec-")
    link = Path(_ALIASES.name) / f"{abs(hash(str(path.resolve()))):x}.edf"
    if not link.exists():
        os.symlink(path.resolve(), link)
    return link


def _sort_read_warnings(caught, path, edf, gapped, allow_truncated, out_warnings) -> set[str]:
    """Keep MNE's useful warnings in ``out_warnings``, raise on truncation; returns the repeated labels."""
    dup_labels: set[str] = set()
    for w in caught:
        msg = str(w.message)
        m = re.search(r"Channel names are not unique, found duplicates for: \{(.*?)\}", msg)
        if m:  # MNE renamed repeated labels C3, C3 to C3-0, C3-1: the name check below sees them as repeated
            dup_labels.update(re.findall(r"'((?:[^'\\]|\\.)*)'", m.group(1)))
        if edf and any(d in msg for d in _MNE_SAID_BETTER) or gapped and any(d in msg for d in _MNE_GAP_NOTES):
            continue
        if "does not match the file size" in msg:
            if not allow_truncated:
                raise DataFileError(
                    f"{path}: the number of data records in the header does not match the file size "
                    "(an interrupted recording or a partial copy). Copy the file again, read the part that is "
                    "there with allow_truncated=True, or leave the file out with skip_bad=True."
                )
            msg = "truncated file: reading only the data records present"
        out_warnings.append(msg[:500])
    return dup_labels


def _check_signal(raw, path) -> float:
    """Refuse a sampling rate out of bounds, no channels or no samples; returns the sampling rate."""
    from neurokit.io.headers import SFREQ_BOUNDS

    sf = float(raw.info["sfreq"])
    if not (np.isfinite(sf) and SFREQ_BOUNDS[0] <= sf <= SFREQ_BOUNDS[1]):
        raise DataFileError(
            f"{path}: sampling rate {sf:.4g} Hz is outside {SFREQ_BOUNDS[0]:g}–{SFREQ_BOUNDS[1]:g} Hz: a damaged header"
        )
    if len(raw.ch_names) == 0:
        raise DataFileError(
            f"{path}: the file holds no signal channels (an annotation-only EDF such as a hypnogram?): it is not a "
            "recording; leave it out of the files to prepare (a hypnogram's stages reach a store through its card's "
            "events, beside the recording they score)"
        )
    if raw.n_times == 0:
        raise DataFileError(f"{path}: the recording holds no samples (truncated file?)")
    return sf


def _calibrate(raw, report, units, path, applied, out_warnings) -> None:
    """Re-type non-EEG channels, fix voltage units and gains, and mark uncalibrated channels bad."""
    from neurokit.io.headers import short_list

    _retype_non_eeg(raw, path)
    types = dict(zip(raw.ch_names, raw.get_channel_types()))
    if report.unit_scales:  # voltage units MNE's reader takes as volts (nV, uv, …)
        _set_gains(raw, report.unit_scales, path)
    other = {
        c: u
        for c, u in report.unknown_units.items()
        if types.get(c) == "eeg" and is_non_voltage_unit(u) and not (isinstance(units, dict) and c in units)
    }
    if other:  # a unit such as G, °C, %, bpm is no EEG signal's: an accelerometer, a thermometer, an oximeter…
        raw.set_channel_types({c: "misc" for c in other}, on_unit_change="ignore", verbose="error")
        types.update({c: "misc" for c in other})
        applied["non_eeg_by_unit"] = dict(other)
        out_warnings.append(
            f"channels {short_list(other)} have non-voltage physical units "
            f"{short_list(sorted(set(other.values())))}: read as non-EEG (misc) channels"
        )
    if report.unknown_units:
        assumed = _apply_units(raw, report.unknown_units, units, types, path)
        if assumed:
            applied["units_assumed"] = assumed
            if units is None:
                out_warnings.append(
                    f"channels {short_list(assumed)} have a blank or non-voltage physical unit "
                    f"({short_list(sorted({report.unknown_units[c] for c in assumed}))}); taken as µV, the usual EEG "
                    "unit. State the unit with units= (the card's reading: units)"
                )
    bads = [c for c in report.uncalibrated if c in raw.ch_names and types.get(c) == "eeg"]
    if bads:
        raw.info["bads"] = sorted(set(raw.info["bads"]) | set(bads), key=raw.ch_names.index)
        out_warnings.append(
            f"channels {short_list(bads)} are uncalibrated (physical minimum = maximum, or no valid range: no gain "
            "can be derived); marked bad, left out of re-referencing and of stores"
        )


#: Physical units (EDF/BDF ``physical dimension``, compared without case) that no EEG signal has: acceleration
#: (g, m/s²), temperature, percentages (SpO2), rates (bpm), pressure, resistance, light, angles, frequency, time
NON_VOLTAGE_UNITS = frozenset(
    u.lower()
    for u in (
        "g",
        "mg",
        "m/s^2",
        "m/s2",
        "m/s²",
        "°C",
        "degC",
        "deg C",
        "°F",
        "degF",
        "K",
        "%",
        "bpm",
        "/min",
        "1/min",
        "rpm",
        "mmHg",
        "cmH2O",
        "Pa",
        "kPa",
        "hPa",
        "Ohm",
        "kOhm",
        "MOhm",
        "Ω",
        "kΩ",
        "MΩ",
        "lux",
        "lx",
        "deg",
        "°",
        "rad",
        "Hz",
        "s",
        "ms",
        "l/min",
        "L/min",
        "l/s",
        "ml",
        "dB",
        "mA",
        "uA",
        "A",
        "T",
        "nT",
        "uT",
        "pT",
        "fT",
        "mol/l",
    )
)


def is_non_voltage_unit(unit: str) -> bool:
    """Whether an EDF/BDF physical dimension is a known non-voltage unit (:data:`NON_VOLTAGE_UNITS`): such a
    channel is no EEG channel. A blank or unknown unit is not (it may be a voltage written oddly).

    Parameters
    ----------
    unit : str
        The physical dimension as the header writes it.

    Returns
    -------
    bool

    Examples
    --------
    >>> is_non_voltage_unit("G"), is_non_voltage_unit("degC"), is_non_voltage_unit("uV"), is_non_voltage_unit("")
    (True, True, False, False)
    """
    return unit.strip().lower() in NON_VOLTAGE_UNITS


def _split_gaps(raw, report, sf, path, encoding, applied, out_warnings):
    """Cut an EDF+D/BDF+D recording with gaps into its contiguous pieces; returns ``(raw, segments)``."""
    segments = _segments(report.record_onsets, report.record_s, raw.n_times / sf, report.onset_tol)
    if len(segments) > 1:
        raw.load_data(verbose="error")
        raw, gap_notes = _join_segments(raw, segments, path, encoding)
        out_warnings.extend(gap_notes)
        if report.plus == "C":
            out_warnings.append(
                "the header says continuous (EDF+C/BDF+C) but the data records' time-stamps "
                "leave gaps; time follows the time-stamps"
            )
        applied["gaps_s"] = [[round(a[1] + a[2], 6), round(b[1], 6)] for a, b in zip(segments, segments[1:])]
    return raw, segments


def _pick_eeg(raw, path, mne) -> None:
    """Keep only EEG channels, in place; no EEG channel raises :class:`DataFileError`."""
    picks = mne.pick_types(raw.info, eeg=True, exclude=[])
    if len(picks) == 0:
        found = sorted(set(raw.get_channel_types()))
        raise DataFileError(
            f"{path}: no EEG channels (channel types found: {', '.join(found)}). "
            "Type the EEG channels in the file (MNE: raw.set_channel_types()), or keep every channel with "
            "read_eeg(..., eeg_only=False) (CLI: the card's reading: {eeg_only: false})."
        )
    if len(picks) < len(raw.ch_names):  # picking every channel would only cost MNE's info checks
        raw.pick(picks)


def _normalize_names(raw, dup_labels, path) -> ChannelRenames:
    """Rename channels to 10-05 labels in place; two labels that become one name raise :class:`DataFileError`."""
    from neurokit.io.headers import short_list

    renames = ChannelRenames()
    targets: dict[str, list[str]] = {}
    label = {}  # the file's own label of each channel (MNE numbers repeated labels: C3-0, C3-1)
    for ch in raw.ch_names:
        base = re.sub(r"-\d+$", "", ch)
        label[ch] = base if base in dup_labels else ch
        new, ok = normalize_ch_name(label[ch])
        if not ok:
            renames.nonstandard.append(ch)
            new = ch
        targets.setdefault(new, []).append(ch)
    clashes = {n: labs for n, labs in targets.items() if len(labs) > 1}
    if clashes:
        n, labs = next(iter(clashes.items()))
        labs = [label[lab] for lab in labs]
        old = [lab for lab in labs if OLD_TO_NEW.get(lab.strip().rstrip(". ").upper()) == n]
        why = (
            f" ({old[0]} is the old 10-20 name of {n})" if old else " (a repeated label)" if len(set(labs)) == 1 else ""
        )
        raise DataFileError(
            f"{path}: channels {short_list(labs)} all become {n} after name standardisation{why}: two signals "
            f"for one position{f' ({len(clashes)} such clashes)' if len(clashes) > 1 else ''}. Drop one of "
            "them from the file, or keep the file's own labels with read_eeg(..., normalize_names=False) (CLI: the card's "
            "reading: {normalize_names: false})"
        )
    mapping = {labs[0]: n for n, labs in targets.items() if labs[0] != n}
    for ch, new in mapping.items():
        bare = strip_affixes(ch)
        if OLD_TO_NEW.get(bare) == new:
            renames.aliases[new] = bare
    if mapping:
        raw.rename_channels(mapping)
    renames.renamed = mapping
    return renames


def _override_units(raw, units, path, applied) -> None:
    """``units`` (one unit, or label → unit) as the unit of every EEG channel it covers, whatever the header
    states (``override_units``)."""
    from neurokit._utils.errors import ConfigError
    from neurokit.io.headers import unit_scale

    if not units:
        raise ConfigError("override_units needs units= (V, mV, uV or nV)")
    types = dict(zip(raw.ch_names, raw.get_channel_types()))
    chosen = {
        ch: (units.get(ch) if isinstance(units, dict) else units)
        for ch in raw.ch_names
        if types.get(ch) == "eeg" and (not isinstance(units, dict) or ch in units)
    }
    scales = {}
    for ch, unit in chosen.items():
        scale = unit_scale(str(unit))
        if scale is None:
            raise ConfigError(f"units={unit!r} for channel {ch!r}: allowed values are V, mV, uV (µV), nV")
        scales[ch] = scale
    _set_gains(raw, scales, path)
    applied["units_overridden"] = {ch: str(u) for ch, u in chosen.items()}


def _apply_units(raw, unknown: dict[str, str], units, types, path) -> dict[str, str]:
    """Give channels with a blank or unknown unit the stated one (or µV); returns label → unit used.

    MNE reads such channels with gain 1 (as volts); the gain lives in the reader's per-channel ``units``
    array, which MNE's own ``units=`` argument rescales in the same way.
    """
    from neurokit._utils.errors import ConfigError
    from neurokit.io.headers import unit_scale

    used, scales = {}, {}
    for ch in unknown:
        if ch not in raw.ch_names or types.get(ch) != "eeg":
            continue
        stated = units.get(ch) if isinstance(units, dict) else units
        unit = stated or "uV"
        scale = unit_scale(unit)
        if scale is None:
            raise ConfigError(f"units={unit!r} for channel {ch!r}: allowed values are V, mV, uV (µV), nV")
        scales[ch] = scale
        used[ch] = unit
    _set_gains(raw, scales, path)
    return used


def _set_gains(raw, scales: dict[str, float], path) -> None:
    """Volts per stored unit for the given channels of a lazily read EDF/BDF ``raw`` (MNE keeps them in
    the reader's per-channel ``units`` array, which its own ``units=`` argument rescales the same way)."""
    extras = raw._raw_extras[0] if getattr(raw, "_raw_extras", None) else None
    gains = extras.get("units") if isinstance(extras, dict) else None
    for ch, scale in scales.items():
        if ch not in raw.ch_names:
            continue
        if gains is None or len(gains) != len(raw.ch_names) or raw.preload:
            raise DataFileError(f"{path}: cannot set the unit of channel {ch!r} for this reader")
        gains[raw.ch_names.index(ch)] = scale


def _stim_events(raw, path) -> dict | None:
    """Events of the first stim channel (MNE :func:`~mne.find_events`), onsets in s from the first sample."""
    import mne

    stims = [c for c, t in zip(raw.ch_names, raw.get_channel_types()) if t == "stim"]
    if not stims:
        return None
    try:
        # BioSemi BDF Status: bits 0-15 are the triggers, bits 16-23 the amplifier's state (CMS, battery…)
        mask = dict(mask=0xFFFF, mask_type="and") if Path(path).suffix.lower() == ".bdf" else {}
        ev = mne.find_events(raw, stim_channel=stims[0], shortest_event=1, initial_event=True, verbose="error", **mask)
    except Exception as exc:
        logger.warning("%s: could not read events from stim channel %s (%s)", path, stims[0], describe_exception(exc))
        return None
    if not len(ev):
        return None
    return {
        "channel": stims[0],
        "onsets": ((ev[:, 0] - raw.first_samp) / raw.info["sfreq"]).tolist(),
        "codes": ev[:, 2].astype(int).tolist(),
    }


def _segments(onsets: np.ndarray, record_s: float, n_s: float, tol: float) -> list[tuple[float, float, float]]:
    """Contiguous runs of EDF+ data records: ``(start in the stacked data, true start, duration)`` in s; a
    record starting more than ``tol`` s after the previous one's end opens a new run."""
    n = int(round(n_s / record_s))
    onsets = onsets[:n]
    breaks = np.flatnonzero(np.diff(onsets) - record_s > tol) + 1
    bounds = [0, *breaks.tolist(), len(onsets)]
    return [(a * record_s, float(onsets[a]), (b - a) * record_s) for a, b in zip(bounds, bounds[1:])]


def _join_segments(raw, segments, path, encoding):
    """Cut an EDF+D recording at its gaps and join the pieces with MNE's boundary annotations, placing
    every annotation at its true time inside a piece."""
    import mne

    from neurokit.io.headers import short_list

    anns = mne.read_annotations(path, encoding=encoding)
    onset, dur, desc, lost = [], [], [], []
    for o, d, t in zip(anns.onset, anns.duration, anns.description):
        for stacked, true, length in segments:
            if true <= o < true + length:
                onset.append(stacked + (o - true))
                dur.append(min(d, true + length - o))
                desc.append(t)
                break
        else:
            lost.append(f"{t!r} at {o:g} s")
    raw.set_annotations(mne.Annotations(onset, dur, desc, orig_time=raw.annotations.orig_time))
    sf = raw.info["sfreq"]
    pieces = [
        raw.copy().crop(s, s + length - 1.0 / sf, include_tmax=True, verbose="error") for s, _, length in segments
    ]
    joined = mne.concatenate_raws(pieces, verbose="error")
    gaps = ", ".join(f"{a[1] + a[2]:g}–{b[1]:g} s" for a, b in zip(segments, segments[1:]))
    notes = []
    if lost:
        notes.append(f"events {short_list(lost)} lie in a recording gap ({gaps}) and are skipped")
    return joined, notes


#: channel type → words that, as a whole word of a label (optionally numbered: ``ECG2``, ``Chin1``), mark a
#: non-EEG signal; a word inside another (``TEMP`` in ``TEMPORAL``, ``POS`` in ``POSITION``) does not
_NON_EEG = {
    "ecg": re.compile(r"(ECG|EKG)\d*", re.I),
    "eog": re.compile(r"(EOG|HEOG|VEOG|LOC|ROC)\d*", re.I),
    "emg": re.compile(r"(EMG|CHIN|LEG)\d*", re.I),
    "stim": re.compile(r"STATUS|STI ?\d*|TRIGGER|EVENT|MARKER|ANNOTATIONS", re.I),
    "resp": re.compile(r"(RESP|THOR|ABDO|AIRFLOW|THORAX|ABDOMEN)\d*", re.I),
    "misc": re.compile(r"(SPO2|SAO2|PULSE|PLETH|PHOTIC|IBI|BURSTS|SUPPR|TEMP|POS|LIGHT|HR|DC)\d*|X\d+", re.I),
}
_WORDS = re.compile(r"[^A-Za-z0-9]+")


def non_eeg_type(label: str) -> str | None:
    """The channel type a label names (``"ecg"``, ``"eog"``, ``"emg"``, ``"stim"``, ``"resp"``, ``"misc"``) when one
    of its whole words is a non-EEG signal's name; ``None`` for 10-05 labels and any other label.

    Parameters
    ----------
    label : str
        A channel label as the file writes it.

    Returns
    -------
    str or None

    Examples
    --------
    >>> non_eeg_type("EKG-L"), non_eeg_type("Resp chest"), non_eeg_type("Chin1-Chin2"), non_eeg_type("TEMPORAL1")
    ('ecg', 'resp', 'emg', None)
    """
    if normalize_ch_name(label)[1]:
        return None
    whole = label.strip()
    if _NON_EEG["stim"].fullmatch(whole):
        return "stim"
    words = [w for w in _WORDS.split(whole) if w]
    for kind, pat in _NON_EEG.items():
        if kind != "stim" and any(pat.fullmatch(w) for w in words):
            return kind
    return None


def _retype_non_eeg(raw, path=None) -> None:
    """EDF/GDF/BrainVision readers type every signal 'eeg'; fix the ones whose labels say otherwise (whole words:
    :func:`non_eeg_type`). A file that types its channels itself (FIF; EEGLAB or others whose channels include
    ECG/EOG/EMG… types) is trusted: an EEG channel it names ``pulse`` stays EEG."""
    types = raw.get_channel_types()
    own = str(path or "").lower().endswith((".fif", ".fif.gz"))
    if own or any(t not in ("eeg", "misc", "stim") for t in types):
        return
    change = {ch: k for ch in raw.ch_names if (k := non_eeg_type(ch))}
    if change:
        raw.set_channel_types(change, on_unit_change="ignore", verbose="error")


_SPLIT_NEUROMAG = re.compile(r"^(?P<first>.+)-(?P<n>\d+)(?P<ext>\.fif(?:\.gz)?)$", re.I)
_SPLIT_BIDS = re.compile(r"_split-(?P<n>\d+)_", re.I)


def fif_previous_part(path: str | Path) -> tuple[str, int] | None:
    """The part a FIF file continues, read from the file itself: ``(file name, part number)`` of the previous
    part (part 0 is the first part), or ``None`` when the file continues no other (a whole recording, a first
    part, not a FIF file, or unreadable).

    MNE writes into each later part of a split recording a reference block (``FIFFB_REF``) whose role is
    "previous file", before the first data buffer; this reads the tags up to there (a few kB).

    Parameters
    ----------
    path : str or Path
        A ``.fif`` file.

    Returns
    -------
    tuple of (str, int), or None

    Examples
    --------
    >>> fif_previous_part("rec_raw-2.fif")  # doctest: +SKIP
    ('rec_raw-1.fif', 1)
    """
    import struct

    from mne.io.constants import FIFF

    path = Path(path)
    if not path.name.lower().endswith((".fif", ".fif.gz")) or not path.is_file():
        return None
    import gzip

    opener = gzip.open if path.name.lower().endswith(".gz") else open
    role = name = num = None
    try:
        with opener(path, "rb") as fh:
            for _ in range(2000):  # the reference block comes before the data; never scan a whole file
                head = fh.read(16)
                if len(head) < 16:
                    break
                kind, _type, size, nxt = struct.unpack(">iiii", head)
                if kind in (FIFF.FIFF_DATA_BUFFER, FIFF.FIFF_DATA_SKIP) or size < 0 or size > 1 << 20:
                    break
                data = fh.read(size)
                if kind == FIFF.FIFF_REF_ROLE and len(data) >= 4:
                    role = struct.unpack(">i", data[:4])[0]
                    name = num = None
                elif kind == FIFF.FIFF_REF_FILE_NAME and role == FIFF.FIFFV_ROLE_PREV_FILE:
                    name = data.decode("utf-8", "replace").rstrip("\x00")
                elif kind == FIFF.FIFF_REF_FILE_NUM and role == FIFF.FIFFV_ROLE_PREV_FILE and len(data) >= 4:
                    num = struct.unpack(">i", data[:4])[0]
                elif kind == FIFF.FIFF_BLOCK_END and role == FIFF.FIFFV_ROLE_PREV_FILE:
                    break
                if nxt > 0:
                    fh.seek(nxt)
    except (OSError, EOFError, struct.error):
        return None
    if role != FIFF.FIFFV_ROLE_PREV_FILE:
        return None
    return Path(name).name if name else "", -1 if num is None else int(num)


def fif_split_first(path: str | Path, present=None) -> Path | None:
    """The first part of the split FIF recording that ``path`` continues, or ``None`` when ``path`` is no later part.

    MNE writes a FIF recording over 2 GB in parts and reads every part through the first, following the
    file's "next file" tag (:func:`mne.io.read_raw_fif`). Later parts are named ``<first stem>-1.fif``,
    ``-2.fif`` … or carry a BIDS ``split-`` entity above 1 (``sub-01_task-rest_split-02_eeg.fif``, always a
    later part). A Neuromag-style name is a later part when its first part is in ``present``; else the file
    itself decides (:func:`fif_previous_part`: a later part names the part before it), so that a recording
    called ``run-1.fif`` alone stays a recording and a continuation part alone is known as one.

    Parameters
    ----------
    path : str | Path
        A file name or path.
    present : collection of Path, optional
        The files listed beside it (for the Neuromag rule); default: what exists on disk.

    Returns
    -------
    Path | None
        The first part's path (it may be missing from disk), or ``None``.

    Examples
    --------
    >>> fif_split_first("rec_raw-1.fif", present={Path("rec_raw.fif")})
    PosixPath('rec_raw.fif')
    >>> fif_split_first("sub-01_task-rest_split-02_eeg.fif")
    PosixPath('sub-01_task-rest_split-01_eeg.fif')
    """
    path = Path(path)
    name = path.name
    if not name.lower().endswith((".fif", ".fif.gz")):
        return None
    m = _SPLIT_BIDS.search(name)
    if m:
        if int(m["n"]) <= 1:
            return None
        return path.with_name(f"{name[: m.start()]}_split-{'1'.zfill(len(m['n']))}_{name[m.end() :]}")
    m = _SPLIT_NEUROMAG.match(name)
    first = path.with_name(m["first"] + m["ext"]) if m else None
    if first is not None and (first in present if present is not None else first.exists()):
        return first
    prev = fif_previous_part(path)  # the file's own word: it continues another part
    if prev is None:
        return None
    prev_name, num = prev
    if not prev_name:
        return first or path.with_name("(its first part)")
    if num != 0 and (m := _SPLIT_NEUROMAG.match(prev_name)):  # the part before is a later part: name the first
        prev_name = m["first"] + m["ext"]
    return path.with_name(prev_name)


def drop_split_parts(paths) -> tuple[list[Path], dict[Path, Path]]:
    """``paths`` without the later parts of split FIF recordings (read once, through their first part).

    Returns ``(recordings, later)``: the paths to read as recordings, in order, and each later part dropped →
    its first part. See :func:`fif_split_first`.

    Parameters
    ----------
    paths : iterable of str or Path
        Recording files, FIF parts among them.

    Returns
    -------
    recordings : list of Path
        The paths to read, in the given order.
    later : dict of Path to Path
        Each later part left out → the first part that reads it.

    Raises
    ------
    DataFileError
        A later part whose first part is not among ``paths`` (a part alone is a piece of a recording, and MNE
        would read the parts after it again through it): the message names the parts and the missing first part.
    """
    paths = [Path(p) for p in paths]
    present = set(paths)
    keep, later = [], {}
    orphans: dict[Path, list[Path]] = {}
    for p in paths:
        first = fif_split_first(p, present)
        if first is None:
            keep.append(p)
            continue
        later[p] = first
        if first not in present:
            orphans.setdefault(first, []).append(p)
    if orphans:
        from neurokit.io.headers import short_list

        first, parts = next(iter(orphans.items()))
        more = f" (and the parts of {len(orphans) - 1} other split recording(s))" if len(orphans) > 1 else ""
        raise DataFileError(
            f"{short_list([str(q) for q in parts])}: later part(s) of the split FIF recording whose first part "
            f"{first.name} is not among the files{more}; give the first part {first} (MNE reads every part "
            "through it), or leave the parts out"
        )
    return keep, later


def check_finite(data: np.ndarray, ch_names: list[str], path) -> None:
    """Raise :class:`DataFileError` naming the channels that hold NaN or inf samples.

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times)
        Samples (any unit).
    ch_names : list of str
        The channels' names, one per row.
    path : str or Path
        The file, named in the message.

    Raises
    ------
    DataFileError
        Any NaN or inf sample.

    Examples
    --------
    >>> check_finite(np.zeros((2, 3)), ["C3", "C4"], "a.edf")
    >>> check_finite(np.array([[0.0, np.nan]]), ["C3"], "a.edf")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    neurokit._utils.errors.DataFileError: a.edf: non-finite samples (NaN/inf) in channels ['C3']. ...
    """
    from neurokit.io.headers import short_list

    bad = ~np.isfinite(data).all(axis=-1)
    if bad.any():
        names = [ch_names[i] for i in np.flatnonzero(bad)]
        raise DataFileError(
            f"{path}: non-finite samples (NaN/inf) in channels {short_list(names)}. "
            "Leave them out: list the channels to keep with channels= (or the card's recipe channels); in a BIDS "
            "dataset, mark them bad in its channels.tsv to have them interpolated"
        )


def raw_from_uv(
    data_uv: np.ndarray,
    ch_names: list[str],
    sfreq: float,
    source: str,
    types=None,
    annotations: Sequence[tuple[float, float, str]] = (),
):
    """An :class:`mne.io.RawArray` in volts from ``(n_channels, n_times)`` µV, with 10-05 channel names where the
    labels have them and the labelled annotations ``(onset_s, duration_s, description)``; the dataset readers'
    common last step.

    Parameters
    ----------
    data_uv : ndarray, shape (n_channels, n_times)
        Samples in µV.
    ch_names : list of str
        One label per row (renamed to 10-05 names where they have one).
    sfreq : float
        Sampling rate in Hz.
    source : str
        The file (or file and member) the data come from, recorded in the notes and named in errors.
    types : str or list of str or None
        MNE channel types; ``None``: all ``"eeg"``.
    annotations : sequence of (float, float, str)
        ``(onset_s, duration_s, description)`` from the first sample.

    Returns
    -------
    mne.io.RawArray
        In volts, with its :class:`~neurokit.io.notes.RawNotes` (source, renames).

    Examples
    --------
    >>> raw = raw_from_uv(np.ones((2, 400)), ["C3", "C4"], 200.0, "x", annotations=[(0.0, 2.0, "rest")])
    >>> float(raw.get_data()[0, 0]), str(raw.annotations.description[0])
    (1e-06, 'rest')

    Raises
    ------
    DataFileError
        NaN/inf samples (naming ``source``).
    """
    import mne

    renames = ChannelRenames()
    names = []
    for ch in ch_names:
        new, ok = normalize_ch_name(ch)
        if not ok:
            renames.nonstandard.append(ch)
            new = ch
        if new != ch:
            renames.renamed[ch] = new
        names.append(new)
    data = np.asarray(data_uv, dtype=np.float64) * 1e-6
    if not np.isfinite(data).all():
        raise DataFileError(f"{source}: non-finite samples (NaN/inf)")
    info = mne.create_info(names, sfreq, types or "eeg", verbose="error")
    raw = mne.io.RawArray(data, info, verbose="error")
    if annotations:
        on, du, de = zip(*annotations)
        raw.set_annotations(mne.Annotations(list(on), list(du), list(de)))
    if any(ok for ok in (n not in renames.nonstandard for n in ch_names)):
        from neurokit.geometry.channels import montage_1005

        raw.set_montage(montage_1005(), on_missing="ignore", verbose="error")
    set_raw_notes(raw, renames=renames, source=source)
    return raw
