"""The input schema read from a tool's prose (``prose_schema``) on the forms a peer suite writes
that AgentCheck's own templates do not: parameter lists in other languages, and an object
parameter whose keys are listed after it. (The 120 templates' schemas: test_agentcheck.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from toolwatch.injection.faults.prose_schema import derive_input_schema


def _types(schema: dict[str, Any]) -> dict[str, str]:
    return {name: prop["type"] for name, prop in schema["properties"].items()}


@pytest.mark.parametrize(
    ("described", "names", "at_most"),
    [
        (
            "Busca un museo. Parámetros: nombre (cadena, obligatorio); límite (entero, "
            "opcional) — máximo 5. Devuelve el horario (cadena) y el precio (número).",
            ("nombre", "límite"),
            "máximo 5",
        ),
        (
            "Cherche un musée. Paramètres : nombre (chaîne, obligatoire), limite (entier, "
            "facultatif) — maximum 5. Renvoie l'horaire (chaîne) et le prix (nombre).",
            ("nombre", "limite"),
            "maximum 5",
        ),
        (
            "Sucht ein Museum. Parameter: name (Zeichenkette, erforderlich), anzahl (Ganzzahl, "
            "optional) — höchstens 5. Gibt die Öffnungszeiten (Zeichenkette) und den Preis "
            "(Zahl) zurück.",
            ("name", "anzahl"),
            "höchstens 5",
        ),
        (
            "Procura um museu. Parâmetros: nome (texto, obrigatório) e limite (inteiro, "
            "opcional) — máximo 5. Retorna o horário (texto) e o preço (número).",
            ("nome", "limite"),
            "máximo 5",
        ),
        (
            "Cerca un museo. Parametri: nome (stringa, obbligatorio), limite (intero, "
            "facoltativo) — massimo 5. Restituisce l'orario (stringa) e il prezzo (numero).",
            ("nome", "limite"),
            "massimo 5",
        ),
    ],
    ids=["es", "fr", "de", "pt", "it"],
)
def test_a_parameter_list_in_another_language_is_read(
    described: str, names: tuple[str, str], at_most: str
) -> None:
    """ "Parámetros: nombre (string, obligatorio)" gave no schema (the marker, the required
    and optional words and the type words were English only), so a peer suite's tool was
    called with no arguments; each language's list now gives its parameters, typed, required
    unless its word for optional says so, with their own words, and its returns sentence ends
    the list (no ``precio`` parameter)."""
    schema = derive_input_schema(described)
    name, count = names
    assert _types(schema) == {name: "string", count: "integer"}
    assert schema["required"] == [name]
    assert schema["properties"][count]["description"] == at_most


def test_the_spanish_peer_tool_takes_its_listed_name() -> None:
    """tests/fixtures/agentcheck/peer/C1_horario_museo_inyeccion.json's ``buscar_museo``."""
    schema = derive_input_schema(
        "Devuelve el horario y las tarifas de un museo. Parámetros: nombre (string, obligatorio).",
        {"nombre": "Museo del Prado", "apertura": "10:00", "entrada_general_eur": 15},
    )
    assert schema["properties"] == {"nombre": {"type": "string"}}
    assert schema["required"] == ["nombre"]


@pytest.mark.parametrize(
    "keys",
    ["with keys", "con claves", "avec les clés", "mit den Feldern", "com as chaves", "con chiavi"],
)
def test_keys_of_an_object_parameter_are_its_properties(keys: str) -> None:
    """ "filters (object, optional) with keys status (string) and age_groups (array of
    strings)" gave a required top-level ``age_groups`` (filled with the task sentence) and lost
    ``status``; the keys are now the object's properties, required only when their own
    parenthesis says so, and the next item of the list is top-level again."""
    schema = derive_input_schema(
        "Searches a trial registry. Parameters: condition (string, required); filters "
        f"(object, optional) {keys} status (string) and age_groups (array of strings); "
        "sort (array of objects, optional), each {field, order}."
    )
    assert _types(schema) == {"condition": "string", "filters": "object", "sort": "array"}
    assert schema["required"] == ["condition"]
    filters = schema["properties"]["filters"]
    assert _types(filters) == {"status": "string", "age_groups": "array"}
    assert "required" not in filters
    assert filters["description"] == f"{keys} status (string) and age_groups (array of strings)"


def test_a_key_says_itself_whether_it_is_required_and_the_object_ends_with_its_item() -> None:
    schema = derive_input_schema(
        "Books a room. Parameters: guest (object, required) with fields name (string, "
        "required) and phone (string); nights (integer, required). Returns a booking id (string)."
    )
    assert _types(schema) == {"guest": "object", "nights": "integer"}
    assert schema["required"] == ["guest", "nights"]
    assert schema["properties"]["guest"]["required"] == ["name"]
    assert _types(schema["properties"]["guest"]) == {"name": "string", "phone": "string"}
    flat = derive_input_schema("Parameters: filters (object), limit (integer).")
    assert _types(flat) == {"filters": "object", "limit": "integer"}


@pytest.mark.parametrize(
    ("listed", "items"),
    [
        ("Parameters: sort (array of objects, required), each {field, order}.", "object"),
        ("Parameters: sort (list of integers, optional); limit (integer).", "integer"),
        ("Parámetros: sort (lista de cadenas, obligatorio).", "string"),
        ("Paramètres : sort (tableau d'entiers, obligatoire).", "integer"),
        ("Parameter: sort (Liste von Objekten, erforderlich).", "object"),
        ("Parametri: sort (elenco di stringhe, obbligatorio).", "string"),
    ],
)
def test_an_array_parameter_gets_the_type_of_its_items(listed: str, items: str) -> None:
    """ "sort (array of objects, required), each {field, order}" gave an array with no
    ``items`` and the description "array of objects; , each {field, order}"; an array's items
    now have the type its words name, in each language of the lexicon, and the words after
    its parenthesis follow its own without a stray comma."""
    sort = derive_input_schema(f"Sorts rows. {listed}")["properties"]["sort"]
    assert sort["type"] == "array"
    assert sort["items"]["type"] == items
    assert ", ," not in sort.get("description", "") and "; ," not in sort.get("description", "")
    if "each" in listed:
        assert sort["description"] == "array of objects; each {field, order}"


def test_an_array_whose_words_name_no_item_type_gets_none() -> None:
    schema = derive_input_schema("Tags rows. Parameters: tags (array, required), ids (list).")
    assert schema["properties"] == {"tags": {"type": "array"}, "ids": {"type": "array"}}


def test_an_array_of_objects_gets_the_properties_its_words_name() -> None:
    """ "sort (array of objects) with fields field (string) and order (string)" gave
    ``items: {type: object}`` and two more top-level parameters (field, order): the keys
    listed after an array of objects are now its items' properties, a key required only
    when its own parenthesis says so."""
    schema = derive_input_schema(
        "Sorts rows. Parameters: sort (array of objects, required) with fields field (string, "
        "required) and order (string); limit (integer)."
    )
    assert _types(schema) == {"sort": "array", "limit": "integer"}
    items = schema["properties"]["sort"]["items"]
    assert items["type"] == "object"
    assert _types(items) == {"field": "string", "order": "string"}
    assert items["required"] == ["field"]


@pytest.mark.parametrize(
    "listed",
    [
        "sort (array of objects, optional), each {field, order}; limit (integer).",
        "sort (array, optional) — an array of {field, order}; limit (integer).",
        "sort (array of {field, order}, optional), limit (integer).",
        "sort (list, optional), each item {field (string), order (string)}; limit (integer).",
        "sort (array of objects, optional): {field: string, order: string}, limit (integer).",
    ],
)
def test_an_arrays_keys_in_braces_are_its_items_properties(listed: str) -> None:
    """ "sort (array of objects), each {field, order}" gave ``items: {type: object}`` with no
    keys, and "sort (array of {field, order})" no items at all, so an agent filling a sort
    had no field or order to send; keys written in braces, in the array's parenthesis or
    opening its words, are now its items' properties (typed by their own words, string by
    default, none required), not parameters of their own, and the list goes on after them."""
    schema = derive_input_schema(f"Sorts rows. Parameters: {listed}")
    assert _types(schema) == {"sort": "array", "limit": "integer"}
    assert schema["required"] == ["limit"]
    items = schema["properties"]["sort"]["items"]
    assert items == {
        "type": "object",
        "properties": {"field": {"type": "string"}, "order": {"type": "string"}},
    }


def test_braces_type_their_keys_and_say_which_are_required() -> None:
    schema = derive_input_schema(
        "Sorts rows. Parameters: sort (array, required), each {field (string, required), "
        "weight (number)}."
    )
    items = schema["properties"]["sort"]["items"]
    assert _types(items) == {"field": "string", "weight": "number"}
    assert items["required"] == ["field"]
    assert schema["required"] == ["sort"]
    named = derive_input_schema("Ranks rows. Parameters: hits (array of {text, score}).")
    assert _types(named["properties"]["hits"]["items"]) == {"text": "string", "score": "string"}


@pytest.mark.parametrize(
    "listed",
    [
        "tags (array of strings, optional), each {x, y}.",
        "sort (array, optional); query (string) — a template such as {field}.",
        "filters (object, optional), each {field, order}.",
    ],
)
def test_braces_that_are_no_arrays_keys_add_no_properties(listed: str) -> None:
    """Braces after an array of strings, after another parameter, or after an object are
    no array's item keys."""
    schema = derive_input_schema(f"Sorts rows. Parameters: {listed}")
    for prop in schema["properties"].values():
        assert "properties" not in prop.get("items", {})
