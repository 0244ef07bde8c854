"""The script editor: a TextArea with speaker tags highlighted, the sentence being heard marked and,
inside it, the word being heard."""

from __future__ import annotations

from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual import on, work
from textual.message import Message
from textual.strip import Strip
from textual.timer import Timer
from textual.geometry import Region, Spacing
from textual.widgets import TextArea
from textual.widgets.text_area import Document

from omnistudio.script import NONVERBAL_TAGS, TAG_RE
from omnistudio.studio.languages import paragraph_languages

SPEAKER_STYLE = Style(color="magenta", bold=True)
PLAYING_STYLE = Style(bgcolor="dark_green", bold=True)
WORD_STYLE = Style(color="black", bgcolor="green3", bold=True, underline=True)  # inside PLAYING_STYLE
MARK_WIDTH = 6  # the take marks before the line number: "2 1✗"
MARK_STYLE = Style(color="cyan")
FAILED_STYLE = Style(color="red", bold=True)
LANG_WIDTH = 4  # each paragraph's language, then "!" where its text reads as the other one: "en! "
LANG_STYLE = Style(color="blue")
MISMATCH_STYLE = Style(color="black", bgcolor="yellow", bold=True)
LANGUAGES_AFTER_S = 0.3  # the paragraphs' languages are identified this long after the last edit


def _byte_col(line: str, column: int) -> int:
    return len(line[:column].encode("utf-8"))


class ScriptEditor(TextArea):
    """Edits the script; ``playing`` is the (start, end) character span of the sentence being heard,
    ``playing_word`` that of the word being heard in it (None: none)."""

    DEFAULT_CSS = """
    ScriptEditor { height: 1fr; }
    """

    _playing: tuple[int, int] | None = None  # the base class builds highlights during __init__
    _word: tuple[int, int] | None = None
    _marks: dict[int, str] = {}  # script row -> take marks (a project is open)
    _paragraph_langs: dict[int, tuple[str, bool]] | None = None  # row -> (language, reads as the other); None: hidden

    class LanguagesFound(Message):
        """Each paragraph's language (and whether it reads as the other) for ``text``, from the worker."""

        def __init__(self, text: str, rows: dict[int, tuple[str, bool]]) -> None:
            super().__init__()
            self.text, self.rows = text, rows

    def __init__(self, text: str = "", **kwargs: Any) -> None:
        super().__init__(text, soft_wrap=True, show_line_numbers=True, tab_behavior="focus", **kwargs)
        self._languages_timer: Timer | None = None

    # -------------------------------------------------------------- the paragraphs' languages
    def identify_languages(self, default_lang: str) -> None:
        """Show each paragraph's language in the gutter ``LANGUAGES_AFTER_S`` after the last call (an edit,
        a change of the script's default language), identified off the UI thread."""
        if self._languages_timer is not None:
            self._languages_timer.stop()
        self._languages_timer = self.set_timer(LANGUAGES_AFTER_S, lambda: self._identify(self.text, default_lang))

    @work(thread=True, exclusive=True, exit_on_error=False, group="languages")
    def _identify(self, text: str, lang: str) -> None:
        """Off the UI thread: the first call loads the language models (about half a second)."""
        self.post_message(self.LanguagesFound(text, paragraph_languages(text, lang)))

    @on(LanguagesFound)
    def _languages_found(self, message: LanguagesFound) -> None:
        message.stop()
        if message.text == self.text:  # else a newer edit's rows are on their way
            self.set_languages(message.rows)

    # -------------------------------------------------------------- styling
    def _set_theme(self, theme: str) -> None:
        super()._set_theme(theme)
        # the theme object is a shallow copy of a shared one: give it its own styles dict
        self._theme.syntax_styles = {**self._theme.syntax_styles, "speaker": SPEAKER_STYLE, "playing": PLAYING_STYLE,
                                     "playing_word": WORD_STYLE}

    def _build_highlight_map(self) -> None:
        super()._build_highlight_map()
        lines = self.document.lines
        for row, line in enumerate(lines):
            match = TAG_RE.match(line)
            if match and match.group(1).strip().lower() not in NONVERBAL_TAGS:
                self._highlights[row].append((_byte_col(line, match.start()), _byte_col(line, match.end()), "speaker"))
        if self._playing is not None:
            self._mark_span(*self._playing)
            if self._word is not None:  # after the sentence's mark: drawn over it
                self._mark_span(*self._word, "playing_word")

    def _mark_span(self, start: int, end: int, name: str = "playing") -> None:
        lines = self.document.lines
        offset = 0
        for row, line in enumerate(lines):
            line_end = offset + len(line)
            if line_end >= start and offset < end:
                a, b = max(start, offset) - offset, min(end, line_end) - offset
                if b > a:
                    self._highlights[row].append((_byte_col(line, a), _byte_col(line, b), name))
            offset = line_end + 1  # the newline
            if offset > end:
                break

    # -------------------------------------------------------------- gutter
    @property
    def _extra_width(self) -> int:
        """The columns before the line numbers: the languages (once shown, kept: no jump on each edit),
        then the take marks (a project with takes)."""
        if not self.show_line_numbers:
            return 0
        return (LANG_WIDTH if self._paragraph_langs is not None else 0) + (MARK_WIDTH if self._marks else 0)

    @property
    def gutter_width(self) -> int:
        return super().gutter_width + self._extra_width

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        extra = self._extra_width
        if not extra:
            return strip
        try:
            row, section = self.wrapped_document._offset_to_line_info[y + self.scroll_offset.y]
        except IndexError:
            return strip
        parts = []
        if self._paragraph_langs is not None:
            lang, wrong = self._paragraph_langs.get(row, ("", False)) if section == 0 else ("", False)
            flag = Segment("!", MISMATCH_STYLE) if wrong else Segment(" ")
            parts.append(Strip([Segment(f"{lang:<2}", LANG_STYLE), flag, Segment(" " * (LANG_WIDTH - 3))], LANG_WIDTH))
        if self._marks:
            mark = self._marks.get(row, "") if section == 0 else ""
            style = FAILED_STYLE if "✗" in mark else MARK_STYLE
            parts.append(Strip([Segment(f"{mark[:MARK_WIDTH]:<{MARK_WIDTH}}", style)], MARK_WIDTH))
        return Strip.join([*parts, strip.crop(extra)])

    def _show_in_gutter(self, marks: dict[int, str], languages: dict[int, tuple[str, bool]] | None) -> None:
        """Show these take marks and languages; where that changes the gutter's width, wrap the text again
        to the new width (TextArea re-wraps by itself only on a resize or a change of its own settings)."""
        before = self.gutter_width
        self._marks, self._paragraph_langs = marks, languages
        if self.gutter_width != before:
            self._rewrap_and_refresh_virtual_size()
            self.scroll_cursor_visible()
        self.refresh()

    def set_take_marks(self, marks: dict[int, str]) -> None:
        """Per script row (0-based), what the gutter shows: each sentence's take count, ✗ when its
        chosen take failed the speech-recognition check."""
        if marks != self._marks:
            self._show_in_gutter(dict(marks), self._paragraph_langs)

    def set_languages(self, rows: dict[int, tuple[str, bool]]) -> None:
        """Per script row (0-based) that starts a paragraph: the language it is read in and whether its
        text reads as the other one (marked ``!``). From the first call on, the gutter keeps a column for
        them ({}: nothing to show now, e.g. a half-typed script)."""
        if rows != self._paragraph_langs:
            self._show_in_gutter(self._marks, dict(rows))

    @property
    def languages(self) -> dict[int, tuple[str, bool]]:
        return dict(self._paragraph_langs or {})

    @property
    def take_marks(self) -> dict[int, str]:
        return dict(self._marks)

    # -------------------------------------------------------------- public
    @property
    def playing(self) -> tuple[int, int] | None:
        return self._playing

    @property
    def playing_word(self) -> tuple[int, int] | None:
        return self._word if self._playing is not None else None

    def set_playing(self, span: tuple[int, int] | None, word: tuple[int, int] | None = None) -> None:
        """Mark the sentence at character span ``span`` as the one being heard and, inside it, the word at
        ``word`` (None clears; a word outside the sentence is not marked)."""
        if word is not None and (span is None or not span[0] <= word[0] < word[1] <= span[1]):
            word = None
        if span == self._playing and word == self._word:
            return
        follow = span is not None and span != self._playing
        self._playing, self._word = span, word
        self._build_highlight_map()
        self.refresh()
        if follow and span is not None:
            self.follow(span[0])

    def follow(self, offset: int) -> None:
        """Scroll so the line at character ``offset`` is in view (the spoken sentence: the cursor stays)."""
        document = self.document
        assert isinstance(document, Document)  # a TextArea's (DocumentBase names no index lookup)
        x, y = self.wrapped_document.location_to_offset(document.get_location_from_index(min(offset, len(self.text))))
        self.scroll_to_region(Region(x, y, width=1, height=1), spacing=Spacing(right=self.gutter_width),
                              animate=False, force=True)

    @property
    def cursor_offset(self) -> int:
        """The cursor as a character offset in ``text``."""
        row, col = self.cursor_location
        lines = self.document.lines
        return sum(len(line) + 1 for line in lines[:row]) + col
