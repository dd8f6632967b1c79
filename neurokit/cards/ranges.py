"""Subject numbers as cards and options write them: ``"1-70"``, ``"1-3,7"``."""

from __future__ import annotations

import re

from neurokit._utils.errors import CardError

#: the most subjects one range may name (a typo such as ``1-30000000`` would otherwise fill memory)
MAX_SUBJECTS = 1_000_000


def parse_ranges(spec: str | int | list) -> list[int]:
    """``"1-70"``, ``"1-3,7"``, ``5`` or ``[1, 2]`` → sorted list of ints.

    Parameters
    ----------
    spec : str | int | list of int
        Comma-separated numbers and inclusive ranges ``a-b``, one number, or a list of numbers.

    Returns
    -------
    list of int
        The subject numbers, sorted, without repeats.

    Raises
    ------
    CardError
        A part that is not a number or ``a-b``, a range that runs backwards (``3-1``), no subject at all (``""``),
        or more than :data:`MAX_SUBJECTS` subjects.

    Examples
    --------
    >>> parse_ranges("1-3,7"), parse_ranges(5), parse_ranges([2, 1, 2])
    ([1, 2, 3, 7], [5], [1, 2])
    """
    if isinstance(spec, int):
        return [spec]
    if isinstance(spec, (list, tuple)):
        return sorted({int(s) for s in spec})
    out: set[int] = set()
    for part in str(spec).split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"([0-9]+)\s*-\s*([0-9]+)", part)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo:
                raise CardError(f"subject range {part!r} runs backwards (did you mean '{hi}-{lo}'?)")
            if hi - lo + 1 + len(out) > MAX_SUBJECTS:
                raise CardError(f"subject range {part!r} names {hi - lo + 1:,} subjects (at most {MAX_SUBJECTS:,})")
            out.update(range(lo, hi + 1))
        elif re.fullmatch(r"[0-9]+", part):
            out.add(int(part))
        else:
            raise CardError(f"cannot parse subject range {part!r} (use e.g. '1-70' or '1,3,5')")
    if not out:
        raise CardError(f"no subject in {str(spec)!r} (use e.g. '1-70' or '1,3,5')")
    return sorted(out)


def format_ranges(numbers) -> str:
    """``[1, 2, 3, 7, 9, 10]`` → ``"1-3,7,9-10"``: the inverse of :func:`parse_ranges`, for messages.

    Parameters
    ----------
    numbers : iterable of int
        Subject numbers, in any order, repeats allowed.

    Returns
    -------
    str
        Runs of consecutive numbers written ``a-b``, joined by commas; ``""`` for no number.

    Examples
    --------
    >>> format_ranges([10, 1, 2, 3, 7, 9])
    '1-3,7,9-10'
    """
    nums = sorted({int(n) for n in numbers})
    parts, i = [], 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        parts.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ",".join(parts)


def parse_subject_selection(spec: str) -> list:
    """``--subjects`` of ``neuro prepare``: numbers and ranges (``"1-70,75"`` → ``[1, …, 70, 75]``, matched against
    the first number in each subject id), or subject ids as the layout names them (``"aaaaaaab,chb01"``, matched
    exactly: TUH patients, CHB-MIT cases, BIDS labels with their zeros); both kinds may be mixed.

    Parameters
    ----------
    spec : str
        Comma-separated numbers, ranges ``a-b`` and subject ids.

    Returns
    -------
    list of int and str
        The numbers (sorted, :func:`parse_ranges`) followed by the ids in the order given.

    Raises
    ------
    CardError
        As :func:`parse_ranges` for the numeric parts; nothing selected.

    Examples
    --------
    >>> parse_subject_selection("1-3,chb21")
    [1, 2, 3, 'chb21']
    """
    parts = [p.strip() for p in str(spec).split(",") if p.strip()]
    numeric = [p for p in parts if re.fullmatch(r"[0-9]+(\s*-\s*[0-9]+)?", p)]
    ids = [p for p in parts if p not in numeric]
    out: list = parse_ranges(",".join(numeric)) if numeric else []
    if not out and not ids:
        raise CardError(f"no subject in {str(spec)!r} (use e.g. '1-70', '1,3,5' or subject ids 'aaaaaaab,chb01')")
    return out + ids
