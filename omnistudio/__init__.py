"""OmniStudio: a terminal voice-cloning studio for a news desk's anchors, on OmniVoice."""

__version__ = "0.1.0"
