"""The shape of the package, read from its imports (every ``import`` statement, the ones inside
functions included): no module imports itself through others, and the report starts no processes."""

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "normlab"


def modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        name = ".".join(p.relative_to(PKG.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = p
    return out


def imports_of(name: str, path: Path, mods: dict) -> set[str]:
    """The normlab modules ``name`` imports (a package's __init__ for ``from pkg import x`` unless
    x is a module of its own)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names
            ]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in mods:
                t = t.rpartition(".")[0]
            # a module importing its own package's __init__ is how Python loads it, not a circle
            if t and t != name and not (name.startswith(t + ".") and mods[t].name == "__init__.py"):
                found.add(t)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    return {m: imports_of(m, p, mods) for m, p in mods.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
                on.discard(comp[-1])
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_import_graph_has_no_circle():
    edges = graph()
    # the graph reads real imports, lazy ones included
    assert (
        "normlab.config_keys" in edges["normlab.hints"]
        and "normlab.tasks" in edges["normlab.config"]
    )
    assert circles(edges) == []


def test_circle_detection_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_report_starts_no_processes():
    for p in (PKG / "report").glob("*.py"):
        names = {
            a.name.split(".")[0]
            for n in ast.walk(ast.parse(p.read_text()))
            if isinstance(n, (ast.Import, ast.ImportFrom))
            for a in n.names
        }
        modules_ = {
            n.module.split(".")[0]
            for n in ast.walk(ast.parse(p.read_text()))
            if isinstance(n, ast.ImportFrom) and n.module and not n.level
        }
        assert not ({"subprocess", "multiprocessing"} & (names | modules_)), p.name


def test_the_report_reads_run_directories_and_builds_nothing():
    # the report's inputs are run directories and what a caller hands it (the baselines): it
    # builds no task, data pipeline or model, so it runs where only the run files are
    edges = graph()
    report = {
        m: sorted(t for t in e if t.split(".")[1] in ("tasks", "data", "models", "norms"))
        for m, e in edges.items()
        if m == "normlab.report" or m.startswith("normlab.report.")
    }
    assert {m: t for m, t in report.items() if t} == {}
    assert "normlab.tasks" in edges["normlab.make_report"]  # the graph sees the lazy import
