"""Downloading the official RESCUE-Bench release from the authors' GitHub repository.

The URL is pinned to one commit so every user gets the same bytes; the SHA-256 of what arrived is
printed (and checked when the caller knows it), and the file is written under a temporary name and
renamed only once it is complete, so an interrupted download never leaves a half file that loads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from typing import TYPE_CHECKING

from rescue.atomic import atomic_output
from rescue.data.names import name_problem
from rescue.errors import FetchError as FetchError, NoNetworkError as NoNetworkError

if TYPE_CHECKING:  # httpx and the validation are imported when a download starts: `rescue --help` stays fast
    from rescue.data.validation import ValidationReport

RELEASE_REPO = "Tomsawyerhu/RESCUE-bench"
RELEASE_COMMIT = "0d0b0793e23157c7af76d1d301e63fc705b27f2a"
RELEASE_PATH = "data/benchmark_191.jsonl"
RELEASE_URL = f"https://raw.githubusercontent.com/{RELEASE_REPO}/{RELEASE_COMMIT}/{RELEASE_PATH}"
RELEASE_SAMPLES = 191
DEFAULT_DEST = Path("data")

# (bytes received so far, total bytes or None when the server does not say)
ProgressCallback = Callable[[int, int | None], None]


@dataclass
class FetchResult:
    """A downloaded release: where it was saved, its SHA-256 and size, and its validation report."""

    path: Path
    sha256: str
    size: int
    report: ValidationReport


def download(
    url: str,
    dest: Path,
    *,
    expected_sha256: str | None = None,
    timeout: float = 30.0,
    progress: ProgressCallback | None = None,
) -> tuple[str, int]:
    """Stream ``url`` into ``dest`` atomically; returns (sha256 hex, size in bytes). The folder is made once the
    server answers: a failed download leaves no empty folder behind."""
    import httpx

    digest = hashlib.sha256()
    size = 0
    try:
        with atomic_output(dest) as tmp:
            with httpx.stream("GET", url, timeout=timeout, follow_redirects=True) as response:
                if response.status_code != 200:
                    raise FetchError(f"{url}: the server answered HTTP {response.status_code} {response.reason_phrase}")
                total = int(response.headers["content-length"]) if "content-length" in response.headers else None
                dest.parent.mkdir(parents=True, exist_ok=True)
                with tmp.open("wb") as handle:
                    for chunk in response.iter_bytes():
                        handle.write(chunk)
                        digest.update(chunk)
                        size += len(chunk)
                        if progress:
                            progress(size, total)
            if total is not None and size != total:
                raise FetchError(f"{url}: the download stopped after {size} of {total} bytes; run the command again")
            sha256 = digest.hexdigest()
            if expected_sha256 and sha256 != expected_sha256.lower():
                raise FetchError(f"{url}: checksum mismatch: expected sha256 {expected_sha256}, got {sha256}")
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        raise NoNetworkError(
            f"cannot reach {httpx.URL(url).host} ({exc}). There seems to be no network here: download {url} "
            f"on a connected machine and pass the file with --data PATH."
        ) from exc
    except httpx.HTTPError as exc:
        raise FetchError(f"{url}: the download failed: {exc}") from exc
    return sha256, size


DEFAULT_NAME = "release.jsonl"


def fetch_release(
    dest_dir: Path = DEFAULT_DEST,
    *,
    url: str = RELEASE_URL,
    expected_sha256: str | None = None,
    expected_samples: int | None = RELEASE_SAMPLES,
    progress: ProgressCallback | None = None,
) -> FetchResult:
    """Download the release into ``dest_dir`` and check that it validates (as 191 samples for the official URL).

    The file is kept even when validation finds errors, so that the errors can be inspected with
    ``rescue validate``; a FetchError then says so.
    """
    import httpx

    from rescue.data.validation import validate_path

    # The URL's last part names the file unless it cannot ("%2e%2e", "con", a newline): then the default name.
    name = Path(httpx.URL(url).path).name
    path = dest_dir / (name if name_problem(name, max_length=200) is None else DEFAULT_NAME)
    sha256, size = download(url, path, expected_sha256=expected_sha256, progress=progress)
    report = validate_path(path)
    result = FetchResult(path, sha256, size, report)
    if report.errors:
        raise FetchError(
            f"{path} (sha256 {sha256}) was downloaded but has {len(report.errors)} validation error(s); "
            f"run `rescue validate --data {path}` to see them"
        )
    if expected_samples is not None and len(report.samples) != expected_samples:
        raise FetchError(
            f"{path} (sha256 {sha256}) holds {len(report.samples)} valid samples, expected {expected_samples}"
        )
    return result
