"""The take-pipeline names the server uses, in one place (issue 12's take pipeline and contract)."""

from omnistudio.take.link import EngineLink, LocalEngine, RenderItem, Rendered, VoiceList  # noqa: F401
from omnistudio.take.options import TakeOptions, sentence_seed  # noqa: F401
from omnistudio.take.pipeline import PlannedSentence, Take, TakeCache, TakeResult, build_take, plan  # noqa: F401
from omnistudio.take.sinks import Sink  # noqa: F401
from omnistudio.voices.resolve import VoiceRef, parse_voice, resolve_voice  # noqa: F401
