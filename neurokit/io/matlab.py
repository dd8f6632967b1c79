"""MATLAB ``.mat`` files: v4–v7 through :func:`scipy.io.loadmat`, v7.3 (HDF5) through h5py, read into one shape.

The caller names the variables it needs and, for arrays, the meaning of each axis as the file stores it; what comes
back is the same for both formats: a struct is a ``dict`` of its fields, a cell array a ``list`` (a struct array a
``list`` of ``dict``), a char array a ``str``, a numeric array an ``ndarray`` in MATLAB's axis order with singleton
axes removed (as scipy's ``simplify_cells``; h5py's transposed storage is put back). The file's own shape of each
such array is remembered: :func:`mat_array` gives back the axes a variable is declared to have whatever their length
(a session of one trial keeps its trial axis). Every fault — an unreadable file,
a missing variable or field, an array of the wrong number of axes — is one :class:`DataFileError` line naming the
file and the problem.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from neurokit._utils.errors import DataFileError

__all__ = ["load_mat", "mat_array", "mat_field", "read_mat"]


#: the remedy of a file that is not as its dataset publishes it
AS_PUBLISHED = "download the file again, or move it out of the data root if it is not one of the dataset's"


#: numeric arrays :func:`load_mat` returned → (a weak reference, the shape the file gives them in MATLAB's order,
#: before singleton axes were removed): :func:`mat_array` restores a declared axis of length 1 from it
_FILE_SHAPES: dict[int, tuple[weakref.ref, tuple[int, ...]]] = {}


def _remember_shape(arr: np.ndarray, shape: tuple[int, ...]) -> None:
    key = id(arr)

    def forget(ref, key=key) -> None:
        if _FILE_SHAPES.get(key, (None,))[0] is ref:
            del _FILE_SHAPES[key]

    _FILE_SHAPES[key] = (weakref.ref(arr, forget), tuple(int(n) for n in shape))


def _file_shape(value: Any) -> tuple[int, ...] | None:
    """The shape the file gave ``value`` before its singleton axes were removed (None: not known)."""
    got = _FILE_SHAPES.get(id(value))
    return got[1] if got is not None and got[0]() is value else None


def _squeezed(arr: np.ndarray) -> Any:
    """``arr`` with its singleton axes removed as scipy's ``squeeze_me`` does (an empty array: a 1-D empty one; one
    number, string or struct: itself), a numeric result remembering the file's shape."""
    if not arr.size:
        return np.array([], dtype=arr.dtype)
    out = np.squeeze(arr)
    if not out.shape and out.dtype.kind in "biufcOUS":  # one number, string or struct: itself
        return out.item()
    if out.dtype.kind in "biufc":
        _remember_shape(out, arr.shape)
    return out


def _v5_value(value: Any) -> Any:
    """One value of a v5 file read without squeezing (``loadmat(squeeze_me=False, struct_as_record=False)``),
    squeezed bottom-up as ``squeeze_me`` reads it (struct fields and cell elements first)."""
    from scipy.io.matlab import mat_struct

    if isinstance(value, mat_struct):
        for name in value._fieldnames:
            setattr(value, name, _v5_value(getattr(value, name)))
        return value
    if type(value) is not np.ndarray:  # sparse matrices, MATLAB objects and functions: as scipy reads them
        return value
    if value.dtype == object:
        for i in np.ndindex(value.shape):
            value[i] = _v5_value(value[i])
    return _squeezed(value)


def _simplified(value: Any) -> Any:
    """A squeezed v5 value with its structs as dicts and struct arrays as lists (scipy's ``simplify_cells``)."""
    from scipy.io.matlab import mat_struct

    def has_struct(v) -> bool:
        return isinstance(v, np.ndarray) and v.size > 0 and v.ndim > 0 and isinstance(v[0], mat_struct)

    if isinstance(value, mat_struct):
        return {name: _simplified(getattr(value, name)) for name in value._fieldnames}
    if has_struct(value):
        return [_simplified(v) if isinstance(v, mat_struct) or has_struct(v) else v for v in value]
    return value


def _h5_value(f, obj) -> Any:
    """One HDF5 object of a MATLAB v7.3 file as :func:`load_mat` returns it."""
    import h5py

    if isinstance(obj, h5py.Group):
        return {k: _h5_value(f, obj[k]) for k in obj.keys() if not k.startswith("#")}
    cls = obj.attrs.get("MATLAB_class", b"")
    cls = cls.decode() if isinstance(cls, bytes) else str(cls)
    if obj.attrs.get("MATLAB_empty", 0):
        return np.zeros(0)
    data = obj[()]
    if obj.dtype == h5py.ref_dtype or cls == "cell":
        refs = np.asarray(data).T  # h5py sees MATLAB's column-major dims reversed
        return [_h5_value(f, f[r]) for r in refs.ravel(order="F")]
    arr = np.asarray(data).T
    if cls == "char":
        return "".join(chr(c) for c in arr.ravel(order="F"))
    out = np.squeeze(arr)
    if out.ndim == 0:
        return out.item()
    if out.dtype.kind in "biufc":
        _remember_shape(out, arr.shape)
    return out


def load_mat(path: str | Path, names: Sequence[str]) -> dict[str, Any]:
    """The variables ``names`` of the MATLAB file ``path`` (v5 or v7.3), each as described in the module.

    Parameters
    ----------
    path : str or Path
        A ``.mat`` file.
    names : sequence of str
        The variables to read.

    Returns
    -------
    dict of str to object
        Name → value: arrays (singleton axes removed), structs as dicts, cells as lists.

    Raises
    ------
    DataFileError
        No such file, not a MATLAB file (or a damaged one), or a variable of ``names`` not in it.

    Examples
    --------
    >>> import tempfile, scipy.io
    >>> p = Path(tempfile.mkdtemp()) / "a.mat"
    >>> scipy.io.savemat(p, {"x": np.zeros((3, 2)), "s": {"fs": 250.0}})
    >>> v = load_mat(p, ["x", "s"])
    >>> v["x"].shape, v["s"]["fs"]
    ((3, 2), 250.0)
    >>> load_mat(p, ["data"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    neurokit._utils.errors.DataFileError: ...a.mat: no variable 'data' (it holds: s, x); download the file again, ...
    """
    path = Path(path)
    if not path.is_file():
        raise DataFileError(f"{path}: no such file")
    names = list(names)
    try:
        import h5py

        hdf5 = h5py.is_hdf5(path)
    except ImportError:  # pragma: no cover - h5py is a dependency
        hdf5 = False
    try:
        if hdf5:
            import h5py

            with h5py.File(path, "r") as f:
                held = sorted(k for k in f.keys() if not k.startswith("#"))
                missing = [n for n in names if n not in held]
                if missing:
                    raise DataFileError(
                        f"{path}: no variable {missing[0]!r} (it holds: {', '.join(held)}); {AS_PUBLISHED}"
                    )
                return {n: _h5_value(f, f[n]) for n in names}
        import scipy.io

        held = sorted(n for n, *_ in scipy.io.whosmat(path))
        missing = [n for n in names if n not in held]
        if missing:
            raise DataFileError(f"{path}: no variable {missing[0]!r} (it holds: {', '.join(held)}); {AS_PUBLISHED}")
        # read unsqueezed, then squeezed here as simplify_cells does, each numeric array remembering its shape
        got = scipy.io.loadmat(path, variable_names=names, squeeze_me=False, struct_as_record=False)
        return {n: _simplified(_v5_value(got[n])) for n in names}
    except DataFileError:
        raise
    except Exception as exc:  # scipy/h5py raise many kinds on a damaged or foreign file
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise DataFileError(f"{path}: not a readable MATLAB .mat file ({why}); {AS_PUBLISHED}") from None


def mat_field(value: Any, name: str, *, source: str | Path, what: str = "struct") -> Any:
    """Field ``name`` of a struct read by :func:`load_mat`; a :class:`DataFileError` naming ``source`` and ``what``
    when ``value`` is not a struct or lacks the field.

    Parameters
    ----------
    value : object
        A struct as :func:`load_mat` reads it (a dict).
    name : str
        The field.
    source : str or Path
        The file, named in the message.
    what : str
        The struct's name in the file (``data{2}``), named in the message.

    Returns
    -------
    object
        The field's value.

    Raises
    ------
    DataFileError
        ``value`` is not a struct, or has no field ``name``.

    Examples
    --------
    >>> mat_field({"fs": 250}, "fs", source="a.mat")
    250
    """
    if not isinstance(value, Mapping):
        raise DataFileError(f"{source}: {what} is not a MATLAB struct ({type(value).__name__}); {AS_PUBLISHED}")
    if name not in value:
        raise DataFileError(
            f"{source}: {what} has no field {name!r} (it has: {', '.join(sorted(value))}); {AS_PUBLISHED}"
        )
    return value[name]


def mat_array(
    value: Any,
    axes: Sequence[str],
    *,
    source: str | Path,
    what: str,
    want: Sequence[str] | None = None,
    dtype=np.float64,
) -> np.ndarray:
    """``value`` as an array with one axis per name of ``axes`` (the file's order), transposed to ``want``.

    A scalar counts as one element of a one-axis array (:func:`load_mat` removes singleton axes, so a 1 × 1 list of
    trials is a scalar); an empty value gives an empty array of ``len(axes)`` axes. An array :func:`load_mat` read
    gets back the axes of length 1 it was declared to have (a file of one trial, ``1 × 32 × 1000``, keeps its trial
    axis; MATLAB drops trailing axes of length 1, so ``1000 × 64 × 1`` is stored ``1000 × 64``: they are added back).

    Parameters
    ----------
    value : object
        A variable or field read by :func:`load_mat`.
    axes : sequence of str
        Names of its axes in the file's order (``("time", "channel")``).
    source : str or Path
        The file, named in the message.
    what : str
        The variable or field, named in the message.
    want : sequence of str or None
        The same names in the order wanted; ``None`` keeps the file's.
    dtype : numpy dtype
        Of the returned array.

    Returns
    -------
    ndarray
        ``len(axes)`` axes, ordered as ``want``.

    Raises
    ------
    DataFileError
        ``value`` is not numeric or has another number of axes, naming ``source``, ``what`` and its shape.

    Examples
    --------
    >>> mat_array(np.zeros((5, 3)), ("time", "channel"), source="f.mat", what="X", want=("channel", "time")).shape
    (3, 5)
    >>> mat_array(np.zeros(4), ("time", "channel"), source="f.mat", what="X")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    neurokit._utils.errors.DataFileError: f.mat: X has shape (4,); expected 2 axes (time, channel); download the ...
    """
    axes = list(axes)
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        raise DataFileError(
            f"{source}: {what} is not a numeric array ({type(value).__name__}); {AS_PUBLISHED}"
        ) from None
    if arr.size == 0:
        arr = arr.reshape((0,) * len(axes))
    elif arr.ndim == 0 and len(axes) == 1:
        arr = arr.reshape(1)
    elif arr.ndim != len(axes):
        shape = _declared_shape(_file_shape(value), len(axes))
        if shape is not None and int(np.prod(shape)) == arr.size:
            arr = arr.reshape(shape)
    if arr.ndim != len(axes):
        raise DataFileError(
            f"{source}: {what} has shape {arr.shape}; expected {len(axes)} axes ({', '.join(axes)}); {AS_PUBLISHED}"
        )
    if want is not None:
        arr = arr.transpose([axes.index(a) for a in want])
    return arr


def _declared_shape(shape: tuple[int, ...] | None, n_axes: int) -> tuple[int, ...] | None:
    """A file's shape (MATLAB order) given ``n_axes`` axes: the trailing axes of length 1 MATLAB drops added back,
    or axes of length 1 removed from the first on (a ``1 × n`` row of labels is ``n`` labels); None when it cannot."""
    if shape is None:
        return None
    shape = tuple(shape) + (1,) * max(0, n_axes - len(shape))
    while len(shape) > n_axes and 1 in shape:
        k = shape.index(1)
        shape = shape[:k] + shape[k + 1 :]
    return shape if len(shape) == n_axes else None


def read_mat(path: str | Path, variables: Mapping[str, Sequence[str] | None]) -> dict[str, Any]:
    """The variables of a MATLAB file named by ``variables``: name → the file's axis names (an array, checked by
    :func:`mat_array`), or ``None`` (a struct or cell, returned as :func:`load_mat` reads it).

    Parameters
    ----------
    path : str or Path
        A ``.mat`` file.
    variables : mapping of str to sequence of str, or None
        Variable name → its axis names in the file's order, or ``None`` for a struct or cell.

    Returns
    -------
    dict of str to object

    Raises
    ------
    DataFileError
        As :func:`load_mat` and :func:`mat_array`.

    Examples
    --------
    >>> import tempfile, scipy.io
    >>> p = Path(tempfile.mkdtemp()) / "b.mat"
    >>> scipy.io.savemat(p, {"eeg": np.ones((62, 1000)), "info": {"fs": 200}})
    >>> v = read_mat(p, {"eeg": ("channel", "time"), "info": None})
    >>> v["eeg"].shape, v["info"]["fs"]
    ((62, 1000), 200)
    """
    got = load_mat(path, list(variables))
    return {
        n: got[n] if axes is None else mat_array(got[n], axes, source=path, what=f"variable {n!r}")
        for n, axes in variables.items()
    }
