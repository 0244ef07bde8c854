"""Text in as it is written (issue 51): a take whose sentences arrive in chunks gives the file of the whole
text rendered at once with the same seed, each sentence goes to the engine as soon as text follows it, and
bad text is one line with the take finished, not dropped."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import soundfile as sf

from omnistudio.errors import UserError
from omnistudio.take.incoming import IncomingScript, IncomingTake
from omnistudio.take.link import LocalEngine
from omnistudio.take.options import TakeOptions
from omnistudio.take.pipeline import Take, build_take
from omnistudio.take.sinks import FileSink
from omnistudio.voices.resolve import VoiceRef

SCRIPT = ("Good evening. The price rose to 3.5 dollars, said Dr. Smith.\n"
          "[:es] Buenas noches. Llovió 2,5 litros.\n"
          "Back to the desk. [pause 0.8s] Here is the weather.")
OPTIONS = TakeOptions(num_step=2, seed=11, voice=VoiceRef(anchor="ruby"))


def _chunks(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def _said(script: IncomingScript) -> list[str]:
    out = []
    while not script._queue.empty():  # noqa: SLF001 - what was handed on so far
        item = script._queue.get()  # noqa: SLF001
        if item is not None and not isinstance(item, BaseException):
            out.append(item.text)
    return out


def test_a_sentence_is_handed_on_once_text_follows_it_and_read_as_a_whole_script() -> None:
    script = IncomingScript(OPTIONS, 11)
    for piece in ("Good evening. The price rose to 3", ".5 dollars, said Dr", ". Smith"):
        script.append(piece)
    assert _said(script) == ["Good evening."]  # "3." and "Dr." never end a sentence
    script.append(".\n[:es] Buenas")
    assert _said(script) == ["The price rose to 3.5 dollars, said Dr. Smith."]
    script.flush()  # what is written so far is complete
    assert _said(script) == ["Buenas"]
    script.close()
    assert _said(script) == []


@pytest.mark.parametrize(("size", "ending"), [(7, ""), (2, "\n")])
def test_the_file_equals_the_whole_text_rendered_at_once(tiny_engine: Any, tmp_path: Path, size: int,
                                                        ending: str) -> None:
    """Chunks of ``size`` characters; with a line break after the last sentence it is handed on before the
    text ends (the pause after it assumed, then settled to none)."""
    link = LocalEngine(tiny_engine)
    whole = tmp_path / "whole.wav"
    take = build_take(link, SCRIPT + ending, OPTIONS)
    played = take.run([FileSink(whole)]).pcm

    arrived = tmp_path / "arrived.wav"
    script = IncomingScript(OPTIONS, take.base_seed)
    incoming = IncomingTake(link, script)
    writer = threading.Thread(target=lambda: ([script.append(c) for c in _chunks(SCRIPT + ending, size)], script.close()))
    writer.start()
    result = incoming.run([FileSink(arrived)])
    writer.join()
    assert [s.text for s in incoming.sentences] == [s.text for s in take.sentences]
    assert [(s.seed, s.pause_s, s.breath) for s in incoming.sentences[:-1]] == [
        (s.seed, s.pause_s, s.breath) for s in take.sentences[:-1]]
    assert result.rendered == len(take.sentences)
    a, rate_a = sf.read(whole, dtype="float32")
    b, rate_b = sf.read(arrived, dtype="float32")
    assert rate_a == rate_b and a.shape == b.shape and (a == b).all()
    # as played too: each sentence's pause goes out before the next one, so a text ending in a line break
    # does not play one pause more than the file
    assert result.pcm.shape == played.shape and (result.pcm == played).all()


def test_the_first_sentence_renders_while_the_rest_is_still_being_written(tiny_engine: Any) -> None:
    from support.wait import HANG_S

    script = IncomingScript(OPTIONS, 5)
    first = threading.Event()
    script.append("Good evening. Mar")  # the first sentence is complete: text follows it

    def on_chunk(chunk: Any) -> None:
        if chunk.sentence_id == 0:
            first.set()

    early: list[bool] = []

    def write_the_rest() -> None:
        early.append(first.wait(HANG_S))  # rendered before the rest of the text was written?
        script.append("kets rose today.")
        script.close()

    writer = threading.Thread(target=write_the_rest)
    writer.start()
    result = IncomingTake(LocalEngine(tiny_engine), script).run([], on_chunk=on_chunk)
    writer.join()
    assert early == [True], "the first sentence waited for the end of the text"
    assert [row.text for row in result.sentences] == ["Good evening.", "Markets rose today."]


def test_text_over_the_limit_is_one_line_and_the_take_ends_with_what_was_complete(tiny_engine: Any) -> None:
    script = IncomingScript(OPTIONS, 3, max_bytes=40)
    script.append("Good evening. Here is ")
    with pytest.raises(UserError, match="over the script limit of 40 bytes"):
        script.append("the news from the harbour tonight.")
    result = IncomingTake(LocalEngine(tiny_engine), script).run([])
    assert [row.text for row in result.sentences] == ["Good evening.", "Here is"]


def test_an_unclosed_tag_at_the_end_names_its_line(tiny_engine: Any) -> None:
    script = IncomingScript(OPTIONS, 3)
    script.append("Good evening.\n[ruby")
    script.close()
    with pytest.raises(UserError, match="line 2: unclosed tag"):
        IncomingTake(LocalEngine(tiny_engine), script).run([])


def test_a_take_that_is_cancelled_while_waiting_for_text_stops(tiny_engine: Any) -> None:
    from omnistudio.errors import Cancelled

    script = IncomingScript(OPTIONS, 3)
    cancel = threading.Event()
    script.append("Good evening. Here")
    timer = threading.Timer(0.5, cancel.set)
    timer.start()
    with pytest.raises(Cancelled):
        IncomingTake(LocalEngine(tiny_engine), script).run([], cancel=cancel)
    assert isinstance(IncomingTake(LocalEngine(tiny_engine), IncomingScript(OPTIONS, 3)), Take)
