"""Pilot: the text front-end in the studio. F3 shows the spoken form of the sentence under the cursor
(unresolved spans marked); F4 adds the word under the cursor to the lexicon through a dialog, and the
next take speaks it (what the engine link received); Esc writes nothing; the project's lexicon wins
over the global one, and a lexicon changed on disk is spoken from the next play.

The studio runs on a stand-in link (support.links.FakeLink: tones, every text it was asked to say
recorded) at 50x real time: no model, so these tests are quick."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from support.links import FakeLink
from support.studio import ROWS, wait_for
from support.wait import HANG_S

from omnistudio.text import Entry
from omnistudio.text.lexicon_files import edit_lexicon, global_lexicon_path, load_lexicon, project_lexicon_path

pytestmark = pytest.mark.timeout(120)
SIZE = (80, 24)  # the smallest terminal the studio must stay usable in


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An OMNISTUDIO_HOME of this test's own: its global lexicon starts empty, and no other test sees it."""
    monkeypatch.setenv("OMNISTUDIO_HOME", str(tmp_path / "home"))
    from textual.widgets import Input, TextArea

    monkeypatch.setattr(TextArea, "cursor_blink", False)
    monkeypatch.setattr(Input, "cursor_blink", False)
    return tmp_path / "home"


def make(tmp_path: Path, script: str, project: Path | None = None):  # noqa: ANN201
    """A Spanish studio on a FakeLink with ``script`` in the editor (or in a new project at ``project``)."""
    from omnistudio.app import StudioApp
    from omnistudio.studio.autosave import Autosave
    from omnistudio.studio.controller import Studio
    from omnistudio.studio.settings import StudioSettings

    link = FakeLink(seconds=0.2)
    studio = Studio(link=link, settings=StudioSettings(language="es"), audio="virtual", virtual_rate=50.0, warm=False)
    studio.select("ruby", "es")
    if project is not None:
        studio.takes.open(project, script)
    app = StudioApp(studio, rows=ROWS, autosave=Autosave(tmp_path / "autosave.script", interval=0.0), welcome=False)
    return app, link


async def ready(pilot, script: str, cursor: tuple[int, int]):  # noqa: ANN001, ANN201
    """The engine ready, ``script`` in the editor (unless a project put it there), the cursor at ``cursor``."""
    from omnistudio.widgets.script_editor import ScriptEditor

    app = pilot.app
    await wait_for(pilot, lambda: app.studio.state == "ready", what="engine ready")
    editor = app.screen.query_one(ScriptEditor)
    if editor.text != script:
        editor.load_text(script)
    editor.focus()
    editor.cursor_location = cursor
    await pilot.pause()
    return editor


async def play_and_hear(pilot, link: FakeLink, said: str, rendered: bool = True) -> None:  # noqa: ANN001
    """F5: the take's sentence is ``said`` (its spoken form), and the link was asked to say it unless
    ``rendered`` is False (the same spoken text played before comes from the take cache)."""
    studio = pilot.app.studio
    link.said.clear()
    studio.last_take = None
    await pilot.press("f5")
    await wait_for(pilot, lambda: studio.last_take is not None and not studio.rendering_play
                   and studio.state == "ready", what="the play")
    assert [s.said for s in studio.last_take.sentences] == [said]
    assert link.said == ([said] if rendered else [])


async def say_as(pilot, text: str, key: str) -> None:  # noqa: ANN001
    """Fill the dialog's "said as" field (it has the focus), then press ``key``."""
    field = pilot.app.screen.query_one("#lex-say")
    assert field.has_focus
    field.value = text
    await pilot.press(key)


def notified(app, text: str) -> bool:  # noqa: ANN001
    return any(text in n.message for n in app._notifications)  # noqa: SLF001


# ------------------------------------------------------------------ F3: the spoken form
def test_f3_shows_the_spoken_form_with_unresolved_spans_marked(tmp_path: Path) -> None:
    asyncio.run(_spoken_form(tmp_path))


async def _spoken_form(tmp_path: Path) -> None:
    from omnistudio.widgets.spoken_line import SpokenLine

    script = "El dólar subió un 3,2 % © hoy.\nOtra línea."
    app, _ = make(tmp_path, script)
    async with app.run_test(size=SIZE) as pilot:
        editor = await ready(pilot, script, (0, 5))
        line = app.screen.query_one(SpokenLine)
        assert not line.display  # off by default
        await pilot.press("f3")
        assert line.display and line.region.height >= 1 and line.region.width == SIZE[0]
        assert line.text == "El dólar subió un tres coma dos por ciento © hoy."
        assert [line.text[a:b] for a, b in line.marked] == ["©"]  # after the span that grew, at its place
        shown = str(line.visual)
        assert "tres coma dos por ciento" in shown and "unknown symbol '©'" in shown
        editor.cursor_location = (1, 2)  # the next sentence: the line follows the cursor
        await pilot.pause()
        assert line.text == "Otra línea." and line.marked == ()
        await pilot.press("f3")
        assert not line.display


# ------------------------------------------------------------------ F4: add the word under the cursor
def test_f4_adds_the_word_and_the_next_take_speaks_it(tmp_path: Path, home: Path) -> None:
    asyncio.run(_add_word(tmp_path))


async def _add_word(tmp_path: Path) -> None:
    from textual.widgets import Input, Select

    from omnistudio.screens.lexicon import LexiconDialog
    from omnistudio.widgets.spoken_line import SpokenLine

    script = "Habló Sheinbaum ayer."
    app, link = make(tmp_path, script)
    path = global_lexicon_path()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, script, (0, 9))  # inside "Sheinbaum"
        await pilot.press("f3")
        await play_and_hear(pilot, link, "Habló Sheinbaum ayer.")
        await pilot.press("f4")
        dialog = app.screen
        assert isinstance(dialog, LexiconDialog)
        assert dialog.query_one("#lex-word", Input).value == "Sheinbaum"
        assert dialog.query_one("#lex-lang", Select).value == "es"  # the sentence's language
        await pilot.press("enter")  # nothing typed as what it is said as: one line, nothing saved
        await wait_for(pilot, lambda: notified(app, "say what it is read as"), what="the bad-entry notice")
        assert app.screen is dialog and not path.exists()
        await say_as(pilot, "Cheinbaum", "enter")
        await wait_for(pilot, lambda: path.exists() and len(load_lexicon(path)) == 1, what="the lexicon file")
        assert load_lexicon(path).entries == (Entry("Sheinbaum", "Cheinbaum", "es"),)
        line = app.screen.query_one(SpokenLine)
        await wait_for(pilot, lambda: line.text == "Habló Cheinbaum ayer.", what="the spoken form with the entry")
        assert notified(app, "'Sheinbaum' is said 'Cheinbaum' (es): the global lexicon")
        assert app.studio.take_options().lexicon.entries == (Entry("Sheinbaum", "Cheinbaum", "es"),)
        await play_and_hear(pilot, link, "Habló Cheinbaum ayer.")


def test_escape_in_the_lexicon_dialog_writes_nothing(tmp_path: Path) -> None:
    asyncio.run(_escape(tmp_path))


async def _escape(tmp_path: Path) -> None:
    from omnistudio.screens.lexicon import LexiconDialog
    from omnistudio.screens.main import MainScreen

    script = "Habló Sheinbaum ayer."
    app, link = make(tmp_path, script)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, script, (0, 9))
        await pilot.press("f4")
        assert isinstance(app.screen, LexiconDialog)
        await say_as(pilot, "Cheinbaum", "escape")
        assert isinstance(app.screen, MainScreen)
        await play_and_hear(pilot, link, "Habló Sheinbaum ayer.")
        assert app.studio.lexicon._worker.submit(lambda: None).result(timeout=HANG_S) is None  # noqa: SLF001 - idle
    assert not global_lexicon_path().exists()


# ------------------------------------------------------------------ the project's lexicon; a change on disk
def test_project_entry_wins_and_a_lexicon_changed_on_disk_is_spoken_next_play(tmp_path: Path) -> None:
    asyncio.run(_project(tmp_path))


async def _project(tmp_path: Path) -> None:
    project = tmp_path / "news.omniproj"
    edit_lexicon(global_lexicon_path(), lambda lex: lex.with_entry(Entry("Sheinbaum", "Global", "es")))
    script = "Habló Sheinbaum ayer."
    app, link = make(tmp_path, script, project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, script, (0, 9))
        await play_and_hear(pilot, link, "Habló Global ayer.")  # the global lexicon, read at start
        await pilot.press("f4")
        await say_as(pilot, "Proyecto", "enter")  # the dialog offers the open project's lexicon first
        local = project_lexicon_path(project)
        await wait_for(pilot, lambda: local.exists(), what="the project's lexicon file")
        assert load_lexicon(local).entries == (Entry("Sheinbaum", "Proyecto", "es"),)
        assert load_lexicon(global_lexicon_path()).entries == (Entry("Sheinbaum", "Global", "es"),)
        await play_and_hear(pilot, link, "Habló Proyecto ayer.")
        # another terminal's `omnistudio lexicon add`: spoken from the next play
        edit_lexicon(global_lexicon_path(), lambda lex: lex.with_entry(Entry("ayer", "el día de ayer", "es")))
        await play_and_hear(pilot, link, "Habló Proyecto el día de ayer.")



def test_a_broken_lexicon_file_is_one_notice_and_the_last_good_one_is_kept(tmp_path: Path) -> None:
    asyncio.run(_broken(tmp_path))


async def _broken(tmp_path: Path) -> None:
    from support.studio import Recorder

    from omnistudio.studio.events import Notice
    from omnistudio.text import Lexicon
    from omnistudio.text.lexicon_files import save_lexicon

    path = global_lexicon_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[[entry]\nword = ", encoding="utf-8")
    script = "Habló Sheinbaum ayer."
    app, link = make(tmp_path, script)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, script, (0, 9))
        await wait_for(pilot, lambda: notified(app, "is not valid TOML"), what="the notice naming the file")
        recorder = Recorder(app)
        await play_and_hear(pilot, link, "Habló Sheinbaum ayer.")  # spoken without it, no error modal
        save_lexicon(path, Lexicon((Entry("Sheinbaum", "Cheinbaum", "es"),)))  # mended by hand
        await play_and_hear(pilot, link, "Habló Cheinbaum ayer.")
        path.write_text("[[entry]]\nword = 3\n", encoding="utf-8")  # broken again while the studio runs
        await play_and_hear(pilot, link, "Habló Cheinbaum ayer.", rendered=False)  # the last good one kept
        await play_and_hear(pilot, link, "Habló Cheinbaum ayer.", rendered=False)
    notices = [e.message for _, e in recorder.events if isinstance(e, Notice)]
    assert len(notices) == 1 and "'word' must be text" in notices[0]  # each fault said once, when it appears
