"""Dataset readers: one module per dataset family (TUH, CHB-MIT, ISRUC, Mumtaz, BCIC-IV-2a, FACED, SEED-V,
SHU-MI, SEED-VIG, BCIC2020-3, and the Bonn/SMNI/EEGMAT readers of :mod:`~neurokit.datasets.classic`), each listing
a dataset's recordings and reading one into an :class:`mne.io.Raw` in volts with labelled annotations. Readers
only read; every processing step lives in the card's recipe. :mod:`~neurokit.datasets.registry` names them all."""
