"""The studio's seams to the core: the anchor rows, start-up prompts, duos and the finishing options from the
settings. (The editor's sentences, with their spans in its text, are the parser's own: script.Sentence.)"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from omnistudio.audio.finishing import FinishingOptions
from omnistudio.take.link import AnchorInfo, local_voices

if TYPE_CHECKING:
    from omnistudio.audio.profiles import DeliveryFormat
    from omnistudio.studio.settings import StudioSettings


AnchorRow = AnchorInfo  # a picker row: id, name, langs, state per language


def load_anchor_rows(source: Any = None) -> list[AnchorRow]:
    """The roster as picker rows from an engine link (local or remote) or an engine."""
    if hasattr(source, "voices"):
        return list(source.voices().anchors)
    return list(local_voices(source).anchors)


def duos(source: Any = None) -> list[tuple[str, str, float, tuple[str, ...]]]:
    return list(source.voices().duos if hasattr(source, "voices") else local_voices().duos)


def finishing_options(settings: StudioSettings, delivery: DeliveryFormat | None = None) -> FinishingOptions:
    """The studio settings as render finishing options: the loudness rule (its target for a file of the
    delivery's channels, its ceiling), room tone, breaths; the file ``delivery`` says, else the rule's."""

    return FinishingOptions.for_rule(settings.rule(), delivery, room_tone=settings.room_tone,
                                     breaths=settings.breaths, seed=settings.seed)
