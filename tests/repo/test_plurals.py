"""No message of the package writes a count as "call(s)": every count takes its noun's
singular for exactly one and the plural otherwise (``words.counted``)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from support.paths import REPO

#: "word(s)" in a string; "http(s)" is a URL scheme, not a count, and a unit in a column title
#: is written with a space ("gap (s)": seconds), so neither matches.
_PLURAL = re.compile(r"(?<!http)(?<=\w)\(s\)")
_SKIP = {"tests", "build", "docs"}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes (a docstring may name the form it forbids)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def plural_literals(path: Path, root: Path = REPO) -> list[str]:
    """``path:line: text`` for each string literal (f-string parts too) writing "word(s)"."""
    tree = ast.parse(path.read_text(), str(path))
    docs = _docstrings(tree)
    return [
        f"{path.relative_to(root)}:{node.lineno}: {node.value.strip()[:60]!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and _PLURAL.search(node.value)
    ]


def _sources() -> list[Path]:
    return sorted(
        p
        for p in REPO.rglob("*.py")
        if not any(part in _SKIP or part.startswith(".") for part in p.relative_to(REPO).parts)
    )


def test_no_message_writes_a_plural_in_parentheses() -> None:
    found = [hit for path in _sources() for hit in plural_literals(path)]
    assert not found, "write counts with words.counted:\n" + "\n".join(found)


def test_the_check_finds_a_plural_and_spares_a_scheme_a_unit_and_a_docstring(
    tmp_path: Path,
) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        '"""Never "1 stream(s)"."""\n'
        'URL = "http(s)://host"\n'
        'TITLE = "gap (s)"\n'
        'def f(n):\n    """n call(s)."""\n    return f"{n} span(s) rejected"\n'
    )
    assert plural_literals(module, tmp_path) == ["m.py:6: 'span(s) rejected'"]
