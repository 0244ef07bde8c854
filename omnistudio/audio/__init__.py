"""The signal path: ring buffer, player, DSP, loudness, export. Never imports Textual."""
