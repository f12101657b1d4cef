"""The module layers of hippo_rep, lowest first.

A module may import from its own layer or a lower one, never from a higher one; no two
modules or packages import each other, directly or round a longer loop (a cycle); and no
module imports a private (``_``-prefixed) name from another package or top-level module.
``tests/test_layers.py`` checks all three on every import statement of the package, at
module top and inside functions, and that the "Module layers" diagram of
``docs/guide/layout.md`` shows :data:`LAYERS`.

Data flows up the layers: worlds → models → training → recording → analysis → plotting →
figures; ``pipeline`` (the backbone: stages, sweeps, the demo) chains them, and ``cli`` and the
package root's verbs call ``pipeline``. ``sweep`` only reads sweeps (figures draw them).
"""

#: Layers, lowest first; each a tuple of modules or packages (a package entry covers all its
#: modules). Entries of one layer may import each other (without a cycle).
LAYERS: tuple[tuple[str, ...], ...] = (
    # foundations: no hippo_rep imports but these (the package root only gives __version__;
    # its lazy attributes are looked up by name on first use, not imported)
    ("hippo_rep", "hippo_rep._layers", "hippo_rep.defaults", "hippo_rep.fileio",
     "hippo_rep.random_streams", "hippo_rep.datasets", "hippo_rep.cluster",
     "hippo_rep.typed_config", "hippo_rep.run_files"),
    ("hippo_rep.worlds",),  # graphs, observations, random and delay walks (numpy only)
    # typed configs and what each model kind accepts; recording and analysis formats
    ("hippo_rep.config", "hippo_rep.model_kinds", "hippo_rep.schema"),
    ("hippo_rep.models",),  # nn.Modules only
    ("hippo_rep.training",),  # training loop, checkpoints, evaluation
    ("hippo_rep.tasks",),  # PassKey and the long-delay task
    ("hippo_rep.recording", "hippo_rep.export"),  # checkpoint → recording file; pynapple
    ("hippo_rep.analysis",),  # recordings → analysis datasets (no torch)
    ("hippo_rep.plotting",),  # fn(data, ax=None) -> ax panels
    ("hippo_rep.sweep",),  # a sweep's grid, manifest and reading (figures draw sweeps)
    ("hippo_rep.figures",),  # figure registry
    ("hippo_rep.explore",),  # notebook tables and widgets
    # the backbone: the stage runner (train → ... → figures, resumable), sweeps, the demo
    ("hippo_rep.pipeline",),
    ("hippo_rep.cli",),  # the hippo-rep command
)
