"""Readers: EEG through MNE, cortical-surface data through nibabel."""
