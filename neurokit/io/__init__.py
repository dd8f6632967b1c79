"""Readers and writers of files: EEG through MNE (:mod:`~neurokit.io.eeg`, headers, BIDS, clinical archives),
cortical-surface data through nibabel (:mod:`~neurokit.io.surface`), the HDF5 patch store and shard sets
(:mod:`~neurokit.io.store`, :mod:`~neurokit.io.shards`) and :class:`~neurokit.io.entry.FileEntry`."""
