"""F1 opens a sheet of this studio's keys, grouped, read from its bindings; at 80x24 the footer shows the keys
that matter where the focus is (issue 46: F6, F9, F10 and Ctrl+T were hidden at 80 columns, and Textual's
generic key list starts with cursor keys)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from support.studio import SCRIPT, make_app, screen_text, settled_layout, until_ready, wait_for

pytestmark = pytest.mark.timeout(300)


def test_f1_lists_the_studios_keys_grouped(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    asyncio.run(_sheet(tiny_engine, voice_roster_file, tmp_path))


async def _sheet(tiny_engine, voice_roster_file: Path, tmp_path: Path) -> None:  # noqa: ANN001
    from omnistudio.screens.keys import GROUPS, OTHER, KeysScreen
    from omnistudio.screens.main import BINDINGS
    from support.studio import layout_faults

    app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script")
    async with app.run_test(size=(80, 24)) as pilot:
        await until_ready(pilot)
        for close in ("escape", "f1"):
            await pilot.press("f1")
            await wait_for(pilot, lambda: isinstance(app.screen, KeysScreen), what="the keys sheet")
            await pilot.pause()
            sheet = app.screen
            lines = screen_text(sheet)
            text = "\n".join(lines)
            assert "cursor" not in text.split("Playback")[0]  # the studio's sheet, not Textual's generic list
            for name, _ in GROUPS:
                assert name in text
            assert OTHER not in text, "a studio key that no group names"
            for binding in BINDINGS:  # every key with its description, on one line
                key = app.get_key_display(binding)
                assert any(key in line and binding.description in line for line in lines), (key, binding.description)
            assert any("^q" in line and "Quit" in line for line in lines)
            assert layout_faults(sheet) == []  # it fits 80x24, nothing cut off
            await pilot.press(close)
            await wait_for(pilot, lambda: not isinstance(app.screen, KeysScreen), what=f"{close} closes the sheet")


def footer_keys(screen) -> list[str]:  # noqa: ANN001
    """The footer's keys drawn at this size ("f5 Play"), each checked to lie whole inside the screen and not
    under another key."""
    keys = [k for k in screen.query("FooterKey") if k.region.area]
    for key in keys:
        assert screen.region.contains_region(key.region), f"{key.key_display} cut off at {key.region}"
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            assert not a.region.overlaps(b.region), f"{a.key_display} overlaps {b.key_display}"
    return [f"{k.key_display} {k.description}".strip() for k in sorted(keys, key=lambda k: k.region.x)]


@pytest.mark.parametrize("project", [False, True], ids=["no-project", "project"])
def test_the_80x24_footer_shows_the_keys_of_the_focus(tiny_engine, voice_roster_file: Path, tmp_path: Path,  # noqa: ANN001
                                                       project: bool) -> None:
    asyncio.run(_footer(tiny_engine, voice_roster_file, tmp_path, project))


async def _footer(tiny_engine, voice_roster_file: Path, tmp_path: Path, project: bool) -> None:  # noqa: ANN001
    from omnistudio.widgets.footer import CONTEXT_KEYS, HINTS, action_name
    from omnistudio.widgets.script_editor import ScriptEditor

    app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script")
    if project:
        app.studio.takes.open(tmp_path / "news.omniproj", SCRIPT)
    async with app.run_test(size=(80, 24)) as pilot:
        await until_ready(pilot)
        screen = app.main_screen
        await settled_layout(pilot, 80, 24)

        footer = screen.query_one("StudioFooter")

        async def focus(context: str) -> list[str]:
            screen.query_one(f"#{context}").focus()
            await wait_for(pilot, lambda: footer.context() == context, what=f"the focus on #{context}")
            await pilot.pause()
            await pilot.pause()
            await wait_for(pilot, lambda: {k.key for k in footer.query("FooterKey")} >= {  # recomposed
                b.key for _, b, _, _ in screen.active_bindings.values() if action_name(b.action) in footer.wanted(context)},
                what=f"the footer of #{context}")
            return footer_keys(screen)

        screen.query_one(ScriptEditor).load_text(SCRIPT)
        editor = await focus("editor")
        for key in ("f5 Play", "f6 From cursor", "f8 Stop", "^t Audition", "f1 Keys", "f12 Meter"):
            assert key in editor, editor
        assert ("f9 Retake" in editor and "f10 A/B" in editor) is project, editor
        anchors = await focus("anchor-list")
        assert anchors[0] == "⏎ Pick", anchors  # its own key first
        for key in ("^t Audition", "f1 Keys"):
            assert key in anchors, anchors
        for context in CONTEXT_KEYS:  # each context's keys, all of them drawn whole at 80 columns
            shown = await focus(context)
            for _, binding, _, _ in screen.active_bindings.values():
                if action_name(binding.action) in footer.wanted(context):
                    assert f"{app.get_key_display(binding)} {binding.description}" in shown, (context, shown)
            for _, display, description in HINTS.get(context, ()):
                assert f"{display} {description}" in shown, (context, shown)


@pytest.mark.parametrize("width", [120, 140, 159, 160, 200])
def test_no_footer_key_is_cut_off_at_any_width(tiny_engine, voice_roster_file: Path, tmp_path: Path,  # noqa: ANN001
                                                width: int) -> None:
    """With a project's keys too (F9, F10) every key shown lies whole on the screen, F1 among them: where they
    would not all fit, the footer keeps the focus's keys."""
    asyncio.run(_widths(tiny_engine, voice_roster_file, tmp_path, width))


async def _widths(tiny_engine, voice_roster_file: Path, tmp_path: Path, width: int) -> None:  # noqa: ANN001
    app = make_app(tiny_engine, voice_roster_file, tmp_path / "autosave.script")
    app.studio.takes.open(tmp_path / "news.omniproj", SCRIPT)
    async with app.run_test(size=(width, 40)) as pilot:
        await until_ready(pilot)
        await settled_layout(pilot, width, 40)
        screen = app.main_screen
        screen.query_one("#editor").focus()
        await wait_for(pilot, lambda: any(k.key == "f9" and k.region.area for k in screen.query("FooterKey")),
                       what="the footer with the project's keys")
        await pilot.pause()
        shown = footer_keys(screen)
        for key in ("f5 Play", "f6 From cursor", "f1 Keys", "f9 Retake", "f10 A/B"):
            assert key in shown, shown
