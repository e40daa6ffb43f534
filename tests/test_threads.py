"""rescue.threads (issue 46 item 1): one number of threads for every library pool, from RESCUE_THREADS or the
cores this process may use (affinity, cgroup quota), applied as the command starts; real child processes check
what NumPy's BLAS and torch then start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rescue.threads import POOL_VARIABLES, THREADS_ENV, ThreadsError, fit_threads, thread_count, usable_cores

REPO = Path(__file__).resolve().parents[1]
AFFINITY = len(os.sched_getaffinity(0))


def _cgroup(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize("files, cores", [
    ({"cpu.max": "150000 100000\n"}, 2),  # 1.5 CPUs: two cores, one of them half the time
    ({"cpu.max": "50000 100000\n"}, 1),
    ({"cpu.max": "max 100000\n"}, None),  # no quota: the affinity
    ({"cpu/cpu.cfs_quota_us": "100000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 1),  # cgroup v1
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
    ({"cpu.max": "garbage"}, None), ({"cpu.max": "0 0"}, None), ({"cpu.max": ""}, None), ({}, None),
])
def test_usable_cores_are_the_affinity_capped_by_the_cgroup_quota(tmp_path, files, cores):
    expected = AFFINITY if cores is None else min(AFFINITY, cores)
    assert usable_cores(_cgroup(tmp_path, files)) == expected


def test_a_quota_above_the_affinity_leaves_the_affinity(tmp_path):
    assert usable_cores(_cgroup(tmp_path, {"cpu.max": f"{(AFFINITY + 8) * 100000} 100000"})) == AFFINITY


@pytest.mark.parametrize("value, count", [("3", 3), (" 1 ", 1), ("64", 64), ("", None)])
def test_rescue_threads_sets_the_number(value, count):
    assert thread_count({THREADS_ENV: value}) == (usable_cores() if count is None else count)
    assert thread_count({}) == usable_cores()


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5", "1e3", "9" * 50, "²", "４"])
def test_a_value_that_is_no_positive_whole_number_is_refused_naming_the_variable(value):
    with pytest.raises(ThreadsError, match=THREADS_ENV):
        thread_count({THREADS_ENV: value})


def test_fit_threads_sets_every_pool_variable_and_keeps_one_the_user_set():
    env = {"OPENBLAS_NUM_THREADS": "7", THREADS_ENV: "1"}
    assert fit_threads(environ=env) == 1
    assert env["OPENBLAS_NUM_THREADS"] == "7"
    assert all(env[name] == "1" for name in POOL_VARIABLES if name != "OPENBLAS_NUM_THREADS")
    assert env["TOKENIZERS_PARALLELISM"] == "false"
    assert fit_threads(3, environ={}) == 3


def _child(code: str, env: dict[str, str]) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if k not in POOL_VARIABLES and k != THREADS_ENV}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env={**clean, **env}, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


BLAS_THREADS = ("import json, threadpoolctl\n"
                "print(json.dumps({'blas': sorted({p['num_threads'] for p in threadpoolctl.threadpool_info()})}))\n")


@pytest.mark.parametrize("numpy_first", [False, True])
def test_the_blas_a_process_loads_before_or_after_starts_the_threads_given(numpy_first):
    """Loaded after (the command's case: the variables) and loaded before (threadpoolctl's limit)."""
    code = ("import numpy, scipy.linalg\n" if numpy_first else "") + \
        "from rescue.threads import fit_threads\nfit_threads()\nimport numpy, scipy.linalg\n" + BLAS_THREADS
    assert _child(code, {THREADS_ENV: "1"}) == {"blas": [1]}


@pytest.mark.slow
@pytest.mark.parametrize("torch_first", [False, True])
def test_torch_starts_the_threads_given(torch_first):
    pytest.importorskip("torch")
    code = ("import torch\n" if torch_first else "") + \
        "from rescue.threads import fit_threads\nfit_threads()\nimport json, torch\n" \
        "print(json.dumps({'torch': torch.get_num_threads()}))\n"
    assert _child(code, {THREADS_ENV: "1"}) == {"torch": 1}


def test_the_rescue_command_sizes_the_pools_as_it_starts():
    code = ("import json, os, sys\nsys.argv = ['rescue', 'tasks']\nfrom rescue.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "import numpy, scipy.linalg\n"
            "import threadpoolctl\n"
            "print(json.dumps({'omp': os.environ['OMP_NUM_THREADS'], 'blas': sorted({p['num_threads'] for p in "
            "threadpoolctl.threadpool_info()})}))\n")
    assert _child(code, {THREADS_ENV: "1"}) == {"omp": "1", "blas": [1]}
    assert _child(code, {}) == {"omp": str(usable_cores()), "blas": [usable_cores()]}


def test_the_rescue_command_refuses_a_bad_value_with_exit_2():
    clean = {k: v for k, v in os.environ.items() if k != THREADS_ENV}
    done = subprocess.run([sys.executable, "-m", "rescue", "tasks"], capture_output=True, text=True, cwd=REPO,
                          env={**clean, THREADS_ENV: "lots"}, timeout=120)
    assert done.returncode == 2 and THREADS_ENV in done.stderr and "lots" in done.stderr, done.stderr
