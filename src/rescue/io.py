"""What ``rescue.io`` held before it was split by job, kept so that imports written against it still work:
new code imports the module that holds the name.

- :mod:`rescue.atomic`: the one atomic writer and its stale temporaries;
- :mod:`rescue.files`: safe file names, file hashes, the output folder check, one writer per folder;
- :mod:`rescue.display`: text from outside made safe for a terminal or a Markdown table;
- :mod:`rescue.data.errors`: environment errors (a full disk, no permission) worded for people;
- :mod:`rescue.data.text`: visible, JSON-safe and LaTeX-safe text.
"""

from __future__ import annotations

from rescue.atomic import (
    TEMP_SUFFIX as TEMP_SUFFIX,
    process_alive as process_alive,
    remove_stale_temporaries as remove_stale_temporaries,
    temporary_path as temporary_path,
    write_all_atomic as write_all_atomic,
    write_atomic as write_atomic,
)
from rescue.data.errors import (
    LockedError as LockedError,
    OutFolderError as OutFolderError,
    environment_error as environment_error,
    is_disk_full as is_disk_full,
)
from rescue.data.text import json_safe as json_safe, latex_text as latex_text, visible_text as visible_text
from rescue.display import markdown_table as markdown_table, markdown_text as markdown_text, terminal_text as terminal_text
from rescue.files import (
    MAX_FILENAME as MAX_FILENAME,
    DirectoryLock as DirectoryLock,
    check_out_folder as check_out_folder,
    safe_filename as safe_filename,
    sha256_file as sha256_file,
)
