"""Every write of the review tool goes through this package, and every write lands in the audit log with it.

The public face: what the routes, the CLI and the review tool's readers (export, progress, agreement) call.
Behind it, one private module per concern, following the tool's routes:

- ``_write``: the one write transaction (its locks on SQLite and PostgreSQL) and the audit writer;
- ``_users``: accounts and login sessions (routes ``users``, ``login``);
- ``_assignment``: who works on which segment (``users``, ``pages``);
- ``_rows``: reading a copy's rows (``rows``, ``segments``, export, progress);
- ``_edits``: a row's save, versioned so nobody overwrites anybody, and a copy's verification (``rows``,
  ``segments``);
- ``_recuts``: split, merge, insert, delete, take, move a boundary (``rows``);
- ``_states``: open, verified, discarded (``segments``);
- ``_comments``: comments, shown blind to co-annotators, and the audit log's reader (``segments``).

The errors raised are :mod:`rescue.errors`' ``ReviewError``, ``Conflict``, ``LayoutConflict``,
``AccountDisabled`` and ``FieldError``.
"""

from rescue.review.crud._assignment import assign, assignments, segment_assignees
from rescue.review.crud._comments import (
    add_comment,
    annotator_names,
    audit_log,
    comment_counts,
    comment_shown,
    comment_view,
    comments,
)
from rescue.review.crud._edits import Saved, save_row, verify
from rescue.review.crud._recuts import delete_row, insert_row, merge_rows, move_boundary, split_row, take_fields, take_rows
from rescue.review.crud._rows import annotator_copies, copy_cut, copy_rows, copy_values, draft_counterparts
from rescue.review.crud._states import discard, reopen, segment_state, state_view
from rescue.review.crud._users import create_user, list_users, login, logout, set_disabled, set_password

__all__ = [
    "Saved",
    "add_comment",
    "annotator_copies",
    "annotator_names",
    "assign",
    "assignments",
    "audit_log",
    "comment_counts",
    "comment_shown",
    "comment_view",
    "comments",
    "copy_cut",
    "copy_rows",
    "copy_values",
    "create_user",
    "delete_row",
    "discard",
    "draft_counterparts",
    "insert_row",
    "list_users",
    "login",
    "logout",
    "merge_rows",
    "move_boundary",
    "reopen",
    "save_row",
    "segment_assignees",
    "segment_state",
    "set_disabled",
    "set_password",
    "split_row",
    "state_view",
    "take_fields",
    "take_rows",
    "verify",
]
