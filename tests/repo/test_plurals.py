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


#: A count formatted straight before a plural noun: ``%d calls``, ``{n:,} spans``,
#: ``{} streams``; "1 calls" then reads wrong, so such a count goes through ``words.counted``.
#: The noun may follow up to two qualifying words ("{n:,} tool listings", "{n} shorter
#: test-window sessions"; a word may be hyphenated), not a preposition ("{n} of streams" counts
#: something else); a label after a wide gap ("{a}   capped outputs: {b}") is not the value's
#: noun, so the count and its noun are one space apart.
_NOT_QUALIFIER = r"(?!(?:a|an|and|at|by|for|from|in|of|on|or|per|that|the|to|with)\b)"
_WORD = r"[a-z]+(?:-[a-z]+)*"
_NOUN = " " + rf"(?:{_NOT_QUALIFIER}{_WORD} ){{0,2}}?{_NOT_QUALIFIER}({_WORD}s)\b"
#: A denominator ("{k}/{n} normal test streams") counts the whole, whose noun is the plural.
_PERCENT_COUNT = re.compile(r"(?<!/)%[-+ 0#]*\d*[di]" + _NOUN)
_BRACE_COUNT = re.compile(r"(?<!/)\{[^{}]*\}" + _NOUN)
_NEXT_WORD = re.compile(_NOUN)
#: Words ending in "s" that are not a plural noun after a value: verbs ("{tool} has ..."),
#: and units whose singular reads the same ("3 ms").
_NOT_PLURAL = frozenset(
    (
        "as",
        "contains",
        "declares",
        "detects",
        "differs",
        "does",
        "egress",
        "ends",
        "exists",
        "has",
        "holds",
        "is",
        "its",
        "leaves",
        "lets",
        "lists",
        "ms",
        "needs",
        "occurs",
        "prints",
        "process",
        "requires",
        "returns",
        "this",
        "unless",
        "us",
        "uses",
        "vs",
        "was",
    )
)
#: Values that read as a name, not a count, before a plural noun, or a count whose noun is not
#: the next words (a verb comes first): ``path: text`` pairs.
_NAMED = frozenset(
    {
        ("injection/faults/scenario.py", "{tool} arguments"),  # "for search arguments"
        ("detection/model/normal_model.py", "{what} calls"),  # "training calls: ..."
        ("detection/commands/train.py", "{quirk} streams"),  # "warmup_agent streams"
        ("injection/experiment/levels.py", "{target} alarms"),  # "at 1 % false alarms"
        ("injection/experiment/report.py", "{source} statistics"),  # "of training call ..."
        ("app/demo/agent.py", "{attempts} attempts"),  # the demo's code file, not a message
        ("benchmarks/bench_scanner.py", "{mode} payloads"),  # "wording payloads detected"
        ("app/dashboard/sessions_page.py", "{listed.injected_sessions} calls"),  # "holding"
    }
)
#: A constant (``{MAX_BODY:,} bytes``) is fixed above one where it is defined, and a float
#: (``{rate:,.0f} calls/s``) is a measure, not a count ("1.0 seconds" reads right).
_UPPER = re.compile(r"(^|\.)[A-Z][A-Z0-9_]*$")
_FLOAT_SPEC = re.compile(r"[eEfFgG%]$")


#: Calls whose result is still a bare number; any other call formats its own text
#: (``{counted(n, 'call')}``, ``{pct(rate)}``).
_NUMBER_CALLS = frozenset({"len", "int", "sum", "min", "max", "round"})


def _is_count(value: ast.FormattedValue) -> bool:
    """Whether an f-string field may be a count: not a repr, a constant, a float or text."""
    if value.conversion != -1:
        return False
    call = value.value
    if isinstance(call, ast.Call) and ast.unparse(call.func) not in _NUMBER_CALLS:
        return False
    if _UPPER.search(ast.unparse(value.value)):
        return False
    spec = value.format_spec
    if isinstance(spec, ast.JoinedStr) and spec.values:
        last = spec.values[-1]
        if isinstance(last, ast.Constant) and _FLOAT_SPEC.search(str(last.value)):
            return False
    return True


def _field_counts(node: ast.JoinedStr) -> list[str]:
    """``{expr} nouns`` for each field of an f-string that a plural noun follows."""
    found = []
    values = node.values
    for before, field, after in zip([None, *values], values, values[1:], strict=False):
        if isinstance(before, ast.Constant) and str(before.value).endswith("/"):
            continue  # a denominator
        if isinstance(field, ast.FormattedValue) and isinstance(after, ast.Constant):
            word = _NEXT_WORD.match(str(after.value))
            if word and word[1] not in _NOT_PLURAL and _is_count(field):
                found.append(f"{{{ast.unparse(field.value)}}} {word[1]}")
    return found


def bare_counts(path: Path, root: Path = REPO) -> list[str]:
    """``path:line: text`` for each count written with a plural noun but not ``counted``."""
    tree = ast.parse(path.read_text(), str(path))
    rel = str(path.relative_to(root))
    skip = _docstrings(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skip.update(id(part) for part in node.values)
            found += [(node.lineno, text) for text in _field_counts(node)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in skip:
                continue
            for pattern in (_PERCENT_COUNT, _BRACE_COUNT):
                found += [
                    (node.lineno, m[0])
                    for m in pattern.finditer(node.value)
                    if m[1] not in _NOT_PLURAL
                ]
    return [f"{rel}:{line}: {text!r}" for line, text in sorted(found) if (rel, text) not in _NAMED]


def test_no_message_writes_a_count_beside_a_plural_noun() -> None:
    found = [hit for path in _sources() for hit in bare_counts(path)]
    assert not found, "write counts with words.counted (1 call, 2 calls):\n" + "\n".join(found)


def test_the_count_check_finds_bare_counts_and_spares_names_constants_and_measures(
    tmp_path: Path,
) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        '"""Never "%d calls"."""\n'
        "def f(n, tool, rate):\n"
        '    log.info("stored %d calls and %5d spans", n, n)\n'
        '    a = f"{n:,} tool listings, {tool!r} has {n} streams"\n'
        '    b = "{} attempts".format(n)\n'
        '    c = f"{MAX_BODY:,} bytes at {rate:,.0f} calls/s in {n} ms; {tool} is up"\n'
        "    d = f\"{n} of streams, {n}   capped outputs: {n}, {counted(n, 'call')} spans\"\n"
        '    e = f"{n:,} test-split streams, {n} shorter test-window sessions, {n}/{n} runs"\n'
        '    return a, b, c, d, e, "%d/%d runs, {} files -> {}"\n'
    )
    assert bare_counts(module, tmp_path) == [
        "m.py:3: '%5d spans'",
        "m.py:3: '%d calls'",
        "m.py:4: '{n} listings'",
        "m.py:4: '{n} streams'",
        "m.py:5: '{} attempts'",
        "m.py:8: '{n} sessions'",
        "m.py:8: '{n} streams'",
        "m.py:9: '{} files'",
    ]


#: The plural endings a message may add to a noun by hand: ``group{'' if n == 1 else 's'}``.
_ENDINGS = frozenset({("", "s"), ("", "es")})


def _hand_ending(value: ast.expr) -> bool:
    """Whether an f-string field is ``'s' if … else ''`` (either way round)."""
    if not isinstance(value, ast.IfExp):
        return False
    ends = [end.value for end in (value.body, value.orelse) if isinstance(end, ast.Constant)]
    return len(ends) == 2 and tuple(sorted(map(str, ends))) in _ENDINGS


def hand_plurals(path: Path, root: Path = REPO) -> list[str]:
    """``path:line: word{…}`` for each noun whose plural "s" an f-string adds by hand instead of
    ``words.counted`` / ``words.noun_for``."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.JoinedStr):
            continue
        for before, field in zip(node.values, node.values[1:], strict=False):
            if (
                isinstance(before, ast.Constant)
                and isinstance(field, ast.FormattedValue)
                and re.search(r"[a-z]$", str(before.value))
                and _hand_ending(field.value)
            ):
                word = str(before.value).split()[-1]
                found.append(f"{path.relative_to(root)}:{node.lineno}: {word + '{…}'!r}")
    return found


def test_no_message_adds_a_plural_ending_by_hand() -> None:
    found = [hit for path in _sources() for hit in hand_plurals(path)]
    assert not found, "write counts with words.counted or words.noun_for:\n" + "\n".join(found)


def test_the_ending_check_finds_a_hand_plural_and_spares_other_choices(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "def f(n, raw):\n"
        "    a = f\"{n} group{'' if n == 1 else 's'}, {n} error{'s' if n > 1 else ''}\"\n"
        "    b = f\"{n} box{'es' if n != 1 else ''}\"\n"
        "    c = f\"used {'a first use, ' if raw else ''}{n} B{'' if raw else '*'}\"\n"
        "    d = f\"{n} items{'' if raw else 's'}, {'s' if raw else ''}\"\n"
        "    return a, b, c, d\n"
    )
    assert hand_plurals(module, tmp_path) == [
        "m.py:2: 'group{…}'",
        "m.py:2: 'error{…}'",
        "m.py:3: 'box{…}'",
        "m.py:5: 'items{…}'",
    ]
