"""The SSML subset (omnistudio.text.ssml), without a server: each element, what the model is then asked
to say (the script's pauses, the front-end with the request's phrases), and every refusal as one line."""

from __future__ import annotations

import pytest

from omnistudio.errors import UserError
from omnistudio.script import parse_script
from omnistudio.text import Entry, Lexicon, normalize
from omnistudio.text.ssml import BREAK_STRENGTHS, SsmlText, is_ssml, read_ssml


def spoken(ssml: SsmlText) -> list[tuple[str, str, float | None]]:
    """Each sentence as the take pipeline plans it: written, spoken, the pause asked after it."""
    return [(s.text, normalize(s.text, s.lang, ssml.lexicon).text, s.pause_s)
            for s in parse_script(ssml.script, ssml.lang).sentences]


def refused(text: str, lang: str | None = None) -> str:
    with pytest.raises(UserError) as caught:
        read_ssml(text, lang)
    message = str(caught.value)
    assert message and "\n" not in message and "Traceback" not in message
    return message


def test_what_is_ssml_and_plain_text_untouched() -> None:
    assert is_ssml("<speak>Hola.</speak>") and is_ssml("  \n<speak xml:lang='es'>Hola.</speak>")
    assert is_ssml('<?xml version="1.0" encoding="UTF-8"?>\n<speak>Hola.</speak>') and is_ssml("<speak/>")
    for plain in ("Hola.", "<speaker> says hi", "Say <speak> aloud.", "[ruby] Good evening.", ""):
        assert not is_ssml(plain)
    # any XML document is read as SSML, and so refused when it is not SSML this reads (a DOCTYPE always):
    # never spoken aloud as plain text
    bomb = '<?xml version="1.0"?>\n<!DOCTYPE speak [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;">]><speak>&b;</speak>'
    for document in (bomb, "<!DOCTYPE speak><speak>Hola.</speak>", "\ufeff<!-- note --><speak>Hola.</speak>"):
        assert is_ssml(document)
    with pytest.raises(UserError, match="DTD|DOCTYPE|entit"):
        read_ssml(bomb)


@pytest.mark.parametrize(("attribute", "seconds"), [('time="600ms"', 0.6), ('time="1.5s"', 1.5),
                                                    ('time=".25s"', 0.25), ("", BREAK_STRENGTHS["medium"]),
                                                    *((f'strength="{k}"', v) for k, v in BREAK_STRENGTHS.items()
                                                      if v)])
def test_a_break_is_the_scripts_exact_pause(attribute: str, seconds: float) -> None:
    ssml = read_ssml(f"<speak>Good evening. <break {attribute}/> Here is the news.</speak>")
    assert spoken(ssml) == [("Good evening.", "Good evening.", seconds), ("Here is the news.", "Here is the news.",
                                                                          None)]


def test_strengths_are_fixed_lengths_and_breaks_add_up() -> None:
    assert BREAK_STRENGTHS == {"none": 0.0, "x-weak": 0.1, "weak": 0.25, "medium": 0.5, "strong": 0.75,
                               "x-strong": 1.0}
    ssml = read_ssml('<speak>One <break time="200ms"/><break strength="weak" time="300ms"/>two '
                     '<break strength="none"/>three <break time="0s"/>four.</speak>')
    assert spoken(ssml) == [("One", "One", 0.5), ("two three four.", "two three four.", None)]


def test_sub_speaks_the_alias_and_keeps_the_written_text() -> None:
    ssml = read_ssml('<speak>Ayer la <sub alias="Organización Mundial de la Salud">OMS</sub> habló con el '
                     '<sub alias="Sr. Pérez">ministro</sub>.</speak>', "es")
    assert spoken(ssml) == [("Ayer la OMS habló con el ministro.",
                             "Ayer la Organización Mundial de la Salud habló con el Señor Pérez.", None)]
    # (the alias is read alone by the front-end's rules: "Sr." opens it, hence "Señor")


def test_say_as_characters_spells_letters_and_digits() -> None:
    es = read_ssml('<speak>La <say-as interpret-as="characters">ONU</say-as> y el '
                   '<say-as interpret-as="characters">A380</say-as>.</speak>', "es")
    assert spoken(es)[0][1] == "La o ene u y el a tres ocho cero."  # ONU alone is read as a word
    en = read_ssml('<speak>Ask <say-as interpret-as="characters">nasa</say-as>.</speak>', "en")
    assert spoken(en)[0][1] == "Ask N A S A."


def test_say_as_cardinal_is_a_whole_number_never_a_year() -> None:
    en = read_ssml('<speak>It sold <say-as interpret-as="cardinal">1998</say-as> copies.</speak>')
    assert spoken(en)[0][1] == "It sold one thousand nine hundred ninety-eight copies."
    assert normalize("It sold 1998 copies.", "en").text == "It sold nineteen ninety-eight copies."  # what it changes
    es = read_ssml('<speak>Hubo <say-as interpret-as="cardinal">1.245</say-as> y '
                   '<say-as interpret-as="cardinal">-3,5</say-as>.</speak>', "es")
    assert spoken(es)[0][1] == "Hubo mil doscientos cuarenta y cinco y menos tres coma cinco."
    assert "not a number as en writes it" in refused('<speak><say-as interpret-as="cardinal">1.245,5</say-as>'
                                                     '</speak>')


def test_say_as_date_is_the_front_ends_date_rule() -> None:
    es = read_ssml('<speak>Cerró el <say-as interpret-as="date">14/10/2026</say-as>.</speak>', "es")
    assert spoken(es)[0][1] == "Cerró el catorce de octubre de dos mil veintiséis."
    en = read_ssml('<speak>Closed <say-as interpret-as="date">Oct. 14, 2026</say-as>.</speak>')
    assert spoken(en)[0][1] == "Closed October fourteenth, twenty twenty-six."
    assert "'14/10' is not a date the en front-end reads" in refused(
        '<speak><say-as interpret-as="date">14/10</say-as></speak>')
    assert "not a date" in refused('<speak><say-as interpret-as="date">soon</say-as></speak>', "es")


def test_xml_lang_sets_the_language_only_when_the_request_gives_none() -> None:
    doc = '<speak xml:lang="es-AR">Son las <say-as interpret-as="cardinal">21</say-as>.</speak>'
    assert read_ssml(doc).lang == "es" and spoken(read_ssml(doc))[0][1] == "Son las veintiuno."
    assert read_ssml(doc, "en").lang == "en" and spoken(read_ssml(doc, "en"))[0][1] == "Son las twenty-one."
    assert read_ssml("<speak>Hi.</speak>").lang == "en"
    assert read_ssml('<speak xml:lang="en-US">Hi.</speak>', None).lang == "en"
    assert "xml:lang 'fr-FR' is not a language OmniStudio speaks" in refused('<speak xml:lang="fr-FR">Salut.</speak>')


def test_the_ssml_namespace_and_declaration_are_accepted() -> None:
    ssml = read_ssml('<?xml version="1.0"?>\n<speak version="1.1" xmlns="http://www.w3.org/2001/10/synthesis"\n'
                     '  xml:lang="en-US">\n  Good evening.\n  <break time="1s"/>\n  <!-- a note -->\n'
                     '  Here is the <sub alias="news">NEWS</sub>.\n</speak>')
    assert ssml.script == "Good evening. [pause 1.000] Here is the NEWS."
    assert spoken(ssml) == [("Good evening.", "Good evening.", 1.0), ("Here is the NEWS.", "Here is the news.", None)]


@pytest.mark.parametrize("element", ["prosody", "phoneme", "emphasis", "voice", "audio", "p", "s", "mark", "lang",
                                     "whisper"])
def test_each_unsupported_element_is_one_line_naming_it(element: str) -> None:
    message = refused(f"<speak>Before <{element}>inside</{element}> after.</speak>")
    assert message == f"SSML element <{element}> is not supported: use <break>, <say-as>, <sub>"


def test_nesting() -> None:
    assert refused('<speak>A <prosody rate="slow">b <emphasis>c</emphasis> <sub alias="x">d</sub></prosody> '
                   '<audio src="x.wav"/></speak>') == (
        "SSML elements <prosody>, <emphasis>, <audio> are not supported: use <break>, <say-as>, <sub>")
    assert "<emphasis> is not supported" in refused('<speak><sub alias="x"><emphasis>d</emphasis></sub></speak>')
    assert refused('<speak>A <sub alias="x">b<break/>c</sub></speak>') == "SSML <sub> holds text only, not <break>"
    assert "holds text only, not <sub>" in refused(
        '<speak><say-as interpret-as="characters"><sub alias="x">b</sub></say-as></speak>')
    assert "cannot hold another <speak>" in refused("<speak>A <speak>b</speak></speak>")
    assert "<effect> (namespace urn:amazon) is not supported" in refused(
        '<speak xmlns:amazon="urn:amazon">A <amazon:effect name="whispered">b</amazon:effect></speak>')
    assert "<break/> is empty" in refused("<speak>A <break>b</break></speak>")


def test_attributes_and_values_refused_with_one_line() -> None:
    assert refused('<speak>A <say-as interpret-as="date" format="mdy">10/14</say-as></speak>') == (
        "SSML <say-as> attribute 'format' is not supported")
    assert "interpret-as=\"ordinal\"> is not supported: use characters, cardinal, date" in refused(
        '<speak>A <say-as interpret-as="ordinal">3</say-as></speak>')
    assert "needs interpret-as" in refused("<speak>A <say-as>3</say-as></speak>")
    assert 'give a time like 600ms or 1.5s' in refused('<speak>A <break time="6 seconds"/></speak>')
    assert "longer than the 10 s" in refused('<speak>A <break time="11s"/></speak>')
    assert "strength=\"huge\"" in refused('<speak>A <break strength="huge"/></speak>')
    assert "needs an alias" in refused('<speak>A <sub>WWW</sub></speak>')
    assert "is empty" in refused('<speak>A <sub alias="x"/></speak>')
    assert "break> before any text" in refused('<speak><break time="1s"/>A</speak>')
    assert "no text to speak" in refused('<speak> <!-- nothing --> </speak>')
    assert "no letters or digits to spell" in refused('<speak>A <say-as interpret-as="characters">?!</say-as></speak>')


def test_malformed_xml_is_one_line() -> None:
    assert refused("<speak>Hello <break time='1s'></speak>").startswith("SSML is not well-formed XML: mismatched tag")
    assert refused("<speak>Tom & Jerry</speak>").startswith("SSML is not well-formed XML")
    assert refused("<speak>Hello").startswith("SSML is not well-formed XML")


def test_a_dtd_or_an_entity_is_refused() -> None:
    laughs = ('<!DOCTYPE speak [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>'
              "<speak>&lol2;</speak>")
    assert refused(laughs).startswith("SSML refused: it declares")
    assert refused("<!DOCTYPE speak><speak>Hi.</speak>").startswith("SSML refused: it declares a DTD")
    assert read_ssml("<speak>Tom &amp; Jerry &#65;</speak>").script == "Tom & Jerry A"  # XML's own escapes are text


def test_a_phrase_is_whole_words_and_said_one_way() -> None:
    assert refused('<speak>A <sub alias="x">Web</sub>site.</speak>') == (
        "SSML <sub>Web</sub> is not whole words in 'Website': put a space or punctuation between it and the text "
        "next to it")
    assert "two spoken forms" in refused('<speak><sub alias="a">X1</sub> and <sub alias="b">X1</sub>.</speak>')
    # the same phrase, the same form: fine; and, like a lexicon entry, every "WWW" of the request
    ssml = read_ssml('<speak><sub alias="the web">WWW</sub> is WWW, not <sub alias="the web">WWW</sub>.</speak>')
    assert spoken(ssml)[0][1] == "the web is the web, not the web."


def test_the_requests_phrases_win_over_the_servers_lexicon() -> None:
    server = Lexicon((Entry("OMS", "oms", "es"), Entry("la OMS", "la o eme ese", "es"),
                      Entry("Sheinbaum", "Sháinbaum", "es")))
    ssml = read_ssml('<speak>Ayer <sub alias="la Organización">la OMS</sub> y Sheinbaum.</speak>', "es")
    merged = ssml.over(server)
    assert spoken(SsmlText(ssml.script, ssml.lang, merged))[0][1] == "Ayer la Organización y Sháinbaum."
    assert [e.word for e in merged.entries] == ["la OMS", "OMS", "Sheinbaum"]  # only the rival entry left out
