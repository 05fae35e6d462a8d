"""The input schema read from a tool's prose (``prose_schema``) on the forms a peer suite writes
that AgentCheck's own templates do not: parameter lists in other languages. (The 120
templates' schemas: test_agentcheck.py.)"""

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
