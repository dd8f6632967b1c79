"""BioSemi BDF Status channel: the triggers are bits 0-15; bits 16-23 hold the amplifier's state (CMS in range,
battery), set in every real recording. Events come from the trigger bits only."""

from __future__ import annotations

import numpy as np

import neurokit
from edf_build import write_edf
from neurokit.cards.recipes import EEGRecipe
from neurokit.preprocessing.eeg.windows import make_windows, preprocess_raw


def test_status_high_bits_are_not_trigger_codes(tmp_path):
    sf = 256
    t = np.arange(30 * sf) / sf
    eeg = 20 * np.sin(2 * np.pi * 10 * t)
    code = np.zeros(t.size)
    for onset, c in [(5, 1), (12, 2), (20, 1), (24, 2)]:
        code[int(onset * sf) : int(onset * sf) + 10] = c
    status = 0xFF0000 | code.astype(np.int64)
    status = np.where(status >= 2**23, status - 2**24, status).astype(float)  # 24-bit two's complement
    f = write_edf(
        tmp_path / "biosemi.bdf",
        np.vstack([eeg, eeg, eeg, status]),
        sf,
        ["C3", "Cz", "C4", "Status"],
        bdf=True,
        plus=None,
        units=["uV"] * 3 + ["Boolean"],
        phys=[(-25, 25)] * 3 + [(-8388608, 8388607)],
    )
    head = bytearray(f.read_bytes())  # the test writer's %g cannot spell ±2^23 in 8 characters: set them here
    head[256 + 4 * 104 + 3 * 8 : 256 + 4 * 104 + 4 * 8] = b"-8388608"
    head[256 + 4 * 112 + 3 * 8 : 256 + 4 * 112 + 4 * 8] = b"8388607 "
    f.write_bytes(bytes(head))
    raw = neurokit.read_eeg(f)
    rec = EEGRecipe(l_freq=None, h_freq=None, line_freq=None, window_s=1.0, events={"1": 0, "2": 1})
    raw = preprocess_raw(raw, rec)
    w = make_windows(raw, rec)
    np.testing.assert_allclose(w.onsets, [5, 12, 20, 24], atol=1 / 200)
    np.testing.assert_array_equal(w.labels, [0, 1, 0, 1])
