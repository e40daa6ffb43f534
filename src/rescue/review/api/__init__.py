"""The review tool's HTTP layer: shared dependencies in ``deps``, one router per resource in ``routes``."""
