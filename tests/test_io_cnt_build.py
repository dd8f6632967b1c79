"""The test-side Neuroscan ``.cnt`` writer (``tests/cnt_build.py``, issue 37) against MNE's reader: 16- and 32-bit
files come back from :func:`mne.io.read_raw_cnt` (``data_format`` given or ``'auto'``, as the SEED-V release
calls it) with the labels, rate, counts × MNE's calibration, events and bad flags that were written."""

from __future__ import annotations

import mne
import numpy as np
import pytest

from tests.cnt_build import RESOLUTION_UV, volts_per_count, write_cnt

NAMES = ["FP1", "FPZ", "CB2", "M1", "VEO", "HEO"]


@pytest.mark.parametrize("fmt", ["int16", "int32"])
@pytest.mark.parametrize("asked", ["auto", "given"])
def test_round_trip(tmp_path, fmt, asked):
    rng = np.random.default_rng(7)
    uv = rng.normal(size=(len(NAMES), 1234)) * 40.0
    uv[2, :3] = [0.0, 1000.0, -1000.0]
    p = tmp_path / "x.cnt"
    want = write_cnt(p, uv, 1000, NAMES, data_format=fmt, baselines=[0, 3, -7, 0, 100, -1], events=[(0, 1), (500, 4)])
    raw = mne.io.read_raw_cnt(p, data_format=fmt if asked == "given" else "auto", preload=True, verbose="error")
    assert raw.ch_names == NAMES and raw.info["sfreq"] == 1000.0 and raw.n_times == 1234
    assert raw.info["bads"] == []
    got = raw.get_data()
    np.testing.assert_array_equal(got, want)  # counts minus baseline × the same calibration, bit for bit
    step = volts_per_count(RESOLUTION_UV[fmt])
    assert np.abs(got - uv * 1e-6).max() <= step / 2 * (1 + 1e-9)  # the µV written, to half a count
    assert got[2, 1] == pytest.approx(1000e-6, abs=step)
    np.testing.assert_allclose(raw.annotations.onset, [0.0, 0.5])
    assert list(raw.annotations.description) == ["1", "4"]
    assert str(raw.info["meas_date"]).startswith("2018-08-04")


def test_scale_bad_flag_and_file_size(tmp_path):
    p = tmp_path / "y.cnt"
    want = write_cnt(p, [[1.0, -2.0, 3.0]] * 2, 200, ["C3", "C4"], data_format="int16", resolution_uv=0.5, bads=["C4"])
    assert p.stat().st_size == 900 + 2 * 75 + 3 * 2 * 2 + 9  # SETUP, ELECTLOC, counts, empty TEEG
    raw = mne.io.read_raw_cnt(p, preload=True, verbose="error")
    assert raw.info["bads"] == ["C4"] and raw.info["sfreq"] == 200.0
    np.testing.assert_allclose(raw.get_data(units="uV")[0], [1.0, -2.0, 3.0], rtol=1e-6)
    np.testing.assert_array_equal(raw.get_data(), want)
    with pytest.raises(ValueError, match="int16 range"):
        write_cnt(p, [[4000.0]], 200, ["C3"], data_format="int16")
