"""Dataset readers: one module per dataset family (TUH, CHB-MIT, ISRUC, Mumtaz, BCIC-IV-2a, FACED, SEED-V,
SHU-MI, SEED-VIG, BCIC2020-3, and the Bonn/SMNI/EEGMAT readers of :mod:`~neurokit.datasets.classic`), each listing
a dataset's recordings and reading one into an :class:`mne.io.Raw` in volts with labelled annotations.
:mod:`~neurokit.datasets.registry` names them all. Readers read; every processing step is the card's recipe, but for
three that the CBraMod release applies per trial on µV before its own windows and that a recipe step on volts cannot
reproduce bit for bit (BCIC-IV-2a's per-trial reference and band-pass, FACED's per-clip and SEED-V's per-recording
resampling): they stay in their readers, and their cards say so."""
