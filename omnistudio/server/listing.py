"""``GET /v1/audio/voices``' listing: the core's :func:`omnistudio.take.listing.voice_listing` (the MCP
server's ``list_voices`` answers the same)."""

from __future__ import annotations

from omnistudio.take.listing import voice_listing as voice_listing
