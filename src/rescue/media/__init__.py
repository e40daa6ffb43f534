"""Media steps shared by ``rescue build`` and the video mode, all through one ffmpeg
(the system's, else imageio-ffmpeg's static binary).

- :func:`probe`: duration and streams; :func:`cut_clip`: a seekable H.264/AAC MP4 of a window;
- :func:`grab_frames`: JPEG frames inside a span; :func:`scene_cuts`: scene-change times;
- :func:`load_cues` / :func:`write_webvtt`: subtitles in (SRT, WebVTT, ASS) and re-timed WebVTT out;
- :func:`waveform`: a clip's audio as peaks, for the review tool's timeline;
- :func:`extract_audio` / :func:`silences` / :func:`wav_slice`: audio for transcription and alignment.

Each step is registered by name in :data:`STEPS` (one input, one output; outputs appear atomically).
"""

from rescue.media._audio import extract_audio, silences, speech_spans, wav_seconds, wav_slice
from rescue.media._cut import clip_bytes, cut_clip
from rescue.media._ffmpeg import MediaError, ffmpeg_exe
from rescue.media._frames import Frame, frame_times, grab_frames
from rescue.media._probe import MediaInfo, probe
from rescue.media._scenes import scene_cuts
from rescue.media._steps import STEPS, get_step, produce
from rescue.media._subtitles import (
    Cue,
    SubtitleError,
    cues_in,
    load_cues,
    parse_timestamp,
    webvtt,
    write_webvtt,
)
from rescue.media._waveform import waveform

__all__ = [
    "STEPS", "Cue", "Frame", "MediaError", "MediaInfo", "SubtitleError", "clip_bytes", "cues_in", "cut_clip",
    "ffmpeg_exe", "frame_times", "get_step", "grab_frames", "load_cues", "parse_timestamp", "probe", "produce",
    "scene_cuts", "waveform", "webvtt", "write_webvtt", "extract_audio", "silences", "speech_spans", "wav_seconds",
    "wav_slice",
]
