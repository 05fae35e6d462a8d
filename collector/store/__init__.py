"""The store: an append-only Parquet tree (one folder per table, one per day) with DuckDB views
over it, and the Arrow schemas derived from the table registry (:mod:`toolwatch.tables`).

The names below load on first use (:mod:`toolwatch.lazy`): ``location`` (the ``--store``
option, a table name's check) needs neither DuckDB nor Arrow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwatch.lazy import lazy_names

if TYPE_CHECKING:
    from toolwatch.collector.store.arrow_schema import CALLS_SCHEMA
    from toolwatch.collector.store.location import StoreError, add_store_argument
    from toolwatch.collector.store.parquet_store import Store

__all__ = ["CALLS_SCHEMA", "Store", "StoreError", "add_store_argument"]
__getattr__ = lazy_names(
    __name__,
    {
        "CALLS_SCHEMA": "toolwatch.collector.store.arrow_schema",
        "Store": "toolwatch.collector.store.parquet_store",
        "StoreError": "toolwatch.collector.store.location",
        "add_store_argument": "toolwatch.collector.store.location",
    },
)
