"""Released weights by name from the Hugging Face Hub (``hub:ORG/NAME[/FILE][@REVISION]``).

Files are fetched by :func:`huggingface_hub.hf_hub_download` into its cache (``$HF_HUB_CACHE``, default
``~/.cache/huggingface/hub``) and read from there afterwards. A revision (branch, tag or commit hash)
pins the weights; the commit the name resolved to and the file's SHA-256 are returned so that a
checkpoint can record exactly what it started from. Offline mode (``HF_HUB_OFFLINE=1`` or
``NEUROKIT_OFFLINE=1``) reads only the cache and says so when the file is not there.

Hash check: the SHA-256 of the file must equal the one asked for (``sha256=``) or, for files stored
through Git LFS (every weights file on the Hub), the blob name the cache keeps it under (the LFS object
id, which is the file's SHA-256), so a damaged or tampered cache entry is refused.

The public CBraMod weights: the authors' release ``weighting666/CBraMod`` (``pretrained_weights.pth``,
Apache-2.0, linked from github.com/wjq-learning/CBraMod), loaded as is (same tensor names).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neurokit._utils.errors import NeurokitError
from neurokit.models.docs import fill_doc

PREFIX = "hub:"
#: file endings taken as weights when the name gives no file
WEIGHT_SUFFIXES = (".pth", ".pt", ".bin", ".safetensors", ".ckpt")
#: preferred file names, in order, when a repository holds several weights files
PREFERRED = ("model.safetensors", "pretrained_weights.pth", "pytorch_model.bin")  # safetensors first: it holds no code
#: released weights of the model families neurokit implements
RELEASED = {"cbramod": "weighting666/CBraMod"}
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class HubError(NeurokitError, ValueError):
    """Weights named on the Hub cannot be resolved: unknown repository, revision or file, not cached
    while offline, or a file whose hash differs from the expected one.

    A :class:`~neurokit._utils.errors.NeurokitError` and a :class:`ValueError`.

    Parameters
    ----------
    message : str
        What failed and how to fix it.

    Examples
    --------
    >>> isinstance(HubError("x"), ValueError)
    True
    """


@dataclass
class HubSpec:
    """``hub:ORG/NAME[/FILE][@REVISION]`` split into its parts (:func:`parse_hub_spec`); ``str()`` gives it back.

    Attributes
    ----------
    repo_id : str
        ``ORG/NAME``.
    filename : str or None
        Path of the file inside the repository; ``None``: picked among its weights files.
    revision : str or None
        Branch, tag or commit hash; ``None``: the default branch.

    Examples
    --------
    >>> str(HubSpec("weighting666/CBraMod", revision="main"))
    'hub:weighting666/CBraMod@main'
    """

    repo_id: str
    filename: str | None = None
    revision: str | None = None

    def __str__(self) -> str:
        return f"{PREFIX}{self.repo_id}{'/' + self.filename if self.filename else ''}{'@' + self.revision if self.revision else ''}"


def is_hub_spec(spec: Any) -> bool:
    """Whether ``spec`` is a Hub name (a string or path starting with ``hub:``).

    Parameters
    ----------
    spec : object
        A weights source as a user gave it.

    Returns
    -------
    bool

    Examples
    --------
    >>> is_hub_spec("hub:weighting666/CBraMod"), is_hub_spec("runs/pt/last.pt")
    (True, False)
    """
    return isinstance(spec, (str, Path)) and str(spec).startswith(PREFIX)


def parse_hub_spec(spec: str) -> HubSpec:
    """Parse ``hub:ORG/NAME[/PATH/IN/REPO][@REVISION]`` (the ``hub:`` prefix may be left out).

    Parameters
    ----------
    spec : str
        The name.

    Returns
    -------
    HubSpec

    Raises
    ------
    HubError
        Not of that form (fewer than two path parts, or an empty revision after ``@``).

    Examples
    --------
    >>> parse_hub_spec("hub:weighting666/CBraMod/pretrained_weights.pth@v1")
    HubSpec(repo_id='weighting666/CBraMod', filename='pretrained_weights.pth', revision='v1')
    """
    body = str(spec)[len(PREFIX) :] if str(spec).startswith(PREFIX) else str(spec)
    body, _, rev = body.partition("@")
    parts = [p for p in body.split("/") if p]
    if len(parts) < 2 or (_ and not rev):
        raise HubError(f"{spec!r}: give Hub weights as hub:ORG/NAME[/FILE][@REVISION], e.g. hub:{RELEASED['cbramod']}")
    return HubSpec("/".join(parts[:2]), "/".join(parts[2:]) or None, rev or None)


def offline_mode() -> bool:
    """Whether only the local cache may be used (``HF_HUB_OFFLINE`` or ``NEUROKIT_OFFLINE`` set to a true value:
    ``1``, ``true``, ``yes`` or ``on``), read at call time.

    Returns
    -------
    bool

    Examples
    --------
    >>> isinstance(offline_mode(), bool)
    True
    """
    return any(
        os.environ.get(k, "").strip().lower() in ("1", "true", "yes", "on")
        for k in ("HF_HUB_OFFLINE", "NEUROKIT_OFFLINE")
    )


def hub_cache_dir(cache_dir: str | Path | None = None) -> Path:
    """The Hub cache folder (read at call time, so a changed environment is honoured).

    Parameters
    ----------
    cache_dir : str or Path, optional
        Wins when given; else ``$HF_HUB_CACHE``, ``$HF_HOME/hub`` or ``~/.cache/huggingface/hub``.

    Returns
    -------
    Path
        With ``~`` expanded.

    Examples
    --------
    >>> hub_cache_dir("/tmp/hub").as_posix()
    '/tmp/hub'
    """
    if cache_dir:
        return Path(cache_dir).expanduser()
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def _pick_file(files: list[str], spec: HubSpec) -> str:
    weights = sorted(f for f in files if f.endswith(WEIGHT_SUFFIXES))
    if len(weights) == 1:
        return weights[0]
    tensors_only = [f for f in weights if f.endswith(".safetensors")]
    if len(tensors_only) == 1:  # the same weights in safetensors and pickle form: the file that cannot run code
        return tensors_only[0]
    for name in PREFERRED:
        if name in weights:
            return name
    raise HubError(
        f"{spec}: {'no' if not weights else 'several'} weights file(s) in the repository "
        f"({weights or sorted(files)[:10]}); name one: hub:{spec.repo_id}/FILE"
    )


def _list_files(spec: HubSpec, cache: Path, offline: bool) -> list[str]:
    if offline:  # the cached snapshot of the revision, as huggingface_hub resolves it (refs, commit hashes)
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import LocalEntryNotFoundError

        try:
            snap = Path(
                snapshot_download(spec.repo_id, revision=spec.revision, cache_dir=str(cache), local_files_only=True)
            )
        except (LocalEntryNotFoundError, FileNotFoundError, ValueError) as exc:
            raise HubError(
                f"{spec}: not in the Hub cache {cache} and offline mode is on (HF_HUB_OFFLINE/NEUROKIT_OFFLINE); "
                "fetch it once online, or copy a cache that holds it"
            ) from exc
        return [p.relative_to(snap).as_posix() for p in snap.rglob("*") if p.is_file()]
    from huggingface_hub import HfApi

    try:
        return HfApi().list_repo_files(spec.repo_id, revision=spec.revision)
    except Exception as exc:  # network, unknown repository or revision
        raise HubError(f"{spec}: cannot list the repository's files ({type(exc).__name__}: {exc})") from exc


@fill_doc
def resolve_hub(
    spec: str | HubSpec, *, cache_dir: str | Path | None = None, offline: bool | None = None, sha256: str | None = None
) -> tuple[Path, dict[str, Any]]:
    """The local file of Hub weights, downloaded into the cache if needed (and allowed).

    Parameters
    ----------
    spec : str or HubSpec
        ``hub:ORG/NAME[/FILE][@REVISION]``. Without a file, the repository's only weights file (or
        ``model.safetensors`` / ``pretrained_weights.pth`` / ``pytorch_model.bin``; a single ``.safetensors``
        file is preferred to pickle-based ones, since it cannot run code).
    %(hub_cache)s
    %(hub_offline)s
    %(hub_sha256)s

    Returns
    -------
    path : Path
        The file inside the cache's snapshot of the resolved commit.
    info : dict
        ``name`` (the spec), ``repo_id``, ``filename``, ``revision`` (as asked, ``None`` = default
        branch), ``commit`` (hash it resolved to), ``sha256``, ``hash_checked_against`` (``"given"``,
        ``"lfs"`` or ``None``).

    Raises
    ------
    HubError
        Bad spec; unknown repository, revision or file; not cached while offline; hash mismatch.
    """
    from neurokit._utils.hashing import file_sha256

    hs = spec if isinstance(spec, HubSpec) else parse_hub_spec(spec)
    cache = hub_cache_dir(cache_dir)
    offline = offline_mode() if offline is None else offline
    filename = hs.filename or _pick_file(_list_files(hs, cache, offline), hs)
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import (
        EntryNotFoundError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        local = Path(
            hf_hub_download(hs.repo_id, filename, revision=hs.revision, cache_dir=str(cache), local_files_only=offline)
        )
    except LocalEntryNotFoundError as exc:
        raise HubError(
            f"{hs}: {filename} is not in the Hub cache {cache}"
            + (
                " and offline mode is on (HF_HUB_OFFLINE/NEUROKIT_OFFLINE); fetch it once online, or copy a cache that holds it"
                if offline
                else f" and could not be downloaded ({exc})"
            )
        ) from exc
    except RevisionNotFoundError as exc:
        raise HubError(f"{hs}: no revision {hs.revision!r} in {hs.repo_id}") from exc
    except EntryNotFoundError as exc:
        raise HubError(f"{hs}: no file {filename!r} in {hs.repo_id}") from exc
    except RepositoryNotFoundError as exc:
        raise HubError(f"{hs}: no repository {hs.repo_id!r} on the Hub (or it is private)") from exc
    snap = local
    for _ in Path(filename).parts:
        snap = snap.parent
    commit = snap.name
    digest = file_sha256(local)
    blob = Path(os.path.realpath(local)).name
    checked = None
    if sha256:
        checked = "given"
        if digest != sha256.lower():
            raise HubError(
                f"{local}: SHA-256 {digest} differs from the expected {sha256.lower()} ({hs}); the cached file "
                "is damaged or not the release you pinned"
            )
    elif _SHA256.match(blob):
        checked = "lfs"
        if digest != blob:
            raise HubError(
                f"{local}: SHA-256 {digest} differs from its Git LFS object id {blob} ({hs}); the cached file is "
                f"damaged: delete {Path(os.path.realpath(local))} and fetch it again"
            )
    info = {
        "name": str(hs),
        "repo_id": hs.repo_id,
        "filename": filename,
        "revision": hs.revision,
        "commit": commit,
        "sha256": digest,
        "hash_checked_against": checked,
    }
    return local, info


@fill_doc
def fetch_weights(
    name: str | Path,
    *,
    revision: str | None = None,
    sha256: str | None = None,
    cache_dir: str | Path | None = None,
    offline: bool | None = None,
) -> tuple[Path, dict[str, Any]]:
    """A weights file named by ``hub:ORG/NAME…``, a bare ``ORG/NAME`` that is no local path, or a local path.

    A bare ``ORG/NAME`` is a Hub repository only when it cannot be a local file: no such path, no weights-file
    suffix (``runs/nope.pt`` is a mistyped path) and no existing parent folder.

    Parameters
    ----------
    name : str or Path
        The weights: Hub name or local file.
    %(hub_options)s

    Returns
    -------
    path : Path
        The local file (in the Hub cache for Hub weights).
    info : dict
        As :func:`resolve_hub` for Hub weights; for a local file ``name``, ``sha256`` and
        ``hash_checked_against`` (``"given"`` or ``None``).

    Raises
    ------
    FileNotFoundError
        No such local file, or a folder.
    HubError
        Hub name not resolvable (:func:`resolve_hub`), or a SHA-256 that differs from ``sha256``.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "w.pt"); open(p, "wb").close()
    >>> fetch_weights(p)[1]["sha256"][:12]
    'e3b0c44298fc'
    """
    from neurokit._utils.hashing import file_sha256

    text = str(name)
    local = Path(text).expanduser()
    # a bare ORG/NAME is a Hub repository only when it cannot be a local file: no such path, no weights-file
    # suffix (``runs/nope.pt`` is a mistyped path) and no existing parent folder
    looks_local = (
        local.suffix.lower() in WEIGHT_SUFFIXES or local.parent.is_dir() and str(local.parent) not in ("", ".")
    )
    if is_hub_spec(text) or (not local.exists() and not looks_local and re.fullmatch(r"[\w.-]+/[\w.-]+(@.+)?", text)):
        hs = parse_hub_spec(text)
        if revision:
            hs.revision = revision
        return resolve_hub(hs, cache_dir=cache_dir, offline=offline, sha256=sha256)
    path = local
    if path.is_dir():
        raise FileNotFoundError(
            f"{path}: is a folder, not a weights file (give the file inside, e.g. {path / 'last.pt'})"
        )
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such weights file (Hub weights: hub:ORG/NAME[@REVISION])")
    digest = file_sha256(path)
    if sha256 and digest != sha256.lower():
        raise HubError(f"{path}: SHA-256 {digest} differs from the expected {sha256.lower()}")
    return path, {"name": str(path), "sha256": digest, "hash_checked_against": "given" if sha256 else None}


def load_pretrained_into(model, name: str | Path, *, allow_partial: bool = False, **kw) -> dict[str, Any]:
    """Load the weights ``name`` into ``model`` in place, refusing files that do not cover the model.

    Parameters
    ----------
    model : nn.Module
        The module to fill.
    name : str or Path
        Hub name or local file (:func:`fetch_weights`).
    allow_partial : bool
        Accept weights that cover only part of the model (shapes must still match).
    **kw
        :func:`fetch_weights` options (``revision``, ``sha256``, ``cache_dir``, ``offline``).

    Returns
    -------
    dict
        The :func:`fetch_weights` info plus ``loaded``, ``total``, ``missing`` and ``unexpected``.

    Raises
    ------
    HubError
        Tensors of another shape, or (without ``allow_partial``) missing or unexpected tensors.
    FileNotFoundError
        No such local file.

    Examples
    --------
    >>> import torch, tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "w.pt"); torch.save(torch.nn.Linear(2, 2).state_dict(), p)
    >>> load_pretrained_into(torch.nn.Linear(2, 2), p)["loaded"]
    2
    """
    from neurokit.models.checkpoint import load_checkpoint

    path, info = fetch_weights(name, **kw)
    sd = load_checkpoint(path)["state_dict"]
    own = model.state_dict()
    missing = [k for k in own if k not in sd]
    unexpected = [k for k in sd if k not in own]
    bad = [
        f"{k}: file {tuple(v.shape)}, model {tuple(own[k].shape)}"
        for k, v in sd.items()
        if k in own and v.shape != own[k].shape
    ]
    if bad or ((missing or unexpected) and not allow_partial):
        raise HubError(
            f"{info['name']}: covers {len(own) - len(missing)}/{len(own)} model tensors (missing {missing[:4]}, "
            f"unexpected {unexpected[:4]}{', shapes differ: ' + '; '.join(bad[:3]) if bad else ''}); these are "
            "weights of another configuration (pass the matching n_layers= and other sizes, or allow_partial=True)"
        )
    model.load_state_dict({k: v for k, v in sd.items() if k in own}, strict=False)
    return {**info, "loaded": len(own) - len(missing), "total": len(own), "missing": missing, "unexpected": unexpected}
