"""Can several seeds of TEM-t train in one process as a batched ensemble (``torch.func``)?

The test: stack the weights of K models of different seeds (``stack_module_state``) and
``vmap`` ``functional_call`` over them for one forward + backward on the same walks.

1. TEM-t as it is (``hippo_rep/models/temt.py``, unmodified): prints where vmap fails.
2. The same in a patched copy of ``TEMt._loop`` (in this process only; ``temt.py`` is not
   touched) with, cumulatively, out-of-place memory writes, ``bmm`` for ``_ConstBmm`` and an
   out-of-place ``written`` update: prints the next blocker after each patch (a patch whose
   source line is not found is reported and skipped).
3. The root cause, measured: the number of memories each member writes on the same walks
   (different weights write different memories), i.e. the per-member length of every
   ``[:, :m]`` slice of the memory.
4. The sinusoidal baseline (a memory written at every step, no data-dependent shapes) does
   vmap: the time of a vmapped K-member forward + backward against K separate ones, and the
   largest difference between their gradients.

Measured (moved here from the ``hippo_rep.sweep`` docstring): batched ensembles do not apply
to TEM-t — ``python benchmarks/bench_ensemble.py`` (torch 2.13 CPU, ``small``
preset, 4 members, batch 16 × 64 steps): vmapping ``functional_call`` over
``stack_module_state`` of TEM-t models of seeds 0–3 fails in the first forward, at the
in-place memory write ``state.G[ar, idx] = torch.where(...)`` (``index_put_`` of a
per-member value into a buffer that is not batched). In a patched copy of ``TEMt._loop`` (not
in ``temt.py``) with out-of-place writes it fails next at ``_ConstBmm`` (an
``autograd.Function`` without ``setup_context``, so no functorch support); with ``bmm``
there, at ``written[:, t] = new``; with that out of place, at ``m = int(n.max())``: vmap
cannot call ``.item()``. That last one is the root cause: how many memories a walk writes
depends on the weights (add-if-novel), so members differ (same walks: mean 42.6, 43.6, 41.7
and 42.9 memories per environment for seeds 0–3), and every ``[:, :m]`` slice of the memory
has a per-member length. Batching seeds would need a fixed-capacity memory with masks instead
of data-dependent slices (a change of the model, not of the sweep). The sinusoidal baseline
(a memory at every step) does vmap, forward and backward, with gradients equal to separate
models' — and only 1.09× faster on this CPU (53 vs 58 ms for 4 members). Seeds therefore run
as separate tasks (processes).

Usage::

    python benchmarks/bench_ensemble.py [--members 4] [--batch 16] [--steps 64] [--repeats 5]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import copy  # noqa: E402
import inspect  # noqa: E402
import linecache  # noqa: E402
import re  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.func import functional_call, stack_module_state, vmap  # noqa: E402

from hippo_rep.config import load_config, world_kind  # noqa: E402
from hippo_rep.models import temt  # noqa: E402
from hippo_rep.models.registry import build_model  # noqa: E402
from hippo_rep.worlds import n_actions_for, parse_world, sample_episodes  # noqa: E402

#: Seed of the shared walks.
WALK_SEED = 0
#: Patches of the copy of ``TEMt._loop`` (description, regex, replacement), applied in order.
PATCHES = (
    ("out-of-place memory writes",
     r"state\.(\w+)\[ar, idx\] = (.*)", r"state.\1 = state.\1.index_put((ar, idx), \2)"),
    ("torch.bmm instead of _ConstBmm", r"_ConstBmm\.apply", "torch.bmm"),
    ("out-of-place `written`", r"written\[:, t\] = new",
     "written = torch.where(torch.arange(L, device=obs.device) == t, new[:, None], written)"),
)


def _models(cfg, k: int):
    n_actions = n_actions_for(world_kind(cfg))
    return [build_model(cfg.model, n_actions, cfg.world.n_obs, seed=s) for s in range(k)]


def _walks(cfg, batch: int, steps: int):
    ep = sample_episodes([parse_world(s) for s in cfg.world.worlds], batch, steps,
                         cfg.world.n_obs, np.random.default_rng(WALK_SEED))
    return torch.as_tensor(ep.observations), torch.as_tensor(ep.actions)


def _vmapped(models, obs, act):
    """Forward + backward of the stacked ensemble; returns the stacked weights."""
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")

    def loss(p, b, o, a):
        out, _ = functional_call(base, (p, b), (o, a))
        return torch.nn.functional.cross_entropy(out.logits_pi.flatten(0, 1), o.flatten())

    vmap(loss, in_dims=(0, 0, None, None))(params, buffers, obs, act).sum().backward()
    return params


def _blocker(fn) -> str:
    try:
        fn()
    except Exception as err:  # the failure is the measurement
        frames = [f for f in traceback.extract_tb(err.__traceback__)
                  if f.filename.endswith("temt.py") or f.filename == "<patched _loop>"]
        where = (f" at {os.path.basename(frames[-1].filename)}:{frames[-1].lineno} "
                 f"`{(frames[-1].line or '').strip()}`") if frames else ""
        return f"FAILS{where}: {type(err).__name__}: {str(err).splitlines()[0][:160]}"
    return "works (forward + backward)"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="small")
    p.add_argument("--members", type=int, default=4, help="ensemble size K (seeds 0..K-1)")
    p.add_argument("--batch", type=int, default=16, help="environments per batch")
    p.add_argument("--steps", type=int, default=64, help="steps per walk")
    p.add_argument("--repeats", type=int, default=5, help="timed forward+backward passes")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    cfg = load_config(args.preset)
    obs, act = _walks(cfg, args.batch, args.steps)
    print(f"torch {torch.__version__}, preset {args.preset}, K = {args.members} members, "
          f"batch {args.batch} × {args.steps} steps, 1 thread")

    models = _models(cfg, args.members)
    print(f"\n1. TEM-t, unmodified: {_blocker(lambda: _vmapped(models, obs, act))}")

    original = temt.TEMt._loop
    src = textwrap.dedent(inspect.getsource(original))
    print("2. patched copies of TEMt._loop (this process only):")
    try:
        for what, pattern, repl in PATCHES:
            src, n = re.subn(pattern, repl, src)
            if not n:
                print(f"   + {what}: pattern not found in temt.py, skipped")
                continue
            ns = dict(vars(temt))
            linecache.cache["<patched _loop>"] = (len(src), None, src.splitlines(True),
                                                  "<patched _loop>")
            exec(compile(src, "<patched _loop>", "exec"), ns)  # a local experiment
            temt.TEMt._loop = ns["_loop"]
            print(f"   + {what}: {_blocker(lambda: _vmapped(models, obs, act))}")
    finally:
        temt.TEMt._loop = original

    with torch.no_grad():
        counts = [m(obs, act)[1].count for m in models]
    print(f"3. memories written per environment on the same {args.steps}-step walks "
          "(mean, first 4 environments):")
    for s, c in enumerate(counts):
        print(f"   seed {s}: mean {c.float().mean():.2f}, {c[:4].tolist()}")
    same = all(torch.equal(counts[0], c) for c in counts[1:])
    print(f"   members write {'the same' if same else 'different'} numbers of memories")

    base_cfg = load_config(args.preset, ["model.kind=sinusoidal"])
    sin = _models(base_cfg, args.members)
    print(f"\n4. sinusoidal baseline: {_blocker(lambda: _vmapped(sin, obs, act))}")

    def separate():
        for m in sin:
            m.zero_grad(set_to_none=True)
            out, _ = m(obs, act)
            torch.nn.functional.cross_entropy(out.logits_pi.flatten(0, 1),
                                              obs.flatten()).backward()

    def timed(fn) -> float:
        fn()  # warm-up
        t0 = time.perf_counter()
        for _ in range(args.repeats):
            fn()
        return (time.perf_counter() - t0) / args.repeats

    t_sep = timed(separate)
    t_vm = timed(lambda: _vmapped(sin, obs, act))
    params = _vmapped(sin, obs, act)
    separate()
    diff = max(float((params[n].grad[i] - dict(m.named_parameters())[n].grad).abs().max())
               for i, m in enumerate(sin) for n in params if params[n].grad is not None)
    print(f"{'':4s}{'K separate models':>20s}{'vmapped ensemble':>20s}{'speed-up':>10s}")
    print(f"{'':4s}{t_sep * 1e3:17.1f} ms{t_vm * 1e3:17.1f} ms{t_sep / t_vm:9.2f}x")
    print(f"    largest gradient difference vmapped vs separate: {diff:.2e}")


if __name__ == "__main__":
    main()
