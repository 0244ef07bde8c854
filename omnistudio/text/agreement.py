"""Spanish number agreement: which form of "1", "21", "200" the word after a number asks for.

A number before a noun agrees with it: "21 años" -> "veintiún años", "21 personas" -> "veintiuna
personas", "200 personas" -> "doscientas personas". Spanish has no gender marking that a rule can
read off every noun, so this holds a small list of the feminine nouns news copy counts most (people,
victims, homes, tonnes, hectares, votes' seats...) plus the endings that are feminine without
exception ("-ción", "-sión", "-dad", "-tud", "-umbre"); any other word is taken as masculine. A number
followed by a function word ("1 de cada 3", "en 2021 se") or by nothing is said whole ("uno").
English numbers do not agree; these functions answer "n" for English."""

from __future__ import annotations

import re

NEUTRAL, MASCULINE, FEMININE = "n", "m", "f"

# Words after which a number stands alone ("1 de cada 3", "1 a 0", "los 21 que"): prepositions,
# articles, conjunctions, pronouns and the commonest verbs of news copy.
FUNCTION_WORDS = frozenset("""
a al ante bajo con contra de del desde durante e en entre hacia hasta mediante ni o para pero por
que sin según sobre tras u y el la lo los las un una unos unas se le les me te nos su sus mi es
son era eran fue fueron ser será serán sería está están estaba estaban estuvo hay había hubo ha han
había habían he hemos ya no sí más menos como cuando donde mientras aunque porque si también tampoco
cada vs versus frente apenas casi solo sólo
""".split())

# Feminine nouns news copy counts, singular and plural (a number before them takes "una", "-ientas").
FEMININE_NOUNS = frozenset("""
persona personas víctima víctimas mujer mujeres niña niñas vivienda viviendas casa casas familia familias
empresa empresas escuela escuelas provincia provincias ciudad ciudades localidad localidades muerte muertes
cama camas unidad unidades cuadra cuadras vacuna vacunas dosis causa causas denuncia denuncias banca bancas
cabeza cabezas especie especies obra obras cuota cuotas beca becas hoja hojas página páginas línea líneas
ley leyes medida medidas plaza plazas calle calles ruta rutas cámara cámaras mesa mesas urna urnas
elección elecciones tropa tropas nave naves arma armas computadora computadoras entrada entradas
butaca butacas planta plantas fábrica fábricas industria industrias pyme pymes tienda tiendas
sucursal sucursales fecha fechas jornada jornadas noche noches manzana manzanas tonelada toneladas
hectárea hectáreas libra libras milla millas pulgada pulgadas caloría calorías camioneta camionetas
moto motos bicicleta bicicletas ambulancia ambulancias patrulla patrullas operación operaciones
cirugía cirugías muestra muestras prueba pruebas respuesta respuestas pregunta preguntas firma firmas
consulta consultas farmacia farmacias hora horas semana semanas vez veces cuadra cuadras casa casas estrella estrellas medalla medallas
victoria victorias derrota derrotas fecha fechas vuelta vueltas etapa etapas carrera carreras
escuadra escuadras sede sedes sala salas cárcel cárceles celda celdas mina minas represa represas
tasa tasas acción acciones deuda deudas factura facturas tarifa tarifas boleta boletas cuenta cuentas
tarjeta tarjetas moneda monedas divisa divisas reserva reservas exportación exportaciones
importación importaciones propuesta propuestas lista listas banca bancas diputada diputadas
senadora senadoras ministra ministras jueza juezas trabajadora trabajadoras alumna alumnas
mascota mascotas vaca vacas oveja ovejas gallina gallinas cosecha cosechas
""".split())

FEMININE_ENDINGS = ("ción", "ciones", "sión", "siones", "dad", "dades", "tad", "tades", "tud", "tudes",
                    "umbre", "umbres")

# Adjectives news copy puts between a number and its noun ("200 nuevas viviendas", "3 grandes obras"): a
# gendered one says the noun's gender itself; an invariable one ("grandes") passes the question on.
PRENOMINAL = frozenset("""
nuevo nueva nuevos nuevas primer primera primeros primeras último última últimos últimas pequeño pequeña
pequeños pequeñas buen buena buenos buenas mal mala malos malas viejo vieja viejos viejas antiguo antigua
antiguos antiguas distintos distintas diversos diversas numerosos numerosas escasos escasas pocos pocas
muchos muchas varios varias otros otras mismos mismas ciertos ciertas próximo próxima próximos próximas
supuestos supuestas presuntos presuntas modernos modernas enormes grandes principales diferentes
importantes recientes mayores menores mejores peores altos altas bajos bajas jóvenes largos largas breves
""".split())
_ADJECTIVES_SKIPPED = 2

_NEXT_WORD_RE = re.compile(r"[ \u00a0]+([^\W\d_]+)")


def next_word(text: str, pos: int) -> str:
    """The word right after ``pos`` (one space away), or ""."""
    match = _NEXT_WORD_RE.match(text, pos)
    return match.group(1) if match else ""


def noun_gender(word: str) -> str:
    """The agreement a number before ``word`` takes: feminine, masculine or none (not a noun we count)."""
    if not word or not word[0].islower():
        return NEUTRAL  # "en 2021 Boca...", end of sentence: the number stands alone
    lower = word.lower()
    if lower in FUNCTION_WORDS:
        return NEUTRAL
    if lower in FEMININE_NOUNS or lower.endswith(FEMININE_ENDINGS):
        return FEMININE
    return MASCULINE


def gender_after(text: str, pos: int, lang: str) -> str:
    """The agreement asked for by the word after ``pos`` in ``text`` (Spanish; "n" for English), through
    up to two adjectives before the noun ("200 nuevas viviendas" -> feminine)."""
    if lang != "es":
        return NEUTRAL
    for _ in range(_ADJECTIVES_SKIPPED):
        match = _NEXT_WORD_RE.match(text, pos)
        word = match.group(1).lower() if match else ""
        if match is None or word not in PRENOMINAL:
            return noun_gender(match.group(1) if match else "")
        if word.endswith(("a", "as")):
            return FEMININE
        if word.endswith(("o", "os")):
            return MASCULINE
        pos = match.end()
    return noun_gender(next_word(text, pos))
