"""Dagster's private API is reached from one module only: ``orchestration/dagster_adapter.py``.

Proves: no other module of ``memory_pipeline`` imports a private module or name of a Dagster
package (``dagster._core...``, ``dagster_postgres._...``, ``from dagster import _check``); none
reads or writes a private attribute of an object it does not define (``part._engine``,
``getattr(manager, "_base_dir")``, ``super()._initdb``); and no class that extends a Dagster class
overrides, calls or sets a private name of its Dagster bases (``_initdb``, ``self._instance``,
``self._event_log_storage``). A release changes private names without warning; kept in one
adapter, a change breaks one module, whose own test (``test_dagster_adapter.py``) says what moved.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "memory_pipeline"
ADAPTER = PACKAGE / "orchestration" / "dagster_adapter.py"


def _modules() -> dict[Path, ast.Module]:
    return {path: ast.parse(path.read_text(encoding="utf-8")) for path in sorted(PACKAGE.rglob("*.py")) if path != ADAPTER}


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _dagster_private_import(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        modules = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
        modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    else:
        return False
    return any(m.split(".")[0].startswith("dagster") and any(map(_private, m.split(".")[1:])) for m in modules)


def _private_uses(tree: ast.Module) -> list[tuple[ast.AST, str, ast.AST]]:
    """(node, private name, the object it is read from) for ``obj._x`` and ``getattr(obj, "_x")``."""
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            uses.append((node, node.attr, node.value))
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr", "setattr")
            and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) and _private(str(node.args[1].value))
        ):
            uses.append((node, node.args[1].value, node.args[0]))
    return uses


def _defined(tree: ast.Module) -> set[str]:
    """Private names the module defines: functions, classes, class attributes, ``self._x = ...``."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        if isinstance(node, ast.ClassDef):
            targets = [s.target for s in node.body if isinstance(s, ast.AnnAssign)]
            targets += [t for s in node.body if isinstance(s, ast.Assign) for t in s.targets]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return {n for n in names if _private(n)}


def _defined_in_part(modules: dict[Path, ast.Module]) -> dict[str, set[str]]:
    """Private names each part of the package (a subpackage or a top-level module) defines."""
    parts: dict[str, set[str]] = {}
    for path, tree in modules.items():
        part = path.relative_to(PACKAGE).parts[0]
        parts.setdefault(part, set()).update(_defined(tree))
    return parts


def test_only_the_adapter_imports_private_dagster_modules():
    modules = _modules()
    assert len(modules) > 50  # the walk found the package
    found = [_where(p, n) for p, tree in modules.items() for n in ast.walk(tree) if _dagster_private_import(n)]
    assert found == [], "move these imports into orchestration/dagster_adapter.py"


def test_only_the_adapter_reads_private_attributes_of_objects_it_does_not_define():
    """``obj._x`` is the package's own only when its part defines ``_x`` (``rows._indices`` in
    ``recall/``); ``super()._x`` reaches a base class's private method, whoever wrote it."""
    modules = _modules()
    parts = _defined_in_part(modules)
    found = []
    for path, tree in modules.items():
        own = parts[path.relative_to(PACKAGE).parts[0]]
        for node, name, holder in _private_uses(tree):
            from_super = isinstance(holder, ast.Call) and isinstance(holder.func, ast.Name) and holder.func.id == "super"
            if from_super or name not in own:
                found.append(f"{_where(path, node)} {ast.unparse(node)}")
    assert found == [], "use a public API, or add a function to orchestration/dagster_adapter.py"


def _dagster_private_names(cls: type) -> set[str]:
    """Private names Dagster's own classes among ``cls``'s bases define or set on ``self``."""
    names = set()
    for base in cls.__mro__[1:]:
        if not base.__module__.split(".")[0].startswith("dagster"):
            continue
        names.update(n for n in vars(base) if _private(n))
        try:
            names.update(re.findall(r"\bself\.(_[a-z]\w*)", inspect.getsource(base)))
        except (OSError, TypeError):
            pass
    return names


def _class_private_names(node: ast.ClassDef) -> dict[str, int]:
    """Private names a class body defines or uses on ``self``/``cls``/``super()``, with a line."""
    names = {}
    for child in ast.walk(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and _private(child.name):
            names.setdefault(child.name, child.lineno)
        elif isinstance(child, ast.Attribute) and _private(child.attr):
            holder = child.value
            if (isinstance(holder, ast.Name) and holder.id in ("self", "cls")) or (
                isinstance(holder, ast.Call) and isinstance(holder.func, ast.Name) and holder.func.id == "super"
            ):
                names.setdefault(child.attr, child.lineno)
    return names


def test_no_class_outside_the_adapter_touches_a_private_name_of_its_dagster_bases():
    """Overriding ``_initdb``, reading ``self._instance`` or setting ``self._event_log_storage`` is
    reaching into Dagster as much as an import is; an own helper that happens to share a name with
    a Dagster base's private one is caught too (a release could start calling it)."""
    found, checked = [], 0
    for path, tree in _modules().items():
        classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.bases]
        imports = [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        if not classes or not any("dagster" in line for line in imports):
            continue
        module = importlib.import_module(".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts))
        for node in classes:
            cls = getattr(module, node.name, None)
            if not isinstance(cls, type) or not any(b.__module__.startswith("dagster") for b in cls.__mro__[1:]):
                continue
            checked += 1
            theirs = _dagster_private_names(cls)
            found += [
                f"{_where(path, node)} {node.name}.{n} (line {line})"
                for n, line in _class_private_names(node).items() if n in theirs
            ]
    assert checked > 5  # the walk found the Dagster subclasses (storages, launcher, resources, IO manager)
    assert found == [], "override or call it through orchestration/dagster_adapter.py"
