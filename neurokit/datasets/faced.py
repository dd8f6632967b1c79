"""FACED (Finer-grained Affective Computing EEG Dataset; Chen et al. 2023), as the CBraMod release reads it.

FACED's ``Processed_data`` folder holds one Python pickle per subject, ``sub000.pkl`` … ``sub122.pkl``: a numpy
array ``(28 video clips, 32 channels, 7500 samples)``, the last 30 s of each clip at 250 Hz, in µV. The CBraMod
release (github.com/wjq-learning/CBraMod @ b9e9610, ``preprocessing/preprocessing_faced.py``) resamples each
clip's samples by FFT (:func:`scipy.signal.resample`) to 6,000 (30 s at 200 Hz) and cuts three 10-s samples from
each; its 28-entry list maps the clips to FACED's nine emotions (:data:`VIDEO_EMOTION`).

:func:`read_faced` does that resampling clip by clip (resampling a whole clip is not the same as resampling its
three windows one by one, so it cannot be left to the recipe's ``resample_windows``; a recipe step resampling each
clip would work on volts, not the file's µV, and change a few stored float32 values in 10^8) and returns the 28 clips one after another at
200 Hz, each annotated ``faced/<emotion>`` over its 30 s; the card's recipe tiles them into 10-s windows.

Pickles can run code when loaded. :func:`safe_unpickle` reads them with an unpickler that admits numpy arrays and
the few numpy functions and types that rebuild them, and refuses any other class or function before it is called.
"""

from __future__ import annotations

import io
import pickle
import re
import warnings
from pathlib import Path

import numpy as np

from neurokit._utils.errors import DataFileError

#: FACED's nine emotion categories, in the order of the release's labels 0-8
EMOTIONS = ("anger", "disgust", "fear", "sadness", "neutral", "amusement", "inspiration", "joy", "tenderness")
#: the emotion of each of the 28 clips (array axis 0), as the release's label list gives it: three clips for
#: each emotion except neutral, which has four (clips 12-15)
VIDEO_EMOTION = tuple(
    EMOTIONS[k] for k in (0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 6, 6, 6, 7, 7, 7, 8, 8, 8)
)
#: the 32 rows of a FACED array. The release never names them (it feeds the rows in file order); these are the
#: electrode labels FACED's documentation gives for its processed data (A1/A2: the mastoids)
FACED_CHANNELS = (
    "Fp1", "Fp2", "Fz", "F3", "F4", "F7", "F8", "FC1", "FC2", "FC5", "FC6", "Cz", "C3", "C4", "T7", "T8",
    "A1", "A2", "CP1", "CP2", "CP5", "CP6", "Pz", "P3", "P4", "P7", "P8", "PO3", "PO4", "Oz", "O1", "O2",
)  # fmt: skip
#: FACED's rate (Hz) and clip length (samples) in ``Processed_data``
FACED_SFREQ = 250.0
FACED_SAMPLES = 7500
#: what the release resamples each clip to: 30 s at 200 Hz
RELEASE_SAMPLES = 6000
RELEASE_SFREQ = 200.0

_NAME = re.compile(r"sub(\d+)")


# ------------------------------------------------------------------------------------------------ safe pickles
def _admitted() -> dict[tuple[str, str], object]:
    """(module, name) → object: what a pickle of numpy arrays needs, under numpy 1 (``numpy.core``) and numpy 2
    (``numpy._core``) names alike."""
    import codecs

    try:  # numpy >= 2
        from numpy._core import multiarray, numeric
    except ImportError:  # numpy 1.x
        from numpy.core import multiarray, numeric  # type: ignore[no-redef]
    _reconstruct = multiarray._reconstruct
    _frombuffer = numeric._frombuffer  # type: ignore[attr-defined]  # private in the stubs, there at run time

    out: dict[tuple[str, str], object] = {("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype}
    for core in ("numpy.core", "numpy._core"):
        out[(f"{core}.multiarray", "_reconstruct")] = _reconstruct  # protocols 0-4: ndarray.__reduce__
        out[(f"{core}.numeric", "_frombuffer")] = _frombuffer  # protocol 5: an array from its bytes
    # protocols 0-2 write bytes as codecs.encode(text, "latin1"): builds a bytes object, nothing else
    out[("_codecs", "encode")] = codecs.encode
    return out


class _ArrayUnpickler(pickle._Unpickler):  # the Python unpickler: its BUILD can be checked before it runs
    """An unpickler whose only globals are those of :func:`_admitted`, and which sets state (``BUILD``) on numpy
    arrays and dtypes only: a pickle may not set attributes on a function it is allowed to name."""

    dispatch = dict(pickle._Unpickler.dispatch)  # type: ignore[attr-defined]

    def _load_build(self):
        inst = self.stack[-2] if len(self.stack) > 1 else None
        if not isinstance(inst, (np.ndarray, np.dtype)):
            raise DataFileError(
                f"{self._source}: the pickle sets the state of {type(inst).__name__} "
                f"{getattr(inst, '__qualname__', '')!s}, which is not a numpy array; refused (nothing was run)"
            )
        pickle._Unpickler.load_build(self)  # type: ignore[attr-defined]

    dispatch[pickle.BUILD[0]] = _load_build  # type: ignore[assignment]

    def __init__(self, fh, source: str):
        super().__init__(fh)
        self._source = source
        self._ok = _admitted()

    def find_class(self, module: str, name: str):
        obj = self._ok.get((module, name))
        if obj is None:
            raise DataFileError(
                f"{self._source}: the pickle asks for {module}.{name}, which is not a numpy array; refused "
                "(only numpy arrays are read from pickles, and nothing in this one was run)"
            )
        return obj

    def persistent_load(self, pid):
        raise DataFileError(f"{self._source}: the pickle refers to a persistent object {pid!r}; refused")


def safe_unpickle(path: str | Path):
    """The object a pickle file holds, when it is built of numpy arrays (and lists, tuples, dicts, numbers and
    strings around them) only.

    Any other class or function the pickle names (``os.system``, ``collections.OrderedDict``, a class of its own…)
    is refused when the pickle asks for it, before anything is called.

    Parameters
    ----------
    path : str or Path
        The pickle file.

    Returns
    -------
    object
        What the pickle holds: numpy arrays, possibly inside lists, tuples and dicts.

    Raises
    ------
    DataFileError
        A missing or unreadable file, a file that is not a pickle, or a pickle that asks for any other class or
        function (the message names the file and the class).

    Examples
    --------
    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> p = os.path.join(d, "a.pkl")
    >>> with open(p, "wb") as fh:
    ...     pickle.dump(np.arange(3.0), fh)
    >>> safe_unpickle(p)
    array([0., 1., 2.])
    >>> from collections import OrderedDict
    >>> with open(p, "wb") as fh:
    ...     pickle.dump(OrderedDict(a=1), fh)
    >>> safe_unpickle(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    neurokit._utils.errors.DataFileError: ...a.pkl: the pickle asks for collections.OrderedDict, which is not a numpy array; ...
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read the file ({exc})") from exc
    try:
        return _ArrayUnpickler(io.BytesIO(data), str(path)).load()
    except DataFileError:
        raise
    except Exception as exc:  # a truncated or foreign file: pickle's own errors, or numpy's on bad array data
        raise DataFileError(f"{path}: not a readable pickle of numpy arrays ({type(exc).__name__}: {exc})") from exc


# ------------------------------------------------------------------------------------------------ FACED
def faced_entries(base: Path) -> list:
    """Every ``sub<NNN>.pkl`` under ``base`` (sorted by subject number), subject ``sub<NNN>`` as the file names it.

    Parameters
    ----------
    base : Path
        The dataset's folder (the data root joined with the layout's ``subdir``).

    Returns
    -------
    list of FileEntry
        One :class:`~neurokit.io.entry.FileEntry` per recording, naming this reader.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> for n in ("sub010.pkl", "sub002.pkl", "notes.pkl"):
    ...     _ = (d / n).write_bytes(b"")
    >>> [e.subject for e in faced_entries(d)]
    ['sub002', 'sub010']
    """
    from neurokit.io.entry import FileEntry

    found = []
    for p in Path(base).rglob("*.pkl"):
        m = _NAME.fullmatch(p.stem)
        if m:
            found.append((int(m.group(1)), p))
    return [FileEntry(path=p, subject=p.stem, run=p.stem, reader="faced") for _, p in sorted(found)]


def read_faced(path: str | Path):
    """One FACED subject (``sub<NNN>.pkl``): the 28 clips resampled as the release does (each clip's samples to
    6,000 by :func:`scipy.signal.resample`, i.e. 30 s at 200 Hz), one after another, 32 channels, in volts; clip
    ``i`` annotated ``faced/<emotion>`` (:data:`VIDEO_EMOTION`) from ``30 i`` s for 30 s.

    Parameters
    ----------
    path : str or Path
        One subject's pickle ``sub<NNN>.pkl`` from FACED's ``Processed_data``.

    Returns
    -------
    mne.io.RawArray
        32 channels (:data:`FACED_CHANNELS`) in volts at 200 Hz, 28 × 30 s, one annotation per clip.

    Warns
    -----
    RuntimeWarning
        Clips of another length than 7,500 samples (still resampled to 6,000, as the release does); a clip holding
        NaN/inf samples (named with its channels): that clip is left out, the others kept.

    Raises
    ------
    DataFileError
        The pickle holds anything but numpy arrays (:func:`safe_unpickle`), or not one real-valued array of shape
        ``(28, 32, n)``, or NaN/inf samples in every clip (a dead channel, named).
    """
    from scipy.signal import resample

    from neurokit.io.eeg import raw_from_uv

    path = Path(path)
    arr = safe_unpickle(path)
    if not isinstance(arr, np.ndarray):
        raise DataFileError(f"{path}: holds a {type(arr).__name__}; a FACED file holds one array (28, 32, 7500)")
    if arr.dtype.kind not in "fiu" or arr.ndim != 3 or arr.shape[:2] != (28, 32) or arr.shape[2] < 2:
        raise DataFileError(
            f"{path}: an array of shape {arr.shape} and dtype {arr.dtype}; a FACED file holds real numbers shaped "
            "(28 clips, 32 channels, 7500 samples at 250 Hz)"
        )
    if arr.shape[2] != FACED_SAMPLES:
        warnings.warn(
            f"{path}: clips of {arr.shape[2]} samples, not FACED's {FACED_SAMPLES} (30 s at 250 Hz); each is "
            f"resampled to {RELEASE_SAMPLES} samples and read as 30 s, as the release does",
            RuntimeWarning,
            stacklevel=2,
        )
    from neurokit.io.notes import raw_notes, set_raw_notes

    arr = np.asarray(arr, dtype=np.float64)
    finite = np.isfinite(arr).all(axis=2)  # (clip, channel)
    bad = [int(i) for i in np.flatnonzero(~finite.all(axis=1))]
    if len(bad) == len(arr):
        chans = [FACED_CHANNELS[c] for c in np.flatnonzero(~finite.all(axis=0))]
        raise DataFileError(
            f"{path}: every clip holds NaN/inf samples (in {', '.join(chans[:8])}): a dead channel? Leave it out with "
            "channels= (the channels to keep), or leave the file out with skip_bad=True"
        )
    left = []
    for i in bad:  # one bad clip costs that clip, not the subject (each clip is resampled alone)
        chans = [FACED_CHANNELS[c] for c in np.flatnonzero(~finite[i])]
        left.append(f"clip {i + 1} ({', '.join(chans)})")
        warnings.warn(
            f"{path}: clip {i + 1} holds NaN/inf samples in {', '.join(chans)}; that clip is left out (its 30 s are "
            f"zeros with no label), the other {28 - len(bad)} clips are kept",
            RuntimeWarning,
            stacklevel=2,
        )
    if bad:
        arr = arr.copy()
        arr[bad] = 0.0
    clips = resample(arr, RELEASE_SAMPLES, axis=2)  # (28, 32, 6000) µV
    data_uv = clips.transpose(1, 0, 2).reshape(32, -1)  # the clips one after another
    dur = RELEASE_SAMPLES / RELEASE_SFREQ
    ann = [(i * dur, dur, f"faced/{emo}") for i, emo in enumerate(VIDEO_EMOTION) if i not in bad]
    raw = raw_from_uv(data_uv, list(FACED_CHANNELS), RELEASE_SFREQ, str(path), annotations=ann)
    if left:  # counted in the store: the recording's source entry records it
        set_raw_notes(raw, applied={**raw_notes(raw).applied, "clips_left_out_nonfinite": left})
    return raw
