"""A request's limits, the defaults of ``rescue run`` and ``rescue build`` (``--max-answer-bytes``,
``--retry-after-cap``) as of the model layer itself. Declared here, in a module that imports nothing, because
``rescue run --help`` reads them for its option defaults (rescue.engine.run_options) and must not import the
HTTP client to do so."""

# A larger response body is a request error, never stored (rescue.llm._client reads at most this many bytes).
DEFAULT_MAX_ANSWER_BYTES = 8 * 1024 * 1024
# The longest Retry-After wait obeyed, in seconds (rescue.llm._reliable): a request told to wait longer twice fails.
DEFAULT_RETRY_AFTER_CAP = 300.0
