"""Run a command as a fresh process and write its own wall time, CPU and peak memory to a file.

``python -S _peak.py REPORT COMMAND...``. Why a launcher: Linux carries a process's peak resident memory
(ru_maxrss) across fork and execve, and subprocess starts a child from the benchmark's own memory map (vfork),
so the child's ru_maxrss was at least the benchmark's own peak. A process made here by a real fork starts a
fresh count from this small interpreter's resident set (about 9 MB, below any command measured), so the
rusage that ``wait4`` returns is the command's own; its /proc VmHWM cannot be read instead, since an exited
child has no memory map left to report while it waits to be reaped.
"""

import json
import os
import signal
import sys
import time

report, command = sys.argv[1], sys.argv[2:]
# Ctrl-C reaches the whole process group: the command decides what it means; this launcher waits for it.
signal.signal(signal.SIGINT, signal.SIG_IGN)
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        os.execvp(command[0], command)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - start
with open(report, "w", encoding="utf-8") as out:
    json.dump({"seconds": seconds, "peak_rss_kib": usage.ru_maxrss, "cpu_s": usage.ru_utime + usage.ru_stime,
               "returncode": os.waitstatus_to_exitcode(status)}, out)
