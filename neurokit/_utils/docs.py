"""Shared parameter text in docstrings (as MNE's ``fill_doc``): a package keeps the description of a parameter
that recurs across its functions once, in a dictionary, and its docstrings name it by a line ``%(name)s``.

The placeholder stands alone on its line, inside a literal ``Parameters`` (or ``Attributes``) section, so a
reader of the source sees the section and :func:`make_fill_doc`'s decorator puts the entry there when the
module is imported, indented as the placeholder. Text elsewhere in a docstring is left as it is (a ``%`` in
prose needs no escaping).
"""

from __future__ import annotations

import re
import textwrap
from typing import Callable, Mapping, TypeVar

T = TypeVar("T")

#: a line that holds only ``%(name)s``: the indentation and the name
PLACEHOLDER = re.compile(r"^([ \t]*)%\((\w+)\)s[ \t]*$", re.M)


def fill_text(doc: str, docdict: Mapping[str, str]) -> str:
    """``doc`` with every line ``%(name)s`` replaced by ``docdict[name]``, indented as the placeholder.

    Parameters
    ----------
    doc : str
        A docstring, as written in the source.
    docdict : mapping of str to str
        Entry name → numpydoc entry text (``"name : type\\n    Description."``), with or without a common
        indentation and surrounding blank lines (both removed).

    Returns
    -------
    str
        The filled docstring.

    Raises
    ------
    KeyError
        A placeholder names no entry of ``docdict`` (raised at import time, so a misspelt name fails early).

    Examples
    --------
    >>> doc = '''Summary.
    ...
    ...     Parameters
    ...     ----------
    ...     %(device)s
    ...     '''
    >>> print(fill_text(doc, {"device": "device : str\\n    Where to run."}).splitlines()[4:6])
    ['    device : str', '        Where to run.']
    """

    def entry(m: re.Match) -> str:
        indent, name = m.group(1), m.group(2)
        if name not in docdict:
            raise KeyError(f"docstring placeholder %({name})s: no such entry (known: {', '.join(sorted(docdict))})")
        return textwrap.indent(textwrap.dedent(docdict[name]).strip("\n"), indent)

    return PLACEHOLDER.sub(entry, doc)


def make_fill_doc(docdict: Mapping[str, str]) -> Callable[[T], T]:
    """A ``fill_doc`` decorator that fills the ``%(name)s`` lines of a function's or class's docstring from
    ``docdict`` (:func:`fill_text`) and returns the object itself.

    Parameters
    ----------
    docdict : mapping of str to str
        The package's shared entries (read when a decorated object is defined, so entries added later to
        the same dictionary are seen by objects decorated later).

    Returns
    -------
    callable
        The decorator. A docstring of ``None`` (``python -OO``) is left alone.

    Examples
    --------
    >>> fill_doc = make_fill_doc({"x": "x : int\\n    A number."})
    >>> @fill_doc
    ... def f(x):
    ...     '''Identity.
    ...
    ...     Parameters
    ...     ----------
    ...     %(x)s
    ...     '''
    ...     return x
    >>> "A number." in f.__doc__
    True
    """

    def fill_doc(obj: T) -> T:
        doc = getattr(obj, "__doc__", None)
        if doc:
            obj.__doc__ = fill_text(doc, docdict)
        return obj

    return fill_doc
