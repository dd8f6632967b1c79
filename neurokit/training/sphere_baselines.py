"""Interpolation baselines on the sphere, which see exactly what a masked model sees, for the held-out masked
loss of pretraining to be read against (beside :mod:`~neurokit.training.masked_baselines`).

``spline`` (EEG)
    the spherical-spline interpolation of the masked channels from the visible ones at the same instant (Perrin
    et al., *Electroenceph. Clin. Neurophysiol.* 72, 1989; what MNE's ``interpolate_bads`` does): electrodes at
    their standard 10-05 positions, centred on the sphere fitted to them, stiffness 4, 50 Legendre terms,
    regularisation 1e-5 (MNE's values). One interpolation matrix per mask pattern, cached. Nothing is fitted.
``kernel`` (surface)
    every hidden template vertex predicted by a Gaussian-kernel average of the :data:`KERNEL_NEIGHBOURS` nearest
    visible vertices of the same frame; the kernel's width chosen among :data:`KERNEL_WIDTHS` on training
    tubelets with the model's own masks. Nothing else is fitted.
``ridge`` (surface)
    every hidden vertex predicted by a ridge regression from every visible vertex of the same frame, fitted on
    training frames: in its dual form, ``x̂_H = F_Hᵀ (F_S F_Sᵀ + λI)⁻¹ F_S x_S`` with ``F`` the training frames
    and ``S``/``H`` the visible/hidden vertices, so one fit per mask pattern costs a solve of the training
    frames' count; ``λ`` chosen among :data:`RIDGE_PENALTIES` on training tubelets left out of the fit.

:class:`SourceHidden` finds the values a surface store interpolated only from source vertices that no visible
value touches (the store's template values are each a barycentric mix of 3 source-mesh vertices), for the
held-out loss to be scored on values hidden at the data's own resolution.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

#: neighbouring visible vertices the kernel interpolation averages
KERNEL_NEIGHBOURS = 8
#: kernel widths tried, in units of the template's vertex spacing
KERNEL_WIDTHS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)
#: ridge penalties tried, relative to the mean diagonal of the training frames' Gram matrix
RIDGE_PENALTIES = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)
#: at most this many training frames fit the surface ridge
RIDGE_FRAMES = 256
#: spherical-spline constants (MNE's ``interpolate_bads``): stiffness, Legendre terms, regularisation
SPLINE_STIFFNESS, SPLINE_TERMS, SPLINE_ALPHA = 4, 50, 1e-5
#: interpolation matrices kept per mask pattern (spline: channels², ridge: training frames²)
CACHE_PATTERNS = 8192
CACHE_RIDGE = 512


def spline_g(cosang: np.ndarray, stiffness: int = SPLINE_STIFFNESS, terms: int = SPLINE_TERMS) -> np.ndarray:
    """The spherical spline's kernel ``g(x) = Σ_n (2n+1) / (n(n+1))^m · P_n(x) / 4π`` (Perrin et al. 1989).

    Parameters
    ----------
    cosang : ndarray
        Cosines of the angles between electrode pairs.
    stiffness : int
        ``m``.
    terms : int
        Legendre terms summed (``n = 1 … terms``).

    Returns
    -------
    ndarray
        ``g`` of each cosine, shaped as ``cosang``.

    Examples
    --------
    >>> round(float(spline_g(np.array(1.0))), 5)  # Σ (2n+1)/(n(n+1))⁴/4π at x = 1
    0.01526
    """
    n = np.arange(1, terms + 1, dtype=np.float64)
    coef = np.concatenate([[0.0], (2 * n + 1) / (n * (n + 1)) ** stiffness / (4 * np.pi)])
    return np.polynomial.legendre.legval(np.clip(cosang, -1.0, 1.0), coef)


def spline_matrix(pos_from: np.ndarray, pos_to: np.ndarray, alpha: float = SPLINE_ALPHA) -> np.ndarray:
    """The spherical-spline interpolation matrix from electrodes ``pos_from`` to ``pos_to``: a surface spline with a
    constant term fitted through the values at ``pos_from`` (regularised by ``alpha``) and read at ``pos_to``.

    Parameters
    ----------
    pos_from : ndarray, shape (n_from, 3)
        Positions of the electrodes read, relative to the sphere's centre (any radius; only directions count).
    pos_to : ndarray, shape (n_to, 3)
        Positions of the electrodes interpolated.
    alpha : float
        Added to the diagonal of the spline's matrix.

    Returns
    -------
    ndarray, shape (n_to, n_from)
        ``values_to = W @ values_from``; each row sums to 1 (a constant field is kept).

    Examples
    --------
    >>> pos = np.eye(3)
    >>> w = spline_matrix(pos, np.array([[1.0, 1.0, 1.0]]))
    >>> w.shape, bool(np.allclose(w, 1 / 3))  # the point equidistant from three electrodes: their mean
    ((1, 3), True)
    """
    a = pos_from / np.linalg.norm(pos_from, axis=1, keepdims=True)
    b = pos_to / np.linalg.norm(pos_to, axis=1, keepdims=True)
    n = len(a)
    g = spline_g(a @ a.T)
    g[np.diag_indices(n)] += alpha
    c = np.zeros((n + 1, n + 1))
    c[:n, :n] = g
    c[:n, n] = c[n, :n] = 1.0
    rhs = np.hstack([spline_g(b @ a.T), np.ones((len(b), 1))])
    return (rhs @ np.linalg.pinv(c))[:, :n]


def electrode_positions(ch_names: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Standard 10-05 positions of ``ch_names``, centred on the sphere fitted to them (as MNE's
    ``interpolate_bads`` centres them, ``origin="auto"``).

    Parameters
    ----------
    ch_names : sequence of str
        Channel names (10-05 spellings).

    Returns
    -------
    positions : ndarray, shape (n_channels, 3)
        Metres from the fitted centre; NaN rows for channels with no standard position.
    missing : list of str
        The channels with no position.

    Examples
    --------
    >>> pos, missing = electrode_positions(["Cz", "C3", "C4", "Fz", "Pz", "EMG1"])
    >>> pos.shape, missing
    ((6, 3), ['EMG1'])
    """
    import mne

    from neurokit.geometry.channels import montage_for

    names = list(ch_names)
    mont = montage_for(names)
    known = [n for n in names if n in set(mont.ch_names)]
    out = np.full((len(names), 3), np.nan)
    missing = [n for n in names if n not in set(known)]
    if len(known) < 4:
        return out, missing
    info = mne.create_info(known, 100.0, "eeg")
    info.set_montage(mont, on_missing="ignore")
    with warnings.catch_warnings():  # few electrodes: MNE warns that the fit may be inaccurate, and uses it
        warnings.simplefilter("ignore", RuntimeWarning)
        _, origin, _ = mne.bem.fit_sphere_to_headshape(info, units="m", verbose=False)
    where = {n: i for i, n in enumerate(names)}
    for ch in info["chs"]:
        out[where[ch["ch_name"]]] = ch["loc"][:3] - origin
    return out, missing


@dataclass
class SplineInterpolation:
    """Spherical-spline interpolation of masked EEG patches from the visible channels (module docstring).

    Attributes
    ----------
    positions : ndarray, shape (C, 3)
        Electrode positions relative to the sphere's centre; NaN for channels with none (never predicted, never
        read).

    Examples
    --------
    >>> s = SplineInterpolation.for_channels(["Fz", "Cz", "Pz", "C3", "C4"])
    >>> t = torch.ones(1, 5, 2, 4)  # a constant field is interpolated as itself
    >>> s.predict(t, torch.tensor([[[1.0, 0.0], [0, 0], [0, 0], [0, 0], [0, 0]]]))[0, 0, 0].round(decimals=6).tolist()
    [1.0, 1.0, 1.0, 1.0]
    """

    positions: np.ndarray
    _cache: dict = field(default_factory=dict, repr=False)

    @classmethod
    def for_channels(cls, ch_names: Sequence[str]) -> "SplineInterpolation":
        """The interpolation for channels ``ch_names`` at their standard positions (:func:`electrode_positions`).

        Parameters
        ----------
        ch_names : sequence of str
            The store's channel names.

        Returns
        -------
        SplineInterpolation
        """
        return cls(electrode_positions(ch_names)[0])

    @property
    def placed(self) -> np.ndarray:
        """Bool ``(C,)``: the channels with a position."""
        return ~np.isnan(self.positions).any(axis=1)

    def matrix(self, masked: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(W, to, frm)`` for one mask pattern ``masked`` ``(C,)`` bool: the placed masked channels ``to``, the
        placed visible ones ``frm`` and ``W`` ``(len(to), len(frm))`` (cached per pattern)."""
        key = np.packbits(masked).tobytes()
        hit = self._cache.get(key)
        if hit is None:
            to = np.flatnonzero(masked & self.placed)
            frm = np.flatnonzero(~masked & self.placed)
            w = self._solve(frm, to) if len(to) and len(frm) else np.zeros((0, 0))
            if len(self._cache) >= CACHE_PATTERNS:
                g = self._cache.get("g")
                self._cache.clear()
                if g is not None:
                    self._cache["g"] = g
            hit = self._cache[key] = (w, to, frm)
        return hit

    def _solve(self, frm: np.ndarray, to: np.ndarray) -> np.ndarray:
        """:func:`spline_matrix` from channels ``frm`` to ``to``, the kernel of every pair computed once."""
        if "g" not in self._cache:
            placed = np.where(self.placed[:, None], self.positions, 1.0)
            unit = placed / np.linalg.norm(placed, axis=1, keepdims=True)
            self._cache["g"] = spline_g(unit @ unit.T)
        g = self._cache["g"]
        n = len(frm)
        c = np.zeros((n + 1, n + 1))
        c[:n, :n] = g[np.ix_(frm, frm)] + SPLINE_ALPHA * np.eye(n)
        c[:n, n] = c[n, :n] = 1.0
        rhs = np.hstack([g[np.ix_(to, frm)], np.ones((len(to), 1))])
        return (rhs @ np.linalg.pinv(c))[:, :n]

    @torch.no_grad()
    def predict(self, t: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Predictions ``(B, C, N, P)`` (float64) of the masked patches of placed channels; NaN elsewhere.

        Parameters
        ----------
        t : torch.Tensor, shape (B, C, N, P)
            Windows.
        mask : torch.Tensor, shape (B, C, N)
            1 where a patch is masked.

        Returns
        -------
        torch.Tensor, shape (B, C, N, P)
        """
        x = t.detach().to("cpu", torch.float64).numpy()
        m = mask.detach().to("cpu").bool().numpy()
        out = np.full(x.shape, np.nan)
        B, C, N, _ = x.shape
        for b in range(B):
            for n in range(N):
                w, to, frm = self.matrix(m[b, :, n])
                if len(to) and len(frm):
                    out[b, to, n] = w @ x[b, frm, n]
        return torch.from_numpy(out)


def template_geometry(n_patches: int, vertices_per_patch: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The template vertex of every patch slot and the template's unit vertex directions, for samples on an ico-k
    patch grid of the ico6 template; ``None`` on no such grid.

    Parameters
    ----------
    n_patches, vertices_per_patch : int
        The samples' ``N`` and ``V``.

    Returns
    -------
    (ids, coords) or None
        ``ids`` ``(N, V)`` int; ``coords`` ``(n_vertices, 3)`` float64 on the unit sphere.

    Examples
    --------
    >>> ids, coords = template_geometry(80, 561)  # ico1 patches
    >>> ids.shape, coords.shape
    ((80, 561), (40962, 3))
    """
    from neurokit.geometry.icosphere import icosphere
    from neurokit.geometry.patches import TEMPLATE_ORDER, grid_of, patch_table

    k = grid_of(int(n_patches), int(vertices_per_patch))
    if k is None:
        return None
    v = np.asarray(icosphere(TEMPLATE_ORDER).vertices, dtype=np.float64)
    return np.asarray(patch_table(k), dtype=np.int64), v / np.linalg.norm(v, axis=1, keepdims=True)


def to_vertices(x: np.ndarray, ids: np.ndarray, n_vertices: int) -> np.ndarray:
    """Patch-layout values ``(..., N, V)`` → template-vertex values ``(..., n_vertices)`` (a vertex held by several
    patches has the same value in each).

    Parameters
    ----------
    x : ndarray, shape (..., N, V)
        Values in the patch layout.
    ids : ndarray, shape (N, V)
        Template vertex of each slot.
    n_vertices : int
        Template vertices.

    Returns
    -------
    ndarray, shape (..., n_vertices)

    Examples
    --------
    >>> to_vertices(np.array([[1.0, 2.0], [2.0, 3.0]]), np.array([[0, 1], [1, 2]]), 3).tolist()
    [1.0, 2.0, 3.0]
    """
    out = np.zeros(x.shape[:-2] + (n_vertices,), dtype=x.dtype)
    out[..., ids.reshape(-1)] = x.reshape(x.shape[:-2] + (-1,))
    return out


def visible_vertices(masked: np.ndarray, ids: np.ndarray, n_vertices: int) -> np.ndarray:
    """Bool ``(n_vertices,)``: the template vertices held by a visible patch (``masked`` ``(N,)`` bool).

    Parameters
    ----------
    masked : ndarray of bool, shape (N,)
        Masked patches.
    ids : ndarray, shape (N, V)
        Template vertex of each slot.
    n_vertices : int
        Template vertices.

    Returns
    -------
    ndarray of bool, shape (n_vertices,)

    Examples
    --------
    >>> visible_vertices(np.array([True, False]), np.array([[0, 1], [1, 2]]), 3).tolist()
    [False, True, True]
    """
    vis = np.zeros(n_vertices, dtype=bool)
    vis[ids[~masked].reshape(-1)] = True
    return vis


def _patterns(mask: np.ndarray) -> dict[bytes, list[tuple[int, int]]]:
    """``(B, T, N)`` bool → pattern key → the ``(b, t)`` frames masked with it."""
    out: dict[bytes, list[tuple[int, int]]] = {}
    for b in range(mask.shape[0]):
        for t in range(mask.shape[1]):
            out.setdefault(np.packbits(mask[b, t]).tobytes(), []).append((b, t))
    return out


@dataclass
class SphereInterpolators:
    """The surface ``kernel`` and ``ridge`` predictors (module docstring) for samples ``(B, T, N, V)``.

    Attributes
    ----------
    ids : ndarray, shape (N, V)
        Template vertex of each patch slot.
    coords : ndarray, shape (n_vertices, 3)
        Unit directions of the template's vertices.
    width : float
        The kernel's width (unit-sphere distance).
    frames : ndarray, shape (n_frames, n_vertices) or None
        The ridge's training frames (float32); ``None``: no ridge.
    penalty : float
        The ridge penalty relative to the mean diagonal of the Gram matrix.
    spacing : float
        The template's vertex spacing (median nearest-neighbour distance), the kernel width's unit.
    """

    ids: np.ndarray
    coords: np.ndarray
    width: float
    frames: np.ndarray | None = None
    penalty: float = 1e-2
    spacing: float = 1.0
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def n_vertices(self) -> int:
        return len(self.coords)

    def neighbours(self, vis: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(hidden, dist, idx)``: the vertices no visible patch holds, the distances to their
        :data:`KERNEL_NEIGHBOURS` nearest visible vertices and those vertices' indices."""
        from scipy.spatial import cKDTree

        seen = np.flatnonzero(vis)
        hid = np.flatnonzero(~vis)
        k = min(KERNEL_NEIGHBOURS, len(seen))
        d, j = cKDTree(self.coords[seen]).query(self.coords[hid], k=k)
        return hid, d.reshape(len(hid), k), seen[j.reshape(len(hid), k)]

    def kernel_values(self, u: np.ndarray, hid, d, j, width: float) -> np.ndarray:
        """Kernel predictions ``(F, len(hid))`` of frames ``u`` ``(F, n_vertices)``."""
        # exp(-d²/2σ²), each row divided by its largest weight first (far from every visible vertex it would be 0/0)
        w = np.exp(-0.5 * (d**2 - d[:, :1] ** 2) / width**2)
        w /= w.sum(axis=1, keepdims=True)
        return np.einsum("fhk,hk->fh", u[:, j], w)

    def ridge_operator(self, vis: np.ndarray, frames: np.ndarray, penalty: float) -> np.ndarray:
        """``(K + λI)⁻¹`` ``(n_frames, n_frames)`` of the dual ridge for one visible set ``vis``: ``K = F_S F_Sᵀ``
        the training frames' Gram matrix on the visible vertices, ``λ`` = ``penalty`` × its mean diagonal."""
        fs = frames[:, vis].astype(np.float64)
        gram = fs @ fs.T
        lam = penalty * max(float(np.trace(gram)) / len(gram), 1e-12)
        return np.linalg.inv(gram + lam * np.eye(len(gram)))

    def ridge_values(self, u: np.ndarray, vis: np.ndarray, frames: np.ndarray, inv: np.ndarray) -> np.ndarray:
        """Ridge predictions ``(F, n_hidden)`` of frames ``u`` ``(F, n_vertices)`` from their visible vertices:
        ``F_Hᵀ (K + λI)⁻¹ F_S x_S``."""
        coef = (u[:, vis] @ frames[:, vis].T.astype(np.float64)) @ inv.T  # (F, n_frames)
        return coef @ frames[:, ~vis].astype(np.float64)

    @torch.no_grad()
    def predict(self, t: torch.Tensor, mask: torch.Tensor) -> dict[str, torch.Tensor]:
        """Predictions ``(B, T, N, V)`` (float64) of the kernel and, with training frames, the ridge: the hidden
        values predicted, the values of visible vertices copied.

        Parameters
        ----------
        t : torch.Tensor, shape (B, T, N, V)
            Surface samples.
        mask : torch.Tensor, shape (B, T, N)
            1 where a patch is masked.

        Returns
        -------
        dict of str to torch.Tensor
            ``"kernel"`` and, with ``frames``, ``"ridge"``.
        """
        x = t.detach().to("cpu", torch.float64).numpy()
        m = mask.detach().to("cpu").bool().numpy()
        nv = self.n_vertices
        u = to_vertices(x, self.ids, nv)  # (B, T, nv)
        kern = u.copy()
        ridge = u.copy() if self.frames is not None else None
        for key, where in _patterns(m).items():
            b0, t0 = where[0]
            vis = visible_vertices(m[b0, t0], self.ids, nv)
            if vis.all() or not vis.any():
                continue
            bs, ts = np.array([w[0] for w in where]), np.array([w[1] for w in where])
            frames = u[bs, ts]
            hid, d, j = self.neighbours(vis)
            kern[bs[:, None], ts[:, None], hid[None, :]] = self.kernel_values(frames, hid, d, j, self.width)
            if ridge is not None and self.frames is not None:
                op = self._cache.get(key)
                if op is None:  # one (n_frames, n_frames) matrix per mask pattern: the same masks every epoch
                    if len(self._cache) >= CACHE_RIDGE:
                        self._cache.clear()
                    op = self._cache[key] = self.ridge_operator(vis, self.frames, self.penalty)
                ridge[bs[:, None], ts[:, None], np.flatnonzero(~vis)[None, :]] = self.ridge_values(
                    frames, vis, self.frames, op
                )
        out = {"kernel": torch.from_numpy(kern[..., self.ids])}
        if ridge is not None:
            out["ridge"] = torch.from_numpy(ridge[..., self.ids])
        return out

    @classmethod
    def fit(
        cls,
        ids: np.ndarray,
        coords: np.ndarray,
        frames: np.ndarray,
        tune: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
        *,
        fit_frames: np.ndarray | None = None,
    ) -> "SphereInterpolators":
        """Choose the kernel's width and the ridge's penalty on training data.

        Parameters
        ----------
        ids : ndarray, shape (N, V)
            Template vertex of each patch slot.
        coords : ndarray, shape (n_vertices, 3)
            Unit directions of the template's vertices.
        frames : ndarray, shape (n_frames, n_vertices)
            The training frames the final ridge is fitted on.
        tune : sequence of (target, mask, scored)
            Training samples ``(T, N, V)`` with the model's masks ``(T, N)`` and scored values ``(T, N, V)``: the
            width and penalty of lowest squared error on their scored values are chosen.
        fit_frames : ndarray, shape (n, n_vertices), optional
            The training frames the ridge is fitted on while its penalty is chosen (frames of other tubelets than
            ``tune``'s); ``None``: no ridge.

        Returns
        -------
        SphereInterpolators
        """
        from scipy.spatial import cKDTree

        spacing = float(np.median(cKDTree(coords).query(coords, k=2)[0][:, 1]))
        kern_sse = np.zeros(len(KERNEL_WIDTHS))
        ridge_sse = np.zeros(len(RIDGE_PENALTIES))
        probe = cls(ids, coords, spacing)
        nv = len(coords)
        for target, mask, scored in tune:
            m = np.asarray(mask, dtype=bool)
            sel = np.asarray(scored, dtype=bool)
            u = to_vertices(np.asarray(target, dtype=np.float64)[None], ids, nv)[0]  # (T, nv)
            for where in _patterns(m[None]).values():
                ts = np.array([w[1] for w in where])
                vis = visible_vertices(m[ts[0]], ids, nv)
                if vis.all() or not vis.any():
                    continue
                hid, d, j = probe.neighbours(vis)
                # the scored slots of these frames, as (frame, hidden vertex) pairs
                want = np.zeros((len(ts), nv), dtype=bool)
                for i, t in enumerate(ts):
                    want[i, ids[sel[t]]] = True
                keep = want[:, hid]
                truth = u[ts][:, hid][keep]
                near = u[ts][:, j][keep]  # (scored, k): the nearest visible values of each scored value
                d2 = (d**2 - d[:, :1] ** 2)[np.nonzero(keep)[1]]
                for w_i, f in enumerate(KERNEL_WIDTHS):
                    w = np.exp(-0.5 * d2 / (f * spacing) ** 2)
                    pred = (near * w).sum(axis=1) / w.sum(axis=1)
                    kern_sse[w_i] += float(((pred - truth) ** 2).sum())
                if fit_frames is not None:
                    hid_all = np.flatnonzero(~vis)
                    keep_r = want[:, hid_all]
                    truth_r = u[ts][:, hid_all]
                    fs = fit_frames[:, vis].astype(np.float64)
                    gram = fs @ fs.T
                    scale = max(float(np.trace(gram)) / len(gram), 1e-12)
                    evals, evecs = np.linalg.eigh(gram)
                    proj = evecs.T @ fs  # (n, n_visible)
                    rhs = proj @ u[ts][:, vis].T  # (n, F)
                    fh = evecs.T @ fit_frames[:, ~vis].astype(np.float64)  # (n, n_hidden)
                    for r_i, lam in enumerate(RIDGE_PENALTIES):
                        coef = rhs / (evals + lam * scale)[:, None]  # (n, F)
                        pred = coef.T @ fh
                        ridge_sse[r_i] += float(((pred - truth_r)[keep_r] ** 2).sum())
        width = KERNEL_WIDTHS[int(np.argmin(kern_sse))] * spacing
        penalty = RIDGE_PENALTIES[int(np.argmin(ridge_sse))] if fit_frames is not None else 1e-2
        return cls(ids, coords, width, frames if fit_frames is not None else None, penalty, spacing)


@dataclass
class SourceHidden:
    """Which template values of a surface store were interpolated only from source vertices no visible value
    touches: the values hidden at the data's own resolution.

    Each template vertex's value is a barycentric mix of up to 3 source-mesh vertices (its corners,
    :func:`~neurokit.preprocessing.surface.resample.resampling_matrix`); a hidden template vertex is hidden at the
    source resolution when none of its corners is a corner of a visible template vertex.

    Attributes
    ----------
    ids : ndarray, shape (N, V)
        Template vertex of each patch slot.
    corners : dict
        Hemisphere → sparse bool ``(n_template_vertices, n_source_vertices)`` (``M > 0``).
    mesh : str
        The source mesh (for the line).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> a = sp.csr_matrix(np.array([[1, 0, 0], [1, 1, 0], [0, 0, 1]], dtype=bool))  # 3 template, 3 source
    >>> s = SourceHidden(np.array([[0], [1], [2]]), {"L": a}, "toy")
    >>> s.deep_vertices(np.array([True, False, False]), "L").tolist()  # hidden vertex 1 shares source 0 with vertex 0
    [False, False, True]
    """

    ids: np.ndarray
    corners: dict
    mesh: str
    kept: float = 0.0
    seen: float = 0.0

    @classmethod
    def for_store(cls, attrs: dict, ids: np.ndarray, hemispheres: Sequence[str]) -> "SourceHidden | str":
        """The source vertices of a surface store's template values, or why they cannot be known.

        Parameters
        ----------
        attrs : dict
            The store's attributes (``mesh``, ``recipe``).
        ids : ndarray, shape (N, V)
            Template vertex of each patch slot.
        hemispheres : sequence of str
            The hemispheres of the samples scored.

        Returns
        -------
        SourceHidden or str
            A string saying why not: data on the template itself (nothing interpolated), or a source mesh whose
            registered sphere is not known here (a store made with spheres given).
        """
        from neurokit._utils.errors import DataFileError
        from neurokit.geometry.patches import parse_grid
        from neurokit.preprocessing.surface.resample import default_sphere, load_sphere, resampling_matrix

        mesh = str(attrs.get("mesh") or "")
        recipe = attrs.get("recipe") or {}
        order = parse_grid(recipe.get("grid", attrs.get("grid", "ico6/ico2")))[0]
        if mesh == f"ico{order}":
            return f"the data are on the ico{order} template (no interpolation): hidden at their own resolution"
        corners = {}
        for hemi in hemispheres:
            try:
                src = load_sphere(default_sphere(mesh, hemi or None), hemi or None)
            except (DataFileError, OSError) as exc:
                return (
                    f"source mesh {mesh or 'unknown'}: no packaged sphere and none recorded in the store, so its source "
                    f"vertices are unknown and values sharing one with a visible value are scored too ({type(exc).__name__})"
                )
            if hemi == "R" and recipe.get("mirror_right", True) and not src.is_template(order):
                src = src.mirrored()
            if src.is_template(order):
                return f"the data are on the ico{order} template (no interpolation): hidden at their own resolution"
            corners[hemi] = (resampling_matrix(src, order) > 0).tocsr()
        return cls(ids, corners, mesh)

    def deep_vertices(self, vis: np.ndarray, hemi: str) -> np.ndarray:
        """Bool ``(n_template_vertices,)``: the vertices none of whose source corners a visible vertex ``vis``
        shares."""
        a = self.corners[hemi]
        src_seen = np.asarray(a.T @ vis.astype(np.float64)).ravel() > 0
        touched = np.asarray(a @ src_seen.astype(np.float64)).ravel() > 0
        return ~touched

    def restrict(self, scored: torch.Tensor, mask: torch.Tensor, hemis: Sequence[str]) -> torch.Tensor:
        """``scored`` ``(B, T, N, V)`` less the values that share a source vertex with a visible one.

        Parameters
        ----------
        scored : torch.Tensor, shape (B, T, N, V)
            The values scored so far (bool).
        mask : torch.Tensor, shape (B, T, N)
            1 where a patch is masked.
        hemis : sequence of str
            Each sample's hemisphere.

        Returns
        -------
        torch.Tensor, shape (B, T, N, V), bool
        """
        sel = scored.detach().to("cpu").bool().numpy().copy()
        m = mask.detach().to("cpu").bool().numpy()
        nv = int(self.ids.max()) + 1
        self.seen += float(sel.sum())
        for b in range(m.shape[0]):
            cache: dict[bytes, np.ndarray] = {}
            for t in range(m.shape[1]):
                key = np.packbits(m[b, t]).tobytes()
                if key not in cache:
                    cache[key] = self.deep_vertices(visible_vertices(m[b, t], self.ids, nv), hemis[b])[self.ids]
                sel[b, t] &= cache[key]
        self.kept += float(sel.sum())
        return torch.from_numpy(sel).to(scored.device)

    def phrase(self) -> str:
        """Words for the held-out line: what is scored, with the share of the hidden values kept."""
        share = f"{100 * self.kept / self.seen:.1f} % of the hidden values" if self.seen else "the hidden values"
        return f"values whose {self.mesh} source vertices are all hidden ({share})"
