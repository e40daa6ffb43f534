"""How many threads the libraries rescue drives may start: one number, set in one place.

torch, the BLAS under NumPy and SciPy, OpenMP and the tokenizers each start a pool of threads sized to the machine's
cores, whatever share of them the process may use and whatever else runs there. On a shared server or a CI runner a
pool larger than the cores rescue may use spins threads on cores it does not have: each waits for the others at
every step, and a stage takes many times its CPU (benchmarks/README.md, issue 46).

:func:`thread_count` is the number: ``RESCUE_THREADS`` when set (a positive whole number), else the cores this
process may run on: its CPU affinity, capped by the cgroup's CPU quota (a container limited to 2 CPUs on a
64-core host gets 2). :func:`fit_threads` gives it to every pool: the variables each library reads when it loads
(``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``, ``RAYON_NUM_THREADS`` ...; one a user set
is kept: it is theirs), threadpoolctl's limit for BLAS and OpenMP libraries already loaded, and
``torch.set_num_threads`` when torch is. The ``rescue`` command calls it once as it starts; a program using
rescue as a library calls it itself if it wants the same. :func:`threads_limited` narrows the pools for one
block of work (a fit over small matrices, where threads only wait on each other).

The cores a process may use are not the cores free: on a shared server other processes keep some of them busy, and
a pool of one thread per core then has threads waiting, spinning, for threads the scheduler has not run (each
step of torch's pool ends when its slowest thread does). :class:`CoreWatch` tells how many cores of this
process's affinity others kept busy since its last look, from ``/proc/stat`` less this process's own CPU time,
without waiting; :meth:`CoreWatch.threads` is then a pool that fits the cores left. rescue asks it before each
chunk of a long stage (BERTScore) when ``RESCUE_THREADS`` is not set; a number a user set is kept as it is.

A leaf: the standard library only at import (``rescue --help`` reads no library to start).
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from pathlib import Path

from rescue.errors import ThreadsError as ThreadsError

__all__ = ["POOL_VARIABLES", "THREADS_ENV", "CoreWatch", "ThreadsError", "fit_threads", "thread_count",
           "threads_limited", "threads_set_by_user", "usable_cores"]

THREADS_ENV = "RESCUE_THREADS"
# What each library reads as it loads: OpenMP (torch's intra-op pool too), OpenBLAS, MKL, BLIS, Apple's
# Accelerate, numexpr, and Rayon (the Hugging Face tokenizers' pool).
POOL_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                  "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "RAYON_NUM_THREADS")
_CGROUP = Path("/sys/fs/cgroup")
_PROC_STAT = Path("/proc/stat")
_SHORTEST_LOOK = 0.05  # seconds: over less, a few clock ticks would read as whole cores


def _quota_cores(root: Path) -> int | None:
    """The cgroup's CPU quota in whole cores (rounded up), or None when it sets none or cannot be read: cgroup v2's
    ``cpu.max`` ("QUOTA PERIOD" or "max PERIOD"), else v1's ``cpu.cfs_quota_us`` (-1: none) and period."""
    try:
        quota, _, period = (root / "cpu.max").read_text().partition(" ")
        if quota.strip() == "max":
            return None
        return max(1, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError, ZeroDivisionError):
        pass
    try:
        quota_us = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = int((root / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return max(1, math.ceil(quota_us / period_us)) if quota_us > 0 and period_us > 0 else None


def usable_cores(cgroup: Path = _CGROUP) -> int:
    """The cores this process may run on: its CPU affinity (all cores where the system has none), capped by the
    cgroup's CPU quota."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = _quota_cores(cgroup)
    return max(1, min(cores, quota) if quota is not None else cores)


def thread_count(environ: MutableMapping[str, str] | None = None) -> int:
    """The threads each library's pool may start: ``RESCUE_THREADS`` when set, else :func:`usable_cores`;
    :class:`ThreadsError` for a value that is no positive whole number."""
    value = (os.environ if environ is None else environ).get(THREADS_ENV, "").strip()
    if not value:
        return usable_cores()
    if not (value.isascii() and value.isdigit()) or len(value) > 6 or int(value) < 1:
        raise ThreadsError(f"{THREADS_ENV}={value[:40]!r}: give the number of threads rescue's libraries may start, "
                           f"a whole number from 1 (unset: the cores this process may use, {usable_cores()} here)")
    return int(value)


def threads_set_by_user(environ: MutableMapping[str, str] | None = None) -> bool:
    """Whether ``RESCUE_THREADS`` is set (then every pool keeps that number, whatever the machine's load)."""
    return bool((os.environ if environ is None else environ).get(THREADS_ENV, "").strip())


def _busy_seconds(cpus: frozenset[int], stat: Path) -> float | None:
    """Seconds ``cpus`` together spent running anything (user, nice, system, irq, softirq, and steal: time the
    hypervisor gave the core to another machine) since boot, from ``stat`` (``/proc/stat``'s per-CPU lines, in
    clock ticks); None where it cannot be read (not Linux) or lacks a line of one of ``cpus``."""
    try:
        text = stat.read_text()
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None
    busy, found = 0, 0
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not (name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus):
            continue
        fields = [int(x) for x in rest.split()[:8] if x.isdigit()]
        if len(fields) < 5:
            return None
        busy += sum(fields) - fields[3] - fields[4]  # all but idle and iowait
        found += 1
    return busy / ticks if ticks > 0 and found == len(cpus) else None


class CoreWatch:
    """How many of this process's cores other processes kept busy between two looks (:meth:`others_busy`), and the
    pool that fits the cores they left (:meth:`threads`). A look costs one read of ``/proc/stat``: it never waits.
    Where ``/proc/stat`` cannot be read, nothing is known and :meth:`threads` is the number it is given."""

    def __init__(self, stat: Path = _PROC_STAT):
        self._stat = stat
        self._cpus = frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else frozenset()
        self._last = self._look()

    def _look(self) -> tuple[float, float, float] | None:
        busy = _busy_seconds(self._cpus, self._stat) if self._cpus else None
        return None if busy is None else (busy, time.process_time(), time.monotonic())

    def others_busy(self) -> float | None:
        """Cores (a fraction: 1.5 is one core and half another) of this process's affinity that other processes
        kept busy since the last look, which this one becomes; None when unknown or the span is under 50 ms (the
        last look is then kept)."""
        now = self._look()
        last = self._last
        if now is None or last is None or now[2] - last[2] < _SHORTEST_LOOK:
            return None
        self._last = now
        others = (now[0] - last[0]) - (now[1] - last[1])  # every busy second less this process's own CPU
        return min(float(len(self._cpus)), max(0.0, others / (now[2] - last[2])))

    def threads(self, most: int) -> int:
        """A pool for the cores left free since the last look: the free cores rounded, at least 1 and at most
        ``most``; ``most`` when nothing is known."""
        busy = self.others_busy()
        if busy is None:
            return most
        return max(1, min(most, math.floor(len(self._cpus) - busy + 0.5)))


def fit_threads(count: int | None = None, environ: MutableMapping[str, str] | None = None) -> int:
    """Size every library's thread pool to ``count`` (default :func:`thread_count`) and return it: the pool
    variables of libraries not loaded yet (those a user set are kept), threadpoolctl's limit on the BLAS and
    OpenMP libraries already loaded, torch's intra-op threads if torch is loaded, and the tokenizers' parallelism
    off when one thread is all there is."""
    env = os.environ if environ is None else environ
    threads = thread_count(env) if count is None else count
    for name in POOL_VARIABLES:
        env.setdefault(name, str(threads))
    env.setdefault("TOKENIZERS_PARALLELISM", "true" if threads > 1 else "false")
    if environ is None and any(name in sys.modules for name in ("numpy", "scipy", "torch")):
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads)  # stays in force: not used as a context
    torch = sys.modules.get("torch")
    if environ is None and torch is not None and hasattr(torch, "set_num_threads"):
        torch.set_num_threads(threads)
    return threads


@contextmanager
def threads_limited(count: int) -> Iterator[None]:
    """The BLAS and OpenMP pools of the libraries loaded (SciPy's BLAS included) at most ``count`` threads within
    the block, as they were after it."""
    import scipy.linalg.blas  # noqa: F401  # SciPy's own BLAS loaded first, so that the limit reaches it
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=count):
        yield
