"""``python -m rescue.testing [PORT]``: the scripted OpenAI-compatible server with its default script."""

from rescue.testing.openai_server import main

main()
