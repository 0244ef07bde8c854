"""The Studio controller: owns the engine thread, its command queue, the player and the live meter.

Threads:
- the caller's (UI) thread calls the public methods; none of them blocks on the engine: each puts
  a command on the queue (after the cheap checks, which raise UserError at once);
- the engine thread loads the model, resolves voices, renders sentences and writes them to the
  player ring (sentence k+1 renders while k plays: the ring holds what is ahead);
- the output callback (a sound card, or :class:`VirtualOutput` when there is none) plays the ring.
Results reach the client only through ``report(event)`` (events in :mod:`.events`), which must be
thread-safe (the app passes ``post_message``), and through :meth:`Studio.poll`, which the client
calls on a timer to pull the meter, the sentence being heard and the underrun count.
"""

from __future__ import annotations

import gc
import logging
import queue
import random
import threading
import time
from argparse import Namespace
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from omnistudio.audio.finishing import live_stitcher, pauses
from omnistudio.audio.loudness import LoudnessMeter
from omnistudio.audio.player import Player
from omnistudio.config import SAMPLE_RATE
from omnistudio.errors import Cancelled, UserError, describe
from omnistudio.studio import adapters
from omnistudio.studio.adapters import Sentence
from omnistudio.studio.events import (EngineState, Exported, Failure, MeterReading, Notice, PlaybackStarted,
                                      PromptsLoaded, SentenceRendered, Snapshot)
from omnistudio.studio.playback import Schedule, VirtualOutput
from omnistudio.studio.settings import StudioSettings

log = logging.getLogger(__name__)

AUDITION = {"en": "Good evening, and welcome to the news at nine.",
            "es": "Buenas noches, estas son las noticias de las nueve."}
VoiceResolver = Callable[[Any, str, str, "tuple[str, float] | None"], Any]


def parse_blend(speaker: str) -> tuple[str, tuple[str, float] | None]:
    """``a+b@0.70`` (as the script parser writes blends) -> ("a", ("b", 0.7)); a plain id -> (id, None)."""
    from omnistudio.script import blend_parts

    parts = blend_parts(speaker)
    return (parts[0], (parts[1], parts[2])) if parts else (speaker, None)


def roster_voice(engine: Any, anchor: str, lang: str, blend: tuple[str, float] | None) -> Any:
    """The default voice resolver: the anchor's saved prompt, or its blend with a partner."""
    if blend is not None and blend[1] < 1.0:
        return adapters.blend_voice(engine, anchor, blend[0], lang, blend[1])
    return adapters.anchor_voice(engine, anchor, lang)


class Studio:
    """Headless studio: everything the Textual app shows comes from here."""

    def __init__(self, model: str | None = None, device: str | None = None, dtype: str | None = None, *,
                 engine: Any = None, settings: StudioSettings | None = None,
                 report: Callable[[object], None] | None = None, audio: str = "auto", virtual_rate: float = 1.0,
                 voice_resolver: VoiceResolver | None = None, warm: bool = True) -> None:
        if audio not in ("auto", "device", "virtual"):
            raise UserError(f"audio mode '{audio}': use auto, device or virtual")
        self.model_args = Namespace(model=model, device=device, dtype=dtype, sampler="fast")
        self.engine = engine
        self.settings = (settings or StudioSettings()).validated()
        self.report: Callable[[object], None] = report or (lambda event: None)
        self.audio_mode = audio
        self.virtual_rate = virtual_rate
        self.resolve_voice = voice_resolver or roster_voice
        self.warm = warm  # load saved prompts and warm up the engine before reporting ready
        self.state = "loading"
        self.anchor: str | None = self.settings.anchor or None
        self.blend: tuple[str, float] | None = None
        self.player: Player | None = None
        self.output: VirtualOutput | None = None
        self.silent = False
        self.schedule = Schedule()
        self.meter = LoudnessMeter(SAMPLE_RATE)
        self._tap_buf = np.zeros(SAMPLE_RATE, dtype=np.float32)
        self._commands: queue.Queue[tuple[str, tuple[Any, ...]]] = queue.Queue()
        self._rendering_play = False
        self._generation = 0  # bumped by stop(): queued renders of an older generation are dropped
        self._voices: dict[tuple[str, str, Any], Any] = {}
        self._rendered: dict[tuple[Any, ...], Any] = {}
        self._thread = threading.Thread(target=self._run, name="studio-engine", daemon=True)

    # ------------------------------------------------------------ lifecycle
    def start(self) -> Studio:
        self._open_audio()
        self._thread.start()
        self._commands.put(("load", ()))
        return self

    def _open_audio(self) -> None:
        device: int | str | None = self.settings.output_device or None
        if isinstance(device, str) and device.isdigit():
            device = int(device)
        self.player = Player(SAMPLE_RATE, device=device)
        if self.audio_mode != "virtual":
            try:
                self.player.open()
                self.silent = False
                return
            except UserError as exc:
                if self.audio_mode == "device":
                    raise
                self.report(Notice(f"{exc}. Playing silently (meter only); export still works.", "warning"))
        self.silent = True
        self.output = VirtualOutput(self.player, rate=self.virtual_rate).start()

    def reopen_audio(self) -> None:
        """Switch to the output device in the settings (UI thread; playback stops)."""
        self.stop()
        self._close_audio()
        self._open_audio()

    def _close_audio(self) -> None:
        if self.output is not None:
            self.output.close()
            self.output = None
        if self.player is not None:
            self.player.close()

    def close(self) -> None:
        self.stop()
        self._commands.put(("quit", ()))
        if self._thread.is_alive():
            self._thread.join(timeout=10.0)
        self._close_audio()

    # ------------------------------------------------- commands (UI thread)
    def play(self, text: str, from_offset: int = 0) -> list[Sentence]:
        """Render and play ``text`` from the sentence at character ``from_offset``; returns the sentences."""
        sentences = [s for s in self.parse(text) if s.end > from_offset]
        if not sentences:
            raise UserError("nothing to play after the cursor")
        self._start_play(sentences)
        return sentences

    def audition(self, anchor: str, lang: str) -> None:
        """A short fixed sentence in ``anchor``'s voice (with the current blend when it is selected)."""
        speaker = anchor if self.blend is None or anchor != self.anchor else \
            f"{anchor}+{self.blend[0]}@{self.blend[1]:.2f}"
        text = AUDITION[lang]
        self._start_play([Sentence(0, text, speaker, lang, 0, 0)], audition=True)

    def _start_play(self, sentences: list[Sentence], audition: bool = False) -> None:
        self.stop()
        self.meter = LoudnessMeter(SAMPLE_RATE)
        self.player.tap.skip()  # type: ignore[union-attr]
        if self.player is not None and self.player.paused:
            self.player.resume()
        self._commands.put(("play", (self._generation, sentences, time.perf_counter(), audition)))

    def stop(self) -> None:
        self._generation += 1
        if self.player is not None:
            self.player.stop()
        self.schedule.clear()

    def toggle_pause(self) -> bool:
        """Pause or resume playback; returns True when now paused."""
        if self.player is None:
            return False
        if self.player.paused:
            self.player.resume()
        else:
            self.player.pause()
        return self.player.paused

    def export(self, text: str, path: Path) -> None:
        """Render (reusing what was already rendered), normalise and write ``path`` plus its sidecar."""
        from omnistudio.audio.export import check_output_path

        sentences = self.parse(text)
        check_output_path(path)
        self._commands.put(("export", (sentences, path)))

    def select(self, anchor: str | None, lang: str | None = None) -> None:
        self.anchor = anchor
        if lang:
            self.settings = replace(self.settings, language=lang)

    def set_blend(self, partner: str | None, alpha: float) -> bool:
        """Blend the selected anchor with ``partner`` at ``alpha`` (1.0: the anchor alone). False if unavailable."""
        from omnistudio.checks import check_alpha, check_pair

        if partner is None or alpha >= 1.0:
            self.blend = None
            return True
        try:
            check_pair(self.anchor or "", partner)
            check_alpha(alpha)
        except UserError as exc:
            self.blend = None
            self.report(Notice(str(exc), "warning"))
            return False
        self.blend = (partner, round(float(alpha), 2))
        if self.anchor:  # build it now, so the next audition uses it at once
            self._commands.put(("voice", (f"{self.anchor}+{partner}@{self.blend[1]:.2f}", self.settings.language)))
        return True

    def apply_settings(self, settings: StudioSettings) -> None:
        old = self.settings
        self.settings = replace(settings.validated(), anchor=self.anchor or "")
        if settings.output_device != old.output_device:
            self.reopen_audio()

    def parse(self, text: str) -> list[Sentence]:
        return adapters.parse_script(text, self.settings.language)

    # ------------------------------------------------------ pulled state
    def poll(self) -> Snapshot:
        """Feed the meter from the tap ring and report what is being heard (UI timer, >= 10 Hz)."""
        player = self.player
        if player is None:
            reading = MeterReading(*(float("-inf"),) * 4)
            return Snapshot(reading, None, 0, False, False)
        while True:
            got = player.tap.read_into(self._tap_buf)
            if got:
                self.meter.add(self._tap_buf[:got])
            if got < len(self._tap_buf):
                break
        reading = MeterReading(self.meter.momentary(), self.meter.short_term(), self.meter.integrated(),
                               self.meter.true_peak())
        heard = player.ring.total_read
        playing = heard < self.schedule.end or self._rendering_play
        return Snapshot(reading, self.schedule.at(heard), player.stats.underruns, playing, player.paused)

    # ----------------------------------------------------- engine thread
    def _run(self) -> None:
        while True:
            name, args = self._commands.get()
            if name == "quit":
                return
            try:
                getattr(self, f"_do_{name}")(*args)
            except Cancelled:
                self._set_state("ready")
            except UserError as exc:
                self._set_state("ready" if self.engine is not None else "error")
                self.report(Failure("Cannot do that", str(exc)))
            except Exception as exc:  # noqa: BLE001 - the engine thread must survive any failure
                log.exception("studio engine command %s failed", name)
                self._set_state("ready" if self.engine is not None else "error", str(exc))
                self.report(Failure("Engine error", describe(exc)))

    def _set_state(self, state: str, detail: str = "") -> None:
        self.state = state
        self.report(EngineState(state, detail))

    def _do_load(self) -> None:
        if self.engine is None:
            from omnistudio.voices.session import open_engine

            self._set_state("loading", str(self.model_args.model or "default model"))
            self.engine = open_engine(self.model_args, progress=lambda text: self._set_state("loading", text))
        self._set_state("warming")
        if self.warm:
            notice = adapters.start_prompts(self.engine, progress=lambda text: self._set_state("warming", text))
            if notice:
                self.report(Notice(notice, "warning"))
        self.report(PromptsLoaded())
        # What is alive now (the model, the prompts, the UI) lives for the whole session: keep it out
        # of the cyclic collector, so a full collection during playback scans only new objects
        # (measured in the test process: a 330 ms UI stall from one full collection mid-render).
        gc.freeze()
        self._set_state("ready")

    def _voice(self, speaker: str | None, lang: str) -> Any:
        name = speaker or self.anchor
        if not name:
            raise UserError("pick an anchor first (or tag the line, e.g. [ruby])")
        anchor, blend = parse_blend(name) if speaker else (name, self.blend)
        key = (anchor, lang, blend)
        if key not in self._voices:
            self._voices[key] = self.resolve_voice(self.engine, anchor, lang, blend)
        return self._voices[key]

    def _do_voice(self, speaker: str, lang: str) -> None:
        self._voice(speaker, lang)

    def _render(self, sentence: Sentence) -> Any:
        s = self.settings
        seed = s.seed if s.seed_lock else random.randrange(2**31)
        voice_key = (sentence.speaker or self.anchor, self.blend if not sentence.speaker else None)
        key = (sentence.text, sentence.lang, voice_key, s.num_step, s.guidance_scale, seed, s.speed)
        if key not in self._rendered:
            voice = self._voice(sentence.speaker, sentence.lang)
            generation = self._generation
            handle = self.engine.on_each_step(lambda: generation != self._generation)  # stop: within one step
            try:
                self._rendered[key] = self.engine.synthesize(
                    sentence.text, voice, language=sentence.lang, num_step=s.num_step, seed=seed,
                    guidance_scale=s.guidance_scale, speed=None if s.speed == 1.0 else s.speed)
            finally:
                handle.remove()
        result = self._rendered[key]
        t = result.timings
        self.report(SentenceRendered(sentence.index, t.wall_s, t.audio_s, t.rtf))
        return result

    def _do_play(self, generation: int, sentences: list[Sentence], asked_at: float, audition: bool) -> None:
        if generation != self._generation or self.player is None:
            return
        player = self.player
        self._set_state("rendering")
        self._rendering_play = True
        stitcher = live_stitcher(SAMPLE_RATE, adapters.finishing_options(self.settings))
        gaps = pauses([s.line for s in sentences])
        try:
            first = True
            for sentence, gap in zip(sentences, gaps):
                if generation != self._generation:
                    break
                pcm = self._render(sentence).pcm
                if generation != self._generation:
                    break
                piece = stitcher.push(pcm, gap, sentence.index)  # what is played is what is exported
                start = player.ring.total_written
                self.schedule.add(start, start + len(piece), -1 if audition else sentence.index)
                if first:
                    self.report(PlaybackStarted(time.perf_counter() - asked_at, self.silent))
                    first = False
                self._write(player, piece, generation)
            self._write(player, stitcher.finish(), generation)
            player.finish()
        finally:
            self._rendering_play = False
            self._set_state("ready")

    def _write(self, player: Player, pcm: np.ndarray, generation: int) -> None:
        done = 0
        while done < len(pcm) and generation == self._generation:
            done += player.write(pcm[done:], timeout=0.1)

    def _do_export(self, sentences: list[Sentence], path: Path) -> None:
        self._set_state("rendering", f"exporting {path.name}")
        try:
            chunks, per_sentence = [], []
            for sentence, gap in zip(sentences, pauses([s.line for s in sentences])):
                result = self._render(sentence)
                chunks.append((result.pcm, gap, sentence.index))
                per_sentence.append({"id": sentence.index, "render_s": result.timings.wall_s,
                                     "rtf": result.timings.rtf})
            sidecar, report = adapters.write_finished(path, chunks, SAMPLE_RATE, self.settings,
                                                      {"sentences": per_sentence})
        finally:
            self._set_state("ready")
        self.report(Exported(path, sidecar, report))
