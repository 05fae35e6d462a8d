"""The `toolwatch` subcommands of detection: leaves that parse arguments, call the rooms and
print. Nothing imports them but `toolwatch.cli` (an import-linter contract).

``collector.py`` (``toolwatch collector``) lives here, not in collector/: it composes the OTLP
collector with the live scorer, and only a room above both may import both.
"""
