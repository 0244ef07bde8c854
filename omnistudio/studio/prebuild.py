"""Voices ready before they are asked for: the studio's background prompt builds (issue 28).

What is wanted: every voice the script in the editor uses (its tags, and the selected anchor for
untagged lines), read again as it is typed, and the anchor highlighted in the anchor list, in the
list's language. A change waits ``DEBOUNCE_S`` (half-typed tags are not built).

After the voices, auditions wanted ahead (:meth:`Prebuild.ahead`: the morph slider's neighbour ratios on
the paragraph's first sentence) are rendered into the take cache, with no sink, so hearing one later
plays at once; these run whether or not the link builds prompts itself.

Where it runs: on the studio's engine thread, between its commands, through the link's ``prepare``
(the take's own prepare path: a local engine builds and saves the prompt, a remote link asks its server
to, which warms the server). Only when the engine is ready and idle: no take rendering, no audio still
playing or paused. One voice at a time, so a new want is read between voices.

Priority: any command put on the engine thread's queue (a play, an audition, an export, a retake, a
blend, closing) pre-empts it. The build's cancel flag is "a command is waiting", checked before every
diffusion step (the engine's per-step hook), so the command starts after at most the one step already
under way; the cancelled voice is built again later, from its start, once the studio is idle. A
remote link sends its server a cancel when it sees the flag (it looks every 50 ms) and the server
stops at its next step: the step is the server's, not counted here.

Nothing here reaches the UI: the anchor list pulls :meth:`Prebuild.marks` (per anchor and language:
"building", then "ready"); the controller's events are not used, so the studio's state stays "ready"
and no prepare progress is shown for a background build. A failure is logged, never shown: the voice
is skipped until the play that needs it reports the real error. An unreachable engine (a server down
or busy) is not the studio's state either: the builds rest (1 s, doubling, at most ``REST_MAX_S``) and
try again; a play finds the fault and says so as it always did.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from omnistudio.errors import Cancelled, Unavailable, UserError
from omnistudio.studio.commands import BuildAhead, CommandQueue
from omnistudio.take.pipeline import build_take
from omnistudio.take.stream import sentence_voice
from omnistudio.voices.resolve import VoiceRef

if TYPE_CHECKING:
    from omnistudio.studio.audition import Heard
    from omnistudio.studio.core import ScriptReading
    from omnistudio.take.link import EngineLink
    from omnistudio.take.pipeline import TakeCache

log = logging.getLogger(__name__)

DEBOUNCE_S = 0.5  # a want is built once it has not changed for this long
BUSY_POLL_S = 0.2  # while audio plays (or is paused), how often the engine thread looks again
REST_MAX_S = 30.0  # the longest rest after the engine could not be reached
Want = tuple[VoiceRef, str]


class Preempted:
    """Background work's cancel flag (a build, the take strip's finishing pass): set once a command of the
    user's waits on the engine thread's queue (the queue counts them: :meth:`CommandQueue.user_waiting`)."""

    def __init__(self, commands: CommandQueue) -> None:
        self._commands = commands

    def is_set(self) -> bool:
        return self._commands.user_waiting()


class Prebuild:
    """The studio's background builds: wants from the UI thread, built on the engine thread."""

    def __init__(self, commands: CommandQueue, cache: TakeCache, link: Callable[[], EngineLink], reading: ScriptReading,
                 busy: Callable[[], bool], idle: Callable[[], bool], enabled: bool = True) -> None:
        """``link``: the engine's (raises Unavailable until it is up); ``busy``: a play renders or sounds;
        ``idle``: the engine is up and ready. ``enabled`` False: a studio whose link resolves voices itself
        (tests' fixed references) has no prompts to build."""
        self._commands, self._cache, self._link, self._reading = commands, cache, link, reading
        self._busy, self._idle = busy, idle
        self.enabled = enabled
        self._lock = threading.Lock()
        self._text = ""
        self._highlight: tuple[str, str] | None = None
        self._generation = 0  # bumped by every change of what is wanted
        self.command_waiting = Preempted(commands)  # background work gives way to a command (take strip too)
        self._changed_at = 0.0
        self._blocked = False  # the engine thread waits for a command with no time limit
        self._rest, self._rest_until = 0.0, 0.0  # after an unreachable engine: how long, and until when
        self._parsed: tuple[tuple[Any, ...], list[Want]] = ((), [])
        self.done: set[Want] = set()  # built (or found ready) by the link this session
        self.failed: set[Want] = set()  # not buildable (e.g. an unknown anchor): skipped
        self.building: Want | None = None
        self._marks: dict[tuple[str, str], str] = {}
        self._version = 0
        self.steps = 0  # diffusion steps the background builds ran on a local engine (tests count them)
        self.built = 0  # voices the background builds prepared
        self.preempted = 0  # builds a command cancelled
        self.step_hook: Callable[[], None] | None = None  # tests: called on the engine thread at each step
        self._ahead: list[Heard] = []  # auditions to render into the take cache (the slider's neighbours)
        self.rendered: list[Heard] = []  # rendered ahead (or found in the cache), in order (tests read it)

    # ------------------------------------------------------------ wants (UI thread)
    def script(self, text: str) -> None:
        """The editor's text changed: build the voices it uses once it rests for ``DEBOUNCE_S``."""
        self._want(text=text)

    def highlight(self, anchor: str | None, lang: str) -> None:
        """The anchor list's highlight (or its language) changed."""
        self._want(highlight=(anchor, lang) if anchor else None)

    def ahead(self, heards: list[Heard]) -> None:
        """Render these auditions into the take cache while idle (replacing any not rendered yet), so
        hearing one later plays at once (the morph slider's neighbour ratios)."""
        with self._lock:
            self._ahead = [h for h in heards if h not in self.rendered]
            self._generation += 1
            wake, self._blocked = self._blocked, False
        if wake:
            self._commands.put(BuildAhead())

    def _want(self, **change: Any) -> None:
        with self._lock:
            text = change.get("text", self._text)
            highlight = change.get("highlight", self._highlight)
            if (text, highlight) == (self._text, self._highlight):
                return
            self._text, self._highlight = text, highlight
            self._generation += 1
            self._changed_at = time.monotonic()
            wake, self._blocked = self._blocked, False
        if wake:  # the engine thread waits with no time limit: give it a command to look again
            self._commands.put(BuildAhead())

    # ------------------------------------------------------------ pulled state (any thread)
    def marks(self) -> tuple[int, dict[tuple[str, str], str]]:
        """(version, {(anchor, lang): "building" | "ready"}): the states the background builds changed."""
        with self._lock:
            return self._version, dict(self._marks)

    def settled(self) -> bool:
        """Nothing wanted is left to build or render ahead (tests wait on this, not on time)."""
        return self.building is None and not (self.enabled and self.pending()) and not self._ahead

    # ------------------------------------------------------------ engine thread
    def wanted(self) -> list[Want]:
        """Every (voice, language) wanted now, in order: the script's voices, then the highlighted anchor."""
        with self._lock:
            text, highlight = self._text, self._highlight
        default = self._reading.voice()
        key = (text, highlight, default, self._reading.language)
        if self._parsed[0] != key:
            wants: list[Want] = []
            try:
                sentences = self._reading.parse(text) if text.strip() else []
            except UserError:
                sentences = []  # a half-typed tag: nothing from the script until it parses
            for sentence in sentences:
                voice = sentence_voice(sentence, default)
                if voice is not None:
                    wants.append((voice, sentence.lang))
            if highlight is not None:
                wants.append((VoiceRef(anchor=highlight[0]), highlight[1]))
            self._parsed = (key, list(dict.fromkeys(wants)))
        return self._parsed[1]

    def pending(self) -> list[Want]:
        return [w for w in self.wanted() if w not in self.done and w not in self.failed]

    def _due(self) -> float | None:
        """Seconds until a background build is due (0: now), None while nothing is to be built."""
        if not self._idle():
            return None
        if not (self.enabled and self.pending()) and not self._ahead:
            return None
        left = max(self._changed_at + DEBOUNCE_S, self._rest_until) - time.monotonic()
        if left > 0:
            return left
        return BUSY_POLL_S if self._busy() else 0.0

    def idle_wait(self) -> float | None:
        """How long the engine thread may wait for its next command before :meth:`run` is due (None: no
        limit; a new want then puts a command on its queue)."""
        generation = self._generation
        wait = self._due()
        with self._lock:
            if wait is None and generation != self._generation:
                wait = 0.0  # changed while looking: look again at once
            self._blocked = wait is None
        return wait

    def run(self) -> None:
        """Build what is wanted, one voice at a time, until nothing is left, the studio is busy, or a
        command waits (engine thread)."""
        with self._lock:
            self._blocked = False
        preempted = self.command_waiting
        while self._due() == 0.0 and not preempted.is_set():
            pending = self.pending() if self.enabled else []
            if not (self._build(pending[0], preempted) if pending else self._render_ahead(preempted)):
                return

    def _render_ahead(self, preempted: Preempted) -> bool:
        """Render the first audition wanted ahead into the take cache (no sink: nothing plays)."""
        with self._lock:
            if not self._ahead:
                return True
            heard = self._ahead[0]
        options = self._reading.take_options(heard.voice)
        try:
            build_take(self._link(), list(heard.sentences), options, self._cache,
                       base_seed=options.seed).run([], cancel=preempted)
        except Cancelled:
            self.preempted += 1
            return False
        except Exception as exc:  # noqa: BLE001 - a background render never stops the studio
            log.info("rendering %s ahead failed: %s", heard.voice.key(), exc)
        with self._lock:
            if heard in self._ahead:
                self._ahead.remove(heard)
            self.rendered = [*self.rendered[-7:], heard]
        return True

    def _build(self, want: Want, preempted: Preempted) -> bool:
        voice, lang = want
        link = self._link()
        engine = getattr(link, "engine", None)
        self.building = want
        self._mark(voice, lang, "building")
        handle = engine.on_each_step(preempted.is_set, self._stepped) if engine is not None else None
        ok = False
        try:
            link.prepare([want], None, preempted)
            ok = True
        except Cancelled:
            self.preempted += 1
            return False
        except Unavailable as exc:
            self._rest = min(max(self._rest * 2, 1.0), REST_MAX_S)
            self._rest_until = time.monotonic() + self._rest
            log.info("background build of %s (%s) waits %.0f s: %s", voice.key(), lang, self._rest, exc)
            return False
        except Exception as exc:  # noqa: BLE001 - a background build never stops the studio
            log.info("background build of %s (%s) failed: %s", voice.key(), lang, exc)
            self.failed.add(want)
            return True
        finally:
            if handle is not None:
                handle.remove()
            self.building = None
            self._mark(voice, lang, "ready" if ok else None)
        self.done.add(want)
        self.built += 1
        self._rest = 0.0
        return True

    def _stepped(self) -> None:
        self.steps += 1
        if self.step_hook is not None:
            self.step_hook()

    def _mark(self, voice: VoiceRef, lang: str, state: str | None) -> None:
        with self._lock:
            for anchor in voice.anchors():
                if state is None:
                    if self._marks.get((anchor, lang)) == "building":
                        del self._marks[(anchor, lang)]
                elif state == "building" and self._marks.get((anchor, lang)) == "ready":
                    continue  # a blend of a ready anchor: that anchor stays ready
                else:
                    self._marks[(anchor, lang)] = state
            self._version += 1
