"""The take pipeline: plan, prepare each voice before its first sentence, 1-ahead render through a link, the take
cache (reuse with the seed locked, bounded in bytes), sinks, cancel."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from omnistudio.errors import Cancelled, UserError
from omnistudio.take.link import LocalEngine, PrepareEvent, Rendered, RenderItem
from omnistudio.take.options import TakeOptions, sentence_seed
from omnistudio.take.pipeline import TakeCache, build_take, plan
from omnistudio.take.sinks import FileSink, MemorySink
from omnistudio.voices.resolve import VoiceRef, resolve_voice
from support.audio import REF_TEXT, same_take
from support.links import FakeLink



def test_plan_gives_each_sentence_its_voice_seed_and_pause() -> None:
    options = TakeOptions(seed=5, voice=VoiceRef(anchor="ruby"))
    sentences = plan("Hello there. Second one.\n[storm+ruby@0.3:es] Hola.\n[cy] Bye.", options, speakers=None)
    assert [(s.voice.key(), s.lang) for s in sentences] == [("ruby", "en"), ("ruby", "en"),
                                                             ("storm+ruby@0.30", "es"), ("cy", "en")]
    assert sentences[2].voice.blend is not None and sentences[2].voice.blend.alpha == 0.3  # typed, not a string
    assert [s.pause_s for s in sentences] == [0.15, 0.45, 0.45, 0.0]
    assert sentences[0].seed == sentence_seed(5, "Hello there.", "ruby", "en")
    with pytest.raises(UserError, match="line 1 has no speaker tag"):
        plan("Untagged.", TakeOptions())


def test_a_take_through_a_remote_style_link_with_batches(tmp_path: Path) -> None:
    link = FakeLink()
    text = "\n".join(f"[ruby] Sentence number {i}." for i in range(7))
    take = build_take(link, text, TakeOptions(batch=3, seed=1))
    sink = MemorySink()
    result = take.run([sink])
    assert link.calls == [[0], [1, 2, 3], [4, 5, 6]]  # first alone (time to first audio), then groups
    assert sink.sentences == list(range(7)) and sink.ended and not sink.aborted
    assert np.array_equal(sink.pcm, result.pcm) and result.rendered == 7 and result.reused == 0
    assert link.prepared == [("ruby", "en")]


def test_replay_with_the_seed_locked_renders_nothing(tmp_path: Path) -> None:
    link, cache = FakeLink(), TakeCache()
    text = "[ruby] One. Two.\n[storm] Three."
    first = build_take(link, text, TakeOptions(seed=9), cache).run()
    assert len(link.calls) == 3
    again = build_take(link, text, TakeOptions(seed=9), cache).run()
    assert len(link.calls) == 3 and again.rendered == 0 and again.reused == 3  # nothing rendered again
    assert np.array_equal(first.pcm, again.pcm)
    edited = build_take(link, "[ruby] One. Two changed.\n[storm] Three.", TakeOptions(seed=9), cache).run()
    assert link.calls[3:] == [[1]] and edited.reused == 2  # only the edited sentence
    unlocked = build_take(link, text, TakeOptions(seed=9, seed_locked=False), cache).run()
    assert unlocked.rendered == 3 and unlocked.base_seed != 9  # a new seed: new takes


def test_take_cache_stays_under_its_byte_bound_over_200_sentences() -> None:
    link = FakeLink(seconds=0.25)  # 24 kB per sentence
    bound = 40 * 24_000
    cache = TakeCache(max_bytes=bound)
    seen = []
    text = "\n".join(f"[ruby] Line {i} of the long bulletin." for i in range(200))
    take = build_take(link, text, TakeOptions(batch=4), cache)

    class Watch(MemorySink):
        def chunk(self, chunk: Any, piece: np.ndarray) -> None:
            seen.append(cache.bytes)

    take.run([Watch()])
    assert len(seen) == 200 and max(seen) <= bound and cache.bytes <= bound
    assert len(cache) == 40  # full, oldest evicted
    # the most recent sentences are kept (least recently used go first)
    again = build_take(link, text, TakeOptions(batch=4), cache)
    assert [s.id for s in again.missing()] == list(range(160))


def test_take_cache_lru_order_and_oversize() -> None:
    cache = TakeCache(max_bytes=3 * 400)

    def r(i: int) -> Rendered:
        return Rendered(i, np.zeros(100, dtype=np.float32))

    for i in range(3):
        cache.put(("k", i), r(i))
    assert cache.get(("k", 0)) is not None  # 0 is now the most recent
    cache.put(("k", 3), r(3))
    assert ("k", 1) not in cache and ("k", 0) in cache and cache.bytes == 1200
    cache.put(("big",), Rendered(9, np.zeros(1000, dtype=np.float32)))
    assert ("big",) not in cache and cache.bytes == 1200


def test_failed_sentence_aborts_the_sinks(tmp_path: Path) -> None:
    class Flaky(FakeLink):
        def render(self, items: Sequence[RenderItem], options: TakeOptions, cancel: Any = None) -> list[Rendered]:
            out = super().render(items, options, cancel)
            return [Rendered(r.index, r.pcm[:0], None, 0, "boom") if r.index == 1 else r for r in out]

    out = tmp_path / "take.wav"
    sink, seen = MemorySink(), []
    with pytest.raises(UserError, match="stopped at the first failed sentence, nothing written"):
        build_take(Flaky(), "[ruby] First line here. Second line here. Third line here.", TakeOptions()).run([sink, FileSink(out)], on_chunk=seen.append)
    assert sink.aborted and sink.sentences == [0] and not out.exists()
    # the take stops at the failure: the third sentence is never reported
    assert [c.ok for c in seen] == [True, False] and 'sentence 2 (line 1, "Second line here.")' in (seen[1].error or "")


def test_skip_failed_leaves_out_the_failed_sentence_and_fails_only_when_all_do(tmp_path: Path) -> None:
    class Flaky(FakeLink):
        bad: set[int] = {1}

        def render(self, items: Sequence[RenderItem], options: TakeOptions, cancel: Any = None) -> list[Rendered]:
            out = super().render(items, options, cancel)
            return [Rendered(r.index, r.pcm[:0], None, 0, "boom") if r.index in self.bad else r for r in out]

    text = "[ruby] First line here. Second line here. Third line here."
    sink, out = MemorySink(), tmp_path / "take.wav"
    result = build_take(Flaky(), text, TakeOptions()).run([sink, FileSink(out)], skip_failed=True)
    assert result.skipped == [1] and sink.sentences == [0, 2] and out.exists()
    assert result.timings()["skipped"] == [2] and result.frames == len(sink.pcm)
    Flaky.bad = {0, 1, 2}
    with pytest.raises(UserError, match="every sentence failed"):
        build_take(Flaky(), text, TakeOptions()).run([MemorySink()], skip_failed=True)


def test_the_first_sentence_waits_for_its_own_voice_only(tiny_engine: Any, flite_desk: Path) -> None:  # noqa: F811
    """The first sentence plays once its own voice is ready; a later voice is prepared while earlier
    sentences play (preparing ben is held until sentence 1 is in a sink: a take that prepared every voice
    first would hold until the hang guard and then show ben's build before sentence 1)."""
    from omnistudio.engine.engine import Engine

    engine = Engine(tiny_engine.loaded)  # a fresh engine: nothing cached on the device
    link = LocalEngine(engine)
    order: list[str] = []
    first_out = threading.Event()
    real_prepare = link.prepare

    def prepare(voices: Sequence[tuple[VoiceRef, str]], progress: Any = None, cancel: Any = None) -> None:
        if any(ref.key() == "ben" for ref, _ in voices):
            first_out.wait(60)  # a hang guard, not a timing: nothing asserts on it
        real_prepare(voices, progress, cancel)

    class Heard(MemorySink):
        def chunk(self, chunk: Any, piece: Any) -> None:
            order.append(f"chunk {chunk.sentence.id}")
            first_out.set()
            super().chunk(chunk, piece)

    link.prepare = prepare  # type: ignore[method-assign]
    take = build_take(link, "[ana] Good evening.\n[ben:es] Buenas noches.\n[ana:en] Bye.",
                      TakeOptions(num_step=2, seed=3))
    take.run([Heard()], progress=lambda e: order.append(f"{e.action} {e.voice} {e.lang}"))
    assert order[:3] == ["build ana en", "done ana en", "chunk 0"], order
    assert order.index("build ben es") < order.index("done ben es") < order.index("chunk 1") < order.index("chunk 2")
    assert order.count("build ana en") == 1  # a voice is prepared once per take
    assert (flite_desk / "prompts" / "ana_en.omni_prompt.safetensors").exists()
    states = {a.id: a.state for a in link.voices().anchors}  # what a client's anchor list shows
    assert (states["ana"]["en"], states["ben"]["es"], states["cy"]["en"]) == ("ready", "ready", "missing")
    assert link.voices().duos == (("ana", "ben", 0.5, ("en",)),)
    assert PrepareEvent(1, 2, "valentina", "es", "ready").describe() == "preparing voices 1/2: valentina (es)"
    # the anchors really differ: same text and seed policy, different recorded voices
    a = engine.synthesize("Same words.", engine_prompt(engine, "ana"), num_step=2, seed=1).pcm
    b = engine.synthesize("Same words.", engine_prompt(engine, "ben"), num_step=2, seed=1).pcm
    assert a.shape != b.shape or not np.array_equal(a, b)


def test_a_later_voice_that_cannot_be_prepared_writes_no_file(tmp_path: Path) -> None:
    class NoBen(FakeLink):
        def prepare(self, voices: Sequence[tuple[VoiceRef, str]], progress: Any = None, cancel: Any = None) -> None:
            if any(ref.key() == "ben" for ref, _ in voices):
                raise UserError("the recording of 'ben' is unreadable")
            super().prepare(voices, progress, cancel)

    out, sink = tmp_path / "take.wav", MemorySink()
    with pytest.raises(UserError, match="recording of 'ben' is unreadable"):
        build_take(NoBen(), "[ruby] First line here.\n[ben] Second line here.", TakeOptions()).run(
            [sink, FileSink(out)])
    assert sink.aborted and sink.sentences == [0] and not out.exists()
    assert not list(tmp_path.iterdir())  # nothing half-written beside it either


def engine_prompt(engine: Any, anchor: str) -> Any:
    return resolve_voice(engine, VoiceRef(anchor=anchor), "en")


def test_direct_take_matches_a_one_off_synthesis(tiny_engine: Any, ref_wav: Path) -> None:
    voice = VoiceRef.recording_of(ref_wav, REF_TEXT)
    link = LocalEngine(tiny_engine)
    take = build_take(link, "One two. Three four.", TakeOptions(num_step=3, seed=11, voice=voice))
    rows = []
    take.run(on_chunk=rows.append)
    prompt = resolve_voice(tiny_engine, voice, "en")
    alone = tiny_engine.synthesize("Three four.", prompt, num_step=3,
                                   seed=sentence_seed(11, "Three four.", voice.key(), "en"))
    assert same_take(rows[1].pcm, alone.pcm)
    assert link.calls == 2


def test_cancel_stops_a_take_within_one_step(tiny_engine: Any, ref_wav: Path) -> None:
    voice = VoiceRef.recording_of(ref_wav, REF_TEXT)
    cancel = threading.Event()
    sink = MemorySink()
    text = "\n".join(f"Sentence {i} of a long bulletin." for i in range(8))
    take = build_take(LocalEngine(tiny_engine), text, TakeOptions(num_step=4, voice=voice))

    def on_chunk(chunk: Any) -> None:
        if chunk.sentence.id == 1:
            cancel.set()

    with pytest.raises(Cancelled):
        take.run([sink], cancel=cancel, on_chunk=on_chunk)
    assert sink.aborted and take.stream is not None and take.stream.steps <= 3 * 4


def test_say_follows_the_seed_policy(tiny_engine: Any, ref_wav: Path, tmp_path: Path) -> None:
    import soundfile as sf

    from omnistudio.cli import main

    out = tmp_path / "say.wav"
    assert main(["say", "Good evening.", "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, "--model", "tiny",
                 "--device", "cpu", "--num-step", "3", "--seed", "5", "--sampler", "stock", "-o", str(out)]) == 0
    voice = VoiceRef.recording_of(ref_wav, REF_TEXT)
    rendered = LocalEngine(tiny_engine).render([RenderItem(0, "Good evening.", voice, "en", sentence_seed(
        5, "Good evening.", voice.key(), "en"))], TakeOptions(num_step=3))[0]
    said, _sr = sf.read(str(out), dtype="float32")
    expected = tmp_path / "expected.wav"
    from omnistudio.audio.writer import write_audio

    write_audio(expected, rendered.pcm, 24_000)
    assert np.array_equal(said, sf.read(str(expected), dtype="float32")[0])


def test_a_pause_tag_is_exactly_that_much_silence_in_the_finished_file(tmp_path: Path) -> None:
    """``[pause 0.6]``: 0.6 s between the two sentences in the file (to one 10 ms block), and silence:
    no breath in it (without room tone, zeros); a line break keeps its own pause and its breath."""
    import json

    import soundfile as sf

    from omnistudio.audio.finishing import FinishingOptions

    out = tmp_path / "paused.wav"
    text = "[ruby] Good evening. [pause 0.6] Here is the news.\n[storm] The weather is next."
    take = build_take(FakeLink(), text, TakeOptions(seed=3, finishing=FinishingOptions(room_tone=False)))
    assert [(s.pause_s, s.breath) for s in take.sentences] == [(0.6, False), (0.45, True), (0.0, True)]
    take.run([FileSink(out)])
    spans = json.loads((tmp_path / "paused.wav.json").read_text())["sentences"]
    assert abs(spans[1]["start_s"] - spans[0]["end_s"] - 0.6) <= 0.01
    assert [s["breath_after"] for s in spans[:2]] == [False, True]
    audio, rate = sf.read(str(out), dtype="float32")

    def peak(start_s: float, end_s: float) -> float:  # inside the gap, clear of the seams' fades
        return float(np.max(np.abs(audio[int((start_s + 0.02) * rate):int((end_s - 0.02) * rate)])))

    assert peak(spans[0]["end_s"], spans[1]["start_s"]) == 0.0 < peak(spans[1]["end_s"], spans[2]["start_s"])
