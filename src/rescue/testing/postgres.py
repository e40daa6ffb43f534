"""A throwaway PostgreSQL server for tests and benchmarks: its own cluster in a temporary folder, listening on
127.0.0.1 only, on a free port, stopped and removed afterwards.

It uses the server binaries of the machine (Debian's ``postgresql`` package puts them in
``/usr/lib/postgresql/VERSION/bin``; ``RESCUE_PG_BINDIR`` overrides). PostgreSQL refuses to run as root, so
under root the cluster belongs to, and its commands run as, the ``postgres`` account (``RESCUE_PG_USER``).
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SUPERUSER = "rescue"


def find_bindir() -> Path | None:
    """The folder holding initdb and pg_ctl: RESCUE_PG_BINDIR, else the newest Debian install, else PATH."""
    if os.environ.get("RESCUE_PG_BINDIR"):
        return Path(os.environ["RESCUE_PG_BINDIR"])
    versions = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb")]
    versions.sort(key=lambda p: [int(n) for n in re.findall(r"\d+", p.parent.name)] or [0])
    if versions:
        return versions[-1]
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def unavailable() -> str | None:
    """Why a throwaway server cannot be started here, or None when it can."""
    if importlib.util.find_spec("psycopg") is None:
        return "the PostgreSQL driver is not installed (pip install 'rescue-bench[review-pg]')"
    bindir = find_bindir()
    if bindir is None or not (bindir / "initdb").exists() or not (bindir / "pg_ctl").exists():
        return "PostgreSQL server binaries (initdb, pg_ctl) not found (apt-get install postgresql)"
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            return "running as root and runuser (util-linux) is missing to run PostgreSQL as another account"
        try:
            pwd.getpwnam(_run_as())
        except KeyError:
            return f"running as root and there is no {_run_as()!r} account to run PostgreSQL as"
    return None


def _run_as() -> str:
    return os.environ.get("RESCUE_PG_USER", "postgres")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """A running throwaway cluster; ``url(database)`` is the SQLAlchemy URL of one of its databases."""

    def __init__(self, bindir: Path, root: Path, port: int):
        self.bindir, self.root, self.port = bindir, root, port
        self.data = root / "data"
        self._counter = 0

    def _command(self, *args: str) -> list[str]:
        # Under root, drop to the account that owns the cluster; postgres will not start as root.
        prefix = ["runuser", "-u", _run_as(), "--"] if os.geteuid() == 0 else []
        return [*prefix, *args]

    def _run(self, *args: str) -> None:
        result = subprocess.run(self._command(*args), capture_output=True, text=True, check=False, timeout=120)
        if result.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(args[:2])} failed ({result.returncode}): {result.stderr.strip()}\n{tail}")

    def start(self, durable: bool) -> None:
        self._run(str(self.bindir / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "--auth=trust",
                  "--encoding=UTF8", "--locale=C", "--no-sync")
        options = [f"-c port={self.port}", "-c listen_addresses=127.0.0.1", f"-c unix_socket_directories={self.root}",
                   "-c max_connections=200"]
        if not durable:  # tests only: a crash of the machine may lose the cluster, which is thrown away anyway
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        self._run(str(self.bindir / "pg_ctl"), "start", "-w", "-t", "60", "-D", str(self.data),
                  "-l", str(self.root / "server.log"), "-o", " ".join(options))

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run(str(self.bindir / "pg_ctl"), "stop", "-w", "-t", "60", "-m", "fast", "-D", str(self.data))

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; returns its URL."""
        import psycopg

        if name is None:
            self._counter += 1
            name = f"rescue_{os.getpid()}_{self._counter}"
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname=postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        import psycopg

        name = url.rsplit("/", 1)[1]
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user={SUPERUSER} dbname=postgres", autocommit=True) as conn:
            # End what an app's pool still holds first (DROP ... WITH (FORCE) would need PostgreSQL 13).
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


@contextmanager
def temporary_cluster(durable: bool = False) -> Iterator[Cluster]:
    """Start a throwaway cluster (RuntimeError saying why when it cannot); stop and remove it on exit.
    ``durable=False`` turns off fsync, for tests; benchmarks pass True to measure what a lab would run."""
    reason = unavailable()
    if reason:
        raise RuntimeError(reason)
    bindir = find_bindir()
    assert bindir is not None
    # Not under pytest's tmp folders: those are private to their owner, and the server runs as another account.
    root = Path(tempfile.mkdtemp(prefix="rescue-pg-"))
    try:
        if os.geteuid() == 0:
            account = pwd.getpwnam(_run_as())
            os.chown(root, account.pw_uid, account.pw_gid)
        os.chmod(root, 0o700)
        for attempt in range(3):  # another process may take the free port before the server binds it
            cluster = Cluster(bindir, root, _free_port())
            try:
                if attempt:
                    shutil.rmtree(cluster.data, ignore_errors=True)
                cluster.start(durable)
                break
            except RuntimeError:
                if attempt == 2:
                    raise
                time.sleep(0.2)
        try:
            yield cluster
        finally:
            cluster.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
