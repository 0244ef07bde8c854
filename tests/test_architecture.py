"""No import cycle in the package (import-linter's contracts and ruff run before pytest, in scripts/lint.sh)."""

from __future__ import annotations

from pathlib import Path

import pytest


def import_cycles(package: str = "omnistudio") -> list[list[str]]:
    """Every import cycle among the package's modules (strongly connected components of the graph that
    grimp, import-linter's graph library, builds; imports under TYPE_CHECKING count too: a type-only import
    back into a module that imports this one is a cycle of the design, if not of the running program)."""
    import grimp

    graph = grimp.build_graph(package, exclude_type_checking_imports=False)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(root: str) -> None:  # iterative Tarjan: no recursion limit on a big graph
        work = [(root, 0)]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, i = work[-1]
            targets = edges.get(node, [])
            if i < len(targets):
                work[-1] = (node, i + 1)
                nxt = targets[i]
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
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
                if len(component) > 1 or node in edges.get(node, []):
                    cycles.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return cycles


def test_no_import_cycle_in_the_package() -> None:
    cycles = import_cycles()
    assert cycles == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "cyc"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyc import b\n")
    (pkg / "b.py").write_text("def f():\n    from cyc import c\n")
    (pkg / "c.py").write_text("import cyc.a\n")
    (pkg / "d.py").write_text("import cyc.a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles("cyc") == [["cyc.a", "cyc.b", "cyc.c"]]

