"""rescue.threads (issue 46 item 1): one number of threads for every library pool, from RESCUE_THREADS or the
cores this process may use (affinity, cgroup quota), applied as the command starts; real child processes check
what NumPy's BLAS and torch then start."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rescue.threads import (POOL_VARIABLES, THREADS_ENV, CoreWatch, ThreadsError, fit_threads, thread_count,
                            threads_set_by_user, usable_cores)

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


# CoreWatch: a /proc/stat-shaped file the test writes (a real file), and the real /proc/stat beside real busy
# processes. Fields per CPU line: user nice system idle iowait irq softirq steal (clock ticks).
CPUS = sorted(os.sched_getaffinity(0))
TICKS = os.sysconf("SC_CLK_TCK")


def _stat(path: Path, busy_ticks: int, idle_ticks: int = 1000) -> Path:
    lines = ["cpu  0 0 0 0 0 0 0 0 0 0"] + [f"cpu{n} {busy_ticks} 0 0 {idle_ticks} 0 0 0 0 0 0" for n in CPUS]
    lines.append(f"cpu{max(CPUS) + 1} 999999999 0 0 0 0 0 0 0 0 0")  # a core outside the affinity: not counted
    path.write_text("\n".join(lines) + "\nintr 1 2 3\n")
    return path


def test_core_watch_sees_the_cores_others_kept_busy(tmp_path):
    stat = _stat(tmp_path / "stat", 0)
    watch = CoreWatch(stat)
    time.sleep(0.1)
    assert watch.threads(len(CPUS)) == len(CPUS)  # nothing busy: every core
    time.sleep(0.1)
    _stat(stat, 10 * TICKS)  # every core busy for 10 s within 0.1 s: more than whole cores, counted as whole
    assert watch.others_busy() == float(len(CPUS))
    time.sleep(0.1)
    _stat(stat, 10 * TICKS + 1000 * TICKS)
    assert watch.threads(8) == 1  # all busy: one thread, never none


def test_core_watch_counts_steal_and_leaves_out_idle_and_iowait(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("\n".join(f"cpu{n} 0 0 0 0 0 0 0 0" for n in CPUS) + "\n")
    watch = CoreWatch(stat)
    time.sleep(0.1)
    stat.write_text("\n".join(f"cpu{n} 0 0 0 {TICKS * 100} {TICKS * 100} 0 0 {TICKS * 100}" for n in CPUS) + "\n")
    assert watch.others_busy() == float(len(CPUS))  # the hypervisor's steal is busy; idle and iowait are not


def test_a_look_within_50_ms_tells_nothing_and_keeps_the_last(tmp_path):
    stat = _stat(tmp_path / "stat", 0)
    watch = CoreWatch(stat)
    assert watch.others_busy() is None and watch.threads(5) == 5
    time.sleep(0.1)
    _stat(stat, 1000 * TICKS)
    assert watch.others_busy() == float(len(CPUS))  # measured from the first look, not the refused one


@pytest.mark.parametrize("text", [
    "", "garbage", "cpu0 a b c d e", "cpu0 1 2", "\x00" * 10,
    "cpu 1 2 3 4 5 6 7 8\n",  # the total line alone, no per-core line
    "\n".join(f"cpu{n} 1 2 3 4 5 6 7 8" for n in CPUS[:-1]),  # a core of the affinity missing
])
def test_an_unreadable_stat_tells_nothing(tmp_path, text):
    stat = tmp_path / "stat"
    stat.write_text(text)
    watch = CoreWatch(stat)
    time.sleep(0.06)
    assert watch.others_busy() is None and watch.threads(3) == 3


def test_a_missing_stat_gives_the_number_asked(tmp_path):
    watch = CoreWatch(tmp_path / "absent")
    time.sleep(0.06)
    assert watch.others_busy() is None and watch.threads(7) == 7


def test_rescue_threads_set_is_the_users_number():
    assert threads_set_by_user({THREADS_ENV: "2"}) and not threads_set_by_user({THREADS_ENV: " "})
    assert not threads_set_by_user({})


def _spin(started: Any = None) -> None:
    if started is not None:
        started.release()
    while True:
        pass


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="Linux's /proc/stat")
def test_beside_one_busy_process_per_core_the_pool_is_one_thread():
    """The real /proc/stat: a process spinning on every core of the affinity leaves no core free."""
    context = multiprocessing.get_context("spawn")
    started = context.Semaphore(0)
    workers = [context.Process(target=_spin, args=(started,), daemon=True) for _ in CPUS]
    for worker in workers:
        worker.start()
    try:
        for _ in workers:  # every spawned interpreter is spinning before the first look, however many cores
            assert started.acquire(timeout=120)
        watch = CoreWatch()
        time.sleep(0.5)
        assert watch.threads(len(CPUS)) == 1
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.join()
