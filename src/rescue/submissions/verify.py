"""``rescue verify FILE``: a bundle re-derived offline with this rescue and compared with what it claims.

The checks, in order (each a :class:`Check` of the :class:`Verdict`; the first that cannot pass stops the rest):

1. the bundle is read as hostile input (:func:`rescue.submissions.bundle.read_bundle`): limits, member names,
   the manifest's schema, every member's SHA-256;
2. the manifest agrees with its files (data digest, systems, tasks, judges);
3. the data given is the release the manifest names (its SHA-256), and each task's instances (their ids) and
   prompts (every request's messages) are what this rescue builds and renders from it;
4. re-scored: the run is rebuilt in a temporary folder from the bundle's answers alone (the cache a run
   rescores from; people's answers from their records) and ``rescue rescore``'s own machinery re-parses every
   answer, re-runs the offline baselines and BERTScore, and re-aggregates every metric; every record, metric
   and interval must equal the submitted one to the last digit, but for BERTScore: each record's
   ``bertscore_f1`` must be within :data:`BERTSCORE_TOLERANCE` of the submitted one (its last bits are the
   machine's), and every metric and interval must then follow to the last digit from the re-derived records
   holding the submitted BERTScore values (:func:`with_submitted_bertscore`).

Then the audits (answers that repeat another bundle's, timings no model could have, instances missing, usage
that cannot be) and, when asked, re-judging and reproducing a sample (:mod:`rescue.submissions.resample`).
The verdict's level is the highest passed: ``checked`` (re-scored), ``re-judged``, ``reproduced``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeGuard

from rescue.atomic import write_all_atomic
from rescue.data.loading import load_samples
from rescue.data.models import Sample
from rescue.display import markdown_text
from rescue.files import sha256_file
from rescue.engine.config import RunConfig
from rescue.engine.plan import load_task
from rescue.engine.runner import Runner
from rescue.engine.types import TaskModel
from rescue.errors import BundleError, RescueError
from rescue.llm import ChatAnswer, Usage
from rescue.llm import ResponseCache
from rescue.runs.folder import CACHE
from rescue.runs.results import PREDICTIONS, RESULTS, RunResults, TaskResults
from rescue.submissions.bundle import (ANSWERS, INTERVALS, PEOPLE, SHA256, Bundle, bundle_records, bundle_results, json_lines, parse_json,
                                       read_bundle, system_kind)
from rescue.submissions.facts import run_intervals, taken_instances, task_facts
from rescue.submissions.submit import run_data
from rescue.tasks import epoch_aggregates
from rescue.tasks.base import Instance, PredictionRecord, RenderOptions, Task

Level = Literal["refused", "failed", "checked", "re-judged", "reproduced"]
LEVELS: tuple[Level, ...] = ("refused", "failed", "checked", "re-judged", "reproduced")  # lowest first
USAGE_FIELDS = {f.name for f in fields(Usage)}
SHOWN = 5  # differences named per check; the count says how many there were
# An answer a model sent takes at least this long on average: a run whose answers came faster was not asked.
FASTEST_ANSWER_S = 0.001
BERTSCORE = "bertscore_f1"  # the score rescue.scoring.bertscore puts in each ER and VP record
# The contract of BERTScore's check: a record's re-derived F1 agrees with the submitted one when they are at most
# this far apart (absolute, on the record's F1 as predictions.jsonl holds it, rescaled or not). BERTScore is float32
# neural arithmetic whose last bits are the machine's (torch's kernels for the CPU's instruction set, MKL's, the
# torch build): two numeric paths' F1 differ in float32's last bits (its step at 1 is 1.2e-7; a backbone's baseline
# rescaling multiplies that by 1/(1 - baseline); docs/submissions.md gives the differences seen). 1e-5 is far above
# that and a tenth of the last digit the report and the leaderboard show of a BERTScore (4): it moves a shown value
# by one unit only where that value lies within 1e-5 of a rounding boundary. Everything else is compared exactly,
# and every metric and interval must follow to the last digit from the submitted BERTScore values.
BERTSCORE_TOLERANCE = 1e-5


@dataclass
class Check:
    """One check of a verification: its name, whether it passed (None: not run), and what it found."""

    name: str
    passed: bool | None
    detail: str = ""


@dataclass
class Verdict:
    """A bundle's verification: the level reached, every check and audit, and the bundle's answer-set digest
    (which a leaderboard compares across entries to find repeated answers)."""

    bundle: str
    level: Level
    bundle_sha256: str = ""  # of the bundle file verified: a verdict belongs to exactly one file
    checks: list[Check] = field(default_factory=list)
    audits: list[Check] = field(default_factory=list)
    systems: list[str] = field(default_factory=list)
    answer_digests: dict[str, str] = field(default_factory=dict)  # system -> digest of its (instance, answer) set
    rescue_version: str = ""

    @property
    def passed(self) -> bool:
        """Every check and audit that ran passed."""
        return all(c.passed is not False for c in [*self.checks, *self.audits])

    def as_json(self) -> dict[str, Any]:
        """The verdict as written to ``.verdict.json``."""
        return {**asdict(self), "passed": self.passed}


class RecordedAnswers:
    """A system whose answers cannot be asked again (a person): each batch answered with the text its records
    hold, so the run's own parsing and scoring re-derive the rest (the runner's TaskModel protocol)."""

    def __init__(self, name: str, raw: dict[tuple[str, str], str | None]):
        self.name = name
        self.raw = raw  # (task, instance id) -> the answer text its record holds

    def applies_to(self, task_name: str) -> bool:
        """A person answered every task of the run that has records."""
        return any(task == task_name for task, _ in self.raw)

    def prepare(self, task: Task, instances: list[Instance], options: RenderOptions | None = None) -> None:
        """Nothing to learn."""
        return None

    async def solve(self, ask: Any) -> ChatAnswer:
        """The text recorded for the batch (a person's batch has one answer text for all its instances)."""
        for instance in ask.batch:
            text = self.raw.get((ask.task.name, instance.instance_id))
            if text:
                return ChatAnswer(text)
        return ChatAnswer(None, "request_error", "no answer recorded")

    async def aclose(self) -> None:
        """Nothing to release."""
        return None


def answer_digest(records: Iterable[PredictionRecord]) -> str:
    """The digest of a system's set of (task, instance, answer text): equal for two bundles whose answers are
    the same, whatever their names say."""
    lines = sorted(f"{r.task}\t{r.instance_id}\t{r.raw or ''}" for r in records)
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass")).hexdigest()


# --- the checks ------------------------------------------------------------------------------------------


def _consistency(bundle: Bundle, results: RunResults) -> Check:
    manifest = bundle.manifest
    problems = []
    recorded = results.config.used.data_sha256 or (results.data.sha256 if results.data else None)
    if recorded and recorded != manifest.data_sha256:
        problems.append(f"data_sha256 {manifest.data_sha256[:12]}... but results.json records {recorded[:12]}...")
    if set(manifest.systems) != set(results.models):
        problems.append(f"systems {sorted(manifest.systems)} but results.json holds {sorted(results.models)}")
    if list(manifest.judges) != list(results.config.judges):
        problems.append(f"judges {manifest.judges} but results.json records {results.config.judges}")
    for name, facts in manifest.systems.items():
        if facts.kind != system_kind(name):
            problems.append(f"systems.{name}.kind is {facts.kind!r}, but the name says {system_kind(name)!r}")
    if set(manifest.tasks) != set(results.config.as_dict().get("tasks") or manifest.tasks):
        problems.append(f"tasks {sorted(manifest.tasks)} but results.json ran {results.config.as_dict().get('tasks')}")
    return Check("manifest agrees with its files", not problems, "; ".join(problems[:SHOWN]) or
                 f"{len(manifest.systems)} system(s), {len(manifest.tasks)} task(s)")


def _rebuild(bundle: Bundle, folder: Path) -> list[PredictionRecord]:
    """The run folder ``rescue rescore`` reads, from the bundle alone: its results, its predictions, and a cache
    holding every answer of the bundle; the submitted records (read once, with the run folder's own reader)."""
    from rescue.runs.folder import read_predictions

    (folder / RESULTS).write_bytes(bundle.members[RESULTS])
    (folder / PREDICTIONS).write_bytes(bundle.members[PREDICTIONS])
    if PEOPLE in bundle.members:
        (folder / PEOPLE).write_bytes(bundle.members[PEOPLE])
    submitted = read_predictions(folder / PREDICTIONS)
    store = ResponseCache(folder / CACHE)
    try:
        store.put_many(_answers(bundle))
    finally:
        store.close()
    return submitted


def _answers(bundle: Bundle) -> Iterator[tuple[str, str, str, ChatAnswer]]:
    """Every answer line of the bundle as (request digest, model, purpose, answer); BundleError naming the line
    of one that is not an answer."""
    for number, entry in json_lines(bundle, ANSWERS):
        try:
            usage = Usage(**{k: v for k, v in entry["usage"].items()  # type: ignore[arg-type]
                             if k in USAGE_FIELDS and isinstance(v, int | float) and not isinstance(v, bool)})
            text, key = entry["text"], entry["request_sha256"]
            if not isinstance(text, str) or not text or not isinstance(key, str) or not SHA256.fullmatch(key):
                raise ValueError("text must be an answer and request_sha256 a SHA-256")
            answer = ChatAnswer(text, "ok", "", usage, dict(entry.get("meta") or {}))
            yield key, str(entry["model"]), str(entry.get("purpose") or "predict"), answer
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BundleError(f"{bundle.path}:{ANSWERS}:{number}: not an answer line ({type(exc).__name__}: "
                              f"{exc})") from None


def _people(records: Sequence[PredictionRecord]) -> list[TaskModel]:
    """The systems that cannot be asked again (people), each answering from the text its records hold."""
    raw: dict[str, dict[tuple[str, str], str | None]] = {}
    for record in records:
        if system_kind(record.model) == "human":
            raw.setdefault(record.model, {})[(record.task, record.instance_id)] = record.raw
    return [RecordedAnswers(name, answers) for name, answers in raw.items()]


RecordKey = tuple[str, str, str, int | None]  # model, task, instance id, epoch (an instance per epoch: --epochs)


def _key(record: PredictionRecord) -> RecordKey:
    return record.model, record.task, record.instance_id, record.epoch


def _compared_fields(record: PredictionRecord, name: str) -> Any:
    """A record's field as compared exactly: its scores without their BERTScore (:class:`BertScoreAgreement`'s)."""
    value = getattr(record, name)
    if name == "scores":
        return {k: v for k, v in value.items() if k != BERTSCORE} | {BERTSCORE: BERTSCORE in value}
    return value


def _compare_records(submitted: Sequence[PredictionRecord], derived: Sequence[PredictionRecord]) -> list[str]:
    """Every difference of the re-derived records from the submitted ones, to the last digit but for the value of
    their BERTScore (present in both or neither), which :class:`BertScoreAgreement` compares."""
    ours = {_key(r): r for r in derived}
    differences = []
    seen = set()
    for record in submitted:
        key = _key(record)
        seen.add(key)
        mine = ours.get(key)
        if mine is None:
            differences.append(f"{record.model} {record.instance_id}: not re-derived (no such instance here)")
            continue
        for name in ("prediction", "status", "scores", "gold", "seed"):
            if _compared_fields(record, name) != _compared_fields(mine, name):
                differences.append(f"{record.model} {record.instance_id}: {name} {getattr(record, name)!r} submitted, "
                                   f"{getattr(mine, name)!r} re-derived")
                break
    for key in ours.keys() - seen:
        differences.append(f"{key[0]} {key[2]}: re-derived but not in the submitted predictions")
    return differences


def _short(value: float) -> str:
    """A small difference as 1.2e-7 (no padded exponent), 0 as 0."""
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa.removesuffix('.0')}e{int(exponent)}"


def _real(value: float | None) -> TypeGuard[float]:
    return value is not None and math.isfinite(value)


@dataclass
class BertScoreAgreement:
    """Each record's re-derived BERTScore against the submitted one: how many were compared, the largest
    difference within :data:`BERTSCORE_TOLERANCE`, those beyond it (named), and the submitted values within it
    that differ from the re-derived ones (what :func:`with_submitted_bertscore` puts in their place)."""

    compared: int = 0
    largest: float = 0.0
    beyond: list[str] = field(default_factory=list)
    submitted: dict[RecordKey, float] = field(default_factory=dict)

    @classmethod
    def of(cls, submitted: Sequence[PredictionRecord], derived: Sequence[PredictionRecord]) -> BertScoreAgreement:
        """The agreement of the records present in both with a BERTScore on both sides (the rest is
        :func:`_compare_records`'s)."""
        theirs = {_key(r): r.scores[BERTSCORE] for r in submitted if BERTSCORE in r.scores}
        found = cls()
        for record in derived:
            key = _key(record)
            if key not in theirs or BERTSCORE not in record.scores:
                continue
            given, mine = theirs[key], record.scores[BERTSCORE]
            found.compared += 1
            if given == mine:
                continue
            if _real(given) and _real(mine) and abs(given - mine) <= BERTSCORE_TOLERANCE:
                found.largest = max(found.largest, abs(given - mine))
                found.submitted[key] = given
                continue
            apart = (f"{_short(abs(given - mine))} apart (over {_short(BERTSCORE_TOLERANCE)})"
                     if _real(given) and _real(mine) else "not both numbers")
            found.beyond.append(f"{record.model} {record.instance_id}: {BERTSCORE} {given!r} submitted, {mine!r} "
                                f"re-derived, {apart}")
        return found

    def check(self) -> Check:
        """The verdict's line: every value within the tolerance, and the largest difference."""
        return Check("BERTScore computed again", not self.beyond, _listed(self.beyond) if self.beyond else
                     f"{self.compared} values within {_short(BERTSCORE_TOLERANCE)} of the submitted (largest "
                     f"difference {_short(self.largest)})")


def with_submitted_bertscore(derived: RunResults, records: Sequence[PredictionRecord],
                             agreement: BertScoreAgreement) -> tuple[RunResults, list[PredictionRecord]]:
    """The re-derived run with each BERTScore within the tolerance replaced by the submitted value, and the metrics
    of each model and task it changes aggregated again as the run aggregates them
    (:func:`rescue.tasks.epoch_aggregates`, the records in the run's order): what the submitted metrics and
    intervals must equal to the last digit. The run as it was when no value differs."""
    if not agreement.submitted:
        return derived, list(records)
    changed: set[tuple[str, str]] = set()
    replaced = []
    for record in records:
        value = agreement.submitted.get(_key(record))
        if value is not None:
            record = record.model_copy(update={"scores": {**record.scores, BERTSCORE: value}})
            changed.add((record.model, record.task))
        replaced.append(record)
    results = derived.model_copy(deep=True)
    for model, task in sorted(changed):
        mine = [r for r in replaced if r.model == model and r.task == task]
        results.models[model].tasks[task] = TaskResults.model_validate(epoch_aggregates(load_task(task), mine))
    return results, replaced


def _compare_metrics(submitted: RunResults, derived: RunResults) -> list[str]:
    differences = []
    for model, results in submitted.models.items():
        mine = derived.models.get(model)
        if mine is None:
            differences.append(f"{model}: not re-derived")
            continue
        for task, task_results in results.tasks.items():
            for scope, metrics in task_results.model_dump(mode="json").items():
                theirs = mine.tasks.get(task)
                ours = theirs.model_dump(mode="json").get(scope) if theirs else None
                if ours != metrics:
                    differences.append(f"{model} {task} {scope}: {_first_difference(metrics, ours)}")
    return differences


def _first_difference(left: Any, right: Any, path: str = "") -> str:
    if isinstance(left, dict) and isinstance(right, dict):
        for key in sorted(left.keys() | right.keys()):
            if left.get(key) != right.get(key):
                return _first_difference(left.get(key), right.get(key), f"{path}.{key}" if path else str(key))
    return f"{path or 'value'} {left!r} submitted, {right!r} re-derived"


def _compare_intervals(submitted: Any, derived: list[dict[str, Any]]) -> list[str]:
    if not isinstance(submitted, list):
        return ["intervals.json is not a list of cells"]
    key = ("system", "scope", "column")
    theirs = {tuple(c.get(k) for k in key): c for c in submitted if isinstance(c, dict)}
    ours = {tuple(c[k] for k in key): c for c in derived}
    differences = [f"{' '.join(map(str, k))}: submitted but not re-derived" for k in theirs.keys() - ours.keys()]
    differences += [f"{' '.join(map(str, k))}: re-derived but not submitted" for k in ours.keys() - theirs.keys()]
    for cell_key in theirs.keys() & ours.keys():
        if theirs[cell_key] != ours[cell_key]:
            differences.append(f"{' '.join(map(str, cell_key))}: {_first_difference(theirs[cell_key], ours[cell_key])}")
    return sorted(differences)


def _listed(differences: list[str]) -> str:
    more = f" (and {len(differences) - SHOWN} more)" if len(differences) > SHOWN else ""
    return "; ".join(differences[:SHOWN]) + more


def _rescore(bundle: Bundle, results: RunResults, release: Release, folder: Path,
             submitted: Sequence[PredictionRecord]) -> tuple[RunResults, list[PredictionRecord]]:
    config = RunConfig.from_json(results.config.as_dict(), f"{bundle.path}:{RESULTS}")
    config.out = str(folder)
    config.data = release.path
    config.quiet = True
    config.cache_dir = None
    runner = Runner(config, offline=True, models=_people(submitted), samples=release.samples,
                    samples_sha256=release.sha256, only=taken_instances(results))
    outcome = asyncio.run(runner.run())  # written to ``folder`` too, as rescore writes; held here as it was written
    return outcome.typed, outcome.records


# --- the audits -----------------------------------------------------------------------------------------


def _audits(bundle: Bundle, records: Sequence[PredictionRecord], others: Sequence[Verdict]) -> tuple[list[Check], dict[str, str]]:
    manifest = bundle.manifest
    by_system: dict[str, list[PredictionRecord]] = {}
    for record in records:
        by_system.setdefault(record.model, []).append(record)
    digests = {name: answer_digest(rs) for name, rs in by_system.items()}
    audits: list[Check] = []
    repeats = [f"{name} repeats {other.bundle}'s {theirs}" for other in others
               for name, digest in digests.items() for theirs, their_digest in other.answer_digests.items()
               if digest == their_digest and system_kind(name) == "model"]
    audits.append(Check("answers not repeated from another bundle", not repeats,
                        _listed(repeats) if repeats else f"compared with {len(others)} other bundle(s)"))
    missing = []
    for name, facts in manifest.systems.items():
        for task in facts.tasks:
            have = sum(1 for r in by_system.get(name, []) if r.task == task)
            expected = manifest.tasks[task].instances if task in manifest.tasks else have
            if have < expected:
                missing.append(f"{name} {task}: {have} of {expected} instances")
    audits.append(Check("no instance missing", not missing or not manifest.state.complete,
                        (_listed(missing) + ("" if manifest.state.complete else " (the manifest says the run is "
                                                                                "incomplete)")) if missing else "every system answered every instance of its tasks"))
    bad_usage = []
    answered = 0
    for number, entry in json_lines(bundle, ANSWERS):
        answered += 1
        usage = entry.get("usage") if isinstance(entry, dict) else None
        if not isinstance(usage, dict):
            bad_usage.append(f"answers.jsonl:{number}: no usage object")
            continue
        counts = {k: v for k, v in usage.items() if isinstance(v, int | float) and not isinstance(v, bool)}
        if any(v < 0 for v in counts.values()):
            bad_usage.append(f"answers.jsonl:{number}: a negative token count")
        elif counts.get("output_tokens", 0) == 0 and counts.get("unknown", 0) == 0 and counts.get("input_tokens", 0) > 0:
            bad_usage.append(f"answers.jsonl:{number}: an answer of {len(str(entry.get('text', '')))} characters "
                             "in 0 output tokens")
        elif counts.get("reasoning_tokens", 0) > counts.get("output_tokens", 0):
            bad_usage.append(f"answers.jsonl:{number}: more reasoning tokens than output tokens")
    audits.append(Check("usage that can be", not bad_usage, _listed(bad_usage) if bad_usage else
                        f"{answered} answer(s) with plausible usage"))
    asked = sum(f.answers for f in manifest.systems.values() if f.kind == "model")
    elapsed = manifest.state.elapsed_s
    too_fast = asked > 0 and elapsed is not None and elapsed < asked * FASTEST_ANSWER_S and not manifest.state.rescored
    audits.append(Check("timings a model could have", not too_fast,
                        f"{asked} answers in {elapsed} s" if too_fast else
                        f"{asked} model answer(s) in {elapsed if elapsed is not None else '?'} s"))
    return audits, digests


# --- the verification -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Resampling:
    """The optional steps that ask models again: ``rejudge`` judged answers graded again by the pinned judges,
    ``reproduce`` instances per task asked again of ``model`` (standing for the bundle's ``system``)."""

    rejudge: int = 0
    reproduce: int = 0
    model: str | None = None
    system: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    judge_base_url: str | None = None
    judge_api_key_env: str | None = None


def _release_checks(bundle: Bundle, config: RunConfig, samples: list[Sample], results: RunResults) -> list[Check]:
    """Check 3: each task's instances and prompts, built and rendered by this rescue, against the manifest's."""
    facts = task_facts(config, samples, taken_instances(results))
    checks = []
    for name, claimed in bundle.manifest.tasks.items():
        mine = facts.get(name)
        same_ids = mine is not None and mine.instances == claimed.instances and \
            mine.instance_ids_sha256 == claimed.instance_ids_sha256
        checks.append(Check(f"{name}: the release's instances", same_ids,
                            f"{claimed.instances} instances" if same_ids else
                            f"instance ids digest {claimed.instance_ids_sha256[:12]}... submitted, "
                            f"{mine.instance_ids_sha256[:12] if mine else '(no such task)'}... here"))
        same_prompts = mine is not None and mine.prompt_sha256 == claimed.prompt_sha256
        checks.append(Check(f"{name}: prompts this rescue renders", same_prompts,
                            "every request's messages match" if same_prompts else
                            f"prompt digest {claimed.prompt_sha256[:12]}... submitted, "
                            f"{mine.prompt_sha256[:12] if mine else '(no such task)'}... here"))
    return checks


def _rescored_checks(verdict: Verdict, bundle: Bundle, results: RunResults, release: Release,
                     others: Sequence[Verdict]) -> None:
    """Check 4 and the audits: the run rebuilt from the bundle and re-scored, compared to the last digit (each
    BERTScore within its tolerance, the metrics and intervals aggregated with the submitted BERTScore values)."""
    with tempfile.TemporaryDirectory(prefix="rescue-verify-") as tmp:
        folder = Path(tmp)
        try:
            submitted_records = _rebuild(bundle, folder)
            derived, derived_records = _rescore(bundle, results, release, folder, submitted_records)
            bertscore = BertScoreAgreement.of(submitted_records, derived_records)
            derived, derived_records = with_submitted_bertscore(derived, derived_records, bertscore)
            intervals = run_intervals(folder, (derived, derived_records))
        except BundleError as exc:  # an answer line the bundle cannot hold: the bundle is refused, not a score
            verdict.level = "refused"
            verdict.checks.append(Check("every answer line readable", False, str(exc)))
            return
        except RescueError as exc:
            verdict.checks.append(Check("re-scored from the answers", False, str(exc)))
            return
    record_differences = _compare_records(submitted_records, derived_records)
    verdict.checks.append(Check("every answer re-parsed and re-scored", not record_differences,
                                _listed(record_differences) if record_differences else
                                f"{len(derived_records)} records equal" +
                                (" (BERTScore: the next check)" if bertscore.compared else "")))
    if bertscore.compared:
        verdict.checks.append(bertscore.check())
    from_submitted = " (with the submitted BERTScore values)" if bertscore.submitted else ""
    metric_differences = _compare_metrics(results, derived)
    verdict.checks.append(Check("every metric to the last digit", not metric_differences,
                                _listed(metric_differences) if metric_differences else
                                f"every task, scope and sample{from_submitted}"))
    if INTERVALS in bundle.members:
        interval_differences = _compare_intervals(parse_json(bundle.text(INTERVALS), f"{bundle.path}:{INTERVALS}"),
                                                  intervals)
        verdict.checks.append(Check("every interval to the last digit", not interval_differences,
                                    _listed(interval_differences) if interval_differences else
                                    f"{len(intervals)} leaderboard cells{from_submitted}"))
    verdict.audits, verdict.answer_digests = _audits(bundle, submitted_records, others)


@dataclass(frozen=True)
class Release:
    """The data a bundle names, read once: its path (None: the demo data), digest and every sample."""

    path: str | None
    sha256: str
    samples: list[Sample]

    def evaluated(self, results: RunResults) -> list[Sample]:
        """The samples the run evaluated: all, less those a limited run left out."""
        if results.data is not None and results.data.sample_ids:
            chosen = set(results.data.sample_ids)
            return [s for s in self.samples if s.sample_id in chosen]
        return self.samples


def verify(path: str | Path, *, data: str | Path | None = None, others: Sequence[Verdict] = (),
           resampling: Resampling | None = None) -> Verdict:
    """Verify a bundle: offline checks 1-4 and the audits, then the ``resampling`` steps asked for; RescueError
    only for what stops before a verdict can be given (a refused bundle is a verdict of level ``refused``)."""
    from rescue._version import __version__

    verdict = Verdict(str(path), "refused", rescue_version=__version__)
    if Path(path).is_file():
        verdict.bundle_sha256 = sha256_file(path)
    try:
        bundle = read_bundle(path)
        results = bundle_results(bundle)
    except RescueError as exc:
        verdict.checks.append(Check("a readable bundle", False, str(exc)))
        return verdict
    verdict.systems = list(bundle.manifest.systems)
    verdict.checks.append(Check("a readable bundle", True, f"{len(bundle.members) + 1} members, every hash matches"))
    verdict.checks.append(_consistency(bundle, results))
    if not verdict.checks[-1].passed:
        return verdict
    verdict.level = "failed"
    try:
        data_path, sha = run_data(results, data, Path(f"{bundle.path}:{RESULTS}").parent)
    except RescueError as exc:
        verdict.checks.append(Check("the release the bundle names", False, str(exc)))
        return verdict
    verdict.checks.append(Check("the release the bundle names", sha == bundle.manifest.data_sha256,
                                f"data SHA-256 {sha[:16]}..."))
    config = RunConfig.from_json(results.config.as_dict(), f"{bundle.path}:{RESULTS}")
    release = Release(data_path, sha, load_samples(data_path, keep_text=False))
    samples = release.evaluated(results)
    verdict.checks += _release_checks(bundle, config, samples, results)
    if not all(c.passed for c in verdict.checks):
        return verdict
    _rescored_checks(verdict, bundle, results, release, others)
    if verdict.passed and verdict.level == "failed":
        verdict.level = "checked"
        if resampling is not None and (resampling.rejudge > 0 or resampling.reproduce > 0):
            _resample(verdict, bundle, config, data_path, samples, resampling)
    return verdict


def _model_system(bundle: Bundle, wanted: str | None) -> str:
    models = [name for name, facts in bundle.manifest.systems.items() if facts.kind == "model"]
    if wanted is not None:
        if wanted not in bundle.manifest.systems:
            raise BundleError(f"--system {wanted!r}: the bundle's systems are {', '.join(bundle.manifest.systems)}")
        return wanted
    if len(models) != 1:
        raise BundleError(f"--reproduce: the bundle has {len(models)} models ({', '.join(models) or 'none'}); "
                          "name the one to reproduce with --system")
    return models[0]


def _resample(verdict: Verdict, bundle: Bundle, config: RunConfig, data: str | None, samples: list[Sample],
              steps: Resampling) -> None:
    """The steps that ask models again; each passed raises the verdict's level."""
    from rescue.submissions.resample import bundle_seed, rejudge, reproduce

    records = bundle_records(bundle)
    if steps.rejudge > 0:
        passed, found = rejudge(config, samples, records, steps.rejudge, bundle_seed(bundle.path),
                                base_url=steps.judge_base_url, api_key_env=steps.judge_api_key_env)
        verdict.checks.append(Check(f"re-judged {steps.rejudge} answers", passed, found))
        if passed:
            verdict.level = "re-judged"
    if steps.reproduce > 0:
        if steps.model is None:
            raise BundleError("--reproduce needs --model: the model to ask again")
        system = _model_system(bundle, steps.system)
        passed, found = reproduce(config, data, records, steps.reproduce, steps.model, system=system,
                                  base_url=steps.base_url, api_key_env=steps.api_key_env)
        verdict.checks.append(Check(f"reproduced {steps.reproduce} instances per task", passed, found))
        if passed and verdict.passed:
            verdict.level = "reproduced"




def verdict_markdown(verdict: Verdict) -> str:
    """The verdict as Markdown: the level, then every check and audit with what it found."""
    mark = {True: "passed", False: "FAILED", None: "not run"}
    lines = [f"# Verification of {Path(verdict.bundle).name}", "",
             f"**Verdict: {verdict.level}** ({'every check passed' if verdict.passed else 'a check failed'}; "
             f"rescue {verdict.rescue_version})", "", "| check | result | found |", "|---|---|---|"]
    for check in [*verdict.checks, *verdict.audits]:
        lines.append(f"| {markdown_text(check.name)} | {mark[check.passed]} | {markdown_text(check.detail)} |")
    return "\n".join(lines) + "\n"


def verdict_json(verdict: Verdict) -> str:
    """The verdict as written to ``.verdict.json``."""
    return json.dumps(verdict.as_json(), indent=2, ensure_ascii=False) + "\n"


def write_verdict(verdict: Verdict, folder: str | Path, stem: str) -> tuple[Path, Path]:
    """``FOLDER/STEM.verdict.json`` and ``.md``, each whole or absent; the two paths."""
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    json_path, markdown_path = target / f"{stem}.verdict.json", target / f"{stem}.verdict.md"
    write_all_atomic([(json_path, verdict_json(verdict)), (markdown_path, verdict_markdown(verdict))])
    return json_path, markdown_path


def read_verdict(path: str | Path) -> Verdict:
    """A verdict written by :func:`verdict_json` (another bundle's, for the repeated-answers audit)."""
    value = parse_json(Path(path).read_text(encoding="utf-8"), str(path))
    if not isinstance(value, dict) or not isinstance(value.get("answer_digests"), dict):
        raise BundleError(f"{path}: not a verdict written by `rescue verify`")
    level = value.get("level")
    return Verdict(str(value.get("bundle", path)), level if level in LEVELS else "refused",
                   bundle_sha256=str(value.get("bundle_sha256", "")),
                   checks=[Check(str(c.get("name", "")), c.get("passed") if isinstance(c.get("passed"), bool) else None,
                                 str(c.get("detail", ""))) for c in value.get("checks", []) if isinstance(c, dict)],
                   audits=[Check(str(c.get("name", "")), c.get("passed") if isinstance(c.get("passed"), bool) else None,
                                 str(c.get("detail", ""))) for c in value.get("audits", []) if isinstance(c, dict)],
                   systems=[str(x) for x in value.get("systems", []) if isinstance(x, str)],
                   answer_digests={str(k): str(v) for k, v in value["answer_digests"].items()},
                   rescue_version=str(value.get("rescue_version", "")))
