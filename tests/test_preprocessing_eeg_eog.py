"""EOG artefact removal and channel exclusion in the EEG recipe (neurokit.preprocessing.eeg.eog): recipe
checks, regression with a real EOG channel and ICA with frontal proxies on a synthetic recording whose eye
movements are planted with known weights, and the provenance written per file."""

import numpy as np
import pytest
from edf_build import write_edf

from neurokit._utils.errors import ChannelMismatchError, ConfigError, DataFileError
from neurokit.cards.recipes import EEGRecipe
from neurokit.io.notes import raw_notes

EEG = ["Fp1", "Fp2", "F7", "F8", "C3", "C4", "P3", "P4"]
#: horizontal-EOG weight of each EEG channel (F8 positive, F7 negative: the pattern of a gaze to the right)
WEIGHTS = np.array([0.1, 0.1, -0.4, 0.4, 0.05, -0.05, 0.0, 0.0])
SF, DUR, SEG = 200, 80, 2.0


def _recording(tmp_path, with_eog: bool, name="rec.edf"):
    """80 s at 200 Hz: 8 EEG channels = independent non-Gaussian 'brain' sources, a level per channel and second
    (N(0, 5 µV)) and white noise, + WEIGHTS × h, where h (µV)
    jumps between −60 (gaze left, annotated T1) and +60 (gaze right, T2) every 2 s in a fixed random order;
    optionally an HEOG channel recording h. Returns the path and the class of each 2-s segment."""
    rng = np.random.default_rng(0)
    t = np.arange(SF * DUR) / SF
    side = rng.integers(0, 2, int(DUR / SEG))
    h = np.repeat(np.where(side == 1, 60.0, -60.0), int(SEG * SF))
    brain = np.stack(
        [np.sin(2 * np.pi * f * t + k) * 10 for k, f in enumerate((6, 9, 11, 13, 17, 21))]
        + [rng.laplace(0, 5, len(t)), rng.laplace(0, 5, len(t))]
    )
    mix = rng.normal(0, 1, (8, 8)) + 2 * np.eye(8)
    drift = np.repeat(rng.normal(0, 5, (8, DUR)), SF, axis=1)  # slow activity: a level per channel and second
    eeg = mix @ brain / 3 + WEIGHTS[:, None] * h + drift + rng.normal(0, 1, (8, len(t)))
    data, labels = (np.vstack([eeg, h + rng.normal(0, 1, len(t))]), EEG + ["HEOG"]) if with_eog else (eeg, EEG)
    ann = [(i * SEG, "T2" if s else "T1") for i, s in enumerate(side)]
    return write_edf(tmp_path / name, data, SF, labels, annotations=ann), side


def _recipe(**kw):
    base = dict(
        sfreq=200.0,
        l_freq=0.1,
        h_freq=None,
        line_freq=None,
        reference="average",
        window_s=1.0,
        events={"T1": 0, "T2": 1},
    )
    return EEGRecipe.from_dict({**base, **kw})


def _hdiff_auroc(w):
    """AUROC of the window mean of F8 − F7 for the two gaze sides."""
    from sklearn.metrics import roc_auc_score

    x = w.patches.reshape(len(w.labels), len(w.ch_names), -1)
    d = (x[:, w.ch_names.index("F8")] - x[:, w.ch_names.index("F7")]).mean(axis=1)
    return roc_auc_score(w.labels, d)


def test_recipe_options_are_checked_and_stored_only_when_set():
    with pytest.raises(ConfigError, match="eog_removal='pca': allowed values are none, ica, regression"):
        _recipe(eog_removal="pca")
    with pytest.raises(ConfigError, match="eog_channels applies only with eog_removal: ica or regression"):
        _recipe(eog_channels=["Fp1"])
    with pytest.raises(ConfigError, match="eog_removal: regression needs reference: average"):
        _recipe(eog_removal="regression", reference=None)
    with pytest.raises(ConfigError, match=r"exclude_channels=\'F7\': give a list of channel names"):
        _recipe(exclude_channels="F7")
    with pytest.raises(ConfigError, match=r"exclude_channels \['F7'\] are not in the recipe's channels"):
        _recipe(channels=["C3", "C4"], exclude_channels=["F7"])
    # the defaults are not written: a recipe without the options reads (and compares) as before them
    assert not {"eog_removal", "eog_channels", "exclude_channels"} & set(_recipe().to_dict())
    d = _recipe(eog_removal="ica", eog_channels=["F8-F7"], exclude_channels=["F7", "F8"]).to_dict()
    assert (d["eog_removal"], d["eog_channels"], d["exclude_channels"]) == ("ica", ["F8-F7"], ["F7", "F8"])
    assert EEGRecipe.from_dict(d).to_dict() == d


def test_regression_with_a_real_eog_channel(tmp_path):
    from neurokit.preprocessing.eeg.windows import load_windows

    path, _ = _recording(tmp_path, with_eog=True)
    before = load_windows(path, _recipe())  # HEOG is not EEG: not read without eog_removal
    after = load_windows(path, _recipe(eog_removal="regression"))
    assert before.ch_names == after.ch_names == EEG  # the EOG channel is dropped after use
    assert _hdiff_auroc(before) > 0.95  # the planted step separates the sides (measured 0.98)
    assert abs(_hdiff_auroc(after) - 0.5) < 0.1  # measured 0.49: no trace of the step
    # what was applied, for the store's sources: the coefficient found is the planted weight after the
    # average reference, max |w − mean(w)| = |−0.4 − 0.025| = 0.425
    import neurokit
    from neurokit.preprocessing.eeg.windows import preprocess_raw

    raw = preprocess_raw(neurokit.read_eeg(path, eeg_only=False), _recipe(eog_removal="regression"))
    done = raw_notes(raw).applied["eog_removal"]
    assert done["method"] == "regression" and done["eog_channels"] == ["HEOG"]
    assert done["max_abs_coef"]["HEOG"] == pytest.approx(0.425, rel=0.03)  # measured 0.430


def test_regression_without_eog_channels_is_refused(tmp_path):
    from neurokit.preprocessing.eeg.windows import load_windows

    path, _ = _recording(tmp_path, with_eog=False)
    with pytest.raises(
        DataFileError,
        match="rec.edf: eog_removal: regression needs real EOG channels .* it has no "
        "EOG channel; regressing frontal EEG channels would remove brain signal",
    ):
        load_windows(path, _recipe(eog_removal="regression"))
    with pytest.raises(DataFileError, match=r"\['Fp1'\] are not EOG channels"):
        load_windows(path, _recipe(eog_removal="regression", eog_channels=["Fp1"]))


def test_ica_with_frontal_proxies_is_deterministic(tmp_path):
    from neurokit.preprocessing.eeg.windows import load_windows

    path, _ = _recording(tmp_path, with_eog=False)
    rec = _recipe(eog_removal="ica")
    a, b = load_windows(path, rec), load_windows(path, rec)
    np.testing.assert_array_equal(a.patches, b.patches)  # FastICA from a fixed random state
    assert a.ch_names == EEG and _hdiff_auroc(load_windows(path, _recipe())) > 0.95
    assert abs(_hdiff_auroc(a) - 0.5) < 0.1  # measured 0.44
    import neurokit
    from neurokit.preprocessing.eeg.windows import preprocess_raw

    done = raw_notes(preprocess_raw(neurokit.read_eeg(path), rec)).applied["eog_removal"]
    # 7 components (8 channels, average reference); one has the planted pattern: |r| 0.96 with F8 − F7
    assert done["eog_channels"] == ["F8-F7", "Fp1", "Fp2"] and done["n_components"] == 7
    assert len(done["components_removed"]) == 1 and done["scores"]["F8-F7"][0] > 0.9


def test_exclude_channels(tmp_path):
    from neurokit.preprocessing.eeg.windows import load_windows

    path, _ = _recording(tmp_path, with_eog=False)
    w = load_windows(path, _recipe(exclude_channels=["F7", "F8"]))
    assert w.ch_names == ["Fp1", "Fp2", "C3", "C4", "P3", "P4"]
    ref = load_windows(path, _recipe())  # dropped after the reference: the other channels are unchanged
    np.testing.assert_array_equal(w.patches, ref.patches[:, [0, 1, 4, 5, 6, 7]])
    with pytest.raises(ChannelMismatchError, match=r"rec.edf: exclude_channels names \['T7'\], not in the recording"):
        load_windows(path, _recipe(exclude_channels=["T7"]))
    with pytest.raises(ChannelMismatchError, match="eog_channels names 'HEOG', which is neither a channel"):
        load_windows(path, _recipe(eog_removal="ica", eog_channels=["HEOG"]))


def test_long_recordings_are_not_streamed_with_eog_removal_or_exclusion(tmp_path):
    """ICA and the regression fit the whole recording, and the streamed path would not drop channels: such
    recipes process every recording in memory."""
    import neurokit
    from neurokit.preprocessing.eeg.stream import streamable

    path, _ = _recording(tmp_path, with_eog=False)
    raw = neurokit.read_eeg(path)
    assert streamable(raw, _recipe(), 0)  # any size above 0 bytes streams
    assert not streamable(raw, _recipe(eog_removal="ica"), 0)
    assert not streamable(raw, _recipe(exclude_channels=["F7"]), 0)
