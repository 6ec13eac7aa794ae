"""The rooms (top-level folders) and the doors between them, read from every module's imports with `ast`.

An import is eager (run when the module is imported), lazy (inside a function: run when it is called) or for
typing only (under `if TYPE_CHECKING:`: never run). Each room lists the modules it may import and how; a
back-door fails the test with its file and line. docs/architecture.md shows the same graph.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOMS = ("trainer", "server", "worker", "web", "migrations", "sfumato", "bench", "docs", "tests")

# The torch-free contract modules of the trainer that the platform (server/, web/) may import. To share
# another one, add it here (and to docs/architecture.md); it must stay torch-free
# (test_every_trainer_contract_is_torch_free).
# trainer.spec is a package: the job spec, its cost model (trainer.spec.cost_model) and the ingest payload
# (trainer.spec.ingest).
TRAINER_CONTRACTS = ("trainer.spec",)
# What the pages may use of the server: the services, the API's schemas, the settings, and the public
# dependencies (the caller, a session handle for the services, the page-session cookie).
WEB_SERVER_DOORS = ("server.services", "server.schemas", "server.config", "server.states", "server.api.deps",
                    "server.api.page_session")  # fmt: skip
# The composition roots may import every room: the CLI lazily (so `import sfumato.cli` stays light), the
# served application eagerly (importing it means serving).
CLI_ROOT = "sfumato.cli"
APP_ROOT = "sfumato.app"
# Packages only the platform needs: the client (sfumato/ but its roots) never imports them, even lazily.
SERVER_PACKAGES = ("torch", "fastapi", "starlette", "sqlalchemy", "celery", "kombu", "uvicorn", "alembic", "psycopg",
                   "pydantic_settings")  # fmt: skip
# What a page may not do with the session handle it passes to services: query or commit itself.
SESSION_WORK = {"execute", "scalar", "scalars", "get", "get_one", "query", "add", "add_all", "delete", "merge",
                "flush", "commit", "rollback", "refresh"}  # fmt: skip


class When(Enum):
    EAGER = "eager"
    LAZY = "lazy"
    TYPING = "typing"


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    module: str  # the importing module, dotted
    target: str  # the imported module, dotted (a submodule when `from package import submodule`)
    names: tuple[str, ...]  # for `from X import a, b`: a, b
    when: When

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO) if self.path.is_relative_to(REPO) else self.path}:{self.line}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def python_files() -> Iterator[Path]:
    for room in ROOMS:
        for path in sorted((REPO / room).rglob("*.py")):
            if "node_modules" not in path.parts:
                yield path


def is_module(dotted: str) -> bool:
    base = REPO.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    """`from .x import y` in package p → p.x."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(path: Path, module: str | None = None) -> Iterator[Import]:
    module = module or module_name(path)
    tree = ast.parse(path.read_text(), filename=str(path))

    def visit(node: ast.AST, when: When) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for inner in child.body:
                    yield from visit_one(inner, When.TYPING)
                for inner in child.orelse:
                    yield from visit_one(inner, when)
            else:
                yield from visit_one(child, when)

    def visit_one(node: ast.AST, when: When) -> Iterator[Import]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(path, node.lineno, module, alias.name, (), when)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, path, node)
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                target = submodule if is_module(submodule) else source
                yield Import(path, node.lineno, module, target, (alias.name,), when)
        else:
            inner = When.LAZY if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) else when
            yield from visit(node, inner if when is not When.TYPING else When.TYPING)

    yield from visit(tree, When.EAGER)


def under(target: str, *modules: str) -> bool:
    return any(target == m or target.startswith(m + ".") for m in modules)


def back_door(imp: Import) -> str | None:
    """Why this import is not allowed, or None."""
    room, top = imp.module.split(".")[0], imp.target.split(".")[0]
    if top not in ROOMS:
        return _package_door(imp, room)
    if room == top or room == "tests":
        return None
    if room in ("bench", "docs"):
        return f"{room}/ may import every room but tests/" if top == "tests" else None
    if room == "trainer":
        return "trainer/ imports no other room (it talks HTTP to the platform)"
    if room == "server":
        if under(imp.target, *TRAINER_CONTRACTS):
            return None
        return f"server/ imports no {top}/ code (of the trainer: TRAINER_CONTRACTS only)"
    if room == "worker":
        return None if top == "server" else "worker/ imports server/ only (it starts the trainer as a process)"
    if room == "migrations":
        allowed = ("server.models", "server.db", "server.config", "server.migrate")
        return None if under(imp.target, *allowed) else f"migrations/ imports only {allowed}"
    if room == "web":
        return _web_door(imp)
    if room == "sfumato":
        return _root_door(imp)
    return f"{room}/ has no door to {top}/"


def _web_door(imp: Import) -> str | None:
    if under(imp.target, *TRAINER_CONTRACTS, *WEB_SERVER_DOORS):
        return None
    if under(imp.target, "server.models", "server.db"):
        return "web/ never imports ORM models or the database (states: server.states; rows: from their service)"
    return f"web/ reaches the server through {WEB_SERVER_DOORS} only"


def _root_door(imp: Import) -> str | None:
    if under(imp.module, APP_ROOT):
        return None
    if under(imp.module, CLI_ROOT):
        return None if imp.when is not When.EAGER else "sfumato.cli imports other rooms inside its commands only"
    return "sfumato's client modules import no other room (the client is torch-free and server-free)"


def _package_door(imp: Import, room: str) -> str | None:
    top = imp.target.split(".")[0]
    client = room == "sfumato" and not under(imp.module, CLI_ROOT, APP_ROOT)
    if client and top in SERVER_PACKAGES:
        return f"sfumato's client modules never import {top}"
    if room == "web" and top == "sqlalchemy" and imp.names != ("Session",):
        return "web/ takes a session only to hand it to services (sqlalchemy.orm.Session), never queries"
    return None


def test_every_import_goes_through_a_door() -> None:
    found = [f"{imp.where}: {imp.module} imports {imp.target} ({imp.when.value}): {why}"
             for path in python_files() for imp in imports_of(path) if (why := back_door(imp))]  # fmt: skip
    assert found == [], "back-doors:\n" + "\n".join(dict.fromkeys(found))


def test_no_page_queries_or_commits_with_the_session_it_holds() -> None:
    found = []
    for path in sorted((REPO / "web").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            call = node.func if isinstance(node, ast.Call) else None
            if not (isinstance(call, ast.Attribute) and isinstance(call.value, ast.Name)):
                continue
            if call.value.id == "session" and call.attr in SESSION_WORK:
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: session.{call.attr}(...)")
    assert found == [], "pages reach the database through server.services only:\n" + "\n".join(found)


@pytest.mark.parametrize("contract", TRAINER_CONTRACTS)
def test_every_trainer_contract_is_torch_free(contract: str) -> None:
    code = f"import sys, {contract}; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=REPO, check=False).returncode == 0


PROBE = """
from __future__ import annotations
from typing import TYPE_CHECKING
from web.pages import render
from . import sibling
if TYPE_CHECKING:
    from server.models import Job
def later():
    import worker.celery_app
"""


def test_a_back_door_is_found_eager_lazy_or_for_typing(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    found = [(i.target, i.when, back_door(i)) for i in imports_of(probe, "server.services.probe")][2:]
    assert found == [
        ("web.pages.render", When.EAGER, "server/ imports no web/ code (of the trainer: TRAINER_CONTRACTS only)"),
        ("server.services", When.EAGER, None),
        ("server.models", When.TYPING, None),
        ("worker.celery_app", When.LAZY, "server/ imports no worker/ code (of the trainer: TRAINER_CONTRACTS only)"),
    ]
    as_cli = [back_door(Import(probe, 1, "sfumato.cli.processes", "worker.celery_app", (), when)) for when in When]
    assert as_cli == ["sfumato.cli imports other rooms inside its commands only", None, None]
