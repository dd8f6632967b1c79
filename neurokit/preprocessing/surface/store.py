"""Surface fMRI files → one HDF5 patch store (:class:`~neurokit.store.patch_store.PatchStoreWriter`).

One sample is one tubelet ``(T, n_patches, V)`` of one hemisphere on the ico6 template. The store keeps every
frame once, on the template's vertices (the frame layout of :class:`~neurokit.store.patch_store.PatchStoreWriter`),
and tubelets are cut into patches when read, so overlapping tubelets (``stride < tubelet``) cost no extra
bytes. Files are processed one hemisphere at a time and ``chunk`` frames at a time (memory bounded by one
hemisphere's data, not the run's patch tensors). Per-sample meta
columns: ``subject``, ``session``, ``run``, ``hemi``; ``onset`` is the tubelet start in seconds. Store attrs:
``modality="surface"``, ``tr`` (s; NaN when no file states it, and then
``onset_unit`` is ``"frames"``), ``hemispheres``, ``mesh`` (source mesh), ``template`` (``"ico6"``),
``grid`` (``"ico6/ico2"``), ``n_patches``, ``vertices_per_patch``, ``tubelet``, ``recipe``, ``card`` and
``sources`` (path + SHA-256 of every file read).
"""

from __future__ import annotations

import dataclasses
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from neurokit._utils.errors import ConfigError, DataFileError
from neurokit._utils.hashing import file_sha256
from neurokit.cards.recipes import SurfaceRecipe
from neurokit.geometry.patches import n_patches, patch_table, vertices_per_patch
from neurokit.store.patch_store import PatchStoreWriter, StoreMeta
from neurokit.io.surface import iter_cifti_hemispheres, normalize_hemi, read_surface
from neurokit.preprocessing.duplicates import DuplicateRecordingError, SignalDuplicates, signal_fingerprint, stopped_by
from neurokit.preprocessing.surface.patching import to_template, zscore_frames
from neurokit.preprocessing.surface.resample import load_sphere

logger = logging.getLogger("neurokit")


@dataclass
class SurfaceRun:
    """One input file of a surface store and who/what it is.

    Attributes
    ----------
    path : Path
        The data file (CIFTI, GIFTI, MGH…).
    subject, session, run : str
        Who and which run it is (``""`` when unknown).
    hemi : {"L", "R"} or None
        One hemisphere, or None for every hemisphere in the file (both for a CIFTI dtseries; the one named by
        the file for GIFTI/MGH).
    label : int, float or None
        Class index or regression target for every sample of the run (None: unlabelled, stored as -1 / NaN).
    frames : (int, int) or None
        ``(start, stop)`` frame range to use (e.g. one movie clip, or its first half); default all.

    Raises
    ------
    DataFileError
        A frame range without ``0 <= start < stop``.

    Examples
    --------
    >>> SurfaceRun("sub-01_bold.dtseries.nii", subject="01", frames=(0, 100)).frames
    (0, 100)
    """

    path: Path
    subject: str = ""
    session: str = ""
    run: str = ""
    hemi: str | None = None
    label: float | int | None = None
    frames: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if self.frames is not None:
            lo, hi = (int(f) for f in self.frames)
            if not 0 <= lo < hi:
                raise DataFileError(f"{self.path}: frame range {self.frames} must satisfy 0 <= start < stop")
            self.frames = (lo, hi)
        if self.hemi is not None:
            self.hemi = normalize_hemi(self.hemi)


def _hemispheres(run: SurfaceRun, mesh: str | None = None):
    """Yield ``(hemi, SurfaceData)`` of ``run``, one hemisphere read at a time."""
    name = run.path.name.lower()
    if run.hemi is None and name.endswith(".nii"):
        pairs = iter_cifti_hemispheres(run.path, mesh=mesh)
    else:
        pairs = ((run.hemi, read_surface(run.path, run.hemi, mesh=mesh)) for _ in (0,))
    for _, sd in pairs:
        if run.frames is not None:
            lo, hi = run.frames
            if hi > sd.n_frames:
                raise DataFileError(f"{run.path}: frame range {run.frames} beyond the file's {sd.n_frames} frames")
            sd.data = sd.data[:, lo:hi]
        yield sd.hemi, sd
        del sd  # before the next hemisphere is read


@dataclass(frozen=True)
class SurfaceStoreOptions:
    """How :func:`write_surface_store` writes a surface store.

    Attributes
    ----------
    spheres : dict | None
        ``{"L": path, "R": path}`` registered spheres of the data's mesh (needed for fs_LR 32k; fsaverage5
        defaults to nilearn's packaged spheres).
    card : str | None
        Name of the data card the files come from (recorded).
    label_dtype : {"int64", "float32"}
        Class indices or regression targets.
    label_names : sequence of str | None
        Class names (recorded as ``label_names``).
    overwrite : bool
        Replace an existing store (or shard set).
    progress : callable | None
        Called with a short message per file and hemisphere.
    attrs : dict | None
        Extra store attributes (``card_body``, ``task``, …).
    chunk : int
        Frames resampled, z-scored and written at a time (bounds the working memory).
    mesh : str | None
        Mesh of every file (e.g. ``"ico6"`` for data already on the template: no resampling); default from
        the vertex count.
    expected_tr : float | None
        TR (s) the data card gives; a file whose own TR differs gets a RuntimeWarning naming both.
    skip_bad : bool
        Skip (with a RuntimeWarning) files that raise :class:`DataFileError` instead of stopping.
    shards : bool
        Write ``out`` as a shard set (:mod:`neurokit.store.shards`): one complete store per run, each renamed
        into place when done, so a run stopped by a full disk, a bad file or a kill keeps every run written.
    resume : bool
        With ``shards``: add only the runs the set at ``out`` lacks (its card, task and recipe must agree).
    signals : SignalDuplicates | None
        The preparer's check of recordings by their samples (:mod:`neurokit.preprocessing.duplicates`): each
        hemisphere, as read, is compared with those written before; one of another subject stops the store
        (:class:`~neurokit.preprocessing.duplicates.DuplicateRecordingError`, also with ``skip_bad``) unless the
        check allows it, one of the same subject leaves its run out with a warning. ``None``: no check.
    """

    spheres: dict | None = None
    card: str | None = None
    label_dtype: str = "int64"
    label_names: Sequence[str] | None = None
    overwrite: bool = False
    progress: Callable[[str], None] | None = None
    attrs: dict | None = None
    chunk: int = 128
    mesh: str | None = None
    expected_tr: float | None = None
    skip_bad: bool = False
    shards: bool = False
    resume: bool = False
    signals: SignalDuplicates | None = None


class _WrittenBefore(Exception):
    """A run whose samples a run of the same subject written before holds: left out (the check warned)."""


def write_surface_store(
    out: str | Path,
    runs: Iterable[SurfaceRun],
    recipe: SurfaceRecipe | None = None,
    options: SurfaceStoreOptions | None = None,
    **changes,
) -> Path:
    """Write a surface patch store.

    Parameters
    ----------
    out : path
        Store path (``.h5``), or the folder of a shard set (``shards=True``).
    runs : iterable of SurfaceRun
        The input files, with subject, run, hemisphere, label and frame range.
    recipe : SurfaceRecipe, optional
        Grid, tubelet length, normalisation (default ico6/ico2, T = 3, z-scored, right mirrored).
    options : SurfaceStoreOptions, optional
        Spheres, card, labels, overwrite, progress, extra attributes, chunk, mesh, expected TR, skip_bad,
        shards, resume (see :class:`SurfaceStoreOptions`).
    **changes
        Fields of :class:`SurfaceStoreOptions` to change (``spheres=…``, ``shards=True``…).

    Returns
    -------
    Path
        The complete store (or shard-set folder).

    Raises
    ------
    TypeError
        A keyword that names no field of :class:`SurfaceStoreOptions`.
    ConfigError
        ``resume`` without ``shards``.
    DataFileError
        Unreadable files, mismatched spheres, NaN frames, runs with different TRs or meshes, a run shorter
        than one tubelet, the samples of another subject's run (``signals``) (the message names the file; for a
        shard set it adds what is kept and to rerun with ``--resume``).
    StoreError
        The disk filled up (a shard set keeps every finished run and says to rerun with ``--resume``).
    FileExistsError
        ``out`` exists and ``overwrite`` is False (nor ``resume``, for a shard set).

    Notes
    -----
    When no file states its TR the store's ``tr`` attribute is NaN, ``onset_unit`` is ``"frames"`` and
    onsets count frames (a warning says so); otherwise ``onset_unit`` is ``"s"``. In a shard set each shard
    carries its own run's ``sources``, ``hemispheres``, ``mesh``, ``tr`` and ``onset_unit``.

    Examples
    --------
    >>> runs = [SurfaceRun("sub-01_task-rest_bold.func.gii", subject="01", hemi="L")]
    >>> write_surface_store("rest.h5", runs, SurfaceRecipe(), overwrite=True)  # doctest: +SKIP
    PosixPath('rest.h5')
    """
    unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(SurfaceStoreOptions)})
    if unknown:
        raise TypeError(f"write_surface_store: unknown option(s) {unknown}; see SurfaceStoreOptions")
    opts = dataclasses.replace(options or SurfaceStoreOptions(), **changes)
    if opts.resume and not opts.shards:
        raise ConfigError("resume=True continues a shard set: give shards=True")
    recipe = recipe or SurfaceRecipe()
    runs = list(runs)
    if not runs:
        raise DataFileError("no input files given")
    writing = _SurfaceWriting(recipe, opts)
    if opts.shards:
        path = writing.shard_set(out, runs)
    else:
        path = writing.one_store(out, runs)
    if not writing.total.trs:
        warnings.warn(
            f"{out}: no input file states its TR; the store's tr is NaN and sample onsets are in frames, not seconds",
            RuntimeWarning,
            stacklevel=2,
        )
    return path


def surface_attrs(
    recipe: SurfaceRecipe, card: str | None = None, label_names: Sequence[str] | None = None, extra: dict | None = None
) -> dict:
    """The attributes a surface store starts with (:class:`~neurokit.store.patch_store.StoreMeta` reads them back).

    Template, grid, sample shape, recipe, card, class names, then ``extra``; the facts of the runs read
    (sources, hemispheres, mesh, TR, onset unit) are added when they are written.

    Parameters
    ----------
    recipe : SurfaceRecipe
        The card's preprocessing recipe (:class:`~neurokit.cards.recipes.SurfaceRecipe`).
    card : str, optional
        The card's name.
    label_names : sequence of str, optional
        Class names, in label order.
    extra : dict, optional
        More attributes, added last (they may override the others).

    Returns
    -------
    dict
        Attribute name → value.

    Examples
    --------
    >>> from neurokit.cards.recipes import SurfaceRecipe
    >>> attrs = surface_attrs(SurfaceRecipe(), card="hcp7t_movie")
    >>> attrs["template"], attrs["grid"], attrs["n_patches"], attrs["vertices_per_patch"]
    ('ico6', 'ico6/ico2', 320, 153)
    """
    shape = sample_shape(recipe)
    attrs = {
        "modality": "surface",
        "template": f"ico{recipe.template_order}",
        "grid": recipe.grid,
        "n_patches": shape[1],
        "vertices_per_patch": shape[2],
        "tubelet": recipe.tubelet,
        "sample_layout": "(T, n_patches, V)",
        "recipe": recipe.to_dict(),
    }
    if card:
        attrs["card"] = card
    if label_names:
        attrs["label_names"] = list(label_names)
    attrs.update(extra or {})
    return attrs


def sample_shape(recipe: SurfaceRecipe) -> tuple[int, int, int]:
    """Shape of one sample of a surface store made with ``recipe``.

    Parameters
    ----------
    recipe : SurfaceRecipe
        The card's preprocessing recipe (:class:`~neurokit.cards.recipes.SurfaceRecipe`).

    Returns
    -------
    (int, int, int)
        ``(T, n_patches, V)``: tubelet frames, patches, template vertices per patch.

    Examples
    --------
    >>> from neurokit.cards.recipes import SurfaceRecipe
    >>> sample_shape(SurfaceRecipe())
    (3, 320, 153)
    """
    return (recipe.tubelet, n_patches(recipe.grid_order), vertices_per_patch(recipe.grid_order, recipe.template_order))


class _SurfaceWriting:
    """One :func:`write_surface_store` call: runs written into one store (:meth:`one_store`) or a shard set
    (:meth:`shard_set`), the facts of those written gathered in :attr:`total`."""

    def __init__(self, recipe: SurfaceRecipe, opts: SurfaceStoreOptions) -> None:
        self.recipe, self.opts = recipe, opts
        self.shape = sample_shape(recipe)
        self.attrs = surface_attrs(recipe, opts.card, opts.label_names, opts.attrs)
        self.layout: dict[str, Any] = dict(
            label_dtype=opts.label_dtype,
            meta_columns=("subject", "session", "run", "hemi"),
            patch_index=patch_table(recipe.grid_order, recipe.template_order),
            compression="lzf",
        )
        self.missing_label = -1 if opts.label_dtype.startswith("int") else np.nan
        self.total = _Facts()

    def write_run(self, w: PatchStoreWriter, run: SurfaceRun) -> "_Facts":
        """Append every hemisphere of ``run`` to ``w``: its frames once, then its tubelets. Returns its facts."""
        recipe, opts = self.recipe, self.opts
        facts = _Facts()
        try:
            for hemi, sd in _hemispheres(run, opts.mesh):  # a failing hemisphere drops the run's others too
                starts = _check_hemisphere(run, sd, recipe, opts.expected_tr)
                self._compare(run, sd, facts)
                sphere = (opts.spheres or {}).get(hemi) if hemi else None
                row0 = None
                for block in _template_frames(sd, recipe, sphere, opts.chunk):
                    row = w.append_frames(block)
                    row0 = row if row0 is None else row0
                tr = float(sd.tr) if sd.tr else 1.0  # unknown TR: onsets in frames
                first = run.frames[0] if run.frames else 0
                label = self.missing_label if run.label is None else run.label
                w.append_samples(
                    row0 + starts,
                    np.full(len(starts), label),
                    onsets=(starts + first) * tr,
                    subject=run.subject,
                    session=run.session,
                    run=run.run,
                    hemi=hemi or "",
                )
                facts.done.append((hemi, sd.mesh, sd.tr, len(starts)))
                del sd
        except BaseException:  # the run is rolled back: the hemispheres compared so far are not in the store
            if opts.signals is not None:
                opts.signals.discard(fp for fp, _, _ in facts.fingerprints)
            raise
        facts.sources.append({"path": str(run.path), "sha256": file_sha256(run.path)})
        return facts

    def _compare(self, run: SurfaceRun, sd, facts: "_Facts") -> None:
        """Compare one hemisphere's samples, as read, with those written before (``opts.signals``)."""
        if self.opts.signals is None:
            return
        fp = signal_fingerprint(sd.data, None)  # blocks of one frame: a TR missing or edited in a copy is no matter
        if not self.opts.signals.check(fp, str(run.path), run.subject):
            raise _WrittenBefore(str(run.path))
        facts.fingerprints.append((fp, str(run.path), run.subject))

    def _records(self) -> dict:
        """``duplicate_recordings``, when the check kept any (SHA-256 copies included)."""
        recs = self.opts.signals.records if self.opts.signals is not None else []
        return {"duplicate_recordings": recs} if recs else {}

    def _skip(self, run: SurfaceRun, exc: DataFileError) -> None:
        warnings.warn(f"skipped {run.path}: {exc}", RuntimeWarning, stacklevel=4)

    def shard_set(self, out: str | Path, runs: list[SurfaceRun]) -> Path:
        """Write the runs the shard set at ``out`` lacks, one shard each; returns the set's folder."""
        from neurokit.store.shards import ShardSetWriter, recording_key

        opts = self.opts
        sw = ShardSetWriter(
            out, self.shape, attrs=self.attrs, resume=opts.resume, overwrite=opts.overwrite, **self.layout
        )
        done = sw.keys
        self.total.add(sw.shard_info(0))  # a resumed set's mesh and TR bind the runs added to it
        if done and opts.signals is not None:  # the runs added are compared with those the set holds
            opts.signals.index_shards(out, done)
        for run in runs:
            key = recording_key(
                run.path,
                f"hemi-{run.hemi}" if run.hemi else "",
                "frames-{}-{}".format(*run.frames) if run.frames else "",
            )
            if key in done:
                continue
            sw.attrs.update(self._records())  # copies kept so far, in every shard from here on
            try:
                with sw.shard(key) as w:
                    facts = self.write_run(w, run)
                    self.total.add(facts.check(), run.path)
                    w.set_attrs(**facts.attrs(), **SignalDuplicates.shard_attrs(facts.fingerprints))
            except _WrittenBefore:
                continue
            except DuplicateRecordingError as exc:
                raise stopped_by(exc, out, sw.kept() if sw.index["shards"] else None) from None
            except DataFileError as exc:
                if not opts.skip_bad:
                    stop = sw.stopped(exc)
                    if stop is exc:  # nothing kept yet: the error as it came
                        raise
                    raise stop from exc
                self._skip(run, exc)
                continue
            facts.report(run, opts.progress)
        if not sw.index["shards"]:
            raise DataFileError(f"no usable input file: all {len(runs)} were skipped (see the warnings above)")
        return sw.close(**self._records())

    def one_store(self, out: str | Path, runs: list[SurfaceRun]) -> Path:
        """Write every run into the single store ``out`` (a run that fails is rolled back); returns ``out``."""
        from neurokit.store.shards import disk_full, disk_full_error

        opts = self.opts
        what = out
        try:
            with PatchStoreWriter(out, self.shape, attrs=self.attrs, overwrite=opts.overwrite, **self.layout) as w:
                for run in runs:
                    what = run.path
                    mark = w.mark()
                    try:
                        facts = self.write_run(w, run)
                    except _WrittenBefore:
                        w.rollback(mark)
                        continue
                    except DuplicateRecordingError as exc:
                        raise stopped_by(exc, out, None) from None
                    except DataFileError as exc:
                        w.rollback(mark)
                        if not opts.skip_bad:
                            raise
                        self._skip(run, exc)
                        continue
                    self.total.add(facts)
                    facts.report(run, opts.progress)
                what = out
                if not self.total.n:
                    raise DataFileError(f"no usable input file: all {len(runs)} were skipped (see the warnings above)")
                w.set_attrs(**self.total.check().attrs(), **self._records())
        except OSError as exc:
            if not disk_full(exc):
                raise
            raise disk_full_error(out, what) from exc
        return Path(out)


@dataclass
class _Facts:
    """What runs written so far hold: ``done`` ``(hemi, mesh, tr, n_samples)`` per hemisphere, sources, and
    ``(fingerprint, file, subject)`` per hemisphere compared (``fingerprints``: a shard records its own)."""

    done: list = dataclasses.field(default_factory=list)
    sources: list = dataclasses.field(default_factory=list)
    fingerprints: list = dataclasses.field(default_factory=list)

    @property
    def n(self) -> int:
        return sum(d[3] for d in self.done)

    @property
    def meshes(self) -> set:
        return {d[1] for d in self.done}

    @property
    def trs(self) -> set:
        return {round(float(d[2]), 6) for d in self.done if d[2]}

    def add(self, other: "_Facts | StoreMeta | None", path=None) -> None:
        """Take in another run's facts (or a written store's metadata); with ``path``, first check that
        they agree with those taken in before (one mesh, one TR)."""
        if isinstance(other, StoreMeta):  # a shard already written
            tr = other.tr if other.tr is not None and other.tr == other.tr else None
            other = _Facts(done=[(h, other.mesh, tr, 0) for h in other.hemispheres or ("",)])
        if other is None:
            return
        if path is not None:
            for name, mine, theirs in (("meshes", self.meshes, other.meshes), ("TRs", self.trs, other.trs)):
                if mine and theirs and mine != theirs:
                    raise DataFileError(
                        f"{path}: {name} {sorted(theirs)} differ from the runs written before "
                        f"({sorted(mine)}); write one store per mesh and TR"
                    )
        self.done += other.done
        self.sources += other.sources

    def check(self) -> "_Facts":
        if len(self.meshes) > 1:
            raise DataFileError(f"runs on different meshes {sorted(self.meshes)}: write one store per mesh")
        if len(self.trs) > 1:
            raise DataFileError(f"runs with different TRs {sorted(self.trs)} s: write one store per TR")
        return self

    def attrs(self) -> dict:
        hemis = sorted({d[0] or "" for d in self.done})
        trs = self.trs
        return dict(
            sources=self.sources,
            hemispheres=hemis,
            hemisphere="+".join(hemis),
            mesh=next(iter(self.meshes)),
            tr=next(iter(trs)) if trs else float("nan"),
            onset_unit="s" if trs else "frames",
        )

    def report(self, run: SurfaceRun, progress) -> None:
        if progress:
            for hemi, _, _, n in self.done:
                progress(f"{run.path.name} [{hemi}]: {n} tubelets")


def _check_hemisphere(run: SurfaceRun, sd, recipe: SurfaceRecipe, expected_tr) -> np.ndarray:
    """Checks of one hemisphere before anything of it is written; returns the tubelet start frames."""
    if sd.kind == "geometry" or sd.n_frames == 0:
        raise DataFileError(f"{run.path}: a surface geometry file without data frames; give data files (time series)")
    if sd.kind != "series":
        warnings.warn(
            f"{run.path}: a {sd.kind} file ({sd.n_frames} maps), not a time series: its maps are stored as "
            "frames; use a .dtseries.nii / .func.gii time series for fMRI",
            RuntimeWarning,
            stacklevel=5,
        )
    if expected_tr and sd.tr and abs(float(sd.tr) - float(expected_tr)) > 1e-3 * float(expected_tr):
        warnings.warn(
            f"{run.path}: TR {sd.tr:g} s in the file, but the data card says {expected_tr:g} s; onsets use the "
            "file's TR. Check the card's recording.tr_s or the file",
            RuntimeWarning,
            stacklevel=5,
        )
    starts = np.arange(0, sd.n_frames - recipe.tubelet + 1, recipe.step)
    if len(starts) == 0:
        raise DataFileError(f"{run.path}: {sd.n_frames} frames, fewer than one tubelet of {recipe.tubelet} frames")
    return starts


def _template_frames(sd, recipe: SurfaceRecipe, sphere, chunk: int):
    """Yield ``(k, n_template_vertices)`` float32 blocks of ``sd``'s frames: resampled to the template and
    z-scored (when the recipe says so), ``chunk`` frames at a time. Both steps act frame by frame, so the
    blocks equal slices of the whole run's result."""
    if isinstance(sphere, (str, Path)):
        sphere = load_sphere(sphere)  # parse the file once, not once per block
    for lo in range(0, sd.n_frames, chunk):
        part = dataclasses.replace(sd, data=sd.data[:, lo : lo + chunk])
        data, mask = to_template(
            part, sphere, order=recipe.template_order, mirror_right=recipe.mirror_right, threshold=recipe.mask_threshold
        )
        if recipe.zscore:
            data = zscore_frames(data, mask, source=str(sd.path), first_frame=lo)
        yield np.ascontiguousarray(data.T, dtype=np.float32)
