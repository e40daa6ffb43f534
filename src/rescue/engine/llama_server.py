"""Moved to :mod:`rescue.llm.llama_server`; ``python -m rescue.engine.llama_server`` still starts it."""

from rescue.llm.llama_server import main

if __name__ == "__main__":
    main()
