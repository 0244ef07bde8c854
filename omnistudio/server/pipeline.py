"""The take-pipeline names the server uses, in one place. The link, options and voices are issue 12's
(on main); ``Take``/``build_take``/``Sink`` come from the stand-in until take/pipeline.py lands."""

from omnistudio.server.standin import PlannedSentence, Sink, Take, TakeCache, TakeResult, build_take, plan  # noqa: F401
from omnistudio.take.link import EngineLink, LocalEngine, RenderItem, Rendered, VoiceList  # noqa: F401
from omnistudio.take.options import TakeOptions, sentence_seed  # noqa: F401
from omnistudio.voices.resolve import VoiceRef, parse_voice, resolve_voice  # noqa: F401
