"""The `toolwatch` subcommands of this component: leaves that parse arguments, call the rooms and
print. Nothing imports them but `toolwatch.cli` (an import-linter contract).
"""
