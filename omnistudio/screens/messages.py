"""The studio's events as Textual messages: one Message subclass per event the app handles.

The controller (headless, on its engine thread) reports plain event dataclasses
(:mod:`omnistudio.studio.events`, the ``StudioEvent`` union); :func:`message_for` wraps each in its own
message with one exhaustive match, which the app posts to itself, so each is handled by its own ``@on``
handler (the way Harlequin's workers report). An event the app takes from pulled state has no message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never

from textual.message import Message

from omnistudio.studio import events as ev


@dataclass
class EngineStateChanged(Message):
    event: ev.EngineState


@dataclass
class EngineReady(Message):
    event: ev.EngineReady


@dataclass
class VoicesListed(Message):
    event: ev.VoicesListed


@dataclass
class SentenceRendered(Message):
    event: ev.SentenceRendered


@dataclass
class PlaybackStarted(Message):
    event: ev.PlaybackStarted


@dataclass
class NoticeRaised(Message):
    event: ev.Notice


@dataclass
class FailureRaised(Message):
    event: ev.Failure


@dataclass
class TakesChanged(Message):
    event: ev.TakesChanged


@dataclass
class LexiconChanged(Message):
    event: ev.LexiconChanged


@dataclass
class Exported(Message):
    event: ev.Exported


def message_for(event: ev.StudioEvent) -> Message | None:
    """The message that carries ``event`` to the app (None: an event the app takes from pulled state)."""
    match event:
        case ev.EngineState():
            return EngineStateChanged(event)
        case ev.EngineReady():
            return EngineReady(event)
        case ev.VoicesListed():
            return VoicesListed(event)
        case ev.SentenceRendered():
            return SentenceRendered(event)
        case ev.PlaybackStarted():
            return PlaybackStarted(event)
        case ev.Notice():
            return NoticeRaised(event)
        case ev.Failure():
            return FailureRaised(event)
        case ev.TakesChanged():
            return TakesChanged(event)
        case ev.LexiconChanged():
            return LexiconChanged(event)
        case ev.Exported():
            return Exported(event)
        case ev.PromptsLoaded() | ev.Preparing() | ev.PlaybackFinished() | ev.WordHeard():
            return None  # the picker's marks, the preparing line, the play state and the heard word: pulled
        case _:
            assert_never(event)
