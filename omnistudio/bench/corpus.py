"""What every bench speaks: the sentence lists and the one synthetic reference voice.

Nothing here loads a model; ``numpy`` is imported when a reference is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from omnistudio.engine.reference_voice import REF_SR, reference_wave
from omnistudio.engine.reference_voice import REF_TEXT as REF_TEXT  # re-exported: the benches import them from here
from omnistudio.engine.reference_voice import reference_prompt as reference_prompt

if TYPE_CHECKING:
    from pathlib import Path

# News sentences of a dozen words (sentence synthesis, the compiled-length warm-up).
NEWS = [
    "Good evening, the city council approved the new budget for schools and public transport tonight.",
    "Heavy rain is expected across the northern valleys on Saturday, with clearer skies by Monday.",
    "The central bank left interest rates unchanged, citing slower growth and easing prices.",
    "Local volunteers planted more than two thousand trees along the river over the weekend.",
    "In sport, the home team won the final after a tense penalty shootout in extra time.",
    "Scientists reported a new method to recycle batteries that recovers most of the lithium.",
]
# Short bulletin lines (streamed scripts, remote vs local, the memory bench's long script).
BULLETIN = [
    "Good evening, and welcome to the late news.",
    "The city council voted on the new budget this afternoon.",
    "Rain is expected across the north by Thursday morning.",
    "Officials said the bridge will reopen next week.",
    "Markets closed slightly higher after a quiet session.",
    "The home team won three to one in extra time.",
    "Researchers announced a new treatment for a rare disease.",
    "Traffic on the ring road is moving slowly tonight.",
]
# A two-voice exchange (batched vs sequential dialogue).
DIALOGUE = [
    "Good evening, and welcome to the late news.",
    "Thank you. Markets fell sharply after the announcement.",
    "What does that mean for families this winter?",
    "Prices at the pump rose for the third week in a row.",
    "And the central bank held rates steady again.",
    "Officials expect more details tomorrow morning.",
    "Rain is expected across the coast this weekend.",
    "That is all for tonight. Good night.",
]
# Words the compiled-length sweep cuts into sentences of increasing length.
SWEEP_WORDS = ("the council met on monday to discuss the budget for new schools roads and clinics across the region "
               "while volunteers cleaned the river banks and scientists tested a cheaper way to store solar power").split()
# One request's text for the server benches.
SERVE_TEXT = "Good evening. Here is the news from the desk tonight."



def take(lines: list[str], n: int) -> list[str]:
    """The first ``n`` lines of ``lines``, cycling."""
    return [lines[i % len(lines)] for i in range(n)]


def serve_text(i: int) -> str:
    """Request ``i``'s text for the speech-server bench (distinct per request)."""
    return f"Bulletin item {i + 1} opens tonight's programme. The details follow after a short break."


def write_reference(path: Path | str, seconds: float = 3.0) -> None:
    """``reference_wave`` as a WAV file (for benches that drive the CLI with ``--ref-audio``)."""
    # lazy: start-up (soundfile)
    import soundfile as sf

    sf.write(str(path), reference_wave(seconds), REF_SR)
