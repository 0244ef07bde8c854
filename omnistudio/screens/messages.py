"""The studio's events as Textual messages: one Message subclass per event the app handles.

The controller (headless, on its engine thread) reports plain event dataclasses
(:mod:`omnistudio.studio.events`); :func:`message_for` wraps each in its own message, which the app posts
to itself, so each is handled by its own ``@on`` handler (the way Harlequin's workers report). An event
the app does not handle has no message and is not posted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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


MESSAGES: dict[type, Callable[..., Message]] = {  # an event's type -> the message that takes such an event
    ev.EngineState: EngineStateChanged, ev.EngineReady: EngineReady, ev.VoicesListed: VoicesListed,
    ev.SentenceRendered: SentenceRendered, ev.PlaybackStarted: PlaybackStarted, ev.Notice: NoticeRaised,
    ev.Failure: FailureRaised, ev.TakesChanged: TakesChanged, ev.LexiconChanged: LexiconChanged,
    ev.Exported: Exported}


def message_for(event: object) -> Message | None:
    """The message that carries ``event`` to the app (None: the app handles no such event)."""
    kind = MESSAGES.get(type(event))
    return None if kind is None else kind(event)
