"""``rescue build``: session videos and subtitles to a checked draft release plus the media for review.

- :mod:`rescue.build.inputs`: sessions (one video, or a CSV of many), checked before anything is written;
- :mod:`rescue.build.segments`: segments given by hand or proposed from subtitle silences and scene cuts;
- :mod:`rescue.build.prompts`: the pre-annotation prompts (labels from :mod:`rescue.data.taxonomy`);
- :mod:`rescue.build.checks`: the paper's rules applied to every answer;
- :mod:`rescue.build.annotate`: windows, visual evidence, the re-ask and merging, through :mod:`rescue.llm`;
- :mod:`rescue.build.pipeline`: the whole run and its outputs (``draft.jsonl``, ``manifest.json``, clips);
- :mod:`rescue.build.manifest`: the manifest format the review tool and the video mode read.
"""

from rescue.build.annotate import AnnotateSettings
from rescue.build.inputs import BuildInputError, SessionSpec
from rescue.build.manifest import Manifest, read_manifest
from rescue.build.pipeline import BuildConfig, BuildOutcome, build

__all__ = ["AnnotateSettings", "BuildConfig", "BuildInputError", "BuildOutcome", "Manifest", "SessionSpec", "build",
           "read_manifest"]
