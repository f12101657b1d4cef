"""The fused time loop's per-step work in C++ (``fused_loop.cpp``), built on first use.

:mod:`hippo_rep.models.fused` spends most of its time in Python: ~55 small aten calls per
walk step forward and ~40 backward, each a Python call and a dispatch. ``fused_loop.cpp``
issues the same aten operations in the same order from C++ (one call per chunk forward and
one backward), so g, g_pi, the gate, the buffers and the gradients are those of the Python
loop bit for bit. It covers ``model.memory = "full"`` (the presets' memory: every setting
of :func:`fused.unsupported`'s covered list but the window, whose visibility is a Python
method), on the CPU; other variants and devices keep the Python loop.

It is compiled with :func:`torch.utils.cpp_extension.load` (g++ and ninja, about a minute
once per machine and source, cached under ``~/.cache/torch_extensions`` or
``$TORCH_EXTENSIONS_DIR``). Where that fails (no compiler, no ninja, a build error) the
fused step runs its Python loop — the same numbers — and says so once (a
:class:`CppLoopFallback` warning). ``HIPPO_REP_CPP_LOOP=0`` skips it.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import torch

SOURCE = Path(__file__).with_name("fused_loop.cpp")
#: Fields of each step's record, in ``fused_loop.cpp``'s order (enum Rec).
N_REC = 25
#: Per-step flags in the meta table: [has g_prev, landmark, m].
N_META = 3

_ops = None
_tried = False


class CppLoopFallback(UserWarning):
    """The C++ loop could not be built or loaded: the fused step runs its Python loop (the
    same numbers, slower)."""


def enabled_by_env() -> bool:
    return os.environ.get("HIPPO_REP_CPP_LOOP", "1") not in ("0", "false", "no", "off")


def ops():
    """``torch.ops.hippo_fused`` (loop_forward, loop_backward), built on first use; None
    where it cannot be (said once)."""
    global _ops, _tried
    if _tried:
        return _ops
    _tried = True
    if not enabled_by_env():
        return None
    try:
        from torch.utils.cpp_extension import load

        # -ffp-contract=off: no a * b + c fused into one rounding (fused_loop.cpp's hand
        # loops repeat aten's separate products and sums)
        load(name="hippo_fused_loop", sources=[str(SOURCE)],
             extra_cflags=["-O2", "-ffp-contract=off"], is_python_module=False, verbose=False)
        _ops = torch.ops.hippo_fused
    except Exception as e:  # noqa: BLE001 - any build or load failure means: fall back
        first = (str(e).strip().splitlines() or [""])[0][:200]
        warnings.warn(f"fused C++ loop unavailable ({type(e).__name__}: {first}); the fused "
                      "step runs its Python loop (the same numbers, slower)",
                      CppLoopFallback, stacklevel=2)
        _ops = None
    return _ops


def covers(model) -> bool:
    """Whether the C++ loop covers ``model``: the fused step's variants with a full memory,
    on the CPU (the only device it was measured and tested on)."""
    return model.config.memory == "full" and model.W_a.device.type == "cpu"


#: ``transition_activation`` → the C++ code.
ACTIVATIONS = {"linear": 0, "relu": 1, "tanh": 2, "leaky_relu": 3}
#: ``g_norm`` → the C++ code (0: none; 1: unit RMS over g; 2: unit RMS per rotation plane).
NORMS = {"none": 0, "rms": 1, "plane": 2}
