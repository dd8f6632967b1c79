"""File formats: EEG through MNE (:mod:`~neurokit.io.eeg`), EDF/BDF/BrainVision headers (:mod:`~neurokit.io.headers`),
BIDS through mne-bids (:mod:`~neurokit.io.bids`), MATLAB files (:mod:`~neurokit.io.matlab`), cortical-surface data
through nibabel (:mod:`~neurokit.io.surface`), a recording's notes (:mod:`~neurokit.io.notes`) and
:class:`~neurokit.io.entry.FileEntry`. Dataset readers are in :mod:`neurokit.datasets`, the patch store in
:mod:`neurokit.store`."""
