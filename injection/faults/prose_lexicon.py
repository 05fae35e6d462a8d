"""The words of a parameter list in the languages a peer suite writes tool descriptions in
(English, Spanish, French, German, Portuguese, Italian), for :mod:`prose_schema`.

A suite we do not see writes "Parámetros: nombre (string, obligatorio)" as readily as
"Parameters: name (string, required)"; without these words the reader finds no parameter and the
tool is called with ``{}``. One table of words, not per-template code: a marker that opens the
list, the words that say required or optional, the type words a parenthesis may use, the verbs
that open the returns (ending the list), and the phrases that say an object's keys follow.
"""

from __future__ import annotations

from typing import Final

#: Per language: ``marker`` (a list opens with it and a colon), ``required``, ``optional``,
#: ``returns`` (a sentence opening with one ends the list), ``keys`` (an object parameter's
#: keys follow).
LEXICON: Final[dict[str, dict[str, tuple[str, ...]]]] = {
    "en": {
        "marker": ("parameters?", "arguments?", "args", "inputs?"),
        "required": ("required",),
        "optional": ("optional",),
        "returns": ("returns?", "returning", "outputs?", "responds?"),
        "keys": ("with (?:the )?(?:keys|fields|properties)", "containing", "keys", "fields"),
    },
    "es": {
        "marker": ("par[áa]metros?", "argumentos?", "entradas?"),
        "required": ("obligatori[oa]", "requerid[oa]"),
        "optional": ("opcional",),
        "returns": ("devuelve", "retorna", "regresa", "salida"),
        "keys": ("con (?:las )?(?:claves|campos)",),
    },
    "fr": {
        "marker": ("param[èe]tres?", "arguments?", "entr[ée]es?"),
        "required": ("obligatoire", "requise?"),
        "optional": ("facultati(?:f|ve)", "optionnel(?:le)?"),
        "returns": ("renvoie", "retourne", "sortie"),
        "keys": ("avec (?:les )?(?:cl[ée]s|champs)",),
    },
    "de": {
        "marker": ("parameter", "argumente", "eingaben?"),
        "required": ("erforderlich", "pflicht(?:feld)?"),
        "optional": ("optional", "fakultativ"),
        "returns": ("gibt", "liefert", "ausgabe"),
        "keys": ("mit (?:den )?(?:schl[üu]sseln|feldern)",),
    },
    "pt": {
        "marker": ("par[âa]metros?", "argumentos?", "entradas?"),
        "required": ("obrigat[óo]ri[oa]",),
        "optional": ("opcional",),
        "returns": ("devolve", "retorna", "sa[íi]da"),
        "keys": ("com (?:as )?(?:chaves|campos)",),
    },
    "it": {
        "marker": ("parametr[io]", "argoment[io]", "input"),
        "required": ("obbligatori[oa]", "richiest[oa]"),
        "optional": ("facoltativ[oa]", "opzionale"),
        "returns": ("restituisce", "ritorna", "uscita"),
        "keys": ("con (?:le )?(?:chiavi|campi)",),
    },
}

#: Type words a listed parameter's parenthesis may use, beside English's (lower case; a word is
#: read as a type only inside that parenthesis, so Spanish ``nombre`` — a name — is never a
#: French number elsewhere).
TYPE_WORDS: Final[dict[str, str]] = {
    # es / pt
    "cadena": "string",
    "cadeia": "string",
    "texto": "string",
    "entero": "integer",
    "inteiro": "integer",
    "número": "number",
    "numero": "number",
    "decimal": "number",
    "booleano": "boolean",
    "objeto": "object",
    "arreglo": "array",
    "lista": "array",
    # fr
    "chaîne": "string",
    "chaine": "string",
    "texte": "string",
    "entier": "integer",
    "nombre": "number",
    "booléen": "boolean",
    "booleen": "boolean",
    "objet": "object",
    "tableau": "array",
    "liste": "array",
    # de
    "zeichenkette": "string",
    "ganzzahl": "integer",
    "zahl": "number",
    "boolesch": "boolean",
    "objekt": "object",
    # it
    "stringa": "string",
    "testo": "string",
    "intero": "integer",
    "oggetto": "object",
    "elenco": "array",
}


def words(kind: str) -> str:
    """A regex alternation of every language's words of ``kind``."""
    return "|".join(dict.fromkeys(w for lang in LEXICON.values() for w in lang[kind]))
