"""(r) The review tool under several annotators saving at once. Targets: 0 lost updates, p95 < 100 ms.

A real ``rescue review serve`` (uvicorn, SQLite in WAL mode) on 127.0.0.1 reviews the real samples (or
the demo data). Each annotator thread logs in and, for a bounded time, saves rows through the JSON API:
mostly its own copy (no contention), and every few saves one of a handful of rows of the shared final
copy that every annotator edits (read-modify-write: it appends its token to the row's tone, and on a
409 takes the newer version from the answer and tries again). Afterwards every confirmed save is
checked against the database: an own-copy row must hold the last value its annotator saw confirmed,
and every confirmed token must still be in the shared rows (a lost update would drop one). Every few saves an
annotator re-cuts its own copy of one segment that is kept out of the field saves (splits its longest row at the
middle, then merges it back; the page's cut writes), and afterwards that copy's cut revision must count every
confirmed cut and its row count must follow them.
With ``--postgres`` (or ``--db URL``) the same run follows on PostgreSQL, optionally with ``--servers N`` serve
processes sharing the database, and the table shows both side by side with their ratio.
Run: ``python benchmarks/bench_review.py [--annotators 4] [--seconds 10] [--postgres [--servers 2]]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import quote

import httpx
from _support import default_source, print_table, rescue_command

TARGET_P95_MS = 100.0
PASSWORD = "benchmark password"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _url(sample_id: str, row: int, copy: str) -> str:
    return f"/api/segments/{quote(sample_id, safe='')}/rows/{row}?copy={copy}"


class Annotator(threading.Thread):
    def __init__(self, base: str, name: str, segments: dict[str, int], hot: list[tuple[str, int]], deadline: float,
                 shared_every: int, seed: int, cut_segment: str | None = None, cut_every: int = 0):
        super().__init__(daemon=True)
        self.base, self.name, self.segments, self.hot, self.deadline = base, name, segments, hot, deadline
        self.shared_every, self.rng = shared_every, random.Random(seed)
        self.cut_segment, self.cut_every = cut_segment, cut_every
        self.cut_latencies: list[float] = []
        self.cuts = 0  # confirmed cuts; the copy's layout revision must end equal to it
        self.split_open = False  # a split not yet merged back: the copy has one row more than the draft
        self.cut_state: dict = {}  # type: ignore[type-arg]
        self.latencies: list[float] = []
        self.conflicts = 0
        self.errors: list[str] = []
        self.own: dict[tuple[str, int], str] = {}  # last confirmed value per own row
        self.own_versions: dict[tuple[str, int], int] = {}
        self.tokens: list[tuple[tuple[str, int], str]] = []  # confirmed shared tokens
        self.shared: dict[tuple[str, int], tuple[int, str]] = {}  # what this annotator last saw: version, tone

    def put(self, client: httpx.Client, url: str, body: dict) -> httpx.Response:  # type: ignore[type-arg]
        start = time.perf_counter()
        answer = client.put(url, json=body)
        self.latencies.append((time.perf_counter() - start) * 1000)
        return answer

    def run(self) -> None:
        with httpx.Client(base_url=self.base, timeout=30) as client:
            login = client.post("/api/login", json={"name": self.name, "password": PASSWORD})
            client.headers["X-CSRF-Token"] = login.json()["csrf"]
            ids = [i for i in self.segments if i != self.cut_segment]
            n = 0
            while time.monotonic() < self.deadline:
                n += 1
                if self.cut_every and n % self.cut_every == 0:
                    self.recut(client)
                elif n % self.shared_every == 0:
                    self.save_shared(client, self.rng.choice(self.hot), f"{self.name}-{n}")
                else:
                    sample_id = self.rng.choice(ids)
                    key = (sample_id, self.rng.randint(1, self.segments[sample_id]))
                    value = f"{self.name} save {n}"
                    version = self.own_versions.get(key, 0)
                    answer = self.put(client, _url(*key, "mine"), {"version": version, "fields": {"tone_of_voice": value}})
                    if answer.status_code == 200:
                        self.own_versions[key] = answer.json()["version"]
                        self.own[key] = value
                    else:
                        self.errors.append(f"own {key}: {answer.status_code} {answer.text[:200]}")

    def recut(self, client: httpx.Client) -> None:
        """Split the segment's longest row at its middle, or merge it back with the half after it."""
        url = f"/api/segments/{quote(str(self.cut_segment), safe='')}"
        if not self.cut_state:
            seg = client.get(url).json()
            longest = max(range(len(seg["rows"])), key=lambda i: seg["rows"][i]["end_time"] - seg["rows"][i]["start_time"])
            self.cut_state = {"layout": seg["layout"], "rows": seg["rows"], "index": longest + 1}
        state, index = self.cut_state, self.cut_state["index"]
        row = state["rows"][index - 1]
        if self.split_open:
            body = {"layout": state["layout"], "version": row["version"], "next_version": state["rows"][index]["version"]}
            action = f"{url}/rows/{index}/merge"
        else:
            body = {"layout": state["layout"], "version": row["version"], "at": round((row["start_time"] + row["end_time"]) / 2, 3)}
            action = f"{url}/rows/{index}/split"
        start = time.perf_counter()
        answer = client.post(action, json=body)
        elapsed = (time.perf_counter() - start) * 1000
        self.latencies.append(elapsed)
        self.cut_latencies.append(elapsed)
        if answer.status_code != 200:
            self.errors.append(f"cut {action}: {answer.status_code} {answer.text[:200]}")
            return
        data = answer.json()
        state["layout"], state["rows"] = data["layout"], data["segment"]["rows"]
        self.cuts += 1
        self.split_open = not self.split_open

    def save_shared(self, client: httpx.Client, key: tuple[str, int], token: str) -> None:
        version, tone = self.shared.get(key, (None, None))  # type: ignore[assignment]
        if version is None:
            row = client.get(f"/api/segments/{quote(key[0], safe='')}?copy=final").json()["rows"][key[1] - 1]
            version, tone = row["version"], row["values"].get("tone_of_voice") or ""
        for _ in range(50):
            answer = self.put(client, _url(*key, "final"), {"version": version, "fields": {"tone_of_voice": f"{tone};{token}"}})
            if answer.status_code == 200:
                self.shared[key] = (answer.json()["version"], f"{tone};{token}")
                self.tokens.append((key, token))
                return
            if answer.status_code != 409:
                self.errors.append(f"shared {key}: {answer.status_code} {answer.text[:200]}")
                return
            self.conflicts += 1
            current = answer.json()["current"]
            version, tone = current["version"], current["values"].get("tone_of_voice") or ""
        self.errors.append(f"shared {key}: gave up after 50 conflicts")


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile of ``values``; None when there are none (printed as such, never as nan)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] if ordered else None


def shown_ms(value: float | int | str | None) -> str:
    return "—" if value is None else f"{float(value):.1f}"


def number(value: float | int | str | None) -> float:
    """A measured figure of a run that confirmed saves (run_backend refuses one without)."""
    assert value is not None
    return float(value)


def run_backend(args: argparse.Namespace, source: Path, db_url: str | None, servers: int) -> dict[str, float | int | str | None]:
    """One bounded run on a fresh project folder: ``servers`` ``rescue review serve`` processes on one database
    (``db_url``, or the folder's own SQLite file), the annotators spread over them; the numbers it measured."""
    work = Path(tempfile.mkdtemp(prefix="bench-review-"))
    (work / "draft.jsonl").write_bytes(source.read_bytes())
    samples = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()]
    segments = {s["sample_id"]: len(s["rows"]) for s in samples}
    first = samples[0]["sample_id"]
    hot = [(first, i) for i in range(1, min(args.hot_rows, segments[first]) + 1)]
    cut_segment = samples[-1]["sample_id"] if args.cut_every and len(samples) > 1 else None
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    db = ["--db", db_url] if db_url else []
    names = [f"a{i}" for i in range(1, args.annotators + 1)]
    for name in names:  # adjudicators: they may write their own copy and the shared final one
        subprocess.run([*rescue_command(), "review", "user", "add", str(work), name, "--role", "adjudicator",
                        "--password-stdin", *db], input=PASSWORD + "\n", text=True, env=env, check=True, capture_output=True)
    bases, procs = [], []
    for _ in range(servers):
        port = _free_port()
        bases.append(f"http://127.0.0.1:{port}")
        procs.append(subprocess.Popen([*rescue_command(), "review", "serve", str(work), "--port", str(port), *db], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    try:
        for base, server in zip(bases, procs, strict=True):
            for _ in range(300):
                try:
                    if httpx.get(base + "/login", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            else:
                raise SystemExit("the review server did not start: " + (server.stderr.read().decode() if server.stderr else ""))
        deadline = time.monotonic() + args.seconds
        workers = [Annotator(bases[seed % servers], name, segments, hot, deadline, args.shared_every, seed,
                             cut_segment, args.cut_every)
                   for seed, name in enumerate(names)]
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join(args.seconds + 120)
        elapsed = time.perf_counter() - start

        lost = 0
        with httpx.Client(base_url=bases[0], timeout=30) as client:
            for w in workers:
                client.post("/api/login", json={"name": w.name, "password": PASSWORD})
                by_segment: dict[str, dict] = {}  # type: ignore[type-arg]
                if cut_segment is not None and w.cuts:
                    seg = client.get(f"/api/segments/{quote(cut_segment, safe='')}").json()
                    lost += seg["layout"] != w.cuts  # a cut confirmed but not counted would be a lost write
                    lost += len(seg["rows"]) != segments[cut_segment] + (1 if w.split_open else 0)
                for (sample_id, row), value in w.own.items():
                    if sample_id not in by_segment:
                        by_segment[sample_id] = client.get(f"/api/segments/{quote(sample_id, safe='')}").json()
                    lost += by_segment[sample_id]["rows"][row - 1]["values"]["tone_of_voice"] != value
            final = client.get(f"/api/segments/{quote(first, safe='')}?copy=final").json()["rows"]
            tokens = [t for w in workers for t in w.tokens]
            for (_, row), token in tokens:
                lost += token not in (final[row - 1]["values"].get("tone_of_voice") or "").split(";")
            audit = client.get(f"/api/segments/{quote(first, safe='')}/audit").json()
            shared_edits = sum(1 for a in audit if a["copy"] == "final" and a["action"] == "row.edit")
    finally:
        for server in procs:
            server.terminate()
        for server in procs:
            server.wait(10)
        shutil.rmtree(work, ignore_errors=True)

    latencies = [x for w in workers for x in w.latencies]
    cut_latencies = [x for w in workers for x in w.cut_latencies]
    saves = len(latencies) - sum(w.conflicts for w in workers)
    errors = [e for w in workers for e in w.errors]
    if saves <= 0:  # nothing measured: no rate, no latency to print (it printed nan before)
        raise SystemExit(f"bench_review: no save was confirmed in {elapsed:.1f} s on {db_url or 'SQLite'} with "
                         f"{args.annotators} annotators; first error: {errors[0] if errors else 'none reported'}")
    return {"saves": saves, "rate": saves / elapsed, "conflicts": sum(w.conflicts for w in workers),
            "p50": percentile(latencies, 50), "p95": percentile(latencies, 95), "p99": percentile(latencies, 99),
            "cuts": len(cut_latencies), "cut_p95": percentile(cut_latencies, 95),
            "shared_edits": shared_edits, "tokens": len(tokens), "lost": lost, "errors": len(errors),
            "first_error": errors[0] if errors else "", "segments": len(segments), "rows": sum(segments.values())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="release-format .jsonl (default: the real samples)")
    parser.add_argument("--annotators", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the annotators save (bounded)")
    parser.add_argument("--shared-every", type=int, default=4, help="every Nth save goes to a shared final row")
    parser.add_argument("--hot-rows", type=int, default=3, help="shared rows every annotator edits")
    parser.add_argument("--cut-every", type=int, default=10,
                        help="every Nth write re-cuts the annotator's copy of the last segment (0: no cuts)")
    parser.add_argument("--db", default=None, help="also run on this database URL (e.g. postgresql://...), side by side")
    parser.add_argument("--postgres", action="store_true",
                        help="also run on a throwaway PostgreSQL server started here (Debian's postgresql, review-pg extra)")
    parser.add_argument("--servers", type=int, default=1,
                        help="serve processes sharing the database in the --db/--postgres run (SQLite runs one)")
    args = parser.parse_args()
    source = default_source(args.data)

    with ExitStack() as stack:
        runs: list[tuple[str, dict[str, float | int | str | None]]] = [("SQLite (WAL)", run_backend(args, source, None, 1))]
        other = args.db
        if args.postgres and not other:
            from rescue.testing.postgres import temporary_cluster

            other = stack.enter_context(temporary_cluster(durable=True)).create_database("bench_review")
        if other:
            label = "PostgreSQL" if other.startswith("postgres") else other.split(":", 1)[0]
            runs.append((f"{label}, {args.servers} server(s)", run_backend(args, source, other, args.servers)))

    first = runs[0][1]
    print(f"\nrescue review: {args.annotators} annotators saving for {args.seconds:.0f} s on {first['segments']} segments "
          f"({first['rows']} rows) from {source.name}; p95 target {TARGET_P95_MS:.0f} ms, 0 lost")
    table = [
        ("confirmed saves/s", lambda r: f"{r['rate']:.0f} ({r['saves']})"),
        ("409 conflicts (retried)", lambda r: str(r["conflicts"])),
        ("latency p50 / p95 / p99 ms", lambda r: f"{shown_ms(r['p50'])} / {shown_ms(r['p95'])} / {shown_ms(r['p99'])}"),
        ("row cuts (p95 ms)", lambda r: f"{r['cuts']} ({shown_ms(r['cut_p95'])})"),
        ("p95 vs target", lambda r: f"{number(r['p95']) / TARGET_P95_MS:.2f}x"),
        ("shared saves in the audit log", lambda r: f"{r['shared_edits']} of {r['tokens']}"),
        ("lost updates", lambda r: str(r["lost"])),
        ("errors", lambda r: str(r["errors"])),
    ]
    rows = [(name, "   ".join(f"{show(r):<24}" for _, r in runs)) for name, show in table]
    if len(runs) == 2:
        rows.append(("saves/s ratio (2nd / 1st)", f"{number(runs[1][1]['rate']) / number(first['rate']):.2f}x"))
        rows.append(("p95 ratio (2nd / 1st)", f"{number(runs[1][1]['p95']) / number(first['p95']):.2f}x"))
    width = max(len(name) for name, _ in rows)
    print_table(" " * (width + 4) + "   ".join(f"{label:<24}" for label, _ in runs), rows)
    failed = [label + ": " + str(r["first_error"] or "lost or unaudited saves") for label, r in runs
              if r["lost"] or r["errors"] or r["shared_edits"] != r["tokens"]]
    if failed:
        print("\n".join(failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
