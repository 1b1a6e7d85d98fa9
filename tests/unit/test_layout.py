"""The layout explains the architecture: the core imports no outer layer."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "core" / "mnemoweave"
# entry points, what hosts run (hook; cold_start, its answer from the store) and what
# installs into them: not core
OUTER = {"cli", "__main__", "entry", "daemon", "adapters", "demo", "proxy"}
OUTER |= {"hook", "cold_start", "install"}


def outer(name: str) -> bool:
    """An entry point or outer layer: OUTER, every CLI module (cli_*.py) and every module
    of the MCP server (mcp_*.py)."""
    return name in OUTER or name.startswith(("cli_", "mcp_"))


def imported_modules(path: Path) -> set[str]:
    """First component under mnemoweave of every relative or absolute mnemoweave import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    depth = len(path.relative_to(PACKAGE).parts) - 1
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the file's package
                parts = list(path.relative_to(PACKAGE).parts[:-1])[: max(0, depth - node.level + 1)]
                target = parts + (node.module.split(".") if node.module else [])
                names = [target[0]] if target else [alias.name for alias in node.names]
                found.update(names)
            elif node.module and node.module.startswith("mnemoweave."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("mnemoweave."):
                    found.add(alias.name.split(".")[1])
    return found


def test_core_never_imports_entry_points_or_adapters():
    offenders = {}
    for path in PACKAGE.rglob("*.py"):
        top = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        if outer(top):
            continue
        bad = {name for name in imported_modules(path) if outer(name)}
        if bad:
            offenders[str(path.relative_to(PACKAGE))] = bad
    assert not offenders, offenders


def test_adapters_never_touch_the_store():
    adapters = PACKAGE / "adapters"
    for path in adapters.rglob("*.py") if adapters.exists() else []:
        assert "store" not in imported_modules(path), path


def test_modules_stay_small():
    too_long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500
    }
    assert not too_long, too_long


SQL_CALLS = {"execute", "executemany", "executescript"}


def test_sql_lives_in_store():
    """One home for SQL: no module outside store/ runs a statement on a connection."""
    offenders = {}
    for path in PACKAGE.rglob("*.py"):
        name = str(path.relative_to(PACKAGE))
        if path.relative_to(PACKAGE).parts[0] == "store":
            continue
        lines = [
            node.lineno
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SQL_CALLS
        ]
        if lines:
            offenders[name] = sorted(lines)
    assert not offenders, offenders


def test_the_sessions_tables_have_one_owner():
    """Only store/sessions.py (and the migrations) read or write `sessions` and `woven`."""
    import re

    statement = re.compile(r"\b(INTO|UPDATE|FROM|JOIN)\s+(sessions|woven)\b", re.IGNORECASE)
    owners = {"store/sessions.py", "store/migrations.py"}
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if str(path.relative_to(PACKAGE)) not in owners
        and statement.search(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, offenders
