"""A request's limits, the defaults of ``rescue run`` and ``rescue build`` (``--max-answer-bytes``,
``--retry-after-cap``) as of the model layer itself. Declared here, in a module that imports nothing, because
``rescue run --help`` reads them for its option defaults (rescue.engine.run_options) and must not import the
HTTP client to do so."""

# A larger response body is a request error, never stored (rescue.llm._client reads at most this many bytes).
DEFAULT_MAX_ANSWER_BYTES = 8 * 1024 * 1024
# The longest Retry-After wait obeyed, in seconds (rescue.llm._reliable): a request told to wait longer twice fails.
DEFAULT_RETRY_AFTER_CAP = 300.0
# Seconds an upload or create of the batch API whose answer was lost is waited for in the endpoint's list, counted
# from when it was sent (rescue.llm._batch; --batch-settle).
DEFAULT_BATCH_SETTLE = 600.0
