"""The reference clients of the throughput benchmarks, each run as a process of its own so that its start-up
counts like rescue's: ``python _clients.py KIND BASE_URL BODIES.jsonl [CONCURRENCY]``.

Each replays the request bodies rescue sent (the server's log), CONCURRENCY at a time over keep-alive
connections, encodes each body as JSON, sends it with rescue's headers and reads the whole answer; none parses
it. What they differ in is the HTTP stack:

- ``floor``: raw asyncio sockets, the request written by hand and the response read by its Content-Length (or
  its chunks): the least any client can do, so rescue's cost is measured against it;
- ``httpx-rescue``: httpx as rescue used it until #34: one ``AsyncClient`` of one connection per request in
  flight, read as a stream;
- ``httpx`` (or ``lean``, its earlier name): one shared ``AsyncClient`` (a pool of CONCURRENCY connections),
  ``trust_env=False``;
- ``aiohttp``: one ``ClientSession`` over a ``TCPConnector`` of CONCURRENCY connections;
- ``h11``: a lean client of our own over asyncio streams and the h11 state machine (what httpcore uses);
- ``sequential``: one ``requests.post`` after another, as the authors' scripts do (without their fixed 0.3 s
  pause after each request, which would only widen the gap).
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

HEADERS = {"Authorization": "Bearer benchmark", "Content-Type": "application/json", "Accept": "application/json"}
PATH = "chat/completions"


def _encode(body: dict) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def sequential(base_url: str, bodies: list[dict]) -> None:
    import requests

    for body in bodies:
        response = requests.post(f"{base_url}/{PATH}", json=body, headers=HEADERS, timeout=240)
        response.raise_for_status()


async def _workers(bodies: list[dict], concurrency: int, open_worker: Callable[[], Awaitable[Callable]]) -> None:
    """CONCURRENCY workers, each with its own sender (a connection), taking bodies from one shared iterator."""
    todo: Iterator[dict] = iter(bodies)

    async def worker() -> None:
        send = await open_worker()
        for body in todo:
            try:
                await send(body)
            except Exception:  # noqa: BLE001 - a kept-alive connection the server closed meanwhile: once more
                send = await open_worker()
                await send(body)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def floor(base_url: str, bodies: list[dict], concurrency: int) -> None:
    url = urlsplit(base_url)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    head = (f"POST {url.path.rstrip('/')}/{PATH} HTTP/1.1\r\nHost: {host}:{port}\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in HEADERS.items())).encode()

    async def open_worker() -> Callable:
        reader, writer = await asyncio.open_connection(host, port)

        async def send(body: dict) -> None:
            payload = _encode(body)
            writer.write(head + b"Content-Length: %d\r\n\r\n" % len(payload) + payload)
            status, _, rest = (await reader.readuntil(b"\r\n\r\n")).partition(b"\r\n")
            if b" 200 " not in status:
                raise SystemExit(f"HTTP error: {status!r}")
            fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(b":") for line in rest.split(b"\r\n"))}
            if b"content-length" in fields:
                await reader.readexactly(int(fields[b"content-length"]))
                return
            while size := int((await reader.readuntil(b"\r\n")).strip(), 16):  # chunked
                await reader.readexactly(size + 2)
            await reader.readuntil(b"\r\n")

        return send

    await _workers(bodies, concurrency, open_worker)


async def httpx_rescue(base_url: str, bodies: list[dict], concurrency: int) -> None:
    import httpx

    async def open_worker() -> Callable:
        client = httpx.AsyncClient(base_url=base_url + "/", headers=HEADERS, timeout=240,
                                   limits=httpx.Limits(max_connections=1, max_keepalive_connections=1))

        async def send(body: dict) -> None:
            async with client.stream("POST", PATH, content=_encode(body)) as response:
                chunks = [chunk async for chunk in response.aiter_bytes()]
                if response.status_code != 200:
                    raise SystemExit(f"HTTP {response.status_code}: {b''.join(chunks)[:200]!r}")

        return send

    await _workers(bodies, concurrency, open_worker)


async def httpx_shared(base_url: str, bodies: list[dict], concurrency: int) -> None:
    import httpx

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url + "/", headers=HEADERS, limits=limits, timeout=240,
                                 trust_env=False) as client:

        async def open_worker() -> Callable:
            async def send(body: dict) -> None:
                response = await client.post(PATH, content=_encode(body))
                response.raise_for_status()

            return send

        await _workers(bodies, concurrency, open_worker)


async def aiohttp_client(base_url: str, bodies: list[dict], concurrency: int) -> None:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(base_url + "/", headers=HEADERS, connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=240)) as session:

        async def open_worker() -> Callable:
            async def send(body: dict) -> None:
                async with session.post(PATH, data=_encode(body)) as response:
                    await response.read()
                    if response.status != 200:
                        raise SystemExit(f"HTTP {response.status}")

            return send

        await _workers(bodies, concurrency, open_worker)


async def h11_client(base_url: str, bodies: list[dict], concurrency: int) -> None:
    import h11

    url = urlsplit(base_url)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    target = f"{url.path.rstrip('/')}/{PATH}"
    headers = [("Host", f"{host}:{port}"), *HEADERS.items()]

    async def open_worker() -> Callable:
        reader, writer = await asyncio.open_connection(host, port)
        connection = h11.Connection(h11.CLIENT)

        async def send(body: dict) -> None:
            payload = _encode(body)
            request = h11.Request(method="POST", target=target,
                                  headers=[*headers, ("Content-Length", str(len(payload)))])
            writer.write(connection.send(request) + connection.send(h11.Data(data=payload))
                         + connection.send(h11.EndOfMessage()))
            status = 0
            while True:
                event = connection.next_event()
                if event is h11.NEED_DATA:
                    connection.receive_data(await reader.read(65536))
                elif isinstance(event, h11.Response):
                    status = event.status_code
                elif isinstance(event, h11.EndOfMessage):
                    break
            if status != 200:
                raise SystemExit(f"HTTP {status}")
            connection.start_next_cycle()

        return send

    await _workers(bodies, concurrency, open_worker)


# "lean" is the httpx client's earlier name (bench_build_media.py measures `rescue build` against it).
CONCURRENT = {"floor": floor, "httpx-rescue": httpx_rescue, "httpx": httpx_shared, "lean": httpx_shared,
              "aiohttp": aiohttp_client, "h11": h11_client}


def main() -> None:
    kind, base_url, path = sys.argv[1:4]
    bodies = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]
    if kind == "sequential":
        sequential(base_url, bodies)
    elif kind in CONCURRENT:
        asyncio.run(CONCURRENT[kind](base_url, bodies, int(sys.argv[4]) if len(sys.argv) > 4 else 32))
    else:
        raise SystemExit(f"unknown client {kind!r}: sequential or one of {', '.join(CONCURRENT)}")
    print(len(bodies))


if __name__ == "__main__":
    main()
