"""The studio's headless side: settings, autosave and the controller that owns the engine thread.

Nothing here imports Textual: the Textual app (``omnistudio.app``) turns the controller's events
into messages and pulls its state on a timer.
"""
