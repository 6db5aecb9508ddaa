"""The package's import graph: no cycles, and no module using another module's private (``_name``) names.

Every import counts, including the ones inside functions (a lazy import still ties two modules together).
The modules are found from ``pyproject.toml``'s package map, so a new package is checked without edits here.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _modules() -> dict[str, Path]:
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    out = {}
    for pkg, folder in cfg["package-dir"].items():
        for f in sorted((REPO / folder).glob("*.py")):
            name = pkg if f.stem == "__init__" else f"{pkg}.{f.stem}"
            out[name] = f
    return out


def _imports(name: str, path: Path, known: set[str]):
    """(imported module, names taken from it) for every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    pkg = name if path.stem == "__init__" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, ()
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names = tuple(a.name for a in node.names)
            # `from pkg import module` imports the module itself
            subs = [f"{mod}.{n}" for n in names if f"{mod}.{n}" in known]
            for s in subs:
                yield s, ()
            rest = tuple(n for n in names if f"{mod}.{n}" not in known)
            if rest or not subs:
                yield mod, rest


def _module_aliases(name: str, path: Path, tree, known: set[str]) -> dict[str, str]:
    """Local names bound to kifunet modules by the imports of one file."""
    pkg = name if path.stem == "__init__" else name.rpartition(".")[0]
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in known and a.asname:
                    out[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                mod = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for a in node.names:
                if f"{mod}.{a.name}" in known:
                    out[a.asname or a.name] = f"{mod}.{a.name}"
    return out


def _graph():
    mods = _modules()
    known = set(mods)
    edges: dict[str, set[str]] = {m: set() for m in mods}
    private: list[str] = []
    for name, path in mods.items():
        for mod, names in _imports(name, path, known):
            if mod in known and mod != name:
                edges[name].add(mod)
                private += [f"{name} imports {mod}.{n}" for n in names if n.startswith("_") and n != "__version__"]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = _module_aliases(name, path, tree, known)
        for node in ast.walk(tree):
            # alias._private, where alias is a kifunet module imported under that name
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                if isinstance(node.value, ast.Name) and aliases.get(node.value.id, name) != name:
                    private.append(f"{name} uses {aliases[node.value.id]}.{node.attr}")
    return edges, private


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in edges:
        if v not in index:
            visit(v)
    return out


def test_the_package_map_finds_every_package():
    mods = _modules()
    for must in ("kifunet.cli", "kifunet.data_prep.building.build", "kifunet.train.train", "kifunet.eval.metrics",
                 "kifunet.play.match", "kifunet.models.registry"):
        assert must in mods


def test_every_package_folder_is_in_the_package_map():
    """A sub-package left out of ``pyproject.toml`` would be missing from the wheel and from these checks."""
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {Path(f) for f in cfg["package-dir"].values()}
    found = {p.parent.relative_to(REPO) for f in folders for p in (REPO / f).rglob("__init__.py")
             if "__pycache__" not in p.parts}
    assert sorted(map(str, found - folders)) == []
    assert sorted(cfg["packages"]) == sorted(cfg["package-dir"])


def test_the_data_prep_layers_are_checked():
    """Every data_prep sub-package has its own rung in :data:`LAYERS` (so one cannot import a later one)."""
    subs = {p.parent.name for p in (REPO / "data_prep").glob("*/__init__.py")}
    assert subs and all(f"kifunet.data_prep.{s}" in LAYERS for s in subs)
    assert _layer("kifunet.data_prep.rules.board") < _layer("kifunet.data_prep.building.build")


@pytest.mark.slow
def test_no_import_cycles():
    edges, _ = _graph()
    assert _cycles(edges) == []


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.slow
def test_no_module_uses_another_modules_private_names():
    _, private = _graph()
    assert private == []


#: packages from the bottom up: a module may import its own package and the ones before it, never one after.
#: (``kifunet.cli`` finds its subcommands by name at run time, so ``commands.quickstart`` may call it.)
LAYERS = ("kifunet", "kifunet.data_prep.fileio", "kifunet.data_prep", "kifunet.data_prep.rules",
          "kifunet.data_prep.sgf",
          "kifunet.data_prep.planes", "kifunet.data_prep.datasets", "kifunet.data_prep.building", "kifunet.samples",
          "kifunet.models",
          "kifunet.train.configs", "kifunet.train", "kifunet.eval", "kifunet.play", "kifunet.errors", "kifunet.cli",
          "kifunet.commands")


def _layer(module: str) -> int:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS.index(best)


@pytest.mark.slow
def test_packages_depend_downwards_only():
    edges, _ = _graph()
    upward = sorted(f"{a} -> {b}" for a, bs in edges.items() for b in bs
                    if _layer(b) > _layer(a))
    assert upward == []


def test_the_removed_shims_stay_removed():
    """Names are imported from the module that defines them: ``parallel`` does not re-export the steps,
    ``input_pipeline`` not the pipeline's parts, and ``train`` has no ``main()`` (docs/what_moved.md, "Shims
    removed")."""
    from kifunet.train import input_pipeline, parallel, train

    steps_names = ("BATCHNORM_MODES", "LAST_METRICS", "LOSSES", "SUM_METRICS", "VALUE_SUM_METRICS", "ModelDef",
                   "cross_entropy", "eval_step", "l2_loss", "path_tuple", "summed", "topk_correct", "train_step",
                   "value_loss", "value_metrics", "value_sums", "windowed")
    assert [n for n in steps_names if hasattr(parallel, n)] == []
    pipeline_parts = ("window_batch", "eval_batches", "num_eval_rows", "Prefetcher", "layout_for", "block_source",
                      "describe")
    assert [n for n in pipeline_parts if hasattr(input_pipeline, n)] == []
    assert not hasattr(train, "main")
    moved = ("StopClock", "Decision", "CARRY_ON", "evaluate", "_InFlight", "_fetch", "_fmt_time", "_value_text")
    assert [n for n in moved if hasattr(train, n)] == []  # issue 49: preemption, evaluation, dispatch, metric_writer
