"""The voices a link can speak with, as the wire's listing (``GET /v1/audio/voices``, the MCP server's
``list_voices``): every anchor (shipped and added with ``voices add``), its languages and prompt
states, and the canonical duos, written as ``voice`` strings the speech routes take."""

from __future__ import annotations

from omnistudio.protocol import DuoEntry, VoiceEntry, VoiceListing
from omnistudio.take.link import VoiceList


def voice_listing(voices: VoiceList) -> VoiceListing:
    """``voices``: the link's :class:`~omnistudio.take.link.VoiceList`."""
    # lazy: looked up when called (tests replace it)
    from omnistudio.voices.roster import load_roster, user_roster_path

    roster, custom = load_roster(), user_roster_path()
    out = []
    for anchor in voices.anchors:
        known = roster.anchors.get(anchor.id)
        out.append(VoiceEntry(id=anchor.id, name=anchor.name, languages=list(anchor.langs), prompts=dict(anchor.state),
                              custom=known is not None and known.origin == custom,
                              examples=[anchor.id] + [f"{anchor.id}:{lang}" for lang in anchor.langs]))
    duos = [DuoEntry(voice=f"{a}+{b}@{ratio:g}", anchors=(a, b), languages=list(langs), alpha=ratio)
            for a, b, ratio, langs in voices.duos]
    return VoiceListing(voices=out, duos=duos)
