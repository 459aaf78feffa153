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


# The layers of the package (docs/design.md), lowest first. A module may import its own package
# and anything of a lower layer, never a higher one: so a user who adds a norm or a task reads the
# lower layers only, and a change up here never reaches a training process.
LAYERS = (
    # leaves: errors, files, exit codes, schema and config keys, git info, the run directory
    (
        "normlab",
        "errors",
        "files",
        "exitcodes",
        "schema",
        "config_keys",
        "plugins",
        "gitinfo",
        "rundir",
        "progress",
        "commands",
        "experiment",
    ),
    ("norms",),
    ("models", "data"),
    ("tasks", "loggers"),
    ("config", "setting", "hints", "preflight"),
    ("run",),
    (
        "jobproc",
        "train",
        "tune",
        "search_space",
        "trials_table",
        "trialjob",
        "evaluate",
        "export",
        "datacli",
        "entry",
        "__main__",
    ),
    ("report",),
    ("study", "make_report"),
    ("integrations",),
    # the paper's reproduction: nothing below imports it (the report finds it by name)
    ("campaigns",),
)


def layer_of(module: str) -> int:
    top = module.split(".")[1] if "." in module else module
    for rank, names in enumerate(LAYERS):
        if top in names:
            return rank
    raise AssertionError(f"{module}: no layer; name its package in LAYERS (tests/test_imports.py)")


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Every import from a module to a module of a higher layer (lazy imports included)."""
    return sorted(
        f"{m} -> {t}" for m, targets in edges.items() for t in targets if layer_of(t) > layer_of(m)
    )


def test_imports_point_down_the_layers():
    assert upward(graph()) == []


def test_the_layer_check_sees_an_upward_import():
    edges = {"normlab.tasks.lm": {"normlab.run.progress"}, "normlab.run.x": {"normlab.tasks.lm"}}
    assert upward(edges) == ["normlab.tasks.lm -> normlab.run.progress"]


def test_a_training_process_loads_no_statistics_or_plotting_stack():
    # about 2.5 s of every job's start went to scipy, statsmodels and matplotlib, which only the
    # report and the figures need
    import subprocess
    import sys

    heavy = ("scipy", "statsmodels", "matplotlib", "pandas", "optuna")
    code = (
        "import sys, normlab.train, normlab.run.runner, normlab.evaluate; "
        f"print(' '.join(m for m in {heavy!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == []
