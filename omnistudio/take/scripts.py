"""A script's text and its default voice checked into a parsed script, for every client that renders
one (``render``, ``render --project``, ``render --ray``, the MCP server's ``render_script``): speaker
tags checked against the roster, an untagged line without a default voice refused, and a voice
named as text (``ruby``, ``ruby:es``, ``ruby+storm@0.7``) checked against the roster."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from omnistudio.errors import UserError
from omnistudio.script import Blend, Script, check_script_size, parse_script
from omnistudio.take.options import TakeOptions
from omnistudio.voices.resolve import VoiceRef, parse_voice
from omnistudio.voices.roster import load_roster


def known_speakers() -> set[str]:
    """The roster's anchor ids (the speaker tags a script may use)."""

    return set(load_roster().anchors)


def plan_script(text: str, options: TakeOptions, voice: VoiceRef | None,
                no_voice_hint: str = "select a voice",
                presets: Mapping[str, Blend] | None = None) -> tuple[Script, TakeOptions]:
    """The parsed script (speakers checked against the roster, a project's duo ``presets`` read as their
    blends) and ``options`` with its default voice.

    A line without a speaker tag needs ``voice``: without one, one line naming it and ``no_voice_hint``
    (what the client's user gives: ``give --voice ANCHOR ...``)."""
    check_script_size(text)  # every script client's limit (a file is checked before it is read)
    tagged = any(line.lstrip().startswith("[") for line in text.splitlines())
    script = parse_script(text, options.lang, speakers=known_speakers() if tagged else None, presets=presets)
    if voice is None:
        untagged = next((s for s in script.sentences if s.speaker is None), None)
        if untagged is not None:
            raise UserError(f"line {untagged.line} has no speaker tag: {no_voice_hint}")
    return script, replace(options, voice=voice)


def checked_voice(text: str) -> tuple[VoiceRef, str | None]:
    """A voice written as text (``ruby``, ``ruby:es``, ``ruby+storm@0.7``) and its language (None: not
    given), every anchor it names checked against the roster (an unknown one: one line, a close match)."""

    ref, lang = parse_voice(text)
    roster = load_roster()
    for anchor in ref.anchors():
        roster.get(anchor)
    return ref, lang
