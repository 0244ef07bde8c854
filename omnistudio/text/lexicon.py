"""The pronunciation lexicon's values: entries a producer adds so a name sounds the same in every take.

An :class:`Entry` replaces a whole word (or a phrase of words) of one language, or of both, by a
respelling, or, in English, by OmniVoice's inline CMU phone notation (``[SH AY1 N B AW0 M]``, passed
to the model untouched). The front-end (:func:`omnistudio.text.normalize`) applies the entries before
its rules; where they are stored (the user's config folder, a project's ``lexicon.toml``, W3C PLS)
is :mod:`omnistudio.text.lexicon_files`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from omnistudio.checks import (MAX_LEXICON_ENTRIES, MAX_LEXICON_SAY_CHARS, MAX_LEXICON_WORD_CHARS, check_language,
                               check_unicode)
from omnistudio.errors import UserError

PHONES_RE = re.compile(r"^\[[A-Z]{1,3}[0-2]?(?: [A-Z]{1,3}[0-2]?)*\]$")  # "[B EY1 S]": ARPAbet, stress 0-2


@dataclass(frozen=True)
class Entry:
    """``word`` (as written; a phrase is several words) is said as ``say`` in ``lang`` (None: both)."""

    word: str
    say: str
    lang: str | None = None
    case_sensitive: bool = False
    phones: bool = False  # ``say`` is CMU phone notation in brackets (English only)

    def __post_init__(self) -> None:
        word = " ".join(check_unicode(self.word, "a lexicon entry's word").split())
        say = " ".join(check_unicode(self.say, f"lexicon entry '{word[:40]}': what it is said as").split())
        if not word or not re.search(r"\w", word):
            raise UserError("a lexicon entry needs a word with letters or digits")
        if len(word) > MAX_LEXICON_WORD_CHARS:
            raise UserError(f"lexicon entry '{word[:40]}...': the word is {len(word)} characters; the limit is "
                            f"{MAX_LEXICON_WORD_CHARS}")
        if not say:
            raise UserError(f"lexicon entry '{word}': say what it is read as")
        if len(say) > MAX_LEXICON_SAY_CHARS:
            raise UserError(f"lexicon entry '{word}': what it is said as is {len(say)} characters; the limit is "
                            f"{MAX_LEXICON_SAY_CHARS} (an entry respells a name, it does not hold a text)")
        lang = check_language(self.lang) if self.lang is not None else None
        if self.phones:
            if lang != "en":
                raise UserError(f"lexicon entry '{word}': phone notation is English only (give lang en)")
            if not PHONES_RE.match(say):
                raise UserError(f"lexicon entry '{word}': phones must look like [SH AY1 N B AW0 M] "
                                "(CMU ARPAbet in brackets)")
        object.__setattr__(self, "word", word)
        object.__setattr__(self, "say", say)
        object.__setattr__(self, "lang", lang)

    @property
    def key(self) -> tuple[str, str | None, bool]:
        """What makes two entries the same entry: the word (folded unless case-sensitive), language, case."""
        return (self.word if self.case_sensitive else self.word.casefold(), self.lang, self.case_sensitive)


@dataclass(frozen=True)
class Lexicon:
    """Entries in the order they were added; one entry per :attr:`Entry.key` (a later one replaces it)."""

    entries: tuple[Entry, ...] = ()

    def __post_init__(self) -> None:
        kept: dict[tuple[str, str | None, bool], Entry] = {}
        for entry in self.entries:
            kept.pop(entry.key, None)
            kept[entry.key] = entry
        if len(kept) > MAX_LEXICON_ENTRIES:
            raise UserError(f"a lexicon of {len(kept)} entries is over the limit of {MAX_LEXICON_ENTRIES}")
        object.__setattr__(self, "entries", tuple(kept.values()))

    def __len__(self) -> int:
        return len(self.entries)

    def for_lang(self, lang: str) -> tuple[Entry, ...]:
        """The entries that apply to ``lang``: the language's own first, then those for both."""
        return (tuple(e for e in self.entries if e.lang == lang)
                + tuple(e for e in self.entries if e.lang is None))

    def with_entry(self, entry: Entry) -> Lexicon:
        return Lexicon((*self.entries, entry))

    def without(self, word: str, lang: str | None = None) -> tuple[Lexicon, int]:
        """The lexicon without the entries for ``word`` (any case; only ``lang``'s when given), and how many went."""
        folded = " ".join(word.split()).casefold()
        gone = [e for e in self.entries if e.word.casefold() == folded and (lang is None or e.lang == lang)]
        return Lexicon(tuple(e for e in self.entries if e not in gone)), len(gone)

    def merged(self, over: Lexicon) -> Lexicon:
        """This lexicon with ``over``'s entries added; ``over`` wins for the same entry (a project over
        the global lexicon)."""
        return Lexicon((*self.entries, *over.entries))
