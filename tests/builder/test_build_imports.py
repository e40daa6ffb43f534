"""`rescue build` imports only what its options need (issue 34 item 6): without a model or a transcriber the model
layer (httpx, the modules behind rescue.llm's face) is never imported; its request limits are rescue run's when a
model is asked. The face itself imports only the limits' defaults (rescue run --help reads them too)."""

from __future__ import annotations

import subprocess
import sys

from rescue.builder import BuildConfig
from rescue.llm import DEFAULT_MAX_ANSWER_BYTES, DEFAULT_RETRY_AFTER_CAP


def test_the_build_command_does_not_import_the_model_layer():
    code = ("import sys, rescue.cli._build_cmds, rescue.builder, rescue.builder.pipeline; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'httpx' or m.startswith('rescue.llm')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "['rescue.llm', 'rescue.llm._limits']"


def test_request_limits_default_to_rescue_runs(tmp_path):
    config = BuildConfig(out=tmp_path, sessions=[])
    assert config.request_limits() == (DEFAULT_RETRY_AFTER_CAP, DEFAULT_MAX_ANSWER_BYTES)
    assert BuildConfig(out=tmp_path, sessions=[], retry_after_cap=5.0, max_answer_bytes=10).request_limits() == (5.0, 10)
