"""Parameter descriptions shared by the docstrings of :mod:`neurokit.kernels` (filled in by :data:`fill_doc`).

A docstring names an entry by a line ``%(name)s`` in its ``Parameters`` section
(:func:`neurokit._utils.docs.make_fill_doc`); :mod:`neurokit.models.docs` reuses these entries.
"""

from __future__ import annotations

from neurokit._utils.docs import make_fill_doc

#: entry name → numpydoc parameter text
docdict: dict[str, str] = {}

docdict["qkv"] = """
q, k, v : Tensor, shape ``(B, C, N, H, d)``
    Queries, keys and values of every token (batch ``B``, channel ``c`` of ``C``, patch ``n`` of ``N``) and
    head (``H`` heads of width ``d``), in the model's feature units; any strides (views into a fused
    ``(B, C, N, 3, H, d)`` projection are fine). One shape, dtype and device for the three.
"""

docdict["heads_s"] = """
heads_s : int
    Number of spatial heads, ``0 ≤ heads_s ≤ H``: heads ``0 … heads_s-1`` attend over the ``C`` channels of
    each patch, heads ``heads_s … H-1`` over the ``N`` patches of each channel.
"""

docdict["dropout_p"] = """
dropout_p : float
    Dropout probability on the attention weights, in ``[0, 1)`` (pass 0.0 in eval mode).
"""

docdict["scale"] = """
scale : float, optional
    Softmax scale; default ``1/sqrt(d)``.
"""

docdict["spec"] = """
spec : Specialisation
    The launch: pass, dtype and sequence lengths (:func:`~neurokit.kernels.triton_compile.cbramod_specialisations`).
"""

docdict["arch"] = """
arch : int
    Compute capability of the target GPU: 80 (A100, ``sm_80``) or 90 (H100/H200, ``sm_90``).
"""

#: the decorator that fills ``%(name)s`` lines from :data:`docdict`
fill_doc = make_fill_doc(docdict)
