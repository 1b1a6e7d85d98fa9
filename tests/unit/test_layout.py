"""The layout is the architecture: folders by responsibility, in layers whose imports point
one way (docs/architecture.md draws them)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[2] / "core" / "mnemoweave"
# each folder or root module of the package, by layer, from the outside in: a module imports
# only from its own layer or the ones after it
LAYERS = {
    "faces": {"cli", "mcp", "daemon", "proxy", "entry", "__main__"},
    "hosts and plugins": {"hosts", "hook", "default_plugins", "team"},
    "core": {"engine", "capture", "learn", "recall", "upkeep", "embed", "plugins", "hookspecs"}
    | {"remote"}
    | {"graph"}
    | {"delegation", "scope"},
    "base": {"store", "model", "errors", "config", "text", "secrets", "projects"},
}
ORDER = list(LAYERS)
MAX_ROOT_MODULES = 15
THROUGH_THE_ENGINE = ["hosts/adapters.py", "hosts/claude_code.py", "hosts/opencode.py"]
THROUGH_THE_ENGINE += ["hosts/dsh.py", "hosts/payloads.py", "hosts/proxy.py", "proxy"]
OPEN_THE_STORE = {
    "store",
    "capture",
    "learn",
    "recall",
    "upkeep",
    "graph",
}  # the engine's side of it


def unit(path: Path) -> str:
    """The folder or root module a file of the package belongs to."""
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def layer(name: str) -> int:
    (index,) = [n for n, layer in enumerate(LAYERS.values()) if name in layer]
    return index


def imported(path: Path) -> set[str]:
    """Every mnemoweave module a file imports (anywhere in it, TYPE_CHECKING too), dotted
    under the package: `store.db`, `engine`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            assert not node.level, f"{path}: a relative import"
            if node.module == "mnemoweave":  # a module, or the package's own (__version__)
                found.update(a.name for a in node.names if a.name in {unit(p) for p in sources()})
            elif node.module.startswith("mnemoweave."):
                found.add(node.module.removeprefix("mnemoweave."))
        elif isinstance(node, ast.Import):
            found.update(
                a.name.removeprefix("mnemoweave.")
                for a in node.names
                if a.name.startswith("mnemoweave.")
            )
    return found


def sources() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE or p.name != "__init__.py"]


def test_every_folder_and_root_module_has_a_layer():
    units = {unit(p) for p in sources()}
    known = set().union(*LAYERS.values())
    assert units <= known, f"not in a layer: {sorted(units - known)}"
    assert known <= units, f"gone: {sorted(known - units)}"


def test_imports_point_one_way():
    offenders = {}
    for path in sources():
        here = layer(unit(path))
        bad = {name for name in imported(path) if layer(name.split(".")[0]) < here}
        if bad:
            offenders[str(path.relative_to(PACKAGE))] = sorted(bad)
    assert not offenders, offenders


def test_host_adapters_and_the_proxy_reach_the_store_through_the_engine():
    """Not the store, and no core module that opens it behind the engine's back."""
    for where in THROUGH_THE_ENGINE:
        for path in [PACKAGE / where] if where.endswith(".py") else (PACKAGE / where).rglob("*.py"):
            reached = {name for name in imported(path) if name.split(".")[0] in OPEN_THE_STORE}
            assert not reached, f"{path.relative_to(PACKAGE)} imports {sorted(reached)}"


def test_the_package_root_holds_few_modules_and_every_folder_says_what_it_holds():
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, root
    for folder in (p.parent for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE):
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))
        assert doc and len(doc) > 80, f"{folder.relative_to(PACKAGE)}/__init__.py says nothing"


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
