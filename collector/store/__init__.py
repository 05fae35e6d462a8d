"""The store: an append-only Parquet tree (one folder per table, one per day) with DuckDB views
over it, and the Arrow schemas derived from the table registry (:mod:`toolwatch.tables`)."""

from toolwatch.collector.store.arrow_schema import CALLS_SCHEMA
from toolwatch.collector.store.parquet_store import Store, StoreError, add_store_argument

__all__ = ["CALLS_SCHEMA", "Store", "StoreError", "add_store_argument"]
