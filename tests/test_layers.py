"""Layers as a contract (docs/architecture.md): no import cycle among the first-party modules,
counting the imports made inside functions too, and import-linter's contracts pass.

`python tests/test_layers.py` prints the picture: the strongly connected components and the
imports made inside functions, module by module."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("infra", "approvals", "runs", "drivers", "integrations", "project", "repos")


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    in_function: bool
    type_checking: bool


def module_files() -> dict[str, Path]:
    """Every first-party module (outside migrations) by its dotted name."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "migrations" in parts:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, in_function: bool, type_checking: bool) -> Iterator[tuple[ast.AST, bool, bool]]:
    for child in ast.iter_child_nodes(node):
        yield child, in_function, type_checking
        inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        guarded = type_checking or (isinstance(child, ast.If) and _is_type_checking(child.test))
        yield from _walk(child, inner, guarded)


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The first-party module `name` names: itself, or its nearest enclosing module."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    """The imports of first-party modules in `module`, as import-linter (grimp) counts them:
    `from a.b import c` is an import of `a.b.c` when that is a module, else of `a.b`."""
    is_package = path.name == "__init__.py"
    for node, in_function, type_checking in _walk(ast.parse(path.read_text(), str(path)), False, False):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        for target in targets:
            imported = _resolve(target, modules)
            if imported and imported != module:
                yield Import(module, imported, node.lineno, in_function, type_checking)


def function_level_statements() -> Counter[str]:
    """The import statements made inside functions (of any module, first-party or not), by module."""
    counts: Counter[str] = Counter()
    for module, path in module_files().items():
        for node, in_function, _ in _walk(ast.parse(path.read_text(), str(path)), False, False):
            if in_function and isinstance(node, ast.Import | ast.ImportFrom):
                counts[module] += 1
    return counts


def all_imports() -> list[Import]:
    modules = module_files()
    return [found for module, path in modules.items() for found in imports_of(module, path, modules)]


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of `graph` (iterative: the graph is deep)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def cycles(imports: list[Import]) -> list[list[str]]:
    """The strongly connected components of more than one module, largest first."""
    graph: dict[str, set[str]] = {module: set() for module in module_files()}
    for found in imports:
        graph[found.importer].add(found.imported)
    return sorted((c for c in strongly_connected(graph) if len(c) > 1), key=len, reverse=True)


def test_the_component_finder_finds_a_cycle_and_leaves_a_chain_alone() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": set()}
    components = sorted(strongly_connected(graph), key=len, reverse=True)
    assert components[0] == ["a", "b", "c"]
    assert all(len(c) == 1 for c in components[1:])


def test_no_module_is_in_an_import_cycle_even_through_function_level_imports() -> None:
    found = cycles(all_imports())
    assert not found, "import cycles:\n" + "\n".join(f"{len(c)}: {', '.join(c)}" for c in found)


def test_the_import_contracts_hold() -> None:
    """import-linter's contracts (pyproject.toml): the layers, the policy core's purity, infra at the bottom."""
    lint = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr


_PROBE = """
import sys
import grimp
from importlinter.api import read_configuration
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.layers import LayersContract

contract_id, importer, imported, *packages = sys.argv[1:]
config = read_configuration("pyproject.toml")
options = next(o for o in config["contracts_options"] if o["id"] == contract_id)
kind = {"layers": LayersContract, "forbidden": ForbiddenContract}[options["type"]]
contract = kind(name=options["name"], session_options=config["session_options"], contract_options=options)
graph = grimp.build_graph(*packages, include_external_packages=True, cache_dir=None)
graph.add_import(importer=importer, imported=imported)
print("kept" if contract.check(graph, verbose=False).kept else "broken")
"""


def _contract_holds_with(contract_id: str, importer: str, imported: str) -> bool:
    """Whether the contract `contract_id` (pyproject.toml) would still hold with one more
    import. (In a process of its own: pytest's plugins leave classes import-linter cannot read.)"""
    probe = subprocess.run(
        [sys.executable, "-c", _PROBE, contract_id, importer, imported, *PACKAGES],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert probe.returncode == 0, probe.stderr
    return probe.stdout.strip() == "kept"


def test_an_import_down_from_the_runs_writes_into_the_gate_keeps_the_layers() -> None:
    assert _contract_holds_with("layers", "runs.services", "approvals.gate.steps")


def test_an_import_from_the_gate_up_into_the_runs_writes_breaks_the_layers() -> None:
    assert not _contract_holds_with("layers", "approvals.gate.steps", "runs.services")


def test_an_import_from_the_records_up_into_the_worker_breaks_the_layers() -> None:
    assert not _contract_holds_with("layers", "runs.models", "drivers.worker")


def test_django_in_the_policy_core_breaks_its_purity() -> None:
    assert not _contract_holds_with("policy-pure", "approvals.policy.evaluate", "django")


def test_an_app_in_infra_breaks_the_bottom() -> None:
    assert not _contract_holds_with("infra-bottom", "infra.clock", "runs.models")


if __name__ == "__main__":
    imports = all_imports()
    for component in cycles(imports):
        print(f"cycle of {len(component)} modules: {', '.join(component)}")
    statements = function_level_statements()
    print(f"import statements inside functions: {sum(statements.values())}")
    for module, count in statements.most_common():
        print(f"  {count:3d} {module}")


# The imports made inside a function that stay, each with why: an app's `ready()` registers
# what needs every app loaded (checks, signal listeners, the schema's token scheme).
IN_FUNCTION_IMPORTS_KEPT = {
    ("drivers.apps", "drivers.checks"): "ready(): registers the sandbox floor's system check",
    ("integrations.apps", "integrations.schema"): "ready(): registers the token scheme for the OpenAPI schema",
    ("integrations.apps", "integrations.notifications.outbox"): "ready(): the outbox's listener needs the models",
    ("integrations.apps", "integrations.webhooks.outbox"): "ready(): the outbox's listener needs the models",
}


def test_a_tool_requests_path_imports_nothing_inside_a_function() -> None:
    """A tool request's path (driver → run context → gate → services → reviewer and back) can
    be read module by module: no first-party import inside a function anywhere, but the
    apps' `ready()` registrations listed above (the three outside-party ones in
    project/settings.py and project/api.py break no cycle of ours)."""
    found = {(i.importer, i.imported) for i in all_imports() if i.in_function and not i.type_checking}
    assert found == set(IN_FUNCTION_IMPORTS_KEPT), sorted(found ^ set(IN_FUNCTION_IMPORTS_KEPT))
