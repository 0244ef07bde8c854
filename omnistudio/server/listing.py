"""``GET /v1/audio/voices``: every anchor (shipped and added with ``voices add``), its languages and
prompt states, and the canonical duos (blends written ``a+b@alpha``)."""

from __future__ import annotations

from typing import Any


def voice_listing(link: Any) -> dict[str, Any]:
    from omnistudio.voices.prompts import prompt_state
    from omnistudio.voices.roster import LANGS, load_roster, user_roster_path

    roster = load_roster()
    fingerprint = getattr(getattr(getattr(link, "inner", None), "engine", None), "loaded", None)
    fingerprint = getattr(fingerprint, "fingerprint", None)
    custom = user_roster_path()
    voices = []
    for anchor in roster.anchors.values():
        prompts = {lang: prompt_state(roster, anchor.id, lang, fingerprint)[0] for lang in LANGS}
        voices.append({"id": anchor.id, "name": anchor.name, "languages": list(LANGS), "prompts": prompts,
                       "custom": anchor.origin == custom,
                       "examples": [anchor.id] + [f"{anchor.id}:{lang}" for lang in LANGS]})
    duos = [{"voice": f"{d.anchors[0]}+{d.anchors[1]}@{d.ratio:g}", "anchors": list(d.anchors),
             "languages": list(d.langs), "alpha": d.ratio} for d in roster.duos]
    return {"object": "list", "voices": voices, "duos": duos,
            "blend_syntax": "anchor_a+anchor_b@alpha (alpha in [0, 1]); add :lang for a language"}
