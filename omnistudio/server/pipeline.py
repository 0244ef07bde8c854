"""The take-pipeline names the server uses, in one place (today from the stand-in of issue 12's
contract; when the real take pipeline lands these imports point at voices/resolve and take/)."""

from omnistudio.server.standin import (Blend, EngineLink, LocalEngine, RenderItem, Rendered, TakeOptions,  # noqa: F401
                                       VoiceRef, parse_voice, plan_take, sentence_seed)
