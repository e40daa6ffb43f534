"""The shapes of the dicts the review tool passes between its modules (crud, queue, progress, the routes), each
written once. They are what the JSON answers carry, key for key: a route returns them as they are.

A row's ``values`` stay an open JSON object (:data:`RowValues`): a release row, whose unknown fields a
project keeps, and whose every field an annotator edits by name.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from rescue.data.models import RowValues as RowValues
from rescue.data.rules import BreachView



class CopyRow(TypedDict):
    """One row of one copy (:func:`rescue.review.crud.copy_rows`): its values, its version (0: never saved), the
    fields someone accepted or edited, the warnings its annotator let stand, and who saved it last and when."""

    row_index: int
    version: int
    values: RowValues
    accepted: list[str]
    acknowledged: list[str]
    updated_by: str | None
    updated_at: str | None


class CommentView(TypedDict):
    """A comment on a segment (``row_index`` None) or on one of its rows."""

    id: int
    row_index: int | None
    author: str
    text: str
    created_at: str


class AuditView(TypedDict):
    """One audit entry as read back: who did what, when, to which copy, row and field; ``old`` and ``new`` are
    whatever JSON the write recorded (passed on, never read)."""

    at: str
    user: str
    action: str
    copy: str
    row_index: int | None
    field: str
    old: object
    new: object


class UserView(TypedDict):
    """An account as listed: never its password hash."""

    name: str
    role: str
    created_at: str
    disabled: bool
    disabled_at: str | None


class CopyState(TypedDict):
    """A copy's stored state (:class:`rescue.review.progress.SegmentProgress` ``states``)."""

    status: str
    reason: str
    comment: str
    by: str
    at: str


class QueueItem(TypedDict):
    """One segment of a queue (:func:`rescue.review.queue.queue`): what the dashboard lists, filters and sorts."""

    sample_id: str
    scenario: str
    rows: int
    duration: float
    speakers: int
    speaker_names: list[str]
    has_media: bool
    problems: int
    comments: int
    assigned: list[str]
    status: str
    my_status: str
    my_reviewed_rows: int
    final_status: str | None


class SearchHit(TypedDict):
    """A row whose transcript holds every word searched for, in the copy whose words they are (or the draft)."""

    sample_id: str
    row_index: int
    copy: str
    start_time: object  # as the row holds them: JSON of any kind
    end_time: object
    speaker: object
    text: str


class SearchAnswer(TypedDict):
    """A transcript search (:func:`rescue.review.queue.search`): the query, its hits, and whether the limit cut them."""

    query: str
    hits: list[SearchHit]
    truncated: bool


class LabelView(TypedDict):
    """A label of a closed set, with its definition, as the editor's label pickers show it."""

    name: str
    definition: str
    use_when: list[str]
    do_not_use_when: list[str]


class ItemPart(TypedDict):
    """One part of a list field's entry (a cue's ``person``, an emotion's ``intensity``) and its control."""

    key: str
    kind: str


class FieldView(TypedDict):
    """An editable field as the editor builds its control (:func:`rescue.review.fields.field_schema`)."""

    name: str
    title: str
    kind: str
    dimension: str
    labels: str
    item: list[ItemPart]
    nullable: bool
    optional: bool  # a row of the release may leave it out (an undo may remove it)


class CheckView(BreachView):
    """A row's breach of the rulebook as the page shows it, and whether its annotator acknowledged it."""

    acknowledged: bool


class ProblemView(TypedDict):
    """An open problem of a segment (:class:`rescue.review.project.SegmentProblem`): from the build's manifest
    (``source`` "build") or found when the draft was read ("validation")."""

    row_index: int | None
    field: str | None
    message: str
    source: str


class ProjectFiles(TypedDict):
    """What a project folder holds, for the dashboard (:meth:`rescue.review.project.Project.files`)."""

    draft: str
    manifest: str | None
    clips: int
    clips_present: int
    subtitles: int


class FieldChange(TypedDict):
    """Where an exported row differs from its draft row, in one field (the export's provenance)."""

    row_index: object  # as the exported row holds it
    field: str
    draft: object
    verified: object


class Recut(TypedDict):
    """How many rows a re-cut copy made of the draft's."""

    draft_rows: int
    rows: int


class SegmentProvenance(TypedDict):
    """Who verified an exported segment, when, and what changed from the model's draft."""

    sample_id: str
    source: str  # "adjudicated" or "annotators agreed"
    verified_by: list[str]
    adjudicated_by: str | None
    verified_at: str
    changes_from_draft: list[FieldChange]
    recut: Recut | None
    build: dict[str, Any]  # the manifest's provenance of the build, as it wrote it


class LeftOut(TypedDict):
    """A segment the export leaves out, its status, and each discarded copy's state."""

    sample_id: str
    status: str
    discarded: NotRequired[dict[str, CopyState]]


class ExportProvenance(TypedDict):
    """The provenance sidecar of an export (``OUT.provenance.json``, ``GET /api/export?provenance=true``)."""

    version: int
    exported_at: str
    project: str
    segments: list[SegmentProvenance]
    not_exported: list[LeftOut]


# --- agreement between annotators (rescue.review.annotator_agreement) -------------------------------------------


class FieldAgreement(TypedDict):
    """Agreement between annotators on one closed or numeric field."""

    field: str
    level: str  # nominal | interval
    units: int
    alpha: float | None
    percent_agreement: float | None


class DraftAcceptance(TypedDict):
    """How often annotators left the model draft's value of one field as it was."""

    field: str
    ratings: int
    unchanged: int
    acceptance_rate: float | None


class TextFieldAgreement(TypedDict):
    """Agreement between annotators on one free-text field (rescue.metrics.agreement.TextAgreement's keys, not
    imported: the metrics load when agreement is asked for), and the draft's acceptance there."""

    field: str
    level: str  # text
    units: int
    exact: float | None
    token_overlap: float | None
    ratings: int
    unchanged: int
    acceptance_rate: float | None


class LeadTime(TypedDict):
    """Time per row of one person, from the audit log."""

    annotator: str
    role: str
    segments: int
    rows: int
    active_seconds: float
    seconds_per_row: float | None
    rows_worked: int
    median_row_seconds: float | None


class AgreementResult(TypedDict):
    """``GET /api/agreement``: agreement per field, the draft's acceptance, and time per row."""

    annotators: list[str]
    rows: int
    fields: list[FieldAgreement]
    draft_acceptance: list[DraftAcceptance]
    text_fields: list[TextFieldAgreement]
    time: list[LeadTime]
    idle_seconds: float


# --- the segment editor's payload (GET /api/segments/{id}) ------------------------------------------------------


class OpenState(TypedDict):
    """The state of a copy nobody has verified, discarded or reopened yet."""

    status: str  # "open"


class MediaLinks(TypedDict):
    """The /media/ URLs of a segment's clip and subtitles (None: none)."""

    clip: str | None
    subtitles: str | None


class EditorRow(TypedDict):
    """A row as the editor shows it: the copy's row, the draft row it stands for, its checks and problems."""

    origin: str  # draft | re-timed | split | merged | inserted ... (rescue.review.cuts.origins)
    row_index: int
    start_time: object  # as the row's values hold them
    end_time: object
    version: int
    values: RowValues
    draft: RowValues
    accepted: list[str]
    acknowledged: list[str]
    checks: list[CheckView]
    problems: list[ProblemView]
    updated_by: str | None
    updated_at: str | None


class SegmentPayload(TypedDict):
    """Everything the editor shows of one copy of a segment (``segment_payload`` in the segments route)."""

    sample_id: str
    scenario: str
    participants: list[str]
    entities: list[str]
    copy: str
    layout: int
    status: CopyState | OpenState
    assigned: list[str]
    media: MediaLinks
    source_video: str
    problems: list[ProblemView]
    rows: list[EditorRow]
    comments: list[CommentView]
    labels: dict[str, list[LabelView]]
    fields: list[FieldView]
    rules: list[dict[str, Any]]  # the rulebook (rescue.data.rules.RULES) as JSON
    discard_reasons: dict[str, str]


class AnnotatorProgress(TypedDict):
    """One person's progress on the dashboard."""

    name: str
    role: str
    segments: int
    verified: int
    discarded: int
    rows: int
    reviewed_rows: int


class Dashboard(TypedDict):
    """The dashboard's numbers (:func:`rescue.review.progress.dashboard`)."""

    files: ProjectFiles
    segments: int
    rows: int
    reviewed_rows: int
    remaining_rows: int
    commented_segments: int
    discarded_segments: int
    verified_segments: int
    needs_adjudication: int
    status_counts: dict[str, int]
    annotators: list[AnnotatorProgress]
