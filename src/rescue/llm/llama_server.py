"""``python -m rescue.llm.llama_server ARGS``: llama-cpp-python's OpenAI-compatible server, started
with llama.cpp's extra CPU buffer types switched off.

Why: with extra buffer types on, llama.cpp moves weights into AMX tiles on CPUs that report AMX. Virtual
machines can report AMX without enabling it, and the first matrix product then dies with a general
protection fault in ``ggml_backend_amx_mul_mat`` (seen on a Firecracker VM; CI runners are alike). Extra
buffer types only serve weight repacking, which buys little for a 135M model, so we trade that speed
for a server that runs everywhere. Everything else is llama-cpp-python's own ``__main__``.
"""

from __future__ import annotations

from typing import Any


def _disable_extra_buffer_types() -> None:
    import llama_cpp.llama_cpp as bindings

    default_params = bindings.llama_model_default_params

    def params_without_extra_bufts() -> Any:
        params = default_params()
        params.use_extra_bufts = False
        return params

    # llama_cpp.llama.Llama reads the defaults through this module attribute when it loads a model.
    bindings.llama_model_default_params = params_without_extra_bufts


def main() -> None:
    """Run llama.cpp's OpenAI-compatible server with its extra buffer types off."""
    _disable_extra_buffer_types()
    from llama_cpp.server.__main__ import main as serve

    serve()  # type: ignore[no-untyped-call]  # llama_cpp ships no annotations


if __name__ == "__main__":
    main()
