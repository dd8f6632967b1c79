"""Recordings compared by content before a store is written (both preparers): the same file given twice is read
once, identical recordings (same SHA-256) under different subjects are refused unless kept on purpose.

A file reached by two names (a repeated ``-f`` path, two spellings, a symbolic or hard link) is one file: the
second is dropped with a warning. Files of equal size are hashed (:func:`~neurokit._utils.hashing.file_sha256`),
and those of equal SHA-256 (and archive member) are one recording: under the same subject it is read once, with a
warning; under different subjects (a copy filed as another person, which would put one recording in two splits)
the preparation stops, naming both files, unless ``allow_duplicate_recordings`` keeps them, and the store then
records them in its ``duplicate_recordings`` attribute.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Callable, Sequence, TypeVar

from neurokit._utils.errors import DataFileError
from neurokit._utils.hashing import file_sha256

logger = logging.getLogger("neurokit")

T = TypeVar("T")


def unique_recordings(
    items: Sequence[T],
    ids: Callable[[T], tuple[Path, str, str]],
    *,
    allow_duplicates: bool = False,
) -> tuple[list[T], list[dict], dict[str, str]]:
    """``items`` without a second reading of one file or of one recording's content.

    Parameters
    ----------
    items : sequence
        The recordings to prepare, in order (EEG :class:`~neurokit.io.entry.FileEntry`, surface ``(path, meta)``).
    ids : callable
        ``item -> (path, archive member or "", subject)``.
    allow_duplicates : bool
        Keep identical recordings under different subjects (CLI ``--allow-duplicate-recordings``).

    Returns
    -------
    (kept, duplicates, hashes)
        ``kept``: the items to read, in order; ``duplicates``: one ``{"sha256", "member", "files", "subjects"}`` per
        recording kept under several subjects (``[]`` without ``allow_duplicates``); ``hashes``: resolved path →
        SHA-256 of each file hashed here (the preparer records it without hashing again).

    Raises
    ------
    DataFileError
        Identical recordings under different subjects, without ``allow_duplicates`` (naming both files and
        subjects, and the option).

    Examples
    --------
    >>> kept, dups, _ = unique_recordings(entries, lambda e: (e.path, e.member, e.subject))  # doctest: +SKIP
    """
    kept: list[T] = []
    seen: dict[tuple, tuple[Path, str]] = {}  # (device, inode, member) → (path, subject) first given
    for it in items:
        path, member, subject = ids(it)
        try:
            st = os.stat(path)
            key: tuple = (st.st_dev, st.st_ino, member)
        except OSError:  # a missing file: the reader says so
            key = (str(Path(path).absolute()), member)
        if key in seen:
            first, first_subject = seen[key]
            how = "the same path" if Path(first) == Path(path) else "the same file by another name"
            logger.warning(
                "%s%s: %s as %s%s (subject %s); read once, as subject %s",
                path,
                f"[{member}]" if member else "",
                how,
                first,
                f"[{member}]" if member else "",
                subject,
                first_subject,
            )
            continue
        seen[key] = (Path(path), subject)
        kept.append(it)
    # equal content: only files of equal size can be, so only those are hashed
    sizes: dict[int, list[T]] = {}
    for it in kept:
        try:
            sizes.setdefault(os.path.getsize(ids(it)[0]), []).append(it)
        except OSError:
            continue
    hashes: dict[str, str] = {}
    groups: dict[tuple[str, str], list[T]] = {}
    for same_size in sizes.values():
        paths = {str(Path(ids(it)[0]).resolve()) for it in same_size}
        if len(same_size) < 2 or len(paths) < 2:
            continue
        for it in same_size:
            path, member, _ = ids(it)
            res = str(Path(path).resolve())
            if res not in hashes:
                hashes[res] = file_sha256(path)
            groups.setdefault((hashes[res], member), []).append(it)
    drop: set[int] = set()
    duplicates: list[dict] = []
    for (sha, member), group in groups.items():
        if len(group) < 2:
            continue
        subjects = list(dict.fromkeys(ids(it)[2] for it in group))
        files = [str(ids(it)[0]) + (f"[{member}]" if member else "") for it in group]
        if len(subjects) > 1:
            if not allow_duplicates:
                a, b = group[0], next(it for it in group if ids(it)[2] != ids(group[0])[2])
                raise DataFileError(
                    f"{ids(a)[0]} (subject {ids(a)[2]}) and {ids(b)[0]} (subject {ids(b)[2]}) hold the same "
                    f"recording (SHA-256 {sha[:12]}…{', member ' + member if member else ''}); one recording under "
                    "two subjects would be trained and tested on. Leave the copy out, or keep both on purpose "
                    "with --allow-duplicate-recordings (recorded in the store)"
                    + (f"; {len(files)} files in all: {', '.join(files)}" if len(files) > 2 else "")
                )
            duplicates.append({"sha256": sha, "member": member, "files": files, "subjects": subjects})
            logger.warning(
                "%s: the same recording (SHA-256 %s…) under subjects %s; kept (--allow-duplicate-recordings)",
                ", ".join(files),
                sha[:12],
                ", ".join(subjects),
            )
            continue
        logger.warning(
            "%s: the same recording (SHA-256 %s…) of subject %s; read once, from %s",
            ", ".join(files),
            sha[:12],
            subjects[0],
            files[0],
        )
        drop.update(id(it) for it in group[1:])
    return [it for it in kept if id(it) not in drop], duplicates, hashes
