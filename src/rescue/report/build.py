"""``rescue report``: from run directories to tables, analyses, figures and the HTML report."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
import re
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from rescue.atomic import move_into_place
from rescue.data.groups import SessionGroups, check_groups, folder_of, groups_csv, infer_groups, read_groups
from rescue.data.loading import load_samples
from rescue.data.models import Sample
from rescue.atomic import process_alive, remove_stale_temporaries, write_atomic
from rescue.data.text import visible_text
from rescue.data.names import path_name
from rescue.files import MAX_FILENAME, safe_filename
from rescue.report import analyses
from rescue.report.columns import COLUMNS, HEADLINE
from rescue.report.comparability import Comparability, ComparabilityError, check, refusal
from rescue.report.comparisons import Comparison, compare_systems, comparisons_csv, comparisons_markdown
from rescue.report.failures import FailureRow, failure_rows, failures_markdown, failures_table
from rescue.report.html import (
    FIGURE_FORMATS,
    Figure,
    HtmlTable,
    comparison_tables,
    leaderboard_tables,
    render_html,
    reproduction_table,
    shaded_table,
)
from rescue.report.options import ReportOptions as ReportOptions
from rescue.report.leaderboard import (
    LeaderRow,
    add_average_rows,
    Cell,
    Leaderboard,
    build_leaderboard,
    grouping_text,
    mark_significance,
    scopes_of,
    shown_name,
    to_csv,
    to_latex,
    to_markdown,
)
from rescue.report.people import People, apply_people, people_markdown, people_table, subset_note
from rescue.report.runs import ReportError, System, load_systems
from rescue.report.recompute import Aggregates, registry_aggregates
from rescue.report.video_gain import gains_csv, gains_markdown, gains_table, video_gains
from rescue.runs.results import ModelResults
from rescue.tasks import TASK_NAMES

if TYPE_CHECKING:
    from rescue.report.figures import Plots

DEMO_MARKERS = ("", "demo", "<demo>")


@dataclass
class ReportOutput:
    """What a report wrote: its folder, the files, notes for the user, and the reference comparisons."""

    out: Path
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reference: list[Any] = field(default_factory=list)  # ReferenceComparison rows with --reference
    failures: list[FailureRow] = field(default_factory=list)  # why answers failed, per system and task
    systems: dict[str, ModelResults] = field(default_factory=dict)  # label -> stored results, in the report's order
    people: People | None = None  # a human run's people (rescue.report.people), when the report holds one


def resolve_samples(systems: Sequence[System], data: Path | None) -> tuple[list[Sample], str]:
    """The samples the runs evaluated: ``--data`` when given, else the data named in the first run's config."""
    if data is not None:
        return load_samples(data), str(data)
    named = systems[0].config.data if systems else None
    if named is None or str(named).strip() in DEMO_MARKERS or str(named).startswith("<demo>"):
        return load_samples(None), "the bundled demo data"
    path = Path(str(named))
    if not path.is_absolute():
        path = systems[0].run_dir / path if (systems[0].run_dir / path).exists() else path
    if not path.exists():
        raise ReportError(
            f"{systems[0].run_dir / 'results.json'}: field config.data: {named} does not exist here; pass --data"
        )
    return load_samples(path), str(path)


def session_groups(systems: Sequence[System], samples: Sequence[Sample], groups_file: Path | None,
                   data_name: str) -> tuple[SessionGroups, list[str]]:
    """The session groups of every evaluated sample (``--groups`` or inferred), and notes on how they were made."""
    scenarios = {r.sample_id: r.scenario for s in systems for r in s.records}
    if groups_file is not None:
        return check_groups(read_groups(groups_file), scenarios, str(groups_file)), []
    inferred = infer_groups(samples)
    unknown = sorted(set(scenarios) - set(inferred.of))
    of = {**{k: v for k, v in inferred.of.items() if k in scenarios}, **{k: folder_of(k) for k in unknown}}
    notes = []
    if unknown:
        notes.append(f"{len(unknown)} sample(s) are not in {data_name}: each is grouped by its folder (e.g. "
                     f"{unknown[0]} in {folder_of(unknown[0])}); pass --groups to say otherwise.")
    return SessionGroups(of, inferred.method, scenarios), notes


def _slug(text: str) -> str:
    """The part of a file name that names a system (or any id from data): a short safe slug plus a hash of the
    whole id, so the name is short, stable and distinct whatever the id holds (markup, newlines, 300
    characters); files.csv says which file belongs to which system. The fixed word "gold" stays as it is."""
    if text == "gold":
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{safe_filename(text, max_length=24)}-{digest}"


def _frame_table(title: str, frame: pd.DataFrame, note: str = "", digits: int = 3) -> HtmlTable:
    def cell(value: object) -> str:
        if isinstance(value, float):
            return "—" if pd.isna(value) else f"{value:.{digits}f}"
        return str(value)

    return HtmlTable(title, [str(c) for c in frame.columns], [[cell(v) for v in row] for row in frame.itertuples(index=False)], note)


PLOT_EXTRA = "pip install 'rescue-bench[plot]'"
TRANSITION_NOTE = ("Row-normalised % of consecutive labelled rows. The diagonal is 0 by construction: "
                   "a label followed by itself is not counted as a transition.")


def plotting(wanted: bool | None, formats: Sequence[str] = ("png",)) -> tuple[Plots | None, str | None]:
    """The report's figures, drawn as PNG and the other ``formats`` (svg, pdf), or None and why: figures need
    matplotlib, the ``plot`` extra.

    ``wanted`` None draws figures when matplotlib is installed and says how to get them when not; True makes
    a missing matplotlib an error (before any work); False draws none.
    """
    if wanted is False:
        return None, None
    try:
        from rescue.report import figures
    except ImportError as exc:
        if not (exc.name or "").startswith("matplotlib"):
            raise
        why = f"figures need the 'plot' extra (missing: {exc.name}): {PLOT_EXTRA}"
        if wanted:
            raise ReportError(f"--figures: {why}, or pass --no-figures") from None
        return None, f"no figures: {why}"
    return figures.Plots(tuple(formats)), None


def figure_format_list(text: str) -> tuple[str, ...]:
    """``--figure-formats``: PNG first (the page inlines it), then the others named, each once."""
    named = [part.strip().lower() for part in text.split(",") if part.strip()]
    unknown = [fmt for fmt in named if fmt not in FIGURE_FORMATS]
    if unknown:
        raise ReportError(f"--figure-formats {text!r}: unknown {', '.join(unknown)}; choose from "
                          f"{', '.join(FIGURE_FORMATS)}")
    return tuple(dict.fromkeys(["png", *named]))


FAILED_MARK = "REPORT-FAILED.txt"
_STAGE = re.compile(r"^\.report\.(?P<pid>\d+)\.tmp$")


def build_report(run_dirs: Sequence[str | Path], out: str | Path, *, data: Path | None = None,
                 options: ReportOptions | None = None) -> ReportOutput:
    """Write the report into ``out``. Every file is made in a staging folder inside ``out`` first and moved
    into place only when the whole report is made, so a report that fails (bad input, a crash, a full disk)
    adds nothing to ``out``; when ``out`` holds an earlier report, REPORT-FAILED.txt says its files are not
    this command's."""
    out_dir = Path(out)
    stage = out_dir / f".report.{os.getpid()}.tmp"
    staged: list[str] = []
    try:
        result = _build(run_dirs, out_dir, stage, staged, data, options or ReportOptions())
        _publish(stage, out_dir, staged)
    except BaseException as exc:
        shutil.rmtree(stage, ignore_errors=True)
        _mark_failed(out_dir, exc)
        raise
    return result


def _publish(stage: Path, out_dir: Path, staged: list[str]) -> None:
    for folder in sorted({(out_dir / r).parent for r in staged}):
        folder.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(folder)
    if out_dir.is_dir():
        for entry in out_dir.iterdir():  # staging folders of killed reports
            match = _STAGE.match(entry.name)
            if match and entry.is_dir() and entry != stage and not process_alive(int(match["pid"])):
                shutil.rmtree(entry, ignore_errors=True)
    move_into_place((stage / relative, out_dir / relative) for relative in staged)
    shutil.rmtree(stage, ignore_errors=True)
    (out_dir / FAILED_MARK).unlink(missing_ok=True)


def _mark_failed(out_dir: Path, exc: BaseException) -> None:
    """Files of an earlier report in ``out`` stay whole, but must not pass for this command's output."""
    try:
        if not out_dir.is_dir() or not any(p.name != FAILED_MARK and not p.name.startswith(".")
                                           for p in out_dir.iterdir()):
            return
        reason = visible_text(str(exc) or type(exc).__name__, max_length=500)
        write_atomic(out_dir / FAILED_MARK,
                     f"The last `rescue report` into this folder failed and wrote none of its files:\n{reason}\n"
                     "The other files here are from an earlier report, not from that command.\n")
    except OSError:
        pass  # a full disk or a read-only folder: the command's own error says what happened


@dataclass
class _Staging:
    """The report being made: each file goes into the staging folder, and build_report moves the files into
    place once the whole report is made."""

    out_dir: Path
    stage: Path
    staged: list[str]
    result: ReportOutput
    progress: Callable[[str], None] | None
    started: float = field(default_factory=time.monotonic)

    def write(self, relative: str, content: str | bytes) -> None:
        for part in relative.split("/"):  # names from runs (systems, labels, scenarios) never leave the report
            path_name(part, file=self.out_dir, field=f"report file {relative[:80]!r}", max_length=MAX_FILENAME + 80)
        path = self.stage / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, content)
        self.staged.append(relative)
        self.result.files.append(self.out_dir / relative)

    def step(self, message: str) -> None:
        if self.progress is not None:
            self.progress(f"[{time.monotonic() - self.started:5.1f}s] {message}")


@dataclass
class _Statistics:
    """The resampled numbers: the leaderboard, the paired comparisons and the video-over-text gains."""

    board: Leaderboard
    comparisons: list[Comparison]
    gains: list[Comparison]
    reproduction: list[HtmlTable]


@dataclass
class _Sections:
    """What the HTML page shows beside the statistics, gathered while the analysis files are written."""

    figures: list[Figure] = field(default_factory=list)
    tables: list[HtmlTable] = field(default_factory=list)
    matrices: list[HtmlTable] = field(default_factory=list)  # confusion and per-system transition matrices: folded
    named: dict[str, str] = field(default_factory=dict)  # file -> the system (or id) its name stands for


def _build(run_dirs: Sequence[str | Path], out_dir: Path, stage: Path, staged: list[str], data: Path | None,
           options: ReportOptions) -> ReportOutput:
    result = ReportOutput(out_dir)
    plots, no_plots = plotting(options.figures, options.figure_formats)
    if options.reference:  # checked with every other input, before any file is made
        from rescue.report import reference

        reference.check_reference(options.reference)
    report = _Staging(out_dir, stage, staged, result, options.progress)

    report.step(f"reading {len(run_dirs)} run director{'y' if len(run_dirs) == 1 else 'ies'}")
    systems, comparability = _read_systems(run_dirs, options, result)
    # People's systems carry their mark on the terminal too (never ranked among the models).
    result.systems = {shown_name(LeaderRow(s.label, "all", people=s.people)): s.results for s in systems}
    aggregates = _aggregates(systems, result)
    samples, data_name = resolve_samples(systems, data)
    groups = _write_groups(report, systems, samples, data_name, options)
    stats = _write_statistics(report, systems, aggregates, comparability, groups, options)
    result.failures = failure_rows(systems)
    if result.failures:
        report.write("failures.md", failures_markdown(result.failures))

    report.step("analyses and figures")
    lengths = analyses.sample_lengths(samples)
    unknown = {r.sample_id for s in systems for r in s.records} - set(lengths)
    if unknown:
        result.notes.append(f"{len(unknown)} sample(s) of the runs are not in {data_name} (e.g. {min(unknown)}): "
                            "they are left out of position analyses and have no transcript.")
    if no_plots:
        result.notes.append(no_plots)
    sections = _Sections()
    _score_figures(sections, stats.board, plots, options)
    _write_analyses(report, sections, systems, lengths, plots)
    _write_figures_and_names(report, sections)

    if options.html:
        report.step("report.html")
        report.write("report.html", _html_page(systems, samples, stats, sections, data_name, result, options))
    report.step(f"done: {len(result.files)} files")
    return result


def _read_systems(run_dirs: Sequence[str | Path], options: ReportOptions,
                  result: ReportOutput) -> tuple[list[System], Comparability]:
    """The runs (restricted to ``--split``), and whether they may stand side by side (refused when not)."""
    systems = load_systems(list(run_dirs))
    result.notes.extend(note for system in systems for note in system.notes)
    if options.split is not None:
        from rescue.data.splits import read_plan
        from rescue.report.runs import restrict_systems

        plan = read_plan(options.splits)
        if options.split not in plan.splits:
            raise ReportError(f"{options.splits}: no split {options.split!r}; it holds: {', '.join(plan.names())}")
        result.notes.extend(restrict_systems(systems, set(plan.splits[options.split]),
                                             f"--split {options.split} of {options.splits}"))
    result.people, people_notes = apply_people(systems)
    result.notes.extend(people_notes)
    comparability = check(systems, scopes_of(systems))
    if not comparability.ok:
        if not options.allow_mixed:
            raise ComparabilityError(refusal(comparability))
        result.notes.append("Runs are not comparable (--allow-mixed): " + "; ".join(comparability.differences) + ".")
    result.notes.extend(comparability.unchecked)
    return systems, comparability


def _aggregates(systems: Sequence[System], result: ReportOutput) -> Aggregates:
    """The registry's aggregate per task of the runs; a note names the tasks it does not know."""
    tasks = [t for t in TASK_NAMES if any(t in s.tasks for s in systems)]
    aggregates = registry_aggregates(tasks)
    missing = [t for t in tasks if t not in aggregates]
    if missing:
        result.notes.append(f"No confidence intervals or comparisons for {', '.join(missing)}: the task registry "
                            "does not know these tasks.")
    return aggregates


def _write_groups(report: _Staging, systems: Sequence[System], samples: Sequence[Sample], data_name: str,
                  options: ReportOptions) -> SessionGroups:
    """The session groups the bootstrap resamples, written as groups.csv and groups.json."""
    groups, group_notes = session_groups(systems, samples, options.groups, data_name)
    report.result.notes.extend(group_notes)
    if options.cluster == "group":
        report.result.notes.append(grouping_text(groups) + ".")
    report.write("groups.csv", groups_csv(groups))
    report.write("groups.json", json.dumps({"method": groups.method, "cluster": options.cluster,
                                            "groups": groups.members()}, indent=2, ensure_ascii=False) + "\n")
    return groups


def _write_statistics(report: _Staging, systems: Sequence[System], aggregates: Aggregates,
                      comparability: Comparability, groups: SessionGroups, options: ReportOptions) -> _Statistics:
    """The leaderboard, the paired comparisons, the paper's numbers (``--reference``) and the video gains."""
    report.step(f"leaderboard: {len(systems)} system(s), {options.n_resamples} bootstrap resamples by "
                f"{options.cluster}")
    board = build_leaderboard(systems, aggregates, n_resamples=options.n_resamples, seed=options.seed,
                              level=options.level, alpha=options.alpha, cluster=options.cluster,
                              comparability=comparability, groups=groups)
    people = report.result.people
    if people is not None:  # marked, never ranked; an average person per group; people.md
        board.people_note = subset_note(people)
        add_average_rows(board, people.groups)
        report.write("people.md", people_markdown(people))
    report.step(f"paired comparisons: {len(systems) * (len(systems) - 1) // 2} pair(s)")
    comparisons = compare_systems(systems, aggregates, scopes_of(systems), n_resamples=options.n_resamples,
                                  seed=options.seed, level=options.level, cluster=options.cluster, groups=groups)
    mark_significance(board, comparisons)
    reproduction = _write_reference(report, systems, board, options.reference) if options.reference else []
    report.write("leaderboard.md", to_markdown(board))
    report.write("leaderboard.tex", to_latex(board))
    report.write("leaderboard.csv", to_csv(board))
    if comparisons:
        report.write("comparisons.md", comparisons_markdown(comparisons, options.alpha, cluster=options.cluster))
        report.write("comparisons.csv", comparisons_csv(comparisons))
    gains = video_gains(systems, aggregates, scopes_of(systems), n_resamples=options.n_resamples, seed=options.seed,
                        level=options.level, cluster=options.cluster, groups=groups)
    if gains:
        report.write("video_vs_text.md", gains_markdown(gains, options.alpha))
        report.write("video_vs_text.csv", gains_csv(gains))
    return _Statistics(board, comparisons, gains, reproduction)


def _write_reference(report: _Staging, systems: Sequence[System], board: Leaderboard, which: str) -> list[HtmlTable]:
    """The published numbers as reference rows of ``board``, and the reproduction tables against them."""
    from rescue.report import reference

    # Added after every test: published rows are never compared, bolded or resampled.
    board.rows.extend(reference.reference_rows(board))
    report.result.reference = reference.compare_with_paper(systems, board)
    report.write("reference.md", reference.reference_markdown(report.result.reference))
    report.write("reference.csv", reference.reference_csv(report.result.reference))
    pooled = [c for c in report.result.reference if c.scope == "all"]
    reproduction = [reproduction_table(pooled, "Pooled: our scores against the paper's")]
    scenarios = [c for c in report.result.reference if c.scope != "all"]
    if scenarios:
        reproduction.append(reproduction_table(scenarios, f"Per scenario ({len(scenarios)} rows)", collapsed=True))
    return reproduction


def _score_figures(sections: _Sections, board: Leaderboard, plots: Plots | None, options: ReportOptions) -> None:
    """Bar charts of the pooled scores, one for right/wrong tasks and one for graded tasks."""
    unit = "session groups" if options.cluster == "group" else "samples"
    closed = [c.id for c in HEADLINE if c.scale == 100.0]
    graded = [c.id for c in COLUMNS if c.task in {h.task for h in HEADLINE if h.scale != 100.0}]
    for key, title, wanted in (
        ("scores", "Pooled scores, right/wrong tasks", closed),
        ("scores_generative", "Pooled scores, graded tasks (ER, VP)", graded),
    ):
        measured = [r for r in board.scope_rows("all") if not r.published]
        headers = [h for h in wanted if any((r.cells.get(h) or Cell(None)).value is not None for r in measured)]
        if headers and plots is not None:
            sections.figures.append(Figure(key, title, plots.metric_bars(board, headers, title=title),
                                           f"Error bars: {round(options.level * 100)}% bootstrap CIs resampling "
                                           f"{unit}."))


def _write_analyses(report: _Staging, sections: _Sections, systems: Sequence[System], lengths: dict[str, int],
                    plots: Plots | None) -> None:
    """The paper's analyses, for every task that declares them (RPP: position and per label; SSP: preference),
    then the gold distributions and the confusion matrices."""
    for task in [t for t in analyses.tasks_with("position") if any(s.task_records(t) for s in systems)]:
        _write_positions(report, sections, systems, lengths, plots, task)
        _write_transitions(report, sections, systems, plots, task)
    for task in [t for t in analyses.tasks_with("per_label") if any(s.task_records(t) for s in systems)]:
        _write_per_label(report, sections, systems, task)

    distributions = analyses.gold_distributions(systems)
    report.write("analyses/gold_distributions.csv", distributions.to_csv(index=False))
    sections.tables.append(_frame_table("Gold label distribution per scenario", distributions,
                                        "STP gold targets are shown as roles: an individual or the whole "
                                        "couple/family."))

    for (label, task, scenario), matrix in analyses.confusion_matrices(systems).items():
        key = f"confusion_{_slug(label)}_{task}_{scenario}"
        report.write(f"analyses/{key}.csv", matrix.to_csv())
        sections.named[f"analyses/{key}.csv"] = label
        title = f"{task.upper()} confusion, {label} ({scenario})"
        sections.matrices.append(shaded_table(title, matrix, "Rows: gold; columns: top-1 prediction; cells: "
                                                             "instances."))

    for task in analyses.tasks_with("preference"):
        _write_preferences(report, sections, systems, plots, task)


def _write_positions(report: _Staging, sections: _Sections, systems: Sequence[System], lengths: dict[str, int],
                     plots: Plots | None, task: str) -> None:
    name = task.upper()
    by_position = analyses.accuracy_by_position(systems, lengths, task)
    report.write(f"analyses/{task}_accuracy_by_position.csv", by_position.to_csv(index=False))
    if by_position["instances"].sum() and plots is not None:
        sections.figures.append(Figure(
            f"{task}_position", f"{name} accuracy across dialogue position",
            plots.position_curve(by_position, f"{name} accuracy by dialogue position"),
            "Position of an instance = (row_index - 1) / (rows - 1) of its sample, in ten "
            "bins; band: ±1 binomial standard error; 'all systems' pools every system's instances."))
    gold_bins = analyses.gold_by_position(systems, lengths, task)
    report.write(f"analyses/{task}_gold_by_position.csv", gold_bins.to_csv(index=False))
    for scenario, part in gold_bins.groupby("scenario"):
        if plots is not None:
            title = f"{name} gold labels by position ({scenario})"
            sections.figures.append(Figure(f"{task}_gold_position_{scenario}", title,
                                           plots.stacked_shares(part, title)))


def _write_transitions(report: _Staging, sections: _Sections, systems: Sequence[System], plots: Plots | None,
                       task: str) -> None:
    for (source, scenario), matrix in analyses.transitions(systems, task).items():
        key = f"{task}_transitions_{_slug(source)}_{scenario}"
        report.write(f"analyses/{key}.csv", matrix.to_csv())
        if source != "gold":
            sections.named[f"analyses/{key}.csv"] = source
        title = f"{task.upper()} label transitions, {source} ({scenario})"
        if source == "gold":  # the paper's Fig. 3; each system's own matrix is a table below
            if plots is not None:
                sections.figures.append(Figure(key, title, plots.heatmap(matrix, title, percent=True,
                                                                         footnote=TRANSITION_NOTE), TRANSITION_NOTE))
        else:
            sections.matrices.append(shaded_table(title, matrix, TRANSITION_NOTE, percent=True))


def _write_per_label(report: _Staging, sections: _Sections, systems: Sequence[System], task: str) -> None:
    per_label = analyses.per_label_accuracy(systems, task)
    report.write(f"analyses/{task}_per_label_accuracy.csv", per_label.to_csv(index=False))
    wide = per_label.pivot_table(index=["scenario", "label"], columns="system", values="accuracy", sort=False)
    support = per_label.drop_duplicates(["scenario", "label"]).set_index(["scenario", "label"])["instances"]
    wide.insert(0, "instances", support.reindex(wide.index))
    sections.tables.append(_frame_table(f"{task.upper()} accuracy per gold label", wide.reset_index(),
                                        "Accuracy = share of the label's instances predicted top-1 (its recall)."))


def _write_preferences(report: _Staging, sections: _Sections, systems: Sequence[System], plots: Plots | None,
                       task: str) -> None:
    preferences = analyses.preferences(systems, task)
    if preferences.empty:
        return
    name = task.upper()
    report.write(f"analyses/{task}_preference.csv", preferences.to_csv(index=False))
    summary = preferences.drop_duplicates(["system", "scenario"])[["system", "scenario", "bias", "log_spread", "converged"]]
    # "converged False" said nothing to a reader: the column says what it means (the CSV keeps the boolean).
    summary = summary.assign(converged=summary["converged"].map(
        {True: "yes", False: "no: strengths not reliable"})).rename(columns={"converged": "fit converged"})
    sections.tables.append(_frame_table(f"{name} preference bias (Bradley–Terry)", summary,
                                        "bias: std of strengths normalised to sum to the number of labels "
                                        "(Kang et al. 2024); log_spread: std of log strengths. 0 = no preference. "
                                        "fit converged: whether the Bradley–Terry estimate settled (strengths changed "
                                        "by less than 1e-10 within 10,000 iterations). 'no' means its strengths, "
                                        "bias and log_spread are not reliable and depend on the iteration cap: a "
                                        "strategy the system predicts but that never loses (it is never the gold "
                                        "when another one is predicted) has no finite strength; the figure leaves "
                                        "such a system out."))
    for scenario, part in preferences.groupby("scenario"):
        if plots is not None:
            title = f"{name} label preference ({scenario})"
            sections.figures.append(Figure(f"{task}_preference_{scenario}", title, plots.preference_bars(part, title),
                                           "Bradley–Terry strengths from 'predicted i when gold j'; dashed line: no "
                                           "preference."))


def _write_figures_and_names(report: _Staging, sections: _Sections) -> None:
    """Every figure in each of its formats, and files.csv: which file's name stands for which system."""
    for fig in sections.figures:
        for fmt, content in fig.image.files().items():
            report.write(f"figures/{fig.key}.{fmt}", content)
    if sections.named:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["file", "system"])
        writer.writerows(sorted(sections.named.items()))
        report.write("files.csv", buffer.getvalue())
        report.result.notes.append("files.csv says which file belongs to which system (file names carry a short "
                                   "slug and a hash of the system's id).")


def _html_page(systems: Sequence[System], samples: Sequence[Sample], stats: _Statistics, sections: _Sections,
               data_name: str, result: ReportOutput, options: ReportOptions) -> str:
    return render_html(
        title="RESCUE-Bench report",
        systems=systems,
        samples=samples,
        leaderboard=leaderboard_tables(stats.board),
        comparisons=(comparison_tables(stats.comparisons, options.alpha, options.cluster) if stats.comparisons
                     else []) + ([gains_table(stats.gains, options.alpha)] if stats.gains else []),
        analyses=([people_table(result.people)] if result.people else []) + sections.tables + sections.matrices,
        reproduction=stats.reproduction,
        figures=sections.figures,
        notes=[f"Data: {data_name}.", *result.notes],
        context_rows=options.context_rows,
        failures=[failures_table(result.failures)] if result.failures else [],
    )
