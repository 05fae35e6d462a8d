"""The lower bounds in pyproject.toml are no lower than the versions the tests were run at
(docs/ARCHITECTURE.md, "Tested lowest versions"): a bound lowered past its tested row is a
version nobody tried."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.version import Version

from support.paths import REPO

DOC = (REPO / "docs" / "ARCHITECTURE.md").read_text()
_ROW = re.compile(r"^\| ([a-z][a-z0-9-]*) \| (\d[\w.]*) \|", re.M)


def minimums_of_the_docs() -> dict[str, Version]:
    """The table's rows: distribution → lowest version its tests passed at."""
    section = DOC[DOC.index("**Tested lowest versions.**") :]
    section = section[: section.index("\n\n**")]
    return {name: Version(version) for name, version in _ROW.findall(section)}


def declared_bounds() -> dict[str, Version]:
    """Every ``>=`` bound in the core dependencies and the extras (the highest per name)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        lines.extend(extra)
    bounds: dict[str, Version] = {}
    for line in lines:
        requirement = Requirement(line)
        for spec in requirement.specifier:
            if spec.operator == ">=":
                version = Version(spec.version)
                bounds[requirement.name] = max(version, bounds.get(requirement.name, version))
    return bounds


def test_the_table_has_rows() -> None:
    assert {"duckdb", "opentelemetry-proto"} <= set(minimums_of_the_docs())


def test_every_bound_is_at_least_its_tested_minimum() -> None:
    bounds = declared_bounds()
    for name, tested in minimums_of_the_docs().items():
        assert name in bounds, f"{name} is in the tested table but pyproject declares no bound"
        assert bounds[name] >= tested, f"{name}>={bounds[name]} is below the tested {tested}"
