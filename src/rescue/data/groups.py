"""Session groups: which clips share people, so that statistics treat them as one unit, not as independent.

A *session group* is the set of clips that show the same couple or the same family. Clips of one group share
speakers, a therapist, often an episode and an annotator, so the report's bootstrap and paired tests resample
whole groups, and dataset splits keep a group on one side.

Inferred from the data (:func:`infer_groups`):

- a **couple** clip's group is the folder of its sample id (``alan_and_evelyn/004_...`` → ``alan_and_evelyn``):
  the release keeps one folder per couple;
- a **family** clip's group is its *cast*, because the release gives every family clip its own folder
  (``family_therapy/003/merged``, ``family_therapy/004/merged``, ...). The cast is the sample's named
  ``participants`` (or, when it lists none, the speakers of its rows), leaving out Therapist and the group
  labels. Two family clips are in one group when their casts share at least two people, and groups merge
  transitively (Maria/Joel/Laura and Nick/Joel/Maria are one family). Two people, not one: a single shared
  name (a role word such as ``Father``, or a common first name) does not make two families one. A clip whose
  cast names fewer than two people is a group of its own.

Given by the user (:func:`read_groups`): a CSV of ``sample_id,group`` lines (a header line is optional), for a
grouping the data cannot show (the same family under other names, sessions known to be separate). A report
writes the grouping it used in the same format (:func:`groups_csv`), so that it can be edited and given back.

In that CSV a cell that a spreadsheet would take for a formula (it starts with ``=``, ``+``, ``-``, ``@``, a tab
or a carriage return) is written behind a ``'``, as OWASP advises, and so is a cell that starts with ``'``;
:func:`read_groups` takes one leading ``'`` off, so every id and group reads back exactly as it was.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rescue.data.models import NON_PERSON_LABELS, Sample
from rescue.errors import GroupsError as GroupsError

SHARED_PEOPLE = 2  # family clips whose casts share at least this many people are one family
INFERRED_METHOD = (
    "inferred: a couple clip's group is its sample id's folder (one folder per couple); family clips whose "
    f"casts (named participants, Therapist left out) share at least {SHARED_PEOPLE} people are one family, "
    "merged transitively"
)
GROUP_WORDS = ("session groups: the clips of one couple (its folder) or one family (clips whose casts share "
               f"at least {SHARED_PEOPLE} people), or as given by --groups")


def folder_of(sample_id: str) -> str:
    """The folder of a sample id (``couple_a/001`` → ``couple_a``); an id without one is its own folder."""
    folder, sep, _ = sample_id.rpartition("/")
    return folder if sep else sample_id


@dataclass(frozen=True)
class SessionGroups:
    """Sample id → session group name, and how that grouping was made (for the report and the splits)."""

    of: Mapping[str, str]
    method: str
    scenarios: Mapping[str, str] = field(default_factory=dict)  # sample id -> scenario, where known

    def group_of(self, sample_id: str) -> str:
        """The sample's group; a sample the grouping does not know falls back to its folder."""
        return self.of.get(sample_id) or folder_of(sample_id)

    def members(self) -> dict[str, dict[str, list[str]]]:
        """scenario → group name → sample ids (sorted), the shape ``rescue stats --format json`` prints."""
        out: dict[str, dict[str, list[str]]] = {}
        for sample_id in sorted(self.of):
            scenario = self.scenarios.get(sample_id, "unknown")
            out.setdefault(scenario, {}).setdefault(self.of[sample_id], []).append(sample_id)
        return {s: dict(sorted(groups.items())) for s, groups in out.items()}


def cast(sample: Sample) -> frozenset[str]:
    """The people of a clip: its named participants, else its row speakers; never Therapist or a group label."""
    named = [p.strip() for p in sample.participants if p.strip()]
    if not named:
        named = [row.speaker for row in sample.rows if row.speaker]
    return frozenset(p for p in named if p not in NON_PERSON_LABELS)


def _family_groups(samples: list[Sample]) -> dict[str, str]:
    parent = list(range(len(samples)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    casts = [cast(s) for s in samples]
    for i in range(len(samples)):
        for j in range(i):
            if len(casts[i] & casts[j]) >= SHARED_PEOPLE:
                parent[root(i)] = root(j)
    components: dict[int, list[int]] = {}
    for i in range(len(samples)):
        components.setdefault(root(i), []).append(i)
    names: dict[str, str] = {}
    for members in components.values():
        people = frozenset().union(*(casts[i] for i in members))
        if len(people) < SHARED_PEOPLE:  # nothing to recognise the family by: the clip alone
            for i in members:
                names[samples[i].sample_id] = samples[i].sample_id
            continue
        folders = sorted({folder_of(samples[i].sample_id) for i in members})
        # The folder keeps a family's name apart from a couple's; the cast says who the family is.
        name = f"{folder_of(folders[0])}:{'+'.join(sorted(people))}"
        for i in members:
            names[samples[i].sample_id] = name
    return names


def infer_groups(samples: Iterable[Sample]) -> SessionGroups:
    """Session groups of the samples as the module docstring describes: couples by folder, families by cast."""
    samples = list(samples)
    of: dict[str, str] = {}
    for sample in samples:
        if sample.scenario == "couple":
            of[sample.sample_id] = folder_of(sample.sample_id)
    of.update(_family_groups([s for s in samples if s.scenario != "couple"]))
    return SessionGroups(of, INFERRED_METHOD, {s.sample_id: s.scenario for s in samples})


# What makes a spreadsheet read a cell as a formula (=, +, -, @, tab, CR), and the quote that defuses it.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "'")


def _defused(cell: str) -> str:
    return "'" + cell if cell.startswith(_FORMULA_START) else cell


def _restored(cell: str) -> str:
    return cell[1:] if cell.startswith("'") else cell


def groups_csv(groups: SessionGroups) -> str:
    """The grouping as :func:`read_groups` reads it back (``sample_id,group``, a header line), no cell a formula."""
    buffer = io.StringIO()
    plain = csv.writer(buffer, lineterminator="\n")
    quoted = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_ALL)  # csv leaves a lone CR unquoted
    plain.writerow(["sample_id", "group"])
    for members in groups.members().values():
        for group, sample_ids in members.items():
            for row in ([_defused(sample_id), _defused(group)] for sample_id in sample_ids):
                (quoted if any("\r" in cell for cell in row) else plain).writerow(row)
    return buffer.getvalue()


def read_groups(path: Path) -> SessionGroups:
    """A ``sample_id,group`` CSV (optional header line). Every problem is reported as FILE:LINE: field: what."""
    if not path.is_file():
        raise GroupsError(f"{path}: groups file not found")
    try:
        text = path.read_bytes().decode("utf-8-sig")  # as written: a CR inside a quoted cell stays a CR
    except (OSError, UnicodeDecodeError) as exc:
        raise GroupsError(f"{path}: cannot read the groups file: {exc}") from None
    of: dict[str, str] = {}
    seen: dict[str, int] = {}
    problems: list[str] = []
    # csv reads the text itself: a quoted cell may hold a line break (or U+2028, which splitlines would cut at).
    reader = csv.reader(io.StringIO(text, newline=""))
    for record, fields in enumerate(reader, start=1):
        number = reader.line_num
        fields = [f.strip() for f in fields]
        if not any(fields) or fields[0].startswith("#"):
            continue
        if record == 1 and [f.lower() for f in fields[:2]] == ["sample_id", "group"]:
            continue
        fields = [_restored(f) for f in fields]
        pair = _group_line(f"{path}:{number}", fields, seen, problems)
        if pair is not None:
            seen[pair[0]] = number
            of[pair[0]] = pair[1]
    if problems:
        more = f"\n... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise GroupsError(f"{len(problems)} problem(s) in the groups file:\n" + "\n".join(problems[:20]) + more)
    if not of:
        raise GroupsError(f"{path}: no sample_id,group lines")
    return SessionGroups(of, f"given: {path}")


def _group_line(where: str, fields: list[str], seen: dict[str, int],
                problems: list[str]) -> tuple[str, str] | None:
    """One data line's (sample_id, group), or None with its problems appended (``seen``: id -> line)."""
    if len(fields) != 2:
        problems.append(f"{where}: expected 2 fields sample_id,group, found {len(fields)}")
        return None
    sample_id, group = fields
    if not sample_id:
        problems.append(f"{where}: sample_id: empty")
    if not group:
        problems.append(f"{where}: group: empty")
    if not (sample_id and group):
        return None
    if sample_id in seen:
        problems.append(f"{where}: sample_id: {sample_id!r} is already in a group on line {seen[sample_id]}")
        return None
    return sample_id, group


def check_groups(groups: SessionGroups, scenarios: Mapping[str, str], source: str) -> SessionGroups:
    """The grouping for these samples (id → scenario): every sample needs a group, and a group is of one
    scenario (the bootstrap draws groups within a scenario)."""
    missing = sorted(set(scenarios) - set(groups.of))
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise GroupsError(f"{source}: {len(missing)} sample(s) have no group: {shown}")
    spans: dict[str, set[str]] = {}
    for sample_id, scenario in scenarios.items():
        spans.setdefault(groups.of[sample_id], set()).add(scenario)
    mixed = sorted(g for g, s in spans.items() if len(s) > 1)
    if mixed:
        raise GroupsError(f"{source}: group {mixed[0]!r} holds samples of several scenarios "
                          f"({', '.join(sorted(spans[mixed[0]]))}); a group is one couple or one family")
    return SessionGroups({k: groups.of[k] for k in scenarios}, groups.method, dict(scenarios))
