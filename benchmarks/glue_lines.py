"""Lines of the glue (the CLI and the backbone, whose size has a budget), and what they are.

The glue is the command line, the sweep package, the stage runner package, the analysis
pipeline and the job runner that sweeps use (``cluster.run_jobs`` and its helpers). For each
file the table gives its lines (``wc -l``), how many are docstrings, how many are the CLI's
argument declarations (the ``@command(...)`` decorators: flags, defaults and help texts), and
how many are whole functions that exist only for features added after the budget was set
(the model-grown controls; sessions, NWB export and the plain install); those are listed by
name below the table.

    python benchmarks/glue_lines.py
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "hippo_rep"
#: The glue's files (relative to ``hippo_rep/``); for ``cluster.py`` only the named symbols.
GLUE = ["cli.py", *sorted(f"sweep/{p.name}" for p in (ROOT / "sweep").glob("*.py")),
        *sorted(f"pipeline/{p.name}" for p in (ROOT / "pipeline").glob("*.py")),
        "analysis/pipeline.py", "cluster.py"]
#: The job runner inside ``cluster.py`` (the rest of it starts dask clusters for analyses).
JOB_RUNNER = ("RUN_LOCK", "one_line", "write_error", "run_job", "run_jobs", "_Progress")
#: Whole symbols that exist for a feature added after the budget: (file, symbol) → which.
FEATURES = {
    ("cli.py", "cmd_remap_sessions"): "own data: remapping across two sessions",
    ("cli.py", "cmd_export_nwb"): "own data: NWB out",
    ("cli.py", "_session_options"): "own data: rate-map options of sessions",
    ("cli.py", "MISSING_TORCH"): "own data: the plain install's one-line error",
    ("cli.py", "_is_torch"): "own data: the plain install's one-line error",
    ("cli.py", "cmd_controls"): "grown grids: the model-grown controls",
    ("analysis/pipeline.py", "_session_settings"): "own data: sessions in analyse",
}


def _spans(tree: ast.Module) -> dict[str, tuple[int, int]]:
    """Top-level name → (first line with decorators, last line)."""
    spans = {}
    for node in tree.body:
        names = ([node.name] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else
                 [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)])
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        for name in names:
            spans[name] = (first, node.end_lineno)
    return spans


def _docstring_lines(tree: ast.AST) -> int:
    n = 0
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            n += body[0].end_lineno - body[0].lineno + 1
    return n


def _declaration_lines(tree: ast.Module) -> int:
    return sum(d.end_lineno - d.lineno + 1 for node in tree.body
               for d in getattr(node, "decorator_list", []) if isinstance(d, ast.Call)
               and getattr(d.func, "id", "") == "command")


def main() -> None:
    rows, listed = [], []
    for rel in GLUE:
        tree = ast.parse((ROOT / rel).read_text())
        spans = _spans(tree)
        if rel == "cluster.py":
            lines = sum(spans[s][1] - spans[s][0] + 1 for s in JOB_RUNNER)
            docs = sum(_docstring_lines(n) for n in tree.body if getattr(n, "name", "") in
                       JOB_RUNNER)
            declarations = 0
        else:
            lines = len((ROOT / rel).read_text().splitlines())
            docs, declarations = _docstring_lines(tree), _declaration_lines(tree)
        features = 0
        for (file, symbol), what in FEATURES.items():
            if file == rel:
                first, last = spans[symbol]
                features += last - first + 1
                listed.append(f"  {rel}:{symbol} ({last - first + 1} lines): {what}")
        rows.append((rel if rel != "cluster.py" else "cluster.py (job runner)", lines, docs,
                     declarations, features))
    print(f"{'file':32s}{'lines':>7s}{'docs':>7s}{'CLI args':>9s}{'features':>9s}{'net':>7s}")
    for name, lines, docs, decl, feat in rows:
        print(f"{name:32s}{lines:7d}{docs:7d}{decl:9d}{feat:9d}{lines - feat:7d}")
    tot = [sum(r[i] for r in rows) for i in range(1, 5)]
    print(f"{'total':32s}{tot[0]:7d}{tot[1]:7d}{tot[2]:9d}{tot[3]:9d}{tot[0] - tot[3]:7d}")
    print("\nwhole symbols of features added after the budget:\n" + "\n".join(listed))


if __name__ == "__main__":
    main()
