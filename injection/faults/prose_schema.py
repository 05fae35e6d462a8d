"""Input schemas read from a tool's prose description, for tools that declare none (AgentCheck's
templates give every tool a description and a clean response, never an input schema).

Without a schema an agent can only call a tool with ``{}``, so a fault about arguments (A4's
renames) is never exercised. Half the template descriptions name their parameters
("Parameters: path (string, required) — ...", "Accepts a 'cron' string", "Takes a query string
(query) and an integer ... (top_k)"); the rest say what the tool is looked up by ("for a given
ticker symbol", "by its doc_id"), which the tool's clean response usually echoes (``ticker``,
``doc_id``). The rules, in order:

1. a parameter list after a marker (``Parameters:``, ``Arguments:``, ``Args:``, ``Input:``,
   ``Takes parameters:``, ``Required arguments:``) up to a sentence that starts the returns
   (``Returns …``, ``Output: …``; a "return" inside an item's words ends nothing):
   ``name (type, required|optional) — text``,
   or a JSON example object (``Input: {"country": "India"}``); an item that declares its type
   names a parameter even when the name is a type word (``number (integer, required)``,
   ``text (string, required)``); each item keeps its own words (``default 3``, ``— the stock
   symbol``) as its ``description``, which an agent reads ("max 3"); the marker, the words
   for required and optional, the parenthesis's type words and the returns that end the list
   are read in Spanish, French, German, Portuguese and Italian too (:mod:`prose_lexicon`:
   ``Parámetros: nombre (cadena, obligatorio)``); an object's keys listed after it
   (``filters (object) with keys status (string) and age_groups (array)``) are its
   ``properties``, not parameters; an array's ``items`` have the type its words name
   (``array of objects``, ``lista de cadenas``), and an array of objects's keys listed after
   it are its items' ``properties``, and so are keys written in braces, in its parenthesis
   or opening its words (``sort (array of {field, order})``, ``sort (array), each {field,
   order}``);
2. quoted or parenthesised names in the sentence part before ``returns``/``returning``
   (outputs are named there too; "to return" is no such part) of a sentence that takes
   something (accepts, takes, requires, expects, parameter, argument, given, provide, by):
   ``'cron' string``, ``(query)``, typed by the words since the previous item (``a query
   string (query) and an integer (top_k)``);
3. ``<name> <type>`` / ``<type> <name>`` pairs with a snake_case name (``a top_k integer``,
   ``a single doc_id string``) and ``by its <name>``;
4. a top-level scalar field of the clean response whose name (or its first word) appears in
   the taking part (``for a given ticker symbol`` + ``{"ticker": ...}``; ``given its ID`` +
   ``{"doc_id": ...}``);
5. a search/query/lookup tool with nothing else found takes ``query``.

"No parameters" / "no arguments" mean none. A parameter is required unless the text says
optional. Types come from the parenthesis or the word beside the name (``string`` by default;
``YYYY-MM-DD`` is a date string). The schema allows further arguments (``additionalProperties``)
— it is a reading of prose, and a server must not refuse a call because the reading missed
one — and says where it came from in ``$comment``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from toolwatch.injection.faults.prose_lexicon import TYPE_WORDS, words

DERIVED_COMMENT: Final = "derived by toolwatch from the tool's description (none was declared)"

#: A parameter's name: letters of any script ("año", "código_postal"), digits, ``_`` and ``-``.
_NAME = r"[^\W\d]\w*(?:-\w+)*"
_TYPES: Final[dict[str, str]] = {
    "string": "string",
    "str": "string",
    "text": "string",
    "integer": "integer",
    "int": "integer",
    "number": "number",
    "float": "number",
    "boolean": "boolean",
    "bool": "boolean",
    "object": "object",
    "dict": "object",
    "dictionary": "object",
    "array": "array",
    "list": "array",
}
_TYPE_WORD = r"(?:" + "|".join(_TYPES) + r")s?"
#: The type words of a listed parameter's parenthesis, in every language of :mod:`prose_lexicon`.
_LISTED_TYPES: Final = {**_TYPES, **TYPE_WORDS}
_LISTED_TYPE_WORD = r"(?:" + "|".join(sorted(_LISTED_TYPES, key=len, reverse=True)) + r")s?"
_REQUIRED_WORD = rf"(?:{words('required')})"
_OPTIONAL_WORD = rf"(?:{words('optional')})"
_MARKER = re.compile(
    rf"\b(?:(?:takes|required|optional)\s+)?(?:{words('marker')})\s*:\s*",
    re.I,
)
_NO_ARGS = re.compile(r"\bno (?:parameters|arguments|args|inputs?)\b|\btakes no\b", re.I)
#: ``name (type, ...)`` at the start of a list item (after the marker, a comma, a semicolon,
#: "and" in any language of the lexicon, an object's "with keys", or a taking verb with its
#: article).
_ITEM = re.compile(
    rf"(?:^|[,;:]|\b(?:and|y|e|et|und|ed|{words('keys')})\b"
    rf"|\b(?:accepts?|takes?|requires?|expects?|parameters?|arguments?)\b)"
    rf"\s*(?:(?:an?|the|single)\s+)*({_NAME})\s*\(([^)]*)\)",
    re.I,
)
#: What the tool returns, where it is said: never "to return" ("the number of hours to
#: return" is a parameter's words, not the returns).
_RETURNS = re.compile(r"(?<!\bto )\b(?:returns?|returning|outputs?|responds?)\b", re.I)
#: The start of the returns section of a parameter list: a sentence (or a list item) that
#: opens with it ("… top_k (integer). Returns a list"), not a return inside a parameter's
#: own words ("hours (integer) — hours of data it returns, max 48; unit (string)").
_RETURNS_SECTION = re.compile(rf"(?:^|(?<=[.!?;])\s+|\n)\s*(?:{words('returns')})\b", re.I)
_TAKES = re.compile(
    r"\b(?:accepts?|takes?|requires?|expects?|parameters?|arguments?|given|provide|providing|"
    r"by|for|with|specif\w+|named)\b",
    re.I,
)
_QUOTED = re.compile(rf"['\"`]({_NAME})['\"`]")
_PAREN_NAME = re.compile(r"\(([a-z_][a-z0-9_]*)\)")
#: Type words that are not also verbs or plain nouns ("lists files", "text of"), for pairs.
_PAIR_TYPE = r"(?:string|integer|int|number|float|boolean|bool|object|array)s?"
_PAIR = re.compile(rf"\b({_NAME})\s+({_PAIR_TYPE})\b|\b({_PAIR_TYPE})\s+({_NAME})\b", re.I)
_BY_ITS = re.compile(rf"\bby (?:its|the|a) ({_NAME})\b", re.I)
#: "for a given ticker symbol", "at the specified path", "by its ID": what a lookup is by.
_LOOKUP = re.compile(
    r"\b(?:given|specified|specific|particular|provided|by (?:its|the|an?)|for (?:an?|the)|"
    r"(?:at|to) the)\s+((?:[\w-]+\s+){0,2}[\w-]+)",
    re.I,
)
#: Argument names common enough that naming the noun names the argument.
_COMMON: Final = frozenset(
    {
        "query",
        "path",
        "content",
        "url",
        "name",
        "text",
        "id",
        "ticker",
        "symbol",
        "country",
        "city",
        "location",
        "keyword",
        "drug",
        "region",
        "message",
        "email",
        "date",
        "host",
        "organism",
        "company",
        "reason",
    }
)
_SEARCHES = re.compile(r"\b(search\w*|quer\w+|look\w* up|lookup)\b", re.I)
_SENTENCE = re.compile(r"[^.!?]+(?:[.!?]+(?=\s|$)|$)")
_STOP: Final = frozenset(
    {
        "a",
        "an",
        "the",
        "and",
        "or",
        "of",
        "to",
        "its",
        "given",
        "single",
        "specified",
        "unique",
        "full",
        "required",
        "optional",
        "default",
        "e",
        "g",
        "eg",
        "format",
        "parameter",
        "parameters",
        "argument",
        "arguments",
        "human-readable",
    }
)


def _type_of(text: str, types: Mapping[str, str] = _TYPES) -> dict[str, Any]:
    """JSON Schema type of a parameter from the words describing it (``types``: the words read
    as types; a listed parameter's parenthesis reads every language's)."""
    if re.search(r"YYYY-MM-DD", text):
        return {"type": "string", "format": "date"}
    for word in re.findall(r"[^\W\d_]+", text.lower()):
        if word in types:
            return {"type": types[word]}
    return {"type": "string"}


def _listed_type(inside: str) -> dict[str, Any]:
    """A listed parameter's type from its parenthesis, an array's with the type of its items
    when the words after the array word name one ("array of objects" → ``items: object``,
    "lista de cadenas", "liste d'entiers", "Liste von Zeichenketten", "elenco di stringhe")."""
    schema = _type_of(inside, _LISTED_TYPES)
    if schema["type"] != "array":
        return schema
    words = re.findall(r"[^\W\d_]+", inside.lower())
    at = next(i for i, w in enumerate(words) if _LISTED_TYPES.get(w) == "array")
    for word in words[at + 1 :]:
        # a plural's singular: objects, cadenas, Ganzzahlen, Objekte, interi, stringhe
        for form in (word, word[:-1], word[:-2], word[:-1] + "o", word[:-2] + "a"):
            if form in _LISTED_TYPES:
                return {**schema, "items": {"type": _LISTED_TYPES[form]}}
    return schema


def _near_type(part: str, start: int, end: int) -> dict[str, Any]:
    """The type word right before (``an integer 'top_k'``) or after (``'cron' string``) a
    name, else string."""
    paren = re.match(r"\s*\(([^)]*)\)", part[end:])
    if paren:
        return _type_of(paren.group(1))
    before = re.findall(r"[A-Za-z]+", part[max(0, start - 20) : start].lower())[-1:]
    after = re.findall(r"[A-Za-z]+", part[end : end + 20].lower())[:1]
    for word in [*before, *after]:
        if word in _TYPES:
            return {"type": _TYPES[word]}
    return {"type": "string"}


#: Where the words describing one parenthesised name start: after the previous item.
_ITEM_BOUNDARY = re.compile(r"[()[\],;]|\b(?:and|or|plus)\b", re.I)


def _own_words(before: str) -> str:
    """The words that describe the name right after ``before`` — not a previous item's
    ("a query string (query) and an integer (top_k)": top_k is an integer, not a string, and
    an "optional" before "(query)" does not make top_k optional)."""
    return _ITEM_BOUNDARY.split(before)[-1]


def _name_ok(name: str) -> bool:
    lowered = name.lower()
    return (
        lowered not in _STOP
        and lowered not in _TYPES
        and not re.fullmatch(r"[A-Z]+(?:-[A-Z]+)*", name)  # YYYY-MM-DD, ISO
    )


def _snake(name: str) -> bool:
    return "_" in name or "-" in name.strip("-")


Found = list[tuple[str, dict[str, Any], bool]]


#: The end of a parameter's own words: a sentence end that is no "e.g." or "i.e." (or a
#: semicolon, which ends a list item).
_WORDS_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)\.(?:\s|$)")
_TYPING = re.compile(
    rf"(?:\s*\b(?:{_LISTED_TYPE_WORD}|{_REQUIRED_WORD}|{_OPTIONAL_WORD})\b)+\s*", re.I
)
#: An object parameter's keys follow its parenthesis ("filters (object) with keys status
#: (string) and age_groups (array of strings)") up to the end of its list item.
_KEYS_FOLLOW = re.compile(rf"\s*[-–—:,]?\s*(?:{words('keys')})\b\s*:?", re.I)
_ITEM_END = re.compile(rf";|\n|{_WORDS_END.pattern}")


def _described(inside: str, after: str) -> str:
    """A listed parameter's own description: what its parenthesis says besides its type
    ("default 5", "format 'lat,lng'") and the words after it up to the next item ("— the
    stock symbol", ": maximum number of results to return")."""
    extra = ",".join(p for p in inside.split(",") if not _TYPING.fullmatch(p)).strip(" ,;")
    words = re.split(r";", _WORDS_END.split(after, maxsplit=1)[0], maxsplit=1)[0]
    words = re.sub(r"^[\s\-–—:,]+|[\s,;.]+$|\s+(?:and|or)$", "", words).strip()
    return "; ".join(w for w in (extra, words) if w)


def _holders(segment: str, found: list[re.Match[str]]) -> dict[int, int]:
    """Which listed items are keys of an object item before them (item index → the object's
    index): those after "with keys" (any language of :mod:`prose_lexicon`) up to the end of
    the object's list item, a semicolon, a line or a sentence end."""
    holder: dict[int, int] = {}
    for k, item in enumerate(found):
        if k in holder or _object_of(_listed_type(item.group(2))) is None:
            continue
        keys = _KEYS_FOLLOW.match(segment, item.end())
        if keys is None:
            continue
        stop = _ITEM_END.search(segment, keys.end())
        end = stop.start() if stop else len(segment)
        for j in range(k + 1, len(found)):
            if found[j].start() >= end:
                break
            holder[j] = k
    return holder


#: An array's item keys written in braces: in its parenthesis ("sort (array of {field,
#: order})") or opening the words after it ("sort (array of objects), each {field, order}",
#: "— an array of {field, order}"), each key bare or typed ("{field (string, required),
#: order: string}").
_BRACES = re.compile(r"\{([^{}]*)\}")
_BRACES_AFTER = re.compile(
    r"\s*[-–—:,]?\s*(?:(?:each|every)(?: (?:item|element|entry|one))?(?: (?:is|has|with))?|"
    r"(?:(?:an?|the) )?(?:array|list) of|of)?\s*:?\s*\{([^{}]*)\}",
    re.I,
)
_BRACED_KEY = re.compile(rf"(?:^|[,;])\s*({_NAME})(?:\s*\(([^)]*)\)|\s*:?([^,;()]*))")


def _braced(segment: str, found: list[re.Match[str]]) -> tuple[dict[int, dict[str, Any]], set[int]]:
    """The items of each array item whose keys are written in braces (item index → an object
    schema with those keys as its properties, each required only when its own words say so),
    and the indices of listed items inside such braces (keys, not parameters)."""
    items: dict[int, dict[str, Any]] = {}
    inner: set[int] = set()
    for k, item in enumerate(found):
        schema = _listed_type(_BRACES.sub(" ", item.group(2)))  # a key named "text" types none
        if schema["type"] != "array" or schema.get("items", {"type": "object"})["type"] != "object":
            continue
        after = _BRACES_AFTER.match(segment, item.end())
        braces = after or _BRACES.search(item.group(2))
        if braces is None:
            continue
        keys: dict[str, Any] = {"type": "object", "properties": {}}
        for key in _BRACED_KEY.finditer(braces.group(1).strip()):
            words = key.group(2) or key.group(3) or ""
            keys["properties"].setdefault(key.group(1), _listed_type(words))
            if re.search(rf"\b{_REQUIRED_WORD}\b", words, re.I):
                keys.setdefault("required", []).append(key.group(1))
        if not keys["properties"]:
            continue
        items[k] = keys
        if after is not None:
            inner |= {j for j, f in enumerate(found) if item.end() <= f.start() < after.end()}
    return items, inner


def _object_of(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The object schema that holds the keys listed after a parameter: its own when it is an
    object, its items' when it is an array of objects ("sort (array of objects) with keys
    field (string) and order (string)": each sort item has a field and an order), else none."""
    if schema["type"] == "object":
        return schema
    items = schema.get("items")
    return items if isinstance(items, dict) and items.get("type") == "object" else None


def _items(
    segment: str, *, all_optional: bool = False, typed_only: bool = False, text: str = ""
) -> Found:
    """Parameters listed in ``segment``, each described by its own words when ``text`` (the
    text ``segment`` starts, with what follows it) is given. An object's keys are its
    ``properties``, not parameters of their own; a key is required only when its own
    parenthesis says so (they say what the object may hold, not what a call must send)."""
    out: Found = []
    found = list(_ITEM.finditer(segment))
    holder = _holders(segment, found)
    braced, inner = _braced(segment, found)
    schemas: dict[int, dict[str, Any]] = {}
    for k, item in enumerate(found):
        name, inside = item.group(1), item.group(2)
        if k in inner:
            continue
        typed = (
            re.search(
                rf"\b(?:{_LISTED_TYPE_WORD}|{_REQUIRED_WORD}|{_OPTIONAL_WORD})\b", inside, re.I
            )
            is not None
        )
        # "number (integer, required)", "text (string, required)": a list item that declares
        # its type names a parameter even when the name is a type word ("a string (query)"
        # is a type, not a parameter called string)
        named = typed and name.lower() in _TYPES and name.islower()
        if not _name_ok(name) and not named and not (len(name) == 1 and name.isalpha()):
            continue
        if typed_only and not typed:
            continue
        following = segment[item.end() : item.end() + 40]
        optional = all_optional or bool(
            re.search(rf"\b{_OPTIONAL_WORD}\b", inside + " " + following.split(",")[0], re.I)
        )
        schema = _listed_type(inside)
        if k in braced:
            schema["items"] = braced[k]
        if text:
            end = next(
                (
                    f.start()
                    for j, f in enumerate(found)
                    if j > k and holder.get(j) != k and j not in inner
                ),
                len(text),
            )
            if described := _described(inside, text[item.end() : end]):
                schema["description"] = described
        schemas[k] = schema
        held = schemas.get(holder.get(k, -1))
        parent = None if held is None else _object_of(held)
        if parent is None:
            out.append((name, schema, not optional))
            continue
        parent.setdefault("properties", {}).setdefault(name, schema)
        if re.search(rf"\b{_REQUIRED_WORD}\b", inside, re.I):
            parent.setdefault("required", []).append(name)
    return out


def _marked_list(description: str) -> Found:
    """Parameters listed after a marker: (name, schema, required)."""
    out: Found = []
    for marker in _MARKER.finditer(description):
        rest = description[marker.end() :]
        if rest.lstrip().startswith("{"):
            try:
                example, _ = json.JSONDecoder().raw_decode(rest.lstrip())
            except ValueError:
                example = None
            if isinstance(example, Mapping):
                for key, value in example.items():
                    out.append((str(key), _type_of(type(value).__name__), True))
                continue
        segment = _RETURNS_SECTION.split(rest, maxsplit=1)[0]
        optional = marker.group(0).lower().startswith("optional")
        out += _items(segment, all_optional=optional, text=rest)
    return out


def _taking_parts(description: str) -> list[str]:
    """The part of each sentence that says what the tool takes (before it says what it
    returns), for sentences that take something."""
    parts = []
    for m in _SENTENCE.finditer(description):
        part = _RETURNS.split(m.group(0), maxsplit=1)[0]
        if _TAKES.search(part):
            parts.append(part)
    return parts


def _named_in_prose(parts: list[str], keys: set[str]) -> Found:
    out: Found = []
    for part in parts:
        out += _items(part, typed_only=False)
        for m in _QUOTED.finditer(part):
            if _name_ok(m.group(1)):
                after = part[m.end() : m.end() + 30]
                out.append(
                    (m.group(1), _near_type(part, m.start(), m.end()), "optional" not in after)
                )
        for m in _PAREN_NAME.finditer(part):
            if _name_ok(m.group(1)):
                before = _own_words(part[max(0, m.start() - 40) : m.start()])
                out.append((m.group(1), _type_of(before), "optional" not in before.lower()))
        for m in _PAIR.finditer(part):
            name, word = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
            known = _snake(name) or name.lower() in keys or name.lower() in _COMMON
            if known and _name_ok(name):
                out.append((name, _type_of(word), True))
        for m in _BY_ITS.finditer(part):
            if _snake(m.group(1)):
                out.append((m.group(1), {"type": "string"}, True))
    return out


def _looked_up_by(description: str, response: Any) -> Found:
    """What a lookup is by: the nouns after "given", "specified", "by its", "for a" that name a
    top-level scalar field of the clean response (``ticker``; ``ID`` for ``doc_id``) or a
    common argument (``path``, ``content``)."""
    fields: dict[str, Any] = {}
    if isinstance(response, Mapping):
        fields = {
            str(k): v
            for k, v in response.items()
            if not isinstance(v, Mapping | list | bool) and v is not None
        }
    out: Found = []
    for m in _LOOKUP.finditer(description):
        for word in re.findall(r"[\w-]+", m.group(1).lower()):
            if word in _STOP:
                continue
            match = next((k for k in fields if k.lower() == word), None)
            if match is None and word == "id":
                match = next((k for k in fields if re.fullmatch(r"(?:\w+_)?id", k.lower())), None)
            if match is not None:
                value = fields[match]
                kind = (
                    "integer"
                    if isinstance(value, int)
                    else "number"
                    if isinstance(value, float)
                    else "string"
                )
                out.append((match, {"type": kind}, True))
                break
            if word in _COMMON:
                out.append((word, {"type": "string"}, True))
                break
    return out


def derive_input_schema(description: str, response: Any = None) -> dict[str, Any]:
    """A JSON Schema for a tool's arguments, read from its description (see the module doc).
    ``response`` is the tool's clean response (rule 4)."""
    found: list[tuple[str, dict[str, Any], bool]] = []
    if not _NO_ARGS.search(description):
        found = _marked_list(description)
        keys = {str(k).lower() for k in response} if isinstance(response, Mapping) else set()
        if not found:
            found = _named_in_prose(_taking_parts(description), keys)
        if not found:
            found = _looked_up_by(description, response)
        if not found and _SEARCHES.search(description):
            found = [("query", {"type": "string"}, True)]
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, schema, is_required in found:
        if name in properties:
            continue
        properties[name] = schema
        if is_required:
            required.append(name)
    schema_out: dict[str, Any] = {
        "type": "object",
        "$comment": DERIVED_COMMENT,
        "properties": properties,
        "additionalProperties": True,
    }
    if required:
        schema_out["required"] = required
    return schema_out
