"""Every prompt of every task x mode x context size stays byte-identical.

The pins in ``tests/pins/prompt_hashes.json`` are sha256 digests over all prompts of a task, mode,
context size and batch size, on the bundled demo data and on the real samples (skipped without them),
plus a digest of each task's instance set (ids and gold). A refactor of the prompt builders or the
task declarations must leave all of them unchanged. An *intended* prompt change regenerates them with
``python tests/tasks/test_prompt_pins.py --write`` and says why in the commit.

Batches here are formed by the plain rule "consecutive instances of one sample, at most N", independent
of the runner's batching, so the digests pin the rendering alone.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

PINS = Path(__file__).resolve().parents[1] / "pins" / "prompt_hashes.json"
CONTEXT_SIZES = (-1, 0, 1, 3)
# Build-option variants whose instance sets (and so prompts) are pinned besides the defaults.
BUILD_VARIANTS: dict[str, dict[str, Any]] = {"default": {}, "rpp_gold=relation_cycle_state": {"rpp_gold": "relation_cycle_state"}}


def _consecutive(instances: list[Any], size: int) -> list[list[Any]]:
    out: list[list[Any]] = []
    for instance in instances:
        if out and out[-1][0].sample_id == instance.sample_id and (size <= 0 or len(out[-1]) < size):
            out[-1].append(instance)
        else:
            out.append([instance])
    return out


def digests(samples: list[Any]) -> dict[str, str]:
    from rescue.tasks import TASKS, get_task
    from rescue.tasks.base import MODES, RenderOptions

    result: dict[str, str] = {}
    for variant, options in BUILD_VARIANTS.items():
        names = list(TASKS) if variant == "default" else ["rpp"]
        for name in names:
            task = get_task(name)
            instances = task.build(samples, **options)
            ids = hashlib.sha256(json.dumps([[i.instance_id, i.gold] for i in instances], ensure_ascii=False,
                                            sort_keys=True).encode()).hexdigest()
            result[f"{variant}/{name}/instances"] = f"{len(instances)}:{ids}"
            for mode in MODES:
                for k in CONTEXT_SIZES:
                    for size in sorted({1, int(task.default_batch_size)}):
                        digest = hashlib.sha256()
                        count = 0
                        for batch in _consecutive(instances, size):
                            messages = task.render(batch, RenderOptions(mode=mode, context_size=k))
                            digest.update(json.dumps(messages, ensure_ascii=False).encode())
                            digest.update(b"\n")
                            count += 1
                        result[f"{variant}/{name}/{mode}/k={k}/batch={size}"] = f"{count}:{digest.hexdigest()}"
    return result


def _pins() -> dict[str, Any]:
    return json.loads(PINS.read_text(encoding="utf-8"))


def _compare(actual: dict[str, str], pinned: dict[str, str]) -> None:
    # A task registered since the pins were written has none yet (--write adds them); every pinned one counts.
    pinned_tasks = {key.split("/")[1] for key in pinned}
    actual = {key: value for key, value in actual.items() if key.split("/")[1] in pinned_tasks}
    changed = sorted(k for k in set(actual) | set(pinned) if actual.get(k) != pinned.get(k))
    assert not changed, f"{len(changed)} prompt digests changed, e.g.: {', '.join(changed[:8])}"


def test_demo_prompts_are_byte_identical(demo_samples):
    _compare(digests(demo_samples), _pins()["demo"])


@pytest.mark.slow  # about 20 s of CPU (every prompt of 35 real sessions, whole histories included); the landing
# checks name this file and run it whole, and the demo pins above stay in the quick run
def test_real_sample_prompts_are_byte_identical(real_samples, real_data_path):
    from rescue.data.fingerprint import data_sha256

    # The pins are of one set of real samples, known by its content (its path differs from clone to clone).
    pinned_data = _pins()["real_data_sha256"]
    if data_sha256(real_data_path) != pinned_data:
        pytest.skip(f"the pins are of the shared subset (data sha256 {pinned_data[:12]}...), not of {real_data_path}")
    _compare(digests(real_samples), _pins()["real"])


if __name__ == "__main__" and "--write" in sys.argv:
    sys.path[:0] = [str(Path(__file__).resolve().parents[2] / "src"), str(Path(__file__).resolve().parents[1])]
    from rescue.data.fingerprint import data_sha256
    from rescue.data.loading import load_samples

    from real_data import REAL_DATA

    pins: dict[str, Any] = {"demo": digests(load_samples(None))}
    if REAL_DATA.exists():
        pins["real"] = digests(load_samples(REAL_DATA))
        pins["real_data_sha256"] = data_sha256(REAL_DATA)
    else:
        pytest.exit(f"{REAL_DATA} missing: cannot pin the real-sample prompts")
    PINS.write_text(json.dumps(pins, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {PINS}: {sum(len(v) for v in pins.values())} digests")
