"""Run the real ``rescue`` entry point (``rescue.cli.main``: the error handling and exit codes users see) in-process."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from click.testing import CliRunner


@dataclass
class MainResult:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def invoke_main(args: list[str], env: dict[str, str | None] | None = None, input: bytes | None = None) -> MainResult:
    from rescue.cli import main

    runner = CliRunner()
    saved = sys.argv
    code: int = 0
    with runner.isolation(input=input, env=env) as (stdout, stderr, _):
        sys.argv = ["rescue", *args]
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.argv = saved
        out, err = stdout.getvalue().decode("utf-8", "replace"), stderr.getvalue().decode("utf-8", "replace")
    return MainResult(code, out, err)
