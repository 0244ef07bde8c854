"""A Stream over prompt objects handed to it directly: the stream machinery under test without the take
pipeline's voice resolution (clients and benches build a take, :mod:`omnistudio.take.pipeline`)."""

from __future__ import annotations

from typing import Any

from omnistudio.checks import DEFAULT_NUM_STEP
from omnistudio.errors import UserError
from omnistudio.script import Script, parse_script
from omnistudio.take.link import LocalEngine, RenderItem
from omnistudio.take.options import TakeOptions, sentence_seed
from omnistudio.take.stream import Stream, VoiceResolver, sentence_voice
from omnistudio.voices.resolve import VoiceRef

DIRECT_VOICE = VoiceRef(anchor="voice")  # the key of a prompt object handed over directly


def open_stream(engine: Any, script: Script | str, voice: Any = None, lang: str = "en",
                resolve: VoiceResolver | None = None, num_step: int = DEFAULT_NUM_STEP, seed: int = 0,
                guidance_scale: float = 2.0, batch: int = 1, lookahead: int = 1,
                overlap_decode: bool | None = None) -> Stream:
    """Stream ``script`` on ``engine`` with ``voice`` (a prompt object) or ``resolve(sentence)``; seeds
    follow the one policy, :func:`~omnistudio.take.options.sentence_seed`."""
    if voice is None and resolve is None:
        raise UserError("a stream needs a voice (or a voice resolver)")
    if isinstance(script, str):
        script = parse_script(script, lang)
    pick = resolve or (lambda _s: voice)
    by_index = {s.id: s for s in script.sentences}
    link = LocalEngine(engine, voice_for=lambda item: pick(by_index[item.index]))
    options = TakeOptions(num_step=num_step, guidance_scale=guidance_scale, seed=seed, batch=batch)
    items = []
    for s in script.sentences:
        ref = sentence_voice(s, DIRECT_VOICE) or DIRECT_VOICE
        items.append(RenderItem(s.id, s.text, ref, s.lang, sentence_seed(seed, s.text, ref.key(), s.lang)))
    return Stream(link, script.sentences, items, options, lookahead=lookahead, overlap_decode=overlap_decode)
