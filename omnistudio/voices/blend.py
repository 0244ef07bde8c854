"""Blends of roster anchors: the morph of two anchors' saved prompts, cached per engine.

The blend itself (embedding arithmetic and the override of reference frames) is
:mod:`omnistudio.engine.morph`; this module picks the anchors' prompts and caches the result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from omnistudio.checks import check_alpha, check_language, check_pair
from omnistudio.engine.morph import BlendedPrompt, blend_prompts
from omnistudio.errors import UserError
from omnistudio.voices.state import voice_state

if TYPE_CHECKING:
    from omnistudio.engine.engine import Engine
    from omnistudio.voices.roster import Roster

BlendKey = tuple[str, str, str, float]


class BlendCache:
    """Blends kept on the device, keyed by (A, B, lang, alpha rounded to 0.01) (an engine's: its VoiceState's)."""

    def __init__(self, items: dict[BlendKey, BlendedPrompt] | None = None) -> None:
        self._items: dict[BlendKey, BlendedPrompt] = {} if items is None else items

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: BlendKey) -> bool:
        return key in self._items

    def get(self, key: BlendKey) -> BlendedPrompt | None:
        return self._items.get(key)

    def put(self, key: BlendKey, blend: BlendedPrompt) -> None:
        self._items[key] = blend

    def drop(self, anchor: str) -> None:
        """Forget every blend with ``anchor`` in it (it was removed or replaced)."""
        for key in [k for k in self._items if anchor in k[:2]]:
            del self._items[key]


def blend_cache_for(engine: Engine) -> BlendCache:
    """The blend cache that belongs to ``engine`` (its :class:`~omnistudio.voices.state.VoiceState`'s)."""

    return BlendCache(voice_state(engine).blends)


def blend_key(a: str, b: str, lang: str, alpha: float) -> BlendKey:
    return (a.strip().lower(), b.strip().lower(), lang, round(check_alpha(alpha), 2))


def anchor_blend(engine: Engine, a: str, b: str, lang: str, alpha: float, lang_b: str | None = None,
                 progress: Callable[[str], None] | None = None) -> BlendedPrompt:
    """The blend of anchors ``a`` and ``b`` in ``lang`` at ``alpha`` (cached; milliseconds once prompts exist)."""
    # lazy: start-up (numpy)
    from omnistudio.voices.prompts import anchor_prompt

    lang = check_language(lang)
    other = check_language(lang_b) if lang_b else lang
    if other != lang:
        raise UserError(f"cannot blend {a} ({lang}) with {b} ({other}): both voices must speak the same language")
    key = blend_key(a, b, lang, alpha)
    check_pair(a, b)
    cache = blend_cache_for(engine)
    hit = cache.get(key)
    if hit is not None:
        return hit
    prompt_a = anchor_prompt(engine, key[0], lang, progress=progress)
    prompt_b = anchor_prompt(engine, key[1], lang, progress=progress)
    blend = blend_prompts(engine.model, prompt_a, prompt_b, key[3], names=(key[0], key[1]), lang=lang)
    cache.put(key, blend)
    return blend


def warm_duos(engine: Engine, roster: Roster, progress: Callable[[str], None] | None = None,
              ready_only: bool = False) -> int:
    """Build the roster's canonical duos (every language they list) into the blend cache.

    ``ready_only``: only duos whose two prompts are already on the device (engine start must not
    render voice-design references; the others are built on first use)."""
    # lazy: start-up (numpy)
    from omnistudio.voices.prompts import cache_for

    cache = cache_for(engine)
    count = 0
    for duo in roster.duos:
        for lang in duo.langs:
            if ready_only and any(cache.get(a, lang) is None for a in duo.anchors):
                continue
            anchor_blend(engine, duo.anchors[0], duo.anchors[1], lang, duo.ratio, progress=progress)
            count += 1
    return count


def forget_voice(engine: Engine, anchor: str) -> None:
    """``engine`` forgets every prompt and blend it kept of ``anchor`` (its recording was replaced or
    removed; they are built again on next use). Call on the engine thread (a link's ``forget_voice``)."""

    voice_state(engine).forget(anchor)
