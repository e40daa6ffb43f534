"""The batch HTTP layer (issue 47 item 3): one batch's files and batches calls, rescue's layer against the openai client.

One client process each (start-up and imports included), against one scripted server in this process (a fresh one for
each client run; its batch ends at the first status read): upload the JSONL file, create the batch, poll its status, list the batches and
the files once, and stream the output file down. Compared: rescue.llm._batch_http of this checkout (over the
``openai`` client since #47), of ``--before`` (the hand-written layer over httpx), and the bare ``openai`` client
(``max_retries=0``), at the release's 2,144 requests and at ``--scale`` times that; least CPU of ``--repeats``
interleaved runs. Run: ``python benchmarks/bench_batch_http.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import REPO, print_table, run_child  # noqa: E402
from bench_report import sources_at  # noqa: E402

from rescue.testing.openai_server import serve  # noqa: E402

BEFORE = "9021214^"  # main just before "The batch layer goes through the openai client (#47 items 2-3)"
REQUESTS = 2_144  # the release's closed-task requests of one model
PROMPT_CHARS = 3_200  # about the release's mean prompt: 7 MB of requests

LAYER = """
import asyncio, os, sys
from rescue.llm import resolve_model
from rescue.llm._batch_http import BatchEndpoint

async def main():
    model = resolve_model("m", base_url=sys.argv[1], api_key_env="BENCH_KEY")
    api = BatchEndpoint(model)
    try:
        file_id = await api.upload(open(sys.argv[2], "rb").read(), "requests.jsonl")
        batch = await api.create(file_id, {"run": "bench"})
        while batch.status != "completed":
            batch = await api.status(batch.id)
        await api.page("batches", None)
        await api.page("files", None)
        size = 0
        async for chunk in api.content(batch.output_file_id):
            size += len(chunk)
        print(size)
    finally:
        await api.aclose()
        await model.aclose()

asyncio.run(main())
"""

LIBRARY = """
import asyncio, os, sys
import openai

async def main():
    client = openai.AsyncOpenAI(base_url=sys.argv[1], api_key=os.environ["BENCH_KEY"], max_retries=0)
    try:
        upload = await client.files.create(file=("requests.jsonl", open(sys.argv[2], "rb").read(),
                                           "application/jsonl"), purpose="batch")
        batch = await client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions",
                                            completion_window="24h", metadata={"run": "bench"})
        while batch.status != "completed":
            batch = await client.batches.retrieve(batch.id)
        await client.batches.list(limit=100)
        await client.files.list(purpose="batch", limit=100)
        size = 0
        async with client.files.with_streaming_response.content(batch.output_file_id) as response:
            async for chunk in response.iter_bytes():
                size += len(chunk)
        print(size)
    finally:
        await client.close()

asyncio.run(main())
"""


def write_requests(count: int, dest: Path) -> int:
    """``count`` chat requests as a batch's JSONL file; its size in bytes."""
    with dest.open("w", encoding="utf-8") as out:
        for k in range(count):
            prompt = f"request {k}: " + ("the couple talk about the week, " * (PROMPT_CHARS // 32))
            out.write(json.dumps({"custom_id": f"r{k}", "method": "POST", "url": "/v1/chat/completions",
                                  "body": {"model": "m", "messages": [{"role": "user", "content": prompt}],
                                           "temperature": 0, "max_tokens": 16}}) + "\n")
    return dest.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", default=BEFORE, help="the git revision of the layer before ('' to skip)")
    parser.add_argument("--scale", type=int, default=10, help="also N x the release's requests (0: only 1x)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        clients: dict[str, tuple[str, Path]] = {"now (over openai)": (LAYER, REPO / "src")}
        if args.before:
            before = sources_at(args.before, work / "before")
            if before is None:
                raise SystemExit(f"--before {args.before}: no such revision here")
            clients[f"before ({args.before}, over httpx)"] = (LAYER, before)
        clients["the openai client"] = (LIBRARY, REPO / "src")
        rows: list[tuple[str, str]] = []
        for scale in [1, *([args.scale] if args.scale > 1 else [])]:
            requests = work / f"requests-{scale}.jsonl"
            size = write_requests(REQUESTS * scale, requests)
            cpu: dict[str, list[float]] = {name: [] for name in clients}
            for _ in range(args.repeats):
                for name, (code, src) in clients.items():
                    with serve("yes", api_key="bench-key") as server:  # a server each: it keeps every upload
                        server.batch_behaviour.polls = 1
                        child = run_child([sys.executable, "-c", code, server.base_url, str(requests)],
                                          env={"PYTHONPATH": str(src), "BENCH_KEY": "bench-key"})
                    cpu[name].append(child.cpu_s)
            best = {name: min(values) for name, values in cpu.items()}
            label = f"{scale}x ({REQUESTS * scale:,} requests, {size / 1e6:.1f} MB up)"
            for name, value in best.items():
                rows.append((f"{label} {name}", f"{value:.2f} CPU-s (least of {args.repeats}: "
                             + ", ".join(f"{v:.2f}" for v in cpu[name]) + ")"))
            library = best["the openai client"]
            rows.append((f"{label} openai client / now", f"{library / best['now (over openai)']:.2f}x"))
            if args.before:
                old = best[next(name for name in best if name.startswith("before"))]
                rows.append((f"{label} openai client / before", f"{library / old:.2f}x"))
                rows.append((f"{label} now / before", f"{best['now (over openai)'] / old:.2f}x the CPU"))
    load = os.getloadavg()[0]
    print_table(f"bench_batch_http: one batch's calls, each client a fresh process, load {load:.1f}", rows)


if __name__ == "__main__":
    main()
