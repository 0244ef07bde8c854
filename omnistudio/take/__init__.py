"""The take pipeline: script in, finished audio out, for every client. Never imports Textual."""
