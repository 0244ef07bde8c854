"""Abbreviations and acronyms.

Abbreviations are expanded ("Sr." -> "señor", "EE. UU." -> "Estados Unidos", "n.º" -> "número",
"Mr." -> "Mister", "St. Louis" -> "Saint Louis" but "Main St." -> "Main Street"); a title is lowercase
in Spanish unless it opens the sentence, and a final abbreviation keeps its dot as the sentence's.
Acronyms are read as words or spelled: the lists below decide the known ones (ONU, OTAN and NASA read;
FMI, FBI and OMS spelled); others are read when Spanish can pronounce them (a vowel, a consonant, no
initial cluster Spanish lacks, at most one final consonant) and spelled otherwise; English spells
acronyms of up to four letters. A read acronym is written in title case ("Onu", "Nasa") so the model
reads it as a word; a spelled one is written as letter names in Spanish ("efe eme i") and as spaced
capitals in English ("F B I")."""

from __future__ import annotations

import re

from omnistudio.text.numbers import cardinal
from omnistudio.text.rules import LOOK_BACK, Keep, Rule, Said, at_text_end, per_lang

# ------------------------------------------------------------------ abbreviations
ABBREVIATIONS: dict[str, dict[str, str]] = {
    "es": {"Sr.": "señor", "Sra.": "señora", "Srta.": "señorita", "Sres.": "señores", "Dr.": "doctor",
           "Dra.": "doctora", "Lic.": "licenciado", "Ing.": "ingeniero", "Arq.": "arquitecto", "Prof.": "profesor",
           "Profa.": "profesora", "Gral.": "general", "Cnel.": "coronel", "Tte.": "teniente", "Mons.": "monseñor",
           "Dip.": "diputado", "Sen.": "senador", "Pte.": "presidente", "Av.": "avenida", "Avda.": "avenida",
           "Bv.": "bulevar", "Pcia.": "provincia", "Dto.": "departamento", "Depto.": "departamento",
           "Cía.": "compañía", "Hnos.": "hermanos", "Ud.": "usted", "Uds.": "ustedes",
           "EE. UU.": "Estados Unidos", "EE.UU.": "Estados Unidos", "EEUU": "Estados Unidos",
           "Bs. As.": "Buenos Aires", "Sta.": "Santa", "Sto.": "Santo", "S. A.": "sociedad anónima",
           "S.A.": "sociedad anónima", "n.º": "número", "nº": "número", "n°": "número", "N.º": "número",
           "Nº": "número", "N°": "número", "Nro.": "número", "nro.": "número", "núm.": "número",
           "etc.": "etcétera", "aprox.": "aproximadamente", "tel.": "teléfono", "pág.": "página",
           "p. ej.": "por ejemplo", "vs.": "contra", "a. C.": "antes de Cristo", "d. C.": "después de Cristo",
           "p. p.": "puntos porcentuales", "p.p.": "puntos porcentuales", "OK": "okey", "TV": "te ve"},
    "en": {"Mr.": "Mister", "Mrs.": "Missus", "Ms.": "Miz", "Dr.": "Doctor", "Ave.": "Avenue", "Blvd.": "Boulevard",
           "Rd.": "Road", "Gov.": "Governor", "Sen.": "Senator", "Rep.": "Representative", "Gen.": "General",
           "Lt.": "Lieutenant", "Col.": "Colonel", "Sgt.": "Sergeant", "Capt.": "Captain", "Prof.": "Professor",
           "Jr.": "Junior", "Sr.": "Senior", "Inc.": "Incorporated", "Corp.": "Corporation", "Co.": "Company",
           "Ltd.": "Limited", "vs.": "versus", "etc.": "et cetera", "approx.": "approximately",
           "Dept.": "Department", "Pres.": "President", "Mt.": "Mount", "Ft.": "Fort", "a.k.a.": "also known as",
           "e.g.": "for example", "i.e.": "that is", "Jan.": "January", "Feb.": "February", "Mar.": "March",
           "Apr.": "April", "Aug.": "August", "Sept.": "September", "Sep.": "September", "Oct.": "October",
           "Nov.": "November", "Dec.": "December", "OK": "okay"},
}
# Said differently by what is around them.
FEMININE_TITLES = {"licenciado": "licenciada", "ingeniero": "ingeniera", "arquitecto": "arquitecta",
                   "profesor": "profesora", "diputado": "diputada", "senador": "senadora", "presidente": "presidenta"}


def opens_sentence(text: str, start: int, lang: str) -> bool:
    """Whether ``start`` opens a sentence: nothing before it, or a full stop that is not an abbreviation's."""
    before = text[max(0, start - LOOK_BACK):start].rstrip(" \"'“‘«¿¡(")
    if not before:
        return start <= LOOK_BACK
    if before[-1] in "!?:":
        return True
    return before[-1] == "." and before.split()[-1] not in ABBREVIATIONS[lang]


def _abbreviation_pattern(lang: str) -> str:
    alts = []
    for written in sorted(ABBREVIATIONS[lang], key=len, reverse=True):
        body = re.escape(written).replace(r"\ ", r"\s?")
        alts.append(body + (r"(?!\w)" if written[-1].isalnum() else ""))
    extra = {"es": r"|(?P<km>km)(?= [0-9])", "en": r"|(?P<st>St\.)|(?P<no>No\.)(?= ?[0-9])|(?P<dots>(?:[A-Z]\.){2,})"}
    return rf"(?<![\w.])(?:(?P<abbr>{'|'.join(alts)}){extra[lang]})"


def _say_abbreviation(match: re.Match[str], lang: str) -> str:
    text, start = match.string, match.start()
    written = match.group(0)
    if match.groupdict().get("km"):
        return "kilómetro"
    if match.groupdict().get("no"):
        return "number"
    if match.groupdict().get("st"):  # "St. Louis": Saint; "Main St.", "15th St. near": Street
        before_a_name = re.match(r" [A-Z]", text[match.end():match.end() + 2]) is not None
        after_a_word = re.search(r"\w $", text[max(0, start - 2):start]) is not None
        said = "Street" if after_a_word and not before_a_name else "Saint"
    elif match.groupdict().get("dots"):
        said = " ".join(written.replace(".", ""))
    else:
        key = next(k for k in ABBREVIATIONS[lang] if re.fullmatch(re.escape(k).replace(r"\ ", r"\s?"), written))
        said = ABBREVIATIONS[lang][key]
        if lang == "es":
            if said in FEMININE_TITLES and re.search(r"(?:^|\s)la\s$", text[max(0, start - 4):start], re.IGNORECASE):
                said = FEMININE_TITLES[said]
            if written[0].isupper() and opens_sentence(text, start, lang):
                said = said[0].upper() + said[1:]
    return said + "." if written.endswith(".") and at_text_end(match) else said


# ------------------------------------------------------------------ acronyms
LETTERS_ES = dict(zip("ABCDEFGHIJKLMNÑOPQRSTUVWXYZ", (w.replace("_", " ") for w in (
    "a be ce de e efe ge hache i jota ka ele eme ene eñe o pe cu erre ese te u ve doble_ve equis i_griega "
    "zeta").split()), strict=True))
READ = {"es": frozenset("""ONU OTAN NASA UNESCO UNICEF OPEP FIFA UEFA ANSES AFIP ARCA INDEC CONICET UBA COVID SIDA
                           BID IVA AMBA CABA PAMI INTA SENASA ANMAT PRO PASO MERCOSUR CEPAL ACNUR FAO ARSAT
                           CONMEBOL AFA ARBA""".split()),
        "en": frozenset("""NASA NATO UNESCO UNICEF OPEC FIFA UEFA NAFTA AIDS COVID ASEAN FEMA OSHA SWAT SARS MERS
                           NASDAQ NASCAR ISIS CERN IKEA MERCOSUR""".split())}
SPELLED = {"es": frozenset("FMI FBI OEA OMS UE PBI CGT UCR DNI ONG BCRA CNN BBC PJ OIT OMC UIF CIA ART".split()),
           "en": frozenset()}
_ONSETS = {"es": frozenset("bl br cl cr dr fl fr gl gr pl pr tr ch ll".split()),
           "en": frozenset("bl br cl cr dr fl fr gl gr pl pr tr sc sk sl sm sn sp st sw tw th sh ch wh str spr scr"
                           .split())}
LONGEST_SPELLED = 5  # a longer all-capital word is a word in capitals ("SHEINBAUM"), read as a word
_VOWELS = "aeiouáéíóú"
_CLUSTER_RE = re.compile(rf"[^{_VOWELS}]+")


def pronounceable(word: str, lang: str) -> bool:
    """Whether ``word`` reads as a word in ``lang`` (a vowel, a consonant, an initial cluster the
    language has, inner clusters of at most two consonants, at most one final consonant in Spanish)."""
    lower = word.lower()
    if not any(c in _VOWELS for c in lower) or all(c in _VOWELS for c in lower):
        return False
    clusters = [(m.start(), m.group()) for m in _CLUSTER_RE.finditer(lower)]
    for at, cluster in clusters:
        if at == 0 and len(cluster) > 1 and cluster not in _ONSETS[lang]:
            return False
        if at + len(cluster) == len(lower) and len(cluster) > (1 if lang == "es" else 2):
            return False
        if 0 < at and at + len(cluster) < len(lower) and len(cluster) > 2 and cluster[1:] not in _ONSETS[lang]:
            return False
    return True


def spell(letters: str, lang: str) -> str:
    """Letters as a newsreader spells them: "efe eme i" (es), "F B I" (en)."""
    if lang == "es":
        return " ".join(LETTERS_ES.get(c, c.lower()) for c in letters.upper() if c.isalnum())
    return " ".join(c for c in letters.upper() if c.isalnum())


def acronym(word: str, lang: str) -> tuple[str, str]:
    """An all-capital word read (title case) or spelled, and why ("read"/"spelled", "known"/"rule")."""
    upper = word.upper()
    if upper in READ[lang]:
        return upper.capitalize(), "read (known)"
    if upper in SPELLED[lang]:
        return spell(upper, lang), "spelled (known)"
    reads = len(upper) > LONGEST_SPELLED or pronounceable(upper, lang) and (lang == "es" or len(upper) >= 5)
    return (upper.capitalize(), "read") if reads else (spell(upper, lang), "spelled")


_CAPS = "A-ZÁÉÍÓÚÑ"
_ACRONYM = (rf"(?<![\w&])(?:(?P<amp>[{_CAPS}]{{1,4}}&[{_CAPS}]{{1,4}})|(?P<a>[{_CAPS}]{{2,}}|[{_CAPS}](?=-?[0-9]))"
            rf"(?:-?(?P<n>[0-9]{{1,4}}))?)(?![\w&])")
_AND = {"es": "y", "en": "and"}


def _say_acronym(match: re.Match[str], lang: str) -> tuple[str, str] | None:
    if match.group("amp"):
        left, right = match.group("amp").split("&")
        return f"{spell(left, lang)} {_AND[lang]} {spell(right, lang)}", "spelled"
    letters, digits = match.group("a"), match.group("n")
    said, how = acronym(letters, lang) if len(letters) > 1 else (spell(letters, lang), "spelled")
    if said == letters and not digits:
        return None
    return (f"{said} {cardinal(digits, lang)}" if digits else said), how


# A token that glues digits and letters (5G, 3D, 4x4, B2B, H2O, 1e5) and that no earlier rule read (units,
# ordinals, times, money, acronyms such as G7 or MP3): read as a newsreader does where the reading is
# certain, else kept as written with a warning (a lexicon entry says how to read it).
_ALNUM = r"(?<![\w.,])(?=[0-9]*[A-Za-zÁÉÍÓÚÑáéíóúñ])(?=[A-Za-zÁÉÍÓÚÑáéíóúñ]*[0-9])[0-9A-Za-zÁÉÍÓÚÑáéíóúñ]+(?![\w])"
_BY = {"es": "por", "en": "by"}
_SPELLED_RUNS = re.compile(r"[0-9]+|[^0-9]+")


def _say_alphanumeric(match: re.Match[str], lang: str) -> Said:
    token = match.group()
    if (dims := re.fullmatch(r"([0-9]{1,5})[xX]([0-9]{1,5})", token)) is not None:  # 4x4, 1920x1080
        return f"{cardinal(dims[1], lang)} {_BY[lang]} {cardinal(dims[2], lang)}", "dimensions"
    if (led := re.fullmatch(rf"([0-9]{{1,3}})([{_CAPS}]{{1,3}})", token)) is not None:  # 5G, 3D, 4K
        return f"{cardinal(led[1], lang)} {spell(led[2], lang)}", "number and letters"
    if (named := re.fullmatch(r"([^\W\d_]{3,})([0-9]{1,4})", token)) is not None:  # Elecciones2023, Windows11
        return f"{named[1]} {cardinal(named[2], lang)}", "word and number"
    if lang == "en" and re.fullmatch(r"[BCDGMP]2[BCDGMP]", token):  # B2B, P2P, M2M: "to" (H2O is not)
        return f"{token[0]} to {token[2]}", "letter to letter"
    if token.isupper() or all(c.isdigit() or c in _CAPS_SET for c in token):  # H2O, A1C: run by run
        return " ".join(cardinal(run, lang) if run.isdigit() else spell(run, lang)
                        for run in _SPELLED_RUNS.findall(token)), "spelled"
    return Keep("digits and letters together: kept as written (a lexicon entry can say how to read it)")


_CAPS_SET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZÁÉÍÓÚÑ")
ALPHANUMERIC_RULES = (Rule("alphanumeric", per_lang(_ALNUM, _ALNUM), _say_alphanumeric),)
ABBREVIATION_RULES = (Rule("abbreviation", per_lang(_abbreviation_pattern("es"), _abbreviation_pattern("en")),
                           _say_abbreviation),)
ACRONYM_RULES = (Rule("acronym", per_lang(_ACRONYM, _ACRONYM), _say_acronym),)
