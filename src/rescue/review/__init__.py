"""``rescue review``: the web tool in which annotators verify the model's draft against the video.

Layout in the FastAPI full-stack-template spirit: ``api/routes`` holds one router per resource, ``api/deps``
the shared dependencies, ``models`` the tables, and ``crud`` the one place every write goes through (and
is written to the audit log). ``project`` reads what ``rescue build`` wrote.
"""

from rescue.review.app import create_app
from rescue.review.project import Project, load_project

__all__ = ["Project", "create_app", "load_project"]
