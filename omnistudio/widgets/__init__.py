"""The studio's widgets (Textual)."""
