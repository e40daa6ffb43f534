"""``rescue build``: session videos and subtitles to a checked draft release plus the media for review.

- :mod:`rescue.builder.inputs`: sessions (one video, or a CSV of many), checked before anything is written;
- :mod:`rescue.builder.segments`: segments given by hand or proposed from subtitle silences and scene cuts;
- :mod:`rescue.builder.prompts`: the pre-annotation prompts (labels from :mod:`rescue.data.taxonomy`);
- :mod:`rescue.builder.checks`: the paper's rules applied to every answer;
- :mod:`rescue.builder.annotate`: windows, visual evidence, the re-ask and merging, through :mod:`rescue.llm`;
- :mod:`rescue.builder.pipeline`: the whole run and its outputs (``draft.jsonl``, ``manifest.json``, clips);
- :mod:`rescue.builder.manifest`: the manifest format the review tool and the video mode read;
- :mod:`rescue.builder.options`: every ``rescue build`` option and its default, declared once.

The names below are imported when first used, so that ``rescue build --help`` reads
:mod:`rescue.builder.options` without loading the pipeline.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rescue.builder.annotate import AnnotateSettings
    from rescue.builder.inputs import BuildInputError, SessionSpec
    from rescue.builder.manifest import Manifest, read_manifest
    from rescue.builder.pipeline import BuildConfig, BuildOutcome, build

__all__ = ["AnnotateSettings", "BuildConfig", "BuildInputError", "BuildOutcome", "Manifest", "SessionSpec", "build",
           "read_manifest"]
_HOMES = {"AnnotateSettings": "annotate", "BuildInputError": "inputs", "SessionSpec": "inputs", "Manifest": "manifest",
          "read_manifest": "manifest", "BuildConfig": "pipeline", "BuildOutcome": "pipeline", "build": "pipeline"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'rescue.builder' has no attribute {name!r}")
    return getattr(importlib.import_module(f"rescue.builder.{home}"), name)
