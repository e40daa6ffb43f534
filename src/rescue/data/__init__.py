"""The benchmark data: reading, checking, describing and splitting RESCUE-Bench samples."""

# The data layer's face is its modules (reading, checking and describing the samples); nothing is imported here.
__all__ = [
    "answer_json",
    "choices",
    "demo",
    "encoding",
    "errors",
    "evenly",
    "fetch",
    "fingerprint",
    "groups",
    "loading",
    "models",
    "names",
    "reading",
    "rules",
    "shapes",
    "splits",
    "stats",
    "taxonomy",
    "text",
    "validation",
]
