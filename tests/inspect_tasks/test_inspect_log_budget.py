"""Archives: memory bounded by the budget, not by the member limit (#42 item 6). A real ``rescue report`` process
reads a real inspect log (``inspect eval`` of ITP with inspect's ``mockllm`` model) made large three ways, its peak
memory measured as the kernel counts it (``benchmarks/_peak.py``: ``wait4``'s ``ru_maxrss`` of a fresh fork):

- the issue's log: a header that inflates to 500 MiB (then under the 512 MiB member limit): it was read, taking the
  report to 1.2 GB (3.7 GB with the padding here), and is now refused, before anything is parsed;
- a header within the budget: read, held to a few budgets above the report's own footprint;
- samples that inflate to 5 budgets in all (a store of tens of megabytes each): read with the bulky fields
  streamed past, held to fewer budgets than the header.

The report's own footprint is the same report of the log as inspect wrote it, measured in the same test."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from extras import requires_extra

from rescue.archives import DEFAULT_LIMITS, MiB
from rescue.errors import EXIT_ERROR

pytestmark = [pytest.mark.slow, requires_extra("inspect"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]

REPO = Path(__file__).resolve().parents[2]
BUDGET = DEFAULT_LIMITS.member_bytes
PAD = "__rescue_pad__"


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> Path:
    from inspect_ai import eval as inspect_eval

    from rescue.inspect_tasks.bench import rescue_task

    folder = tmp_path_factory.mktemp("logs")
    (written,) = inspect_eval(rescue_task("itp", limit_samples=2), model="mockllm/model", log_dir=str(folder),
                              display="none")
    return Path(written.location)


def _zstd() -> int:
    pytest.importorskip("zipfile_zstd", reason="zstd in zip (inspect's own format) comes with the 'inspect' extra")
    return int(zipfile.ZIP_ZSTANDARD)  # type: ignore[attr-defined]


def _padded(log: Path, out: Path, pads: dict[str, int]) -> Path:
    """``log`` with the members named in ``pads`` given a string of that many bytes (the header in its eval's
    metadata, a sample in its store), written a megabyte at a time: small on disk, large inflated."""
    with zipfile.ZipFile(log) as source, zipfile.ZipFile(out, "w", _zstd()) as target:
        for info in source.infolist():
            data = source.read(info.filename)
            size = pads.get(info.filename)
            if size is None:
                target.writestr(info.filename, data)
                continue
            member: dict[str, Any] = json.loads(data)
            (member["eval"]["metadata"] if info.filename == "header.json" else member.setdefault("store", {}))[PAD] = PAD
            before, after = json.dumps(member).split(f'"{PAD}": "{PAD}"')
            with target.open(info.filename, "w", force_zip64=True) as stream:
                stream.write(f'{before}"{PAD}": "'.encode())
                for start in range(0, size, MiB):
                    stream.write(b"x" * min(MiB, size - start))
                stream.write(f'"{after}'.encode())
    return out


def _report(path: Path, out: Path, measured: Path) -> tuple[int, str, float]:
    """``rescue report PATH`` as a fresh process: its exit status, its stderr and its peak memory in MiB."""
    done = subprocess.run([sys.executable, "-S", str(REPO / "benchmarks/_peak.py"), str(measured), sys.executable,
                           "-m", "rescue", "report", str(path), "--out", str(out), "-q"],
                          capture_output=True, text=True, timeout=600)
    peak = json.loads(measured.read_text())
    return peak["returncode"], done.stderr, peak["peak_rss_kib"] / 1024


def test_a_reports_memory_is_held_to_the_log_budget(log, tmp_path):
    with zipfile.ZipFile(log) as archive:
        samples = [i.filename for i in archive.infolist() if i.filename.startswith("samples/")]
    code, err, own = _report(log, tmp_path / "own", tmp_path / "own.json")
    assert code == 0, err
    peaks, said = {}, {}
    # The log: a header inflating to 500 MiB, under the member limit it had. A header within the budget,
    # and samples five budgets large in all (each within it).
    bomb = _padded(log, tmp_path / "bomb.eval", {"header.json": 500 * MiB})
    assert bomb.stat().st_size < 2 * MiB
    header = _padded(log, tmp_path / "header.eval", {"header.json": BUDGET * 3 // 4})
    many = _padded(log, tmp_path / "samples.eval", {name: BUDGET * 3 // 4 for name in samples[:7]})
    for name, path in (("header 500 MiB", bomb), ("header 3/4 budget", header), ("samples 5.25 budgets", many)):
        code, err, peaks[name] = _report(path, tmp_path / name, tmp_path / f"{name}.json")
        said[name] = (code, err)
    budget_mib = BUDGET / MiB
    print(f"\nbudget {budget_mib:.0f} MiB per member; the report's own peak {own:.0f} MiB;",
          ", ".join(f"{k}: {v:.0f} MiB (exit {said[k][0]})" for k, v in peaks.items()))
    code, err = said["header 500 MiB"]
    assert code == EXIT_ERROR and "member 'header.json'" in err and "Traceback" not in err, err  # it was read, exit 0
    assert not (tmp_path / "header 500 MiB").exists()
    assert peaks["header 500 MiB"] < own + budget_mib  # nothing parsed
    assert said["header 3/4 budget"][0] == 0 and said["samples 5.25 budgets"][0] == 0, said
    # inspect parses a header into several copies of it (its bytes, its text, its model): about 7 of the header.
    assert peaks["header 3/4 budget"] < own + 7 * budget_mib
    assert peaks["samples 5.25 budgets"] < own + 3 * budget_mib  # they were held together: 5.25 budgets and more
