"""toolwatch.collector: every way call records enter the store, and the store itself.

Rooms: ``store`` (the Parquet tree, its DuckDB views, the Arrow schemas), ``otlp`` (the
OTLP/HTTP receiver and its group-commit writer), ``sources`` (the Claude Code importer, the
simulator and the delivery both use), ``stats`` (the corpus facts beside the study's) and
``commands`` (``toolwatch sql|store|import|simulate|stats``). ``otlp``, ``sources`` and ``stats``
sit on ``store`` and never import each other (import-linter contracts in pyproject.toml).
"""
