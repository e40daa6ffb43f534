"""``rescue build --model local/smollm2 --video-input none`` end to end. SmolLM2-135M writes poor drafts;
the test checks the path (server started, requests answered, checks run, outputs valid), not the quality."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from media_helpers import make_video, write_srt

from rescue.data.validation import validate_path
from rescue.llm import local
from rescue.llm.local import LocalModelError, find_gguf


@pytest.mark.slow
@pytest.mark.local_model
@pytest.mark.timeout(900)
def test_build_with_local_smollm2_end_to_end(tmp_path):
    try:
        find_gguf("smollm2")
        local.check_llama_server()
    except LocalModelError as missing:
        pytest.skip(str(missing))
    lines = [(1.0, 4.0, "Alan", "I just want to be better."), (5.0, 8.0, "Therapist", "What would better look like?"),
             (9.0, 12.0, "Evelyn", "He never listens to me."), (13.0, 16.0, "Therapist", "Can you tell him that?")]
    video = make_video(tmp_path / "s01.mp4", 20.0)
    subs = write_srt(tmp_path / "s01.srt", lines)
    out = tmp_path / "out"
    command = [sys.executable, "-m", "rescue", "build", str(video), "--subs", str(subs), "--scenario", "couple",
               "--participants", "Alan,Evelyn", "--min-duration", "10", "--model", "local/smollm2",
               "--video-input", "none", "--max-tokens", "700", "--out", str(out)]
    done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=850, env=dict(os.environ))
    assert done.returncode == 0, done.stdout + done.stderr
    assert validate_path(out / "draft.jsonl").errors == []
    manifest = json.loads((out / "manifest.json").read_text())
    segment = manifest["segments"][0]
    assert segment["provenance"]["model"] == "local/smollm2" and segment["provenance"]["requests"] >= 2
    assert (out / segment["clip"]).is_file()
