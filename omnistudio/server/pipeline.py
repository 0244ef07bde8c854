"""The take-pipeline names the server uses, in one place (issue 12's take pipeline and contract)."""

from omnistudio.take.link import CancelFlag, EngineLink, LocalEngine, RenderItem, Rendered, VoiceList, WholeGroupLink
from omnistudio.take.options import TakeOptions, sentence_seed
from omnistudio.take.pipeline import PlannedSentence, Take, TakeCache, TakeResult, build_take, plan
from omnistudio.take.sinks import Sink
from omnistudio.voices.resolve import VoiceRef, parse_voice, resolve_voice

__all__ = ["CancelFlag", "EngineLink", "LocalEngine", "PlannedSentence", "RenderItem", "Rendered", "Sink", "Take",
           "TakeCache", "TakeOptions", "TakeResult", "VoiceList", "VoiceRef", "WholeGroupLink", "build_take",
           "parse_voice", "plan", "resolve_voice", "sentence_seed"]
