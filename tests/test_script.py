"""Script model: speaker tags, languages, and English/Spanish sentence splitting."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from omnistudio.errors import UserError
from omnistudio.script import MAX_SENTENCE_CHARS, parse_script, parse_tag, read_script, split_sentences

# (language, paragraph, expected sentences): abbreviations, initials, numbers, quotes, ellipses. A naive split
# after every . ! ? gets 25 of the 44 wrong; pysbd alone gets 7 wrong (all Spanish: the repair pass).
CASES = [
    ("en", "Mr. Smith met Dr. Jones on Friday. They talked.", ["Mr. Smith met Dr. Jones on Friday.", "They talked."]),
    ("en", "The meeting is at 3 p.m. on Friday. Bring notes.", ["The meeting is at 3 p.m. on Friday.", "Bring notes."]),
    ("en", "I left at 3 p.m. Then it rained.", ["I left at 3 p.m.", "Then it rained."]),
    ("en", "The price rose 3.5 percent. Analysts were surprised.", ["The price rose 3.5 percent.", "Analysts were surprised."]),
    ("en", "He said, \"Stop.\" Then he left.", ["He said, \"Stop.\"", "Then he left."]),
    ("en", "1. First item. 2. Second item.", ["1. First item.", "2. Second item."]),
    ("en", "Is it true? Yes! It is.", ["Is it true?", "Yes!", "It is."]),
    ("en", "The U.S. economy grew. The E.U. did not.", ["The U.S. economy grew.", "The E.U. did not."]),
    ("en", "Wait... what happened? Nobody knows.", ["Wait... what happened?", "Nobody knows."]),
    ("en", "She works at Acme Inc. in Boston. It is cold.", ["She works at Acme Inc. in Boston.", "It is cold."]),
    ("en", "See e.g. the report. It is long.", ["See e.g. the report.", "It is long."]),
    ("en", "The vote was 52 vs. 48. It passed.", ["The vote was 52 vs. 48.", "It passed."]),
    ("en", "George W. Bush spoke. Nobody listened.", ["George W. Bush spoke.", "Nobody listened."]),
    ("en", "Prof. Lee arrived. The lecture began.", ["Prof. Lee arrived.", "The lecture began."]),
    ("en", "It costs $4.99 today. Tomorrow it won't.", ["It costs $4.99 today.", "Tomorrow it won't."]),
    ("en", "Visit example.com for details. Thanks.", ["Visit example.com for details.", "Thanks."]),
    ("en", "The score was 2-1. Fans cheered!", ["The score was 2-1.", "Fans cheered!"]),
    ("en", "\"Where are you?\" she asked. Nobody answered.", ["\"Where are you?\" she asked.", "Nobody answered."]),
    ("en", "Version 2.0.1 ships today. Update now.", ["Version 2.0.1 ships today.", "Update now."]),
    ("en", "Good evening", ["Good evening"]),
    ("en", "It is 9:30. The news begins.", ["It is 9:30.", "The news begins."]),
    ("en", "Gen. Patton led the army. Sen. Brown agreed.", ["Gen. Patton led the army.", "Sen. Brown agreed."]),
    ("es", "El Sr. García llegó a las 3 p. m. del lunes. Después se fue.",
     ["El Sr. García llegó a las 3 p. m. del lunes.", "Después se fue."]),
    ("es", "La Dra. Pérez vive en EE. UU. desde 2010. Trabaja mucho.",
     ["La Dra. Pérez vive en EE. UU. desde 2010.", "Trabaja mucho."]),
    ("es", "Se mudó a EE. UU. Allí trabaja.", ["Se mudó a EE. UU.", "Allí trabaja."]),
    ("es", "La inflación subió un 3,5 %. Los analistas se sorprendieron.",
     ["La inflación subió un 3,5 %.", "Los analistas se sorprendieron."]),
    ("es", "El PIB creció un 2.5 por ciento. Es una buena noticia.",
     ["El PIB creció un 2.5 por ciento.", "Es una buena noticia."]),
    ("es", "¿Vienes mañana? ¡Claro que sí! Nos vemos.", ["¿Vienes mañana?", "¡Claro que sí!", "Nos vemos."]),
    ("es", "Vive en el n.º 5 de la calle Mayor. Es una casa azul.",
     ["Vive en el n.º 5 de la calle Mayor.", "Es una casa azul."]),
    ("es", "Dijo: «No lo sé.» Luego se marchó.", ["Dijo: «No lo sé.»", "Luego se marchó."]),
    ("es", "El Excmo. Sr. Presidente habló. Nadie aplaudió.", ["El Excmo. Sr. Presidente habló.", "Nadie aplaudió."]),
    ("es", "Llegó a las 10 a. m. y se fue a las 2 p. m. Fue rápido.",
     ["Llegó a las 10 a. m. y se fue a las 2 p. m.", "Fue rápido."]),
    ("es", "La Sra. Gómez y la Srta. Ruiz hablaron. Todo fue bien.",
     ["La Sra. Gómez y la Srta. Ruiz hablaron.", "Todo fue bien."]),
    ("es", "Según la pág. 24 del informe, hubo pérdidas. Es grave.",
     ["Según la pág. 24 del informe, hubo pérdidas.", "Es grave."]),
    ("es", "1. Primer punto. 2. Segundo punto.", ["1. Primer punto.", "2. Segundo punto."]),
    ("es", "Compró manzanas, peras, etc. Luego volvió.", ["Compró manzanas, peras, etc.", "Luego volvió."]),
    ("es", "Ud. debe firmar aquí. Gracias.", ["Ud. debe firmar aquí.", "Gracias."]),
    ("es", "Vive en la Avda. de la Constitución. Es céntrica.",
     ["Vive en la Avda. de la Constitución.", "Es céntrica."]),
    ("es", "El Dr. Ramírez y la Dra. Sánchez operaron. ¿Salió bien?",
     ["El Dr. Ramírez y la Dra. Sánchez operaron.", "¿Salió bien?"]),
    ("es", "«¿Quién es?», preguntó ella. Nadie respondió.", ["«¿Quién es?», preguntó ella.", "Nadie respondió."]),
    ("es", "Eran las 8 de la mañana... Todo estaba en calma.",
     ["Eran las 8 de la mañana...", "Todo estaba en calma."]),
    ("es", "El art. 14 de la Constitución lo dice. Es claro.", ["El art. 14 de la Constitución lo dice.", "Es claro."]),
    ("es", "Cuesta 3,50 €. ¡Qué barato!", ["Cuesta 3,50 €.", "¡Qué barato!"]),
    ("es", "Buenas noches", ["Buenas noches"]),
]


@pytest.mark.parametrize(("lang", "text", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_split_tricky_sentences(lang: str, text: str, expected: list[str]) -> None:
    assert split_sentences(text, lang) == expected


def test_cases_cover_both_languages_and_need_their_rules() -> None:
    """The table holds 20+ cases per language, and the splitter's language argument matters for both:
    each language has cases that the other language's rules split wrongly (its abbreviations), and
    Spanish has cases that pysbd alone splits wrongly (the repair pass: "p. m. del", "EE. UU.", "«...»")."""
    from omnistudio.script import _pysbd_spans

    by_lang = {lang: [(text, want) for code, text, want in CASES if code == lang] for lang in ("en", "es")}
    assert {c[0] for c in CASES} == {"en", "es"} and all(len(cases) >= 20 for cases in by_lang.values())
    other = {"en": "es", "es": "en"}
    for lang, cases in by_lang.items():
        wrong = [text for text, want in cases if split_sentences(text, other[lang]) != want]
        assert wrong, f"no {lang} case needs {lang} rules: the language argument is ignored"
    repaired = [text for text, want in by_lang["es"]
                if [text[s:e].strip() for s, e in _pysbd_spans(text, "es")] != want]
    assert len(repaired) >= 3, repaired


def test_long_sentence_is_cut_at_a_comma() -> None:
    clause = "the committee reviewed the proposal in detail"
    text = ", ".join([clause] * 30) + "."
    parts = split_sentences(text, "en")
    assert len(parts) > 1
    assert all(len(p) <= MAX_SENTENCE_CHARS for p in parts)
    assert " ".join(parts).replace(" ", "") == text.replace(" ", "")


def test_tags_set_speaker_and_language_until_the_next_tag() -> None:
    script = parse_script(
        "Good evening. Welcome.\n\n[ruby] Here is the news.\nStill Ruby.\n"
        "[valentina:es] Buenas noches, Sr. García.\n[:en] Back to the default.\n[laughter] That was fun.",
        "en", speakers={"ruby", "valentina"})
    got = [(s.speaker, s.lang, s.text, s.line) for s in script.sentences]
    assert got == [
        (None, "en", "Good evening.", 1), (None, "en", "Welcome.", 1),
        ("ruby", "en", "Here is the news.", 3), ("ruby", "en", "Still Ruby.", 4),
        ("valentina", "es", "Buenas noches, Sr. García.", 5),
        (None, "en", "Back to the default.", 6), (None, "en", "[laughter] That was fun.", 7),
    ]
    assert [s.id for s in script.sentences] == list(range(7))
    assert script.voices == [(None, "en"), ("ruby", "en"), ("valentina", "es")]


def test_a_tag_without_a_language_means_the_scripts_default_not_the_previous_tags() -> None:
    script = parse_script(
        "[valentina:es] Buenas noches.\n"
        "[ruby] The Dow rose 1.2% to 38,450 points, and oil fell to $78.40 a barrel.\n"
        "Untagged, still Ruby in English.\n[valentina:es] Hola.\nSigue en español.\n[storm] Back to English.",
        "en", speakers={"ruby", "valentina", "storm"})
    assert [(s.speaker, s.lang, s.line) for s in script.sentences] == [
        ("valentina", "es", 1), ("ruby", "en", 2), ("ruby", "en", 3),
        ("valentina", "es", 4), ("valentina", "es", 5), ("storm", "en", 6)]
    # with Spanish the default, a bare tag after an English one is Spanish
    spanish = parse_script("[ruby:en] Good evening.\n[valentina] Buenas noches.", "es")
    assert [s.lang for s in spanish.sentences] == ["en", "es"]


def test_tag_parser() -> None:
    assert parse_tag("Ruby", 1).speaker == "ruby"
    assert parse_tag("valentina:ES", 1).lang == "es"
    assert parse_tag(":es", 1).speaker is None
    with pytest.raises(UserError, match="line 3: unknown language 'fr'"):
        parse_tag("ruby:fr", 3)
    with pytest.raises(UserError, match="line 2: bad speaker tag"):
        parse_tag("ruby storm", 2)
    with pytest.raises(UserError, match="empty speaker tag"):
        parse_tag("  ", 1)


@pytest.mark.parametrize(("text", "message"), [
    ("", "the script is empty"),
    ("  \n\t\n", "the script is empty"),
    ("[ruby]\n[valentina:es]\n", "only speaker tags"),
    ("Hello.\n[nobody] Hi.", "line 2: unknown speaker 'nobody'"),
    ("[ruby:xx] Hi.", "line 1: unknown language 'xx'"),
])
def test_bad_scripts(text: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        parse_script(text, "en", speakers={"ruby", "valentina"})


def test_unknown_default_language() -> None:
    with pytest.raises(UserError, match="unknown language 'de'"):
        parse_script("Hallo.", "de")


def test_read_script_errors(tmp_path: Path) -> None:
    good = tmp_path / "good.txt"
    good.write_bytes("\ufeffHola, ¿qué tal?\n".encode())
    assert read_script(good) == "Hola, ¿qué tal?\n"
    binary = tmp_path / "bin.dat"
    binary.write_bytes(b"RIFF\x00\x00\x01\x02" * 100)
    with pytest.raises(UserError, match="binary"):
        read_script(binary)
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("Hello.\nSeñor.".encode("latin-1"))
    with pytest.raises(UserError, match=r"not UTF-8 text \(bad byte 0xf1 on line 2\)"):
        read_script(latin)
    big = tmp_path / "big.txt"
    big.write_text("A sentence. " * 90_000)
    with pytest.raises(UserError, match=r"is 1,080,000 bytes; the limit is 65,536 \(64 KB"):
        read_script(big)
    with pytest.raises(UserError, match="does not exist"):
        read_script(tmp_path / "missing.txt")
    with pytest.raises(UserError, match="not a file"):
        read_script(tmp_path)


@pytest.mark.parametrize(("tag", "seconds"), [("[pause 0.6]", 0.6), ("[pause 600ms]", 0.6), ("[PAUSE 0,6 s]", 0.6),
                                              ("[pause: 1.5]", 1.5), ("[pause]", 0.5)])
def test_a_pause_tag_ends_the_sentence_and_sets_the_silence_after_it(tag: str, seconds: float) -> None:
    script = parse_script(f"[ruby] Good evening {tag} and welcome. [pause 0.2] Next.\n{tag}\n[storm] Weather.", "en")
    assert [(s.text, s.speaker, s.pause_s) for s in script.sentences] == [
        ("Good evening", "ruby", seconds), ("and welcome.", "ruby", 0.2),
        ("Next.", "ruby", seconds), ("Weather.", "storm", None)]  # a pause alone on a line adds to the last


@pytest.mark.parametrize(("text", "message"), [
    ("[pause 0.6] Hello.", "line 1: a pause before the first sentence"),
    ("Hello. [pause 11]", "line 1: pause 11 s is out of range"),
    ("Hello. [pause 0]", "line 1: pause 0 s is out of range"),
    ("Hello.\n[pause soon]", "line 2: bad pause '[pause soon]'"),
    ("Hello. [pause ms]", "give a length"),
])
def test_a_bad_pause_is_one_line(text: str, message: str) -> None:
    with pytest.raises(UserError, match=re.escape(message)):
        parse_script(text, "en")


def test_each_sentence_carries_where_it_is_written() -> None:
    """The parser keeps each sentence's span in the script text (spaces and tabs as typed, after a tag, around
    a pause, across line endings), and the take's plan carries it on: the studio and captions read it there
    instead of searching the text again."""
    from omnistudio.take.options import TakeOptions
    from omnistudio.take.pipeline import plan
    from omnistudio.voices.resolve import VoiceRef

    text = "[ruby] Good  evening. Here is\tthe news.\r\n\n[storm:es] Hola. [pause] Adiós.\u2028Good evening."
    script = parse_script(text)
    assert [text[s.start:s.end] for s in script.sentences] == [
        "Good  evening.", "Here is\tthe news.", "Hola.", "Adiós.", "Good evening."]
    assert [s.text for s in script.sentences][:2] == ["Good evening.", "Here is the news."]
    assert script.sentences[-1].start > script.sentences[0].end  # a repeated sentence is found after the last
    planned = plan(script, TakeOptions(voice=VoiceRef(anchor="ruby")))
    assert [(p.start, p.end) for p in planned] == [(s.start, s.end) for s in script.sentences]


def test_stories_start_at_a_heading_or_a_story_tag_and_headings_are_not_spoken() -> None:
    script = parse_script("Top of the hour.\n# Headlines\nGood evening. Here is the news.\n"
                          "[story Weather] [ruby] Rain tomorrow.\nSun on Friday.\n##   Late   sport  \nA draw.\n")
    assert [(s.text, s.story) for s in script.sentences] == [
        ("Top of the hour.", None), ("Good evening.", "Headlines"), ("Here is the news.", "Headlines"),
        ("Rain tomorrow.", "Weather"), ("Sun on Friday.", "Weather"), ("A draw.", "Late sport")]
    assert script.sentences[3].speaker == "ruby"  # a speaker tag after the story tag still sets the speaker
    text = "# Weather\n[story Sport] Goal.\n"
    goal = parse_script(text).sentences[0]
    assert text[goal.start:goal.end] == "Goal."  # the parser keeps spans past the story tag
    assert [s.text for s in parse_script("#1 hit tonight.\n#hashtag news.\n").sentences] == [
        "#1 hit tonight.", "#hashtag news."]  # not headings: no space after the hashes


@pytest.mark.parametrize("text, message", [
    ("[story] Goal.", "line 1: a story needs a name"),
    ("Hello.\n[story   ]\n", "line 2: a story needs a name"),
    ("# " + "x" * 201 + "\nHi.", "line 1: a story's name is 201 characters; the limit is 200"),
    ("# Only a heading\n", "no text to speak"),
])
def test_a_bad_story_is_one_line(text: str, message: str) -> None:
    with pytest.raises(UserError, match=re.escape(message)):
        parse_script(text)
