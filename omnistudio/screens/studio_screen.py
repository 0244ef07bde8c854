"""The studio screen's base: the controller, the editor, and the paragraph under the cursor with the
jobs bound to it (an audition of the highlighted anchor, assigning it, the morph slider and the duos).

:class:`omnistudio.screens.main.MainScreen` lays the studio out and adds the other actions; the jobs that
read and rewrite the paragraph under the cursor live here, over :mod:`omnistudio.studio.paragraph`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from textual.screen import Screen
from textual.widgets import Label, OptionList
from textual.widgets.text_area import Document

from omnistudio.errors import UserError
from omnistudio.screens.error import ErrorModal
from omnistudio.screens.export import AskDialog
from omnistudio.screens.morph import MorphBinding
from omnistudio.script import Sentence
from omnistudio.studio.paragraph import Paragraph, TextEdit, assign, paragraph_at, sentence_at, sentences_of
from omnistudio.widgets.anchor_picker import AnchorPicker
from omnistudio.widgets.morph_slider import MorphSlider
from omnistudio.widgets.script_editor import ScriptEditor

if TYPE_CHECKING:
    from omnistudio.studio.autosave import Autosave
    from omnistudio.studio.controller import Studio

T = TypeVar("T")


class StudioHost(Protocol):
    """What the studio's screens read and set of their app (omnistudio.app.StudioApp)."""

    studio: Studio
    autosave: Autosave
    sentences: dict[int, tuple[int, int]]  # the sentences last played: index -> span in the editor

    def next_duo(self) -> tuple[str, str, float, tuple[str, ...]] | None: ...


class StudioScreen(Screen[None]):
    """The controller and the editor, and the jobs bound to the paragraph under the cursor."""

    @property
    def studio(self) -> Studio:
        return self.host.studio

    @property
    def host(self) -> StudioHost:
        """The app, as the studio's screens see it."""
        return cast("StudioHost", self.app)

    @property
    def editor(self) -> ScriptEditor:
        return self.query_one(ScriptEditor)

    def _try(self, fn: Callable[..., T], *args: object) -> T | None:
        """Run a controller call; a UserError becomes the error modal."""
        try:
            return fn(*args)
        except UserError as exc:
            self.app.push_screen(ErrorModal("Cannot do that", str(exc)))
            return None

    def update_morph_label(self) -> None:
        """The slider and its label show the paragraph under the cursor (:class:`MorphBinding`)."""
        self.morph.sync()

    def slider_step(self) -> float:
        return self.query_one(MorphSlider).step

    def show_morph(self, anchor: str, partner: str, value: float | None) -> None:
        self.query_one("#morph-label", Label).update(f"Morph  {anchor} ◀▶ {partner}")
        if value is not None:
            self.query_one(MorphSlider).show(value)

    @cached_property
    def morph(self) -> MorphBinding:
        """The morph slider bound to the paragraph under the cursor."""
        return MorphBinding(self)

    def highlighted_anchor(self) -> str | None:
        """The anchor highlighted in the picker (what Ctrl+T hears and Ctrl+N assigns), else the selected one."""
        option = self.query_one("#anchor-list", OptionList).highlighted_option
        return option.id if option is not None and option.id else self.studio.anchor

    def _sentences(self) -> list[Sentence]:
        """The editor's script parsed; none for an empty one, or one that does not parse yet (a half-typed
        line, e.g. an open tag, while the cursor moves)."""
        text = self.editor.text
        try:
            return self.studio.parse(text) if text.strip() else []
        except UserError:
            return []

    def paragraph(self) -> tuple[Paragraph, list[Sentence]]:
        """The paragraph under the cursor and its sentences (none: an empty line, or a script that does not
        parse yet); on a line with nothing to speak, the paragraph of the next sentence."""
        text, offset = self.editor.text, self.editor.cursor_offset
        sentences = self._sentences()
        presets = self.studio.takes.presets
        here = paragraph_at(text, offset, presets)
        mine = sentences_of(sentences, here)
        after = sentence_at(sentences, offset) if not mine else None
        if after is not None:
            here = paragraph_at(text, after.start, presets)
            mine = sentences_of(sentences, here)
        return here, mine

    def here(self) -> Paragraph:
        """The paragraph under the cursor without parsing the script (the slider shows it on every cursor
        move); a line with nothing after its tag is :meth:`paragraph`'s (the next sentence's)."""
        text = self.editor.text
        here = paragraph_at(text, self.editor.cursor_offset, self.studio.takes.presets)
        return here if text[here.tag_end:here.end].strip() else self.paragraph()[0]

    def action_audition(self) -> None:
        anchor = self.highlighted_anchor()
        if not anchor:
            self.notify("pick an anchor first", severity="warning")
            return
        _here, sentences = self.paragraph()
        self._try(self.studio.audition, anchor, self.query_one(AnchorPicker).lang, sentences)

    def action_flip(self) -> None:
        if not self.studio.flip():
            self.notify("audition two anchors (ctrl+t) or two ratios first", severity="warning", timeout=3)

    def action_assign(self) -> None:
        anchor = self.highlighted_anchor()
        here, sentences = self.paragraph()
        if not anchor or not sentences:
            self.notify("put the cursor on a paragraph and highlight an anchor", severity="warning", timeout=3)
            return
        lang = sentences[0].lang
        self.apply_edit(assign(here, anchor, None if lang == self.studio.settings.language else lang))
        self.notify(f"line {here.line}: {anchor}", timeout=2)

    def apply_edit(self, edit: TextEdit) -> None:
        """One edit of the script, one undo step (Ctrl+Z in the editor, or anywhere on this screen)."""
        document = self.editor.document
        assert isinstance(document, Document)
        self.editor.history.checkpoint()
        self.editor.replace(edit.insert, document.get_location_from_index(edit.start),
                            document.get_location_from_index(edit.end))
        self.editor.history.checkpoint()

    def action_undo(self) -> None:
        self.editor.undo()

    def action_set_partner(self) -> None:
        option = self.query_one("#anchor-list", OptionList).highlighted_option
        if option is not None and option.id and option.id != self.studio.anchor:
            self.studio.set_blend(option.id, self.query_one(MorphSlider).value)
            self.update_morph_label()

    def action_next_duo(self) -> None:
        duo = self.host.next_duo()
        if duo is None:
            self.notify("the roster has no duos", severity="warning")
            return
        a, b, ratio, langs = duo
        picker = self.query_one(AnchorPicker)
        picker.lang = langs[0] if picker.lang not in langs else picker.lang
        picker.selected = a
        self.use_duo(a, b, ratio)

    def use_duo(self, a: str, b: str, alpha: float) -> None:
        """Select ``a`` blended with ``b`` at ``alpha`` (a duo of the roster, a project's preset)."""
        self.studio.select(a, self.query_one(AnchorPicker).lang)
        self.query_one(MorphSlider).show(alpha)
        self.studio.set_blend(b, alpha)
        self.update_morph_label()

    def action_save_preset(self) -> None:
        """Keep the blend under the cursor (its paragraph's tag, else the slider's) as a named duo preset."""
        here, _sentences = self.paragraph()
        blend = here.blend or self.studio.blend
        if blend is None:
            self.notify("no blend to keep: put the cursor on an [a+b@0.7] paragraph, or choose a partner (ctrl+b) "
                        "and move the slider", severity="warning", timeout=4)
            return
        picker = self.query_one(AnchorPicker)

        def done(name: str | None) -> None:
            kept = self._try(self.studio.takes.save_preset, name, blend, [r.id for r in picker.rows]) if name else None
            if kept is not None:
                picker.set_presets(self.studio.takes.presets)
                self.notify(f"duo preset {kept} = {blend.key()}: [{kept}] in the script reads with it", timeout=4)

        self.app.push_screen(AskDialog("Keep duo preset", f"{blend.key()} as a name the script's tags can use",
                                       "", "Keep"), done)

    def sentence_under_cursor(self) -> Sentence | None:
        return sentence_at(self._sentences(), self.editor.cursor_offset)
