"""Imports between the package's parts run one way, and every part stays small enough to read.

Proves: no two parts of ``memory_pipeline`` (a package such as ``recall/`` or a top-level module
such as ``embedding.py``) import each other, directly or through others, counting imports inside
functions too; nothing imports the CLI; the recall layer imports no Dagster. A cycle makes a
change in one slice ripple into another and makes "which layer is lower?" unanswerable.
Proves also: no package (a subpackage counts as its own) holds more than 15 modules and no module
is longer than 450 lines, so a package can be taken in at a glance and a module in one sitting.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "memory_pipeline"
MAX_MODULES = 15
"""Modules (``.py`` files, ``__init__.py`` included) one package may hold."""
MAX_LINES = 450
"""Lines one module may have."""


def _imports() -> dict[str, dict[str, list[str]]]:
    """part -> imported part -> where ("file:line"), for every ``from memory_pipeline.x`` import."""
    edges: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        part = parts[0] if len(parts) > 1 else path.stem
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names if node.module == "memory_pipeline"]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                pieces = name.split(".")
                if pieces[0] == "memory_pipeline" and len(pieces) > 1 and pieces[1] != part:
                    edges[part][pieces[1]].append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return edges


def _reaches(edges, start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        here = todo.pop()
        for nxt in edges.get(here, {}):
            if nxt == goal:
                return True
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


def test_no_two_parts_import_each_other():
    edges = _imports()
    assert len(edges) > 10  # the walk found the package's parts
    cycles = [f"{a} -> {b} ({', '.join(edges[a][b][:2])})" for a in sorted(edges) for b in sorted(edges[a]) if _reaches(edges, b, a)]
    assert cycles == []


def test_nothing_imports_the_cli_and_recall_imports_no_dagster():
    edges = _imports()
    assert [a for a in edges if "cli" in edges[a]] == []
    recall = sorted((PACKAGE / "recall").rglob("*.py"))
    assert recall
    assert [str(p.relative_to(PACKAGE)) for p in recall if _imports_dagster(p)] == []


def _imports_dagster(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "dagster" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "dagster":
            return True
    return False


def test_packages_and_modules_stay_small():
    packages = [PACKAGE, *sorted(d for d in PACKAGE.rglob("*") if (d / "__init__.py").is_file())]
    assert len(packages) > 10  # the walk found the subpackages
    crowded = {str(d.relative_to(PACKAGE.parent)): n for d in packages if (n := len(list(d.glob("*.py")))) > MAX_MODULES}
    assert crowded == {}
    long = {
        str(path.relative_to(PACKAGE.parent)): n
        for path in sorted(PACKAGE.rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}
