"""Where signals live: EEG sensor names and the 10-05 montage (:mod:`~neurokit.geometry.channels`), the
icosahedral sphere (:mod:`~neurokit.geometry.icosphere`) and its patch tables (:mod:`~neurokit.geometry.patches`).
Pure geometry: no file is read here."""
