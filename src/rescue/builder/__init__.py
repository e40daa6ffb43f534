"""``rescue build``: session videos and subtitles to a checked draft release plus the media for review.

- :mod:`rescue.builder.inputs`: sessions (one video, or a CSV of many), checked before anything is written;
- :mod:`rescue.builder.segments`: segments given by hand or proposed from subtitle silences and scene cuts;
- :mod:`rescue.builder.prompts`: the pre-annotation prompts (labels from :mod:`rescue.data.taxonomy`);
- :mod:`rescue.builder.checks`: the paper's rules applied to every answer;
- :mod:`rescue.builder.annotate`: windows, visual evidence, the re-ask and merging, through :mod:`rescue.llm`;
- :mod:`rescue.builder.pipeline`: the whole run and its outputs (``draft.jsonl``, ``manifest.json``, clips);
- :mod:`rescue.builder.manifest`: the manifest format the review tool and the video mode read.
"""

from rescue.builder.annotate import AnnotateSettings
from rescue.builder.inputs import BuildInputError, SessionSpec
from rescue.builder.manifest import Manifest, read_manifest
from rescue.builder.pipeline import BuildConfig, BuildOutcome, build

__all__ = ["AnnotateSettings", "BuildConfig", "BuildInputError", "BuildOutcome", "Manifest", "SessionSpec", "build",
           "read_manifest"]
