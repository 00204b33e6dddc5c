"""Test helpers that are real parts: the scripted OpenAI-compatible HTTP server."""
