"""What the keys of a JSON tool result mean: identifiers, anchors (what a record is about),
freshness stamps and response metadata.
"""

from __future__ import annotations

import re
from typing import Final

_META_KEYS: Final = re.compile(
    r"(^|_)(count|total|page|pages|limit|offset|query|q|cursor|next|took|ms|source)$", re.I
)


def is_metadata_key(key: str) -> bool:
    """Scalars that describe a response rather than carry its content (ids, dates, counts)."""
    return bool(
        ANCHOR_KEYS.search(key)
        or IDENTIFIER_NAME.search(key)
        or FRESHNESS_KEYS.search(key)
        or _META_KEYS.search(key)
    )


#: Keys whose date says how current the data is (not what it is about: a contract's start date
#: or a birth date may be old and still correct).
FRESHNESS_KEYS: Final = re.compile(
    r"(as_?of|updated|modified|timestamp|fetched|retrieved|observed|generated|refreshed|"
    r"last_?(?:update|sync|seen|checked|refresh)|valid_?(?:at|on|from)|captured|reported_?at|"
    r"issued|collected|published|released|rules_effective)",
    re.I,
)
#: Keys whose value is the date the data is *of* (a population's year, a release's date, a
#: report's week) — stale when the task needs current data and this is old.
DATA_DATE_KEYS: Final = re.compile(r"(^|_)(year|date|week|period|as_of|timestamp)$", re.I)
#: Keys that name the entity a result is about (two results about the same entity share one).
ANCHOR_KEYS: Final = re.compile(
    r"(^id$|_id$|^sku$|^symbol$|^ticker$|^flight$|^city$|^region$|^account$|^repo$|^isbn$)", re.I
)
#: Argument names that identify what is asked for (compared with the result's echo).
IDENTIFIER_NAME: Final = re.compile(
    r"(^|_)(id|key|code|number|no|ref|sku|slug|symbol|ticker|flight|station|account|country|"
    r"company)$",
    re.I,
)

#: The bare identifying words of :data:`ANCHOR_KEYS`, which another tool may spell with a
#: prefix naming the record itself or an identifier suffix (``item_sku``, ``skuCode``).
_ANCHOR_WORDS: Final = frozenset(
    {"sku", "symbol", "ticker", "flight", "account", "repo", "isbn", "city", "region"}
)
#: Prefixes that name the record a field belongs to, never another entity: ``item_sku`` is
#: the item's SKU, while ``parent_sku`` or ``origin_city`` name something else.
_SELF_PREFIXES: Final = frozenset(
    [
        "item",
        "product",
        "part",
        "article",
        "stock",
        "catalog",
        "catalogue",
        "inventory",
        "line",
        "record",
        "entry",
        "company",
        "security",
        "instrument",
        "book",
        "repository",
    ]
)
_ID_SUFFIXES: Final = frozenset({"id", "code", "number", "no", "num"})


def anchor_name(key: str) -> str | None:
    """The identifying field ``key`` names, in one spelling, so two tools' spellings of one
    identifier match: ``sku``, ``item_sku``, ``productSku``, ``sku_code`` → ``sku``;
    ``order_id``, ``orderId`` → ``order_id``; None for a key that is no anchor (``parent_sku``,
    ``origin_city``: another entity's)."""
    words = [w for w in re.split(r"[_\W]+|(?<=[a-z0-9])(?=[A-Z])", key) if w]
    words = [w.lower() for w in words]
    stem = words[:-1] if len(words) > 1 and words[-1] in _ID_SUFFIXES else words
    if len(stem) == 2 and stem[0] in _SELF_PREFIXES:
        stem = stem[1:]
    if len(stem) == 1 and stem[0] in _ANCHOR_WORDS:
        return stem[0]
    if words and words[-1] == "id":
        return "_".join(words)
    return key.lower() if ANCHOR_KEYS.search(key) else None
