"""The headless synthesis core. Never imports Textual."""
