"""Pilot: the editor's gutter at 80x24 (issue 46): the text wraps to what the gutter leaves before and after
the first F5 in a project (take counts), and each paragraph's language is drawn, with ``!`` on one whose
text reads as the other language (omnistudio.studio.languages)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.studio import make_app, until_ready, wait_for
from support.wait import HANG_S

from omnistudio.studio.languages import paragraph_languages

pytestmark = pytest.mark.timeout(500)
DOW = "The Dow rose 1.2% to 38,450 points, and oil fell to $78.40 a barrel."
SCRIPT = ("[ruby] Good evening. Here are tonight's headlines, read at the top of the hour as every night.\n"
          "[valentina:es] Buenas noches. Estas son las noticias de hoy, leídas a esta hora como cada noche.\n"
          f"[ruby:es] {DOW}")


def rows_as_drawn(editor) -> dict[int, list[str]]:  # noqa: ANN001
    """Per script row, the text of each of its wrapped rows as drawn (the gutter cut off)."""
    drawn: dict[int, list[str]] = {}
    for y in range(editor.scrollable_content_region.height):
        try:
            row, _section = editor.wrapped_document._offset_to_line_info[y + editor.scroll_offset.y]
        except IndexError:
            break
        drawn.setdefault(row, []).append(editor.render_line(y).text[editor.gutter_width:])
    return drawn


def assert_text_fits(editor) -> None:  # noqa: ANN001
    """Every character of the script is drawn: no wrapped row runs past the editor's right edge."""
    assert editor.wrapped_document._width == editor.wrap_width  # wrapped to what the gutter leaves
    drawn = rows_as_drawn(editor)
    assert sorted(drawn) == list(range(editor.document.line_count)), "the script did not fit the editor's height"
    for row, line in enumerate(editor.document.lines):
        assert "".join(drawn[row]).split() == line.split(), (row, drawn[row])


def test_text_rewraps_when_take_marks_widen_the_gutter(tiny_engine, voice_roster_file: Path,  # noqa: ANN001
                                                       tmp_path: Path) -> None:
    asyncio.run(_rewraps(tiny_engine, voice_roster_file, tmp_path))


async def _rewraps(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from textual.widgets import TextArea

    from omnistudio.widgets.script_editor import LANG_WIDTH, MARK_WIDTH, ScriptEditor

    app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script", virtual_rate=50.0)
    app.studio.select("ruby")
    app.studio.takes.open(tmp_path / "news.omniproj", SCRIPT)
    async with app.run_test(size=(80, 24)) as pilot:
        await until_ready(pilot)
        editor = app.main_screen.query_one(ScriptEditor)
        assert editor.text == SCRIPT
        assert editor.take_marks == {}
        assert_text_fits(editor)
        numbers = TextArea.gutter_width.fget(editor)  # the line numbers alone

        # the languages' column (as the app fills it on edits): the text wraps to what is left
        languages = paragraph_languages(editor.text, app.studio.settings.language)
        editor.set_languages(languages)
        await pilot.pause()
        assert editor.languages == languages and editor.gutter_width == numbers + LANG_WIDTH
        assert_text_fits(editor)

        await pilot.press("f5")  # the first F5 in the project: take counts in the gutter, wider again
        await wait_for(pilot, lambda: app.takes is not None and len(editor.take_marks) == 3
                       and app.studio.commands.empty() and app.studio.state == "ready",
                       timeout=HANG_S, what="a take per sentence")
        await pilot.pause()
        assert editor.gutter_width == numbers + LANG_WIDTH + MARK_WIDTH
        assert_text_fits(editor)
        editor.move_cursor((0, len(editor.document.lines[0])))
        editor.insert(" And more words typed at the end of the first paragraph.")  # still wraps on edits
        await pilot.pause()
        assert_text_fits(editor)
        editor.set_languages({})  # a half-typed script: nothing to show, the column kept (no jump)
        assert editor.gutter_width == numbers + LANG_WIDTH + MARK_WIDTH


def test_gutter_shows_each_paragraphs_language_and_marks_the_wrong_one(tiny_engine, voice_roster_file: Path,  # noqa: ANN001
                                                                      tmp_path: Path) -> None:
    asyncio.run(_languages(tiny_engine, voice_roster_file, tmp_path))


async def _languages(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from omnistudio.widgets.script_editor import LANG_WIDTH, MISMATCH_STYLE, ScriptEditor

    app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script", live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        editor = app.main_screen.query_one(ScriptEditor)
        editor.load_text(SCRIPT + "\n\nOK.")
        languages = paragraph_languages(editor.text, "en")
        assert languages == {0: ("en", False), 1: ("es", False), 2: ("es", True), 4: ("es", False)}
        editor.set_languages(languages)
        await pilot.pause()
        assert_text_fits(editor)
        first_rows = {row: editor.render_line(y) for y, (row, section)
                      in enumerate(editor.wrapped_document._offset_to_line_info) if section == 0}
        assert {row: strip.text[:LANG_WIDTH] for row, strip in first_rows.items()} == {
            0: "en  ", 1: "es  ", 2: "es! ", 3: "    ", 4: "es  "}
        flag = [s for s in first_rows[2] if s.text == "!"]
        assert flag and flag[0].style is not None and flag[0].style.bgcolor == MISMATCH_STYLE.bgcolor
        # a wrapped paragraph's later rows leave the column empty
        later = [editor.render_line(y).text[:LANG_WIDTH] for y, (row, section)
                 in enumerate(editor.wrapped_document._offset_to_line_info) if section > 0]
        assert later and set(later) == {"    "}


def test_an_edit_shows_each_paragraphs_language(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    asyncio.run(_wired(tiny_engine, voice_roster_file, tmp_path))


async def _wired(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from omnistudio.widgets.script_editor import ScriptEditor

    app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script", live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        editor = app.main_screen.query_one(ScriptEditor)
        editor.load_text(f"[valentina:es] Buenas noches.\n[ruby] {DOW}")
        await wait_for(pilot, lambda: editor.languages == {0: ("es", False), 1: ("en", False)}, what="languages")
        editor.focus()
        editor.move_cursor((1, 0))
        editor.insert("[storm:es] ")
        editor.move_cursor((1, len("[storm:es] ")))
        editor.delete((1, len("[storm:es] ")), (1, len("[storm:es] [ruby] ")))
        await wait_for(pilot, lambda: editor.languages == {0: ("es", False), 1: ("es", True)}, what="the mark")
        assert editor.text.splitlines()[1].startswith("[storm:es] The Dow")
