"""The project's import graph: no circles anywhere, each folder imports only what its README's "May import:" line
allows, and runners/ imports only downward.

Every import is counted: module level, inside functions, and under `if TYPE_CHECKING:` (a type is a
dependency too). `from package import name` counts as importing `package.name` when that is a module.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("recipes", "runners", "db", "analysis", "orchestrator")
SITE = ROOT / "site"  # not a package (stdlib name): its modules import each other as `hubkit.*`, `views.*`

# runners/ in layers, lowest first; a module may import its own layer and the ones below, never above.
# The contract's layer holds job.py, the agent's line protocol, and the two vocabularies the contract is
# written in: every result model (loadgen/records.py) and the inventory's targets (fleet/inventory.py).
RUNNER_LAYERS: tuple[tuple[str, ...], ...] = (
    ("runners.job", "runners.protocol", "runners.loadgen.records", "runners.fleet.inventory"),
    ("runners.host", "runners.fleet", "runners.engines"),
    ("runners.loadgen", "runners.traces"),
    ("runners.local", "runners.ssh", "runners.slurm", "runners.tpu_vm", "runners.noop", "runners.agent"),
    ("runners.registry",),
)


def module_files() -> dict[str, Path]:
    """Every first-party module by dotted name."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            found[_dotted(path.relative_to(ROOT))] = path
    for path in SITE.rglob("*.py"):
        found[_dotted(path.relative_to(SITE))] = path
    return found


def _dotted(relative: Path) -> str:
    parts = list(relative.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        graph[name] = {target for target in imported_modules(ast.parse(path.read_text()), package) if target in modules}
    return graph


def imported_modules(tree: ast.AST, package: str) -> set[str]:
    modules = module_files()
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                targets.add(submodule if submodule in modules else source)
    return targets


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module, and modules importing themselves (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def runner_layer(module: str) -> int | None:
    """The layer of a runners module: the most specific prefix listed wins (records before loadgen)."""
    best: tuple[int, int] | None = None
    for layer, prefixes in enumerate(RUNNER_LAYERS):
        for prefix in prefixes:
            inside = module == prefix or module.startswith(prefix + ".")
            if inside and (best is None or len(prefix) > best[1]):
                best = (layer, len(prefix))
    return None if best is None else best[0]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    problems = []
    for source, targets in sorted(graph.items()):
        if not source.startswith("runners"):
            continue
        source_layer = runner_layer(source)
        for target in sorted(targets):
            if not target.startswith("runners.") or source == "runners":
                continue
            target_layer = runner_layer(target)
            if source_layer is None or target_layer is None:
                problems.append(f"{source} -> {target}: a runners module in no layer (add it to RUNNER_LAYERS)")
            elif target_layer > source_layer:
                problems.append(f"{source} (layer {source_layer}) imports {target} (layer {target_layer})")
    return problems


FOLDERS = (*PACKAGES, "site")
SITE_MODULES = ("hubkit", "views", "app", "server")  # site/'s own modules, by the names they import each other as


def folder_of(module: str) -> str:
    top = module.split(".")[0]
    return "site" if top in SITE_MODULES else top


def allowed_imports(readme: str) -> tuple[str, ...]:
    """The module prefixes a folder README's "May import:" paragraph names (in backticks, up to the first sentence's
    end: a README may wrap the list over lines); none for "nothing"."""
    starts = [match.start() for match in re.finditer(r"^May import:", readme, re.MULTILINE)]
    if len(starts) != 1:
        raise ValueError(f"expected one 'May import:' line, found {len(starts)}")
    paragraph = readme[starts[0] :].split("\n\n")[0]
    listed = re.split(r"[.;](?:\s|$)", paragraph.replace("\n", " "))[0]
    return tuple(re.findall(r"`([a-z_.]+)`", listed))


def forbidden_imports(graph: dict[str, set[str]], allowed: dict[str, tuple[str, ...]]) -> list[str]:
    """Every import of another folder's module that the importing folder's README does not allow."""
    problems = []
    for source, targets in sorted(graph.items()):
        folder = folder_of(source)
        for target in sorted(targets):
            other = folder_of(target)
            if other == folder:
                continue
            if not any(target == prefix or target.startswith(prefix + ".") for prefix in allowed[folder]):
                problems.append(f"{source} imports {target}: {folder}/README.md allows {list(allowed[folder])}")
    return problems


def readme_tables() -> dict[str, tuple[str, ...]]:
    return {folder: allowed_imports((ROOT / folder / "README.md").read_text()) for folder in FOLDERS}


def test_every_folder_imports_only_what_its_readme_allows() -> None:
    assert forbidden_imports(import_graph(), readme_tables()) == []


def sub_folder_readmes() -> dict[str, tuple[str, ...]]:
    """Every sub-folder README's "May import:" prefixes, by the sub-folder's dotted name ('orchestrator.review')."""
    found = {}
    for folder in PACKAGES:
        for readme in sorted((ROOT / folder).rglob("*/README.md")):
            if "May import:" in readme.read_text():
                found[_dotted(readme.parent.relative_to(ROOT) / "x")[: -len(".x")]] = allowed_imports(
                    readme.read_text()
                )
    return found


def sub_folder_breaches(graph: dict[str, set[str]], allowed: dict[str, tuple[str, ...]]) -> list[str]:
    """Every import out of a sub-folder (to anything of the project outside it, its parent folder included) that the
    sub-folder's README does not allow."""
    problems = []
    for source, targets in sorted(graph.items()):
        for folder, prefixes in allowed.items():
            if not source.startswith(folder + "."):
                continue
            for target in sorted(targets):
                inside = target == folder or target.startswith(folder + ".")
                if not inside and not any(target == p or target.startswith(p + ".") for p in prefixes):
                    problems.append(f"{source} imports {target}: {folder.replace('.', '/')}/README.md allows "
                                    f"{list(prefixes)}")  # fmt: skip
    return problems


def test_every_sub_folder_imports_only_what_its_readme_allows() -> None:
    readmes = sub_folder_readmes()
    assert {"orchestrator.cli", "orchestrator.review", "runners.fleet", "runners.host"} <= set(readmes)
    assert sub_folder_breaches(import_graph(), readmes) == []


def test_a_planted_import_in_a_sub_folder_is_found() -> None:
    tree = ast.parse("from orchestrator.sweep import run_sweep\n")
    graph = {"orchestrator.review.plan_report": imported_modules(tree, "orchestrator.review"),
             "orchestrator.sweep": set()}  # fmt: skip
    (breach,) = sub_folder_breaches(graph, sub_folder_readmes())
    assert breach.startswith(
        "orchestrator.review.plan_report imports orchestrator.sweep: orchestrator/review/README.md"
    )


def test_the_project_has_no_import_circle() -> None:
    assert circles(import_graph()) == []


def test_runners_import_only_their_own_layer_or_below() -> None:
    assert upward_imports(import_graph()) == []


def test_every_runners_module_has_a_layer() -> None:
    unplaced = [name for name in import_graph() if name.startswith("runners.") and runner_layer(name) is None]
    assert unplaced == []


def test_the_contract_speaks_only_its_own_vocabulary() -> None:
    graph = import_graph()
    for module in RUNNER_LAYERS[0]:
        assert {target for target in graph[module] if target.startswith("runners.")} <= set(RUNNER_LAYERS[0]), module


def test_runners_top_level_stays_small() -> None:
    top_level = sorted(path.name for path in (ROOT / "runners").glob("*.py"))
    assert len(top_level) <= 8, top_level


# The checks themselves, on graphs whose answer is known: they must be able to fail.


def test_a_circle_is_found_whatever_its_length() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"a"}}) == [["a"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_an_upward_import_inside_a_function_is_found() -> None:
    tree = ast.parse("def runner_class():\n    import runners.registry\n")
    graph = {"runners.job": imported_modules(tree, "runners")}
    assert upward_imports(graph) == ["runners.job (layer 0) imports runners.registry (layer 4)"]


@pytest.mark.parametrize(
    ("source", "package", "expected"),
    [
        ("from runners.host import process", "runners.local", "runners.host.process"),
        ("from . import runner", "runners.local", "runners.local.runner"),
        ("from ..job import JobSpec", "runners.local", "runners.job"),
        (
            "if TYPE_CHECKING:\n    from runners.loadgen.client import Endpoint",
            "runners.loadgen",
            "runners.loadgen.client",
        ),
    ],
)
def test_every_spelling_of_an_import_is_resolved(source: str, package: str, expected: str) -> None:
    assert expected in imported_modules(ast.parse(source), package)


def test_the_analysis_package_lists_every_module_it_holds() -> None:
    listed = set(re.findall(r"`([a-z_]+)`", (ROOT / "analysis" / "__init__.py").read_text()))
    modules = {path.stem for path in (ROOT / "analysis").glob("*.py") if path.stem != "__init__"}
    assert modules - listed == set(), "add each module's line to analysis/__init__.py"


def test_a_planted_import_of_runners_in_the_hub_is_found() -> None:
    tree = ast.parse("from runners.traces.formats import load_trace\n")
    graph = {"views.offload_map": imported_modules(tree, "views"), "runners.traces.formats": set()}
    assert forbidden_imports(graph, readme_tables()) == [
        "views.offload_map imports runners.traces.formats: site/README.md allows ['db', 'analysis', 'recipes']"
    ]
    assert allowed_imports("May import: nothing from the project.") == ()


def test_records_are_layered_below_the_rest_of_loadgen() -> None:
    assert runner_layer("runners.loadgen.records") == 0
    assert runner_layer("runners.loadgen.client") == 2
    assert runner_layer("runners.fleet.leases") == 1


def test_no_cli_module_is_loose_in_orchestrator() -> None:
    loose = [
        path.name for path in (ROOT / "orchestrator").glob("*.py") if path.stem == "cli" or path.stem.endswith("_cli")
    ]
    assert loose == []
