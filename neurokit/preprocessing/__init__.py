"""Preprocessing: EEG (:mod:`neurokit.preprocessing.eeg`) and cortical-surface fMRI
(:mod:`neurokit.preprocessing.surface`), each from a recipe to a patch store, in the same shape."""
