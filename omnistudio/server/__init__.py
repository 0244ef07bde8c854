"""The speech server: a third client of the take pipeline (HTTP, OpenAI-compatible, WebSocket)."""
