"""Benchmarks (stock vs fast, dialogue, stream); the bench command calls them, no layer below imports them."""
