"""The two reference clients of the throughput benchmark, run as processes of their own so that their
start-up counts like rescue's: ``python _clients.py lean|sequential BASE_URL BODIES.jsonl [CONCURRENCY]``.

- ``sequential``: one ``requests.post`` after another, as the authors' scripts do (without their fixed
  0.3 s pause after each request, which would only widen the gap);
- ``lean``: the least a concurrent client can do — raw httpx, a semaphore, the body read and nothing parsed.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

HEADERS = {"Authorization": "Bearer benchmark", "Content-Type": "application/json"}


def sequential(base_url: str, bodies: list[dict]) -> None:
    import requests

    for body in bodies:
        response = requests.post(f"{base_url}/chat/completions", json=body, headers=HEADERS, timeout=240)
        response.raise_for_status()


async def lean(base_url: str, bodies: list[dict], concurrency: int) -> None:
    import httpx

    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url, headers=HEADERS, limits=limits, timeout=240) as client:

        async def send(body: dict) -> None:
            async with gate:
                response = await client.post("/chat/completions", json=body)
                response.raise_for_status()

        await asyncio.gather(*(send(body) for body in bodies))


def main() -> None:
    kind, base_url, path = sys.argv[1:4]
    bodies = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]
    if kind == "sequential":
        sequential(base_url, bodies)
    elif kind == "lean":
        asyncio.run(lean(base_url, bodies, int(sys.argv[4]) if len(sys.argv) > 4 else 32))
    else:
        raise SystemExit(f"unknown client {kind!r}: lean or sequential")
    print(len(bodies))


if __name__ == "__main__":
    main()
