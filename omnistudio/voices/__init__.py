"""Voices: the anchor roster, reference recordings, prompts, blends, ASR calibration. Never imports Textual."""
