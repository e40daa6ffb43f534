"""The run directory: what ``rescue run --out DIR`` writes and the report reads.

:mod:`rescue.runs.results` holds ``results.json`` as typed models; :mod:`rescue.runs.folder` the file names,
the directory's lock, the one writer (:func:`~rescue.runs.folder.write_run`) and the readers
(:func:`~rescue.runs.folder.read_run`, ``read_results``, ``read_predictions``). The engine writes run
directories through it and the report reads them through it; neither needs the other.
"""

# Its face is its modules.
__all__ = [
    "failures",
    "folder",
    "inspect_logs",
    "results",
]
