"""EEG preprocessing: a ``Raw`` through the card's :class:`~neurokit.cards.recipes.EEGRecipe` (channels,
reference, filters, resampling: :mod:`~neurokit.preprocessing.eeg.windows`, batched filters in
:mod:`~neurokit.preprocessing.eeg.filtering`, long recordings streamed by :mod:`~neurokit.preprocessing.eeg.stream`)
into ``(C, N, 200)`` windows, and a card's recordings into a patch store (:mod:`~neurokit.preprocessing.eeg.prepare`)."""

from neurokit.cards.recipes import EEGRecipe
from neurokit.preprocessing.eeg.windows import (
    Windows,
    load_windows,
    make_windows,
    preprocess_raw,
)

__all__ = ["EEGRecipe", "Windows", "load_windows", "make_windows", "preprocess_raw"]
