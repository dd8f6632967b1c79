"""The paper's stimulus encoders through transformers (issue 18 item 13): VideoMAE's fc_norm activations and
wav2vec 2.0's last layer averaged over time, on tiny random configurations (no download); the store path."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from neurokit._utils.errors import ConfigError
from neurokit.stimuli.paper_encoders import (
    VideoMAEEncoder,
    Wav2Vec2Encoder,
    clip_frame_indices,
    paper_audio_encoder,
    paper_video_encoder,
    tiny_videomae_config,
    tiny_wav2vec2_config,
)


def test_clip_frame_indices_hand_worked():
    assert clip_frame_indices(9, 4).tolist() == [0, 3, 5, 8]  # linspace(0, 8, 4) = 0, 2.67, 5.33, 8
    assert clip_frame_indices(16, 16).tolist() == list(range(16))
    assert clip_frame_indices(2, 4).tolist() == [0, 0, 1, 1]  # fewer frames than wanted: repeats
    with pytest.raises(ValueError, match="no decoded frame"):
        clip_frame_indices(0, 4)


def test_videomae_embedding_is_the_fc_norm_activation():
    """The release hooks the backbone's fc_norm: its output is what the classifier reads, so
    classifier(embedding) must equal transformers' own logits for the same normalised pixels."""
    enc = VideoMAEEncoder(config=tiny_videomae_config(), seed=0)
    assert enc.dim == 32 and enc.n_frames == 4 and len(enc.weights_sha256) == 64
    assert not any(p.requires_grad for p in enc.parameters())
    enc.train()
    assert not enc.training
    clips = torch.randint(0, 256, (2, 4, 32, 32, 3), dtype=torch.uint8)
    emb = enc(clips)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 1, 3, 1, 1)
    pixels = (clips.permute(0, 1, 4, 2, 3).float() / 255 - mean) / std
    with torch.no_grad():
        logits = enc.tower(pixel_values=pixels).logits
        assert torch.allclose(enc.tower.classifier(emb), logits, atol=1e-5)
    # a longer clip is read through n_frames evenly spaced frames: frames 0, 3, 5, 8 of 9
    long = torch.randint(0, 256, (1, 9, 32, 32, 3), dtype=torch.uint8)
    assert torch.allclose(enc(long), enc(long[:, [0, 3, 5, 8]]), atol=1e-6)
    # same seed, same weights; the hash tells them apart from another seed
    assert VideoMAEEncoder(config=tiny_videomae_config(), seed=0).weights_sha256 == enc.weights_sha256
    assert VideoMAEEncoder(config=tiny_videomae_config(), seed=1).weights_sha256 != enc.weights_sha256


def test_videomae_resize_is_short_side_then_centre_crop():
    enc = VideoMAEEncoder(config=tiny_videomae_config())
    frame = torch.zeros(1, 64, 128, 3, dtype=torch.uint8)
    frame[:, :, 16:112] = 255  # white but for 16 black columns each side
    out = enc.resize(frame)
    # 64x128 -> 32x64 (short side 32), then the central 32 columns (16..48 ↔ 32..96 of the original): all white;
    # a crop anywhere else would take in black columns
    assert out.shape == (1, 32, 32, 3) and int(out.min()) >= 250
    assert int(enc.resize(frame.transpose(1, 2)).min()) >= 250  # portrait: the central rows


def test_wav2vec2_embedding_is_the_mean_of_the_last_layer():
    enc = Wav2Vec2Encoder(config=tiny_wav2vec2_config())
    assert enc.dim == 32 and not any(p.requires_grad for p in enc.parameters())
    wave = np.random.default_rng(0).standard_normal((2, 48_000)).astype(np.float32)
    emb = enc.encode(wave)
    with torch.no_grad():
        out = enc.tower(torch.from_numpy(wave), output_hidden_states=True)
    assert out.last_hidden_state.shape[1] == 149  # 3 s at 16 kHz through the base model's 320-fold feature encoder
    # the raw waveform goes in (torchaudio's WAV2VEC2_ASR_BASE_960H bundle does not normalise it)
    assert torch.allclose(emb, out.hidden_states[-1].mean(1), atol=1e-6)


def test_paper_encoder_names_and_errors():
    assert paper_video_encoder("videomae-tiny").info["name"] == "videomae-tiny"
    assert paper_audio_encoder("wav2vec2-tiny").dim == 32
    with pytest.raises(ConfigError, match="video_pretrained=FOLDER"):
        paper_video_encoder("videomae")
    with pytest.raises(ConfigError, match="random-init only"):
        paper_audio_encoder("wav2vec2-tiny", "/some/folder")
    with pytest.raises(ConfigError, match=r"audio_pretrained='/no/such/folder'.*local folder"):
        Wav2Vec2Encoder("/no/such/folder")


def test_saved_weights_load_from_a_local_folder(tmp_path):
    """A user with the paper's weights passes a folder (here: a tiny random model saved by transformers)."""
    from transformers import Wav2Vec2Model

    src = Wav2Vec2Encoder(config=tiny_wav2vec2_config(), seed=3)
    src.tower.save_pretrained(tmp_path / "w2v")
    enc = paper_audio_encoder("wav2vec2", tmp_path / "w2v")
    assert enc.weights_sha256 == src.weights_sha256 and isinstance(enc.tower, Wav2Vec2Model)
    assert enc.info["pretrained"] == str(tmp_path / "w2v")


def test_embed_stimuli_with_the_paper_encoders(tmp_path):
    """The store path: each window embedded whole by VideoMAE (n_frames of its frames), audio by wav2vec 2.0;
    one window's embedding recomputed by hand from the decoded frames."""
    from neurokit.simulate.movie import make_movie, movie_layout
    from neurokit.stimuli import (
        StimulusEncoders,
        StimulusStore,
        StimulusWindows,
        embed_stimuli,
        iter_frames,
        read_audio,
    )

    movie, _ = make_movie(
        tmp_path / "m.mkv", movie_layout(n_clips=1, clip_s=6.0, rest_s=1.0, lead_s=1.0), fps=8, size=40
    )
    enc = StimulusEncoders(video="videomae-tiny", audio="wav2vec2-tiny")
    path = embed_stimuli(
        movie,
        tmp_path / "s.h5",
        encoders=enc,
        windows=StimulusWindows(clips=[[1.0, 7.0]], retest_clip=-1),
        progress=False,
    )
    st = StimulusStore(path)
    from neurokit.evaluation.retrieval import resolve_retest_clip

    assert st.attrs["retest_clip"] == 0 and resolve_retest_clip(st) == 0  # recorded: clip -1 of 1 is clip 0
    assert st.video.shape == (len(st.onsets), 32) and st.audio.shape == (len(st.onsets), 32)
    assert st.attrs["video_encoder"]["name"] == "videomae-tiny" and st.attrs["audio_encoder"]["dim"] == 32
    assert "waveform" in st.attrs["audio_encoder"]["input"]
    venc, aenc = paper_video_encoder("videomae-tiny"), paper_audio_encoder("wav2vec2-tiny")
    w = 2  # the window [2, 5) s: 24 frames at 8 fps, of which 4 evenly spaced
    frames = [f for t, f in iter_frames(movie) if 2.0 - 1e-6 <= t < 5.0 - 1e-6]
    assert len(frames) == 24
    with torch.no_grad():
        clip = venc.resize(torch.from_numpy(np.stack(frames)))[clip_frame_indices(24, 4)][None]
        assert np.allclose(st.video[w], venc(clip)[0].numpy(), atol=1e-5)
        wave = read_audio(movie)
        assert np.allclose(st.audio[w], aenc.encode(wave[None, 32_000:80_000])[0].numpy(), atol=1e-4)
    assert json.loads(json.dumps(st.attrs["video_encoder"]))["weights_sha256"] == venc.weights_sha256
