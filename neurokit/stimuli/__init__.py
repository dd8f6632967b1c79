"""Movie stimuli: video and audio readers, 3-s / 1-s-hop windows, frozen open_clip towers, stimulus stores.

``embed_stimuli(movie, "stim.h5")`` (CLI ``neuro embed-stimuli``) → :class:`StimulusStore`.
"""

from neurokit.stimuli.encoders import (
    FrameEncoder,
    SpectrogramEncoder,
    log_mel,
    open_clip_tower,
)
from neurokit.stimuli.media import iter_frames, probe_video, read_audio, window_onsets
from neurokit.stimuli.store import (
    StimulusEncoders,
    StimulusStore,
    StimulusWindows,
    embed_stimuli,
    write_stimulus_store,
)

__all__ = [
    "FrameEncoder",
    "SpectrogramEncoder",
    "StimulusEncoders",
    "StimulusStore",
    "StimulusWindows",
    "embed_stimuli",
    "iter_frames",
    "log_mel",
    "open_clip_tower",
    "probe_video",
    "read_audio",
    "window_onsets",
    "write_stimulus_store",
]
