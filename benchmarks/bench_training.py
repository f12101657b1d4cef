"""Training speed and time-to-accuracy: TEM-t (and its settings) vs the sinusoidal baseline.

For each model the preset is trained (the preset's own schedule), with held-out loop-closure
accuracy (``revisit_new_edge``) measured every ``--eval-every`` iterations on fixed held-out
environments. Prints iterations per second (training steps only), wall-clock until held-out
loop closure first reaches ``--target``, and the final held-out accuracies.

    python benchmarks/bench_training.py --preset small --target 0.9
    python benchmarks/bench_training.py --settings orth_linear,free_linear,free_relu,paper_relu

``--settings`` trains each named setting of ``benchmarks/grid_settings.py`` (the grid-cell
settings comparison) instead of the plain preset, beside the baseline.

``--compare-fast`` measures the fused step (``train.fast_step``, hippo_rep.models.fused)
against the eager step instead: the trainers run the same iterations, interleaved (eager,
then the fused step with its Python loop, "fast", then with its loop in C++, "cpp"
(hippo_rep.models.fused_cpp, where it builds), per iteration, so that load on the machine
hits all alike), on one thread, at each batch size of ``--batches``; it prints iterations/s,
their ratios, environment-steps/s of cpp, the largest relative difference of the losses to
eager's (they compute the same function), and the time loop's GEMM floor
(:func:`loop_gemm_floor`: only its unavoidable matrix products, at the real shapes) as a
fraction of the cpp iteration; and the seconds the C++ loop took to build or load:

    python benchmarks/bench_training.py --compare-fast --preset small --batches 16,64,256

``--ops`` counts the aten operations per walk step instead (torch.profiler over a few
iterations of each step, eager and fast; load-independent, unlike the timings): the time
loop's forward and its backward, and the whole iteration (sampling to optimiser step):

    python benchmarks/bench_training.py --ops --preset small --batches 16

``--runs`` trains one labelled TEM-t run per comma-separated override group instead (time to
a trained model at other batch sizes and learning rates; no baseline), e.g.

    python benchmarks/bench_training.py --runs train.batch_size=16 \
        train.batch_size=64,train.lr=2e-3,train.iterations=200
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np
import torch

from hippo_rep.config import load_config
from hippo_rep.training.evaluate import evaluate
from hippo_rep.training.trainer import Trainer

#: Held-out environments per accuracy check (more = less noisy, slower).
EVAL_ENVS = 16


def run(preset: str, kind: str, target: float, eval_every: int, max_minutes: float,
        overrides: list[str], label: str | None = None, stop_at_target: bool = False,
        init_preset: str | None = None, init_overrides: tuple[str, ...] = ()) -> dict:
    label = label or kind
    with tempfile.TemporaryDirectory() as tmp:
        train_s, wall0, reached, last = 0.0, time.perf_counter(), None, None
        first_s = 0.0  # seconds of the curriculum's first stage (counted in train_s)
        cpu0 = time.process_time()  # CPU seconds: one thread, so less sensitive to load
        if init_preset:  # the curriculum: the whole first stage, timed, then init_from it
            first = load_config(init_preset, [f"model.kind={kind}", "train.eval_every=0",
                                              *[o for o in overrides
                                                if not o.startswith("train.init_from=")],
                                              *init_overrides])
            tr = Trainer(first, f"{tmp}/first", progress=False)
            t0 = time.perf_counter()
            tr.run()
            train_s = first_s = time.perf_counter() - t0
            print(f"  {label:12s} {init_preset} stage: {first.train.iterations} it in "
                  f"{train_s:.0f} s", flush=True)
            overrides = [*overrides, f"train.init_from={tmp}/first/checkpoint.pt"]
        cfg = load_config(preset, [f"model.kind={kind}", "train.eval_every=0", *overrides])
        wc = cfg.world
        tr = Trainer(cfg, tmp, progress=False)
        eval_cpu = 0.0  # CPU seconds spent in held-out checks (not training)
        for it in range(cfg.train.iterations):
            t0 = time.perf_counter()
            tr.step(it)
            train_s += time.perf_counter() - t0
            done = it + 1
            if done % eval_every == 0 or done == cfg.train.iterations:
                e0 = time.process_time()
                last = evaluate(tr.model, tr.worlds, EVAL_ENVS, wc.walk_steps, wc.n_obs,
                                seed=123, keep_heading=wc.keep_heading,
                                stay_prob=wc.stay_prob)
                eval_cpu += time.process_time() - e0
                acc = last["model"]["revisit_new_edge"]
                print(f"  {label:12s} it {done:5d}  train {train_s:6.0f} s  "
                      f"loop closure {acc:.3f}", flush=True)
                if reached is None and acc >= target:
                    reached = (done, train_s, time.perf_counter() - wall0,
                               time.process_time() - cpu0 - eval_cpu)
                    if stop_at_target:
                        break
            if (time.perf_counter() - wall0) / 60 > max_minutes:
                break
    return {"kind": label, "iterations": done, "it_per_s": done / (train_s - first_s),
            "reached": reached,
            "final": last}


def loop_gemm_floor(trainer: Trainer, iteration: int, repeats: int = 3) -> float:
    """Seconds to issue only the time loop's unavoidable matrix products for one training
    batch, at the real shapes: per step the transition (all actions at once), the two
    similarity and one read products against the memory (as large as the distinct nodes the
    busiest walk has visited, add-if-novel's ideal), the retrieval and gate MLPs' four
    layers, and in backward their grad-input products, the memory's two, and the
    transition's; every weight gradient batched over the steps once. Sampling, predictions,
    losses and the optimiser are not in it (the fused step's floor, not the iteration's)."""
    from hippo_rep.random_streams import batch_rng
    from hippo_rep.worlds import sample_episodes

    cfg, wc = trainer.cfg, trainer.cfg.world
    model = trainer.model
    ep = sample_episodes(trainer.worlds, cfg.train.batch_size, wc.walk_steps, wc.n_obs,
                         batch_rng(cfg.train.seed, iteration), wc.keep_heading, wc.stay_prob)
    seen = [np.maximum.accumulate([len(set(row[:t + 1])) for t in range(len(row))])
            for row in ep.nodes]
    m_t = np.max(seen, axis=0)  # memories readable at each step, busiest environment
    B, d, L = cfg.train.batch_size, model.config.n_g, wc.walk_steps
    A = model.W_a.shape[0]
    W1r, W2r = model.retrieval_mlp[0].weight, model.retrieval_mlp[2].weight
    W1g, W2g = model.gate_mlp[0].weight, model.gate_mlp[2].weight
    H = W1r.shape[0]
    r = torch.randn
    g, Wcat, G = r(B, d), r(d, A * d), r(B, int(m_t.max()), d)
    feats, hid = r(B, W1g.shape[1]), r(B, H)
    best = float("inf")
    with torch.no_grad():
        for _ in range(repeats):
            t0 = time.perf_counter()
            for t in range(1, L):
                Gm = G[:, :int(m_t[t])]
                g @ Wcat  # transition, forward
                torch.bmm(g[:, None], Gm.transpose(1, 2))  # retrieval similarity
                torch.bmm(torch.ones(B, 1, Gm.shape[1]), Gm)  # memory read
                torch.bmm(g[:, None], Gm.transpose(1, 2))  # add-if-novel similarity
                hid @ W2r.t()
                g @ W1r.t()
                feats @ W1g.t()
                hid @ W2g.t()
                g @ W2g  # backward: gate MLP
                hid @ W1g
                g @ W2r  # retrieval MLP
                hid @ W1r
                torch.bmm(g[:, None], Gm.transpose(1, 2))  # d weights
                torch.bmm(torch.ones(B, 1, Gm.shape[1]), Gm)  # d query
                g @ Wcat  # transition's grad-input (all actions at once)
            rows = r(L * B, d)
            for _a in range(A):  # weight gradients, batched over steps
                rows[: L * B // A].t() @ rows[: L * B // A]
            r(L * B, H).t() @ r(L * B, W1g.shape[1])
            r(L * B, d).t() @ r(L * B, H)
            r(L * B, H).t() @ r(L * B, d)
            r(L * B, d).t() @ r(L * B, H)
            best = min(best, time.perf_counter() - t0)
    return best


def compare_fast(preset: str, batches: list[int], iterations: int, overrides: list[str]) -> None:
    """Eager vs fused step, interleaved per iteration, one thread (see the module docstring):
    the fused step with its Python loop ("fast") and, where it builds and covers the model,
    with the loop in C++ ("cpp", :mod:`hippo_rep.models.fused_cpp`). The first iteration of
    each is a warm-up and not timed."""
    from hippo_rep.models import fused_cpp

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    have_cpp = fused_cpp.ops() is not None
    build_s = time.perf_counter() - t0
    print(f"preset {preset}; one thread; {iterations} timed iterations per batch size "
          "(after one warm-up), eager, fast (Python loop) and cpp (C++ loop) interleaved; "
          f"C++ loop {'built or loaded' if have_cpp else 'unavailable'} in {build_s:.1f} s "
          "(cached after the first build)")
    print(f"{'batch':>6s}{'eager it/s':>12s}{'fast it/s':>11s}{'cpp it/s':>10s}"
          f"{'fast/eager':>12s}{'cpp/eager':>11s}{'cpp/fast':>10s}{'cpp env-steps/s':>17s}"
          f"{'max loss rel diff':>19s}{'loop GEMM floor ms':>20s}{'floor/cpp':>11s}")
    variants = ["eager", "fast", "cpp"] if have_cpp else ["eager", "fast"]
    for batch in batches:
        times = {k: [] for k in variants}
        loss = {k: [] for k in variants}
        with tempfile.TemporaryDirectory() as tmp:
            trainers = {}
            for k in variants:
                fast = k != "eager"
                cfg = load_config(preset, [f"train.batch_size={batch}", "train.eval_every=0",
                                           "train.threads=1",
                                           f"train.fast_step={str(fast).lower()}", *overrides])
                trainers[k] = Trainer(cfg, f"{tmp}/{k}", progress=False)
                trainers[k].model.cpp_loop = k == "cpp"
            if have_cpp and not fused_cpp.covers(trainers["cpp"].model):
                print("  (the C++ loop does not cover this model: cpp runs the Python loop)")
            for it in range(iterations + 1):
                for k, tr in trainers.items():
                    t0 = time.perf_counter()
                    row = tr.step(it)
                    if it > 0:
                        times[k].append(time.perf_counter() - t0)
                    loss[k].append(row["loss"])
            floor = loop_gemm_floor(trainers["fast"], iterations + 1)
        steps = cfg.world.walk_steps * batch
        med = {k: statistics.median(v) for k, v in times.items()}
        e, f = med["eager"], med["fast"]
        c = med.get("cpp", float("nan"))
        diff = max(abs(a - b) / abs(a) for k in variants[1:]
                   for a, b in zip(loss["eager"], loss[k], strict=True))
        print(f"{batch:6d}{1 / e:12.2f}{1 / f:11.2f}{1 / c:10.2f}{e / f:12.2f}{e / c:11.2f}"
              f"{f / c:10.2f}{steps / c:17.0f}{diff:19.1e}{floor * 1e3:20.0f}{floor / c:11.2f}",
              flush=True)


def count_ops(preset: str, batches: list[int], iterations: int, overrides: list[str]) -> None:
    """aten operations per walk step, eager vs fast (Python loop) vs cpp (the loop in C++:
    the aten calls it makes, not counting its own work by hand; see the module docstring):
    the forward pass of the model (of it the time loop), backward, and the whole
    iteration."""
    from torch.profiler import ProfilerActivity, profile, record_function

    torch.set_num_threads(1)
    print(f"preset {preset}; aten ops per walk step (top-level calls, {iterations} iterations "
          "after one warm-up)")
    print(f"{'batch':>6s}{'step':>7s}{'forward':>10s}{'of it loop':>12s}{'backward':>10s}"
          f"{'iteration':>11s}")
    for batch in batches:
        with tempfile.TemporaryDirectory() as tmp:
            for variant in ("eager", "fast", "cpp"):
                fast = variant != "eager"
                cfg = load_config(preset, [f"train.batch_size={batch}", "train.eval_every=0",
                                           "train.threads=1",
                                           f"train.fast_step={str(fast).lower()}", *overrides])
                tr = Trainer(cfg, f"{tmp}/{variant}", progress=False)
                model = tr.model
                model.cpp_loop = variant == "cpp"
                fwd, loop, bwd = model.forward, model._loop, torch.Tensor.backward

                def forward(*a, _f=fwd, **kw):
                    with record_function("## forward"):
                        return _f(*a, **kw)

                def time_loop(*a, _f=loop, **kw):
                    with record_function("## loop"):
                        return _f(*a, **kw)

                def backward(self, *a, _b=bwd, **kw):
                    with record_function("## backward"):
                        return _b(self, *a, **kw)

                tr.step(0)
                model.forward, model._loop = forward, time_loop
                torch.Tensor.backward = backward
                try:
                    with profile(activities=[ProfilerActivity.CPU]) as prof:
                        for it in range(1, iterations + 1):
                            with record_function("## iteration"):
                                tr.step(it)
                finally:
                    torch.Tensor.backward = bwd
                    del model.forward, model._loop
                counts = _ops_by_section(prof.events())
                steps = iterations * cfg.world.walk_steps
                print(f"{batch:6d}{variant:>7s}"
                      f"{counts['## forward'] / steps:10.1f}"
                      f"{counts.get('## loop', 0) / steps:12.1f}"
                      f"{counts['## backward'] / steps:10.1f}"
                      f"{counts['## iteration'] / steps:11.1f}", flush=True)


def _ops_by_section(events) -> dict[str, int]:
    """Top-level aten ops under each "## ..." record_function range (ops called from inside
    an aten op, and autograd's own backward nodes' internals, counted once: their outermost
    aten call)."""
    sections = [e for e in events if e.name.startswith("## ")]
    counts = {e.name: 0 for e in sections}
    for e in events:
        if not e.name.startswith("aten::"):
            continue
        p = e.cpu_parent
        while p is not None and not (p.name.startswith("aten::") or p.name.startswith("## ")):
            p = p.cpu_parent
        if p is None or p.name.startswith("aten::"):
            continue  # nested inside another aten op, or outside every section
        # count in this section and in every section around it
        while p is not None:
            if p.name.startswith("## "):
                counts[p.name] += 1
            p = p.cpu_parent
    return counts


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="small")
    p.add_argument("--target", type=float, default=0.9, help="loop-closure accuracy target")
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--max-minutes", type=float, default=15.0, help="per model")
    p.add_argument("--set", action="append", default=[], help="config override")
    p.add_argument("--settings", default="",
                   help="comma-separated settings of benchmarks/grid_settings.py")
    p.add_argument("--compare-fast", action="store_true",
                   help="time the fused step against the eager one instead of training")
    p.add_argument("--batches", default="16,64,256", help="batch sizes of --compare-fast")
    p.add_argument("--runs", nargs="+", default=[],
                   help="one TEM-t run per comma-separated override group (no baseline)")
    p.add_argument("--iterations", type=int, default=5,
                   help="timed iterations per batch size of --compare-fast")
    p.add_argument("--init-preset", default=None,
                   help="train this preset first (timed) and start each run from it, the "
                        "documented curriculum for `paper`: --init-preset small")
    p.add_argument("--init-set", action="append", default=[],
                   help="config override of the --init-preset stage only")
    p.add_argument("--stop-at-target", action="store_true",
                   help="end each run once it reaches --target")
    p.add_argument("--ops", action="store_true",
                   help="count aten ops per walk step (eager vs fast) instead of training")
    args = p.parse_args()
    if args.ops:
        count_ops(args.preset, [int(b) for b in args.batches.split(",")], args.iterations,
                  args.set)
        return
    if args.compare_fast:
        compare_fast(args.preset, [int(b) for b in args.batches.split(",")], args.iterations,
                     args.set)
        return
    if args.runs:
        runs = [("temt", [*args.set, *group.split(",")], group) for group in args.runs]
    elif args.settings:
        from grid_settings import SETTINGS

        runs = [("temt", [*SETTINGS[n], *args.set], n) for n in args.settings.split(",")]
    else:
        runs = [("temt", args.set, "temt")]
    if not args.runs:
        runs.append(("sinusoidal", args.set, "sinusoidal"))
    rows = [run(args.preset, kind, args.target, args.eval_every, args.max_minutes, sets, label,
                args.stop_at_target, args.init_preset, tuple(args.init_set))
            for kind, sets, label in runs]
    print(f"\npreset {args.preset}; held-out: {EVAL_ENVS} envs; target loop closure "
          f"{args.target}")
    w = max(16, *(len(r["kind"]) + 2 for r in rows))
    tgt_head = "to target (it / train s / wall s / CPU s)"
    head = (f"{'model':{w}s}{'it/s':>7s}{'its':>7s}{tgt_head:>44s}"
            f"{'revisit':>9s}{'new edge':>9s}{'unseen':>8s}{'edge agent (new)':>18s}")
    print(head)
    base = rows[0]["it_per_s"]
    for r in rows:
        f = r["final"]
        tgt = ("not reached" if r["reached"] is None else
               f"{r['reached'][0]} / {r['reached'][1]:.0f} / {r['reached'][2]:.0f} / "
               f"{r['reached'][3]:.0f}")
        print(f"{r['kind']:{w}s}{r['it_per_s']:7.2f}{r['iterations']:7d}{tgt:>44s}"
              f"{f['model']['revisit']:9.3f}{f['model']['revisit_new_edge']:9.3f}"
              f"{f['model']['revisit_unseen_edge']:8.3f}"
              f"{f['edge_agent']['revisit_new_edge']:18.3f}")
    for r in rows[1:]:
        print(f"speed ratio {r['kind']} / {rows[0]['kind']}: {r['it_per_s'] / base:.2f}")


if __name__ == "__main__":
    main()
