"""Captions and word timings: when each written word is heard in a finished take (measured by
alignment or estimated), caption cues under broadcast limits, and SRT/WebVTT files."""
