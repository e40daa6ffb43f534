"""``rescue submit`` and ``rescue verify``: thin wrappers over :mod:`rescue.submissions`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from rescue.cli._app import app, console
from rescue import display
from rescue.cli._startup import submissions_bundle, submissions_submit, submissions_verify
from rescue.errors import BundleError, NotVerified


@app.command("submit")
def submit_command(
    run_dir: Annotated[Path, typer.Argument(help="The run directory to submit (rescue run --out).")],
    out: Annotated[Path, typer.Option("--out", help="The bundle file to write (a zip; e.g. my-model.rescue.zip).")],
    data: Annotated[Optional[Path], typer.Option(
        "--data", help="The data the run used (default: the path it recorded; its SHA-256 is checked).")] = None,
    cache: Annotated[Optional[Path], typer.Option(
        "--cache", help="The run's answer cache when it was run with --cache-dir (default: RUN/cache.sqlite).")] = None,
    submitter: Annotated[str, typer.Option("--submitter", help="Who submits: a name, a lab, a contact.")] = "",
    training_data: Annotated[str, typer.Option(
        "--training-data", help="What the model was trained or tuned on, as far as you know.")] = "",
    zero_shot: Annotated[Optional[bool], typer.Option(
        "--zero-shot/--not-zero-shot", help="Declare whether any RESCUE-Bench data, prompt or answer was used to "
        "make the model (default: not declared).", show_default=False)] = None,
    notes: Annotated[str, typer.Option("--notes", help="Anything else a reader of the leaderboard should know.")] = "",
) -> None:
    """Pack a run as one bundle that anyone can re-derive with `rescue verify`: the manifest, every answer as
    received, the judge's ratings, the predictions, the results and every interval, each file hashed."""
    declared = submissions_bundle.Declarations(submitter=submitter, training_data=training_data, zero_shot=zero_shot,
                                               notes=notes)
    done = submissions_submit.submit(run_dir, out, declarations=declared, data=data, cache=cache)
    state = done.manifest.state
    flags = [word for word, on in (("incomplete", not state.complete), ("re-scored", state.rescored),
                                   ("limited to some samples", state.limited), ("mixed instance sets", state.mixed))
             if on]
    console.print(f"wrote {display.terminal_text(str(out))}: {len(done.manifest.systems)} system(s) "
                  f"({display.terminal_text(', '.join(done.manifest.systems))}), {len(done.manifest.tasks)} task(s), "
                  f"{done.answers} answer(s){'; the manifest says: ' + ', '.join(flags) if flags else ''}",
                  highlight=False, soft_wrap=True)


@app.command("verify")
def verify_command(
    bundle: Annotated[Path, typer.Argument(help="The bundle to verify (rescue submit --out).")],
    data: Annotated[Optional[Path], typer.Option(
        "--data", help="The release the bundle names (default: the path its run recorded, else the demo data); "
        "its SHA-256 must be the bundle's.")] = None,
    out: Annotated[Optional[Path], typer.Option(
        "--out", help="The folder for BUNDLE.verdict.json and .md (default: the bundle's folder).")] = None,
    against: Annotated[Optional[list[Path]], typer.Option(
        "--against", help="Verdicts (.verdict.json) of other bundles: an answer set that repeats one is flagged. "
        "Repeat the option for several.")] = None,
    rejudge: Annotated[int, typer.Option(
        "--rejudge", min=0, help="Grade N judged answers again with the run's pinned judges (needs their keys) and "
        "report agreement.")] = 0,
    reproduce: Annotated[int, typer.Option(
        "--reproduce", min=0, help="Ask --model again on N instances of each task with the run's options and "
        "report how many predictions match.")] = 0,
    model: Annotated[Optional[str], typer.Option(
        "--model", help="With --reproduce: the model to ask, as rescue run's --model.")] = None,
    system: Annotated[Optional[str], typer.Option(
        "--system", help="With --reproduce: which of the bundle's models --model stands for (default: its only one).")] = None,
    base_url: Annotated[Optional[str], typer.Option("--base-url", help="With --reproduce: as rescue run's --base-url.")] = None,
    api_key_env: Annotated[Optional[str], typer.Option(
        "--api-key-env", help="With --reproduce: as rescue run's --api-key-env.")] = None,
    judge_base_url: Annotated[Optional[str], typer.Option(
        "--judge-base-url", help="With --rejudge: as rescue run's --judge-base-url.")] = None,
    judge_api_key_env: Annotated[Optional[str], typer.Option(
        "--judge-api-key-env", help="With --rejudge: as rescue run's --judge-api-key-env.")] = None,
) -> None:
    """Re-derive a bundle offline with this rescue: every file's hash, the release's instances, this rescue's
    prompts, every answer re-parsed and every metric and interval re-scored to the last digit (each BERTScore within
    1e-5: its last bits are the machine's); then the audits, and, when asked, re-judging and reproducing a sample.
    The verdict's level: checked (re-scored), re-judged, reproduced. Exit 0 only when every check that ran passed (1: a check failed; 2: the bundle cannot be read)."""
    others = [submissions_verify.read_verdict(path) for path in against or []]
    steps = submissions_verify.Resampling(rejudge=rejudge, reproduce=reproduce, model=model, system=system,
                                          base_url=base_url, api_key_env=api_key_env, judge_base_url=judge_base_url,
                                          judge_api_key_env=judge_api_key_env)
    verdict = submissions_verify.verify(bundle, data=data, others=others, resampling=steps)
    folder = out if out is not None else bundle.parent
    stem = bundle.name.removesuffix(".zip")
    written = submissions_verify.write_verdict(verdict, folder, stem)
    for check in [*verdict.checks, *verdict.audits]:
        mark = {True: "ok  ", False: "FAIL", None: "--  "}[check.passed]
        console.print(f"{mark} {check.name}: {display.terminal_text(check.detail)}", highlight=False,
                      soft_wrap=True)
    console.print(f"verdict: {verdict.level}; written to {display.terminal_text(str(written[0]))} and "
                  f"{display.terminal_text(str(written[1]))}", highlight=False, soft_wrap=True)
    if verdict.level == "refused":
        raise BundleError(next(c.detail for c in verdict.checks if c.passed is False))
    if not verdict.passed:
        raise NotVerified(f"{bundle}: not verified ({verdict.level}): "
                          + "; ".join(c.name for c in [*verdict.checks, *verdict.audits] if c.passed is False))
