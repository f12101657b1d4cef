"""Training speed of TEM (``model.kind = "tem"``) and TEM-t at TEM's default sizes.

Both are trained by the same :class:`~hippo_rep.training.trainer.Trainer` on the same
batches (the ``tem`` preset's worlds, walks, batch size 16 and truncated BPTT of 20 steps;
TEM at torch_tem's default sizes, TEM-t at its own defaults with ``model.kind = "temt"``).
One trainer iteration walks ``walk_steps`` steps in chunks of ``chunk_len`` with the memory
carried; torch_tem's "iteration" is one 20-step chunk, so the table gives both
iterations/s and 20-step chunks/s (forward + backward + optimiser steps). TEM takes an
optimiser step per chunk and counts its loss at revisited nodes only (the preset, as
torch_tem); TEM-t one step per walk over every step (:data:`FIXED`).
Prints a table with TEM-t/TEM ratios and the torch_tem figure measured on this machine
(0.25 iterations/s, measured earlier by the project; ``--torch-tem``) for reference.

    python benchmarks/bench_tem_vs_temt.py --iterations 3

``--learning OUT.json`` measures learning speed instead (the TEM-t paper's Fig. 4): TEM and
TEM-t are trained on the same batches (same worlds, seeds, batch size, walks, chunks and
learning rate; ``model.kind`` differs, each keeps its own update regime, :data:`FIXED`,
and TEM takes ``--tem-schedule`` and ``--tem-set``) for ``--budget-s``
seconds of training each, and evaluated on the same fixed held-out environments
(:data:`EVAL_SEED`) at update 0, at updates 1, 2, 4, ... and at every ``budget / points``
seconds of training: held-out zero-shot accuracy (revisits through an edge never crossed in
either direction) against gradient updates and against training wall-clock seconds
(evaluation time excluded), with the node agent's accuracy on the same steps as the ceiling.
Prints the updates and seconds each model needs to reach 0.5 and 0.9 and their TEM / TEM-t
ratios (a lower bound where TEM did not reach it), and writes the JSON that the
``learning_speed`` figure draws (``hippo-rep figures --learning-speed OUT.json``).

    python benchmarks/bench_tem_vs_temt.py --learning data/learning_speed.json --budget-s 540

A long run can span sessions: with ``--keep-dir DIR`` each model checkpoints in ``DIR/tem``
and ``DIR/temt`` at every evaluation, and ``--resume`` (same ``--learning`` JSON, ``--keep-dir``
and settings, a larger ``--budget-s``) continues each model from its checkpoint on the same
batches, counting seconds on; models that already spent their budget are kept as they are,
``--fresh tem`` trains TEM again from update 0 (keeping TEM-t's rows), and the JSON lists the
updates at which each model was resumed (``resumed_at``; the figure says so).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

import torch

from hippo_rep.config import Config, load_config
from hippo_rep.figures import FigureError, read_learning_speed
from hippo_rep.fileio import write_json
from hippo_rep.plotting.learning import LEARNING_SPEED_KIND
from hippo_rep.training.checkpoint import load_checkpoint
from hippo_rep.training.evaluate import evaluate
from hippo_rep.training.trainer import TRAINING_EVAL_SEED, Trainer, updates_per_walk

#: torch_tem (github jbakermans/torch_tem) at default settings on a 5x5 world, measured on
#: this 2-core machine by the project before this benchmark existed, iterations/s.
TORCH_TEM_IT_PER_S = 0.25
#: Held-out environments of the learning-speed evaluation (the trainer's held-out seed).
EVAL_SEED = TRAINING_EVAL_SEED
#: Zero-shot accuracies whose first crossing is reported.
THRESHOLDS = (0.5, 0.9)
#: TEM's schedule for short runs (``--tem-schedule short``): η, λ and the latent losses on
#: from the first update and inference kept to path integration (p2g offset held at 1), the
#: setting that learned fastest in tests/test_tem.py. torch_tem's schedule
#: (``--tem-schedule torch_tem``, the preset) ramps η in over 16,000 updates.
TEM_SHORT_SCHEDULE = ("train.tem.eta_ramp=1", "train.tem.lambda_ramp=1",
                      "train.tem.latent_ramp=1", "train.tem.reg_p_decay=1",
                      "train.tem.p2g_half=100000")


#: What each model keeps in every run of this benchmark whatever the ``tem`` preset says
#: (before ``--set``/``--tem-set``): TEM-t one update per walk over every step (its own
#: regime; the preset's update per chunk and loss on revisits are TEM's), and for both a
#: learning-rate schedule over 20,000 iterations, so the rate stays near its peak over any
#: budget here (the runs in data/ were measured so).
FIXED = {"temt": ("train.iterations=20000", "train.step_every_chunk=false",
                  "train.tem.loss_on=all"),
         "tem": ("train.iterations=20000",)}


def bench_config(kind: str, overrides: list[str]):
    """The ``tem`` preset as this benchmark trains ``kind`` (:data:`FIXED`, then overrides)."""
    return load_config("tem", [f"model.kind={kind}", "train.eval_every=0", *FIXED[kind],
                               *overrides])


def measure(kind: str, iterations: int, overrides: list[str]) -> dict:
    cfg = bench_config(kind, overrides)
    with tempfile.TemporaryDirectory() as tmp:
        tr = Trainer(cfg, tmp, progress=False)
        tr.step(0)  # warm-up (allocations, first-call overheads)
        t0 = time.perf_counter()
        for it in range(1, iterations + 1):
            tr.step(it)
        dt = time.perf_counter() - t0
    chunks = -(-cfg.world.walk_steps // cfg.train.chunk_len) * iterations
    return {"kind": kind, "it_per_s": iterations / dt, "chunk_per_s": chunks / dt,
            "params": sum(p.numel() for p in tr.model.parameters())}


def learning_run(kind: str, budget_s: float, overrides: list[str], eval_envs: int,
                 points: int, on_eval=None, keep_dir: Path | None = None,
                 previous: list[dict] | None = None) -> list[dict]:
    """Train ``kind`` for ``budget_s`` seconds of training; evaluate along the way.

    ``on_eval(rows)``, if given, is called after every evaluation (the bench writes its JSON
    there, so a long run stopped early still leaves every point it measured). With
    ``keep_dir`` the run trains in ``keep_dir / kind`` and checkpoints there at every
    evaluation (for recording and analysing the trained models); else in a temporary folder.
    ``previous``: the rows of an earlier run of this ``keep_dir``; the run then resumes from
    its checkpoint (the same batches follow: :func:`hippo_rep.random_streams.batch_rng`),
    keeps the rows up to the checkpoint's update and counts seconds on from there.
    """
    cfg = bench_config(kind, overrides)
    wc = cfg.world
    rows: list[dict] = []
    where = tempfile.TemporaryDirectory() if keep_dir is None else nullcontext(keep_dir / kind)
    with where as out_dir:
        tr = Trainer(cfg, out_dir, resume=previous is not None, progress=False)
        if previous is not None:
            done = tr.start * tr.updates_per_iteration
            rows = [r for r in previous if r["updates"] <= done]
            if not rows or rows[-1]["updates"] != done:
                raise SystemExit(f"--resume: {kind}'s rows have no evaluation at update "
                                 f"{done}, the checkpoint's in {str(out_dir)!r}")

        def held_out(iterations: int, seconds: float) -> None:
            updates = iterations * tr.updates_per_iteration
            t0 = time.perf_counter()
            res = evaluate(tr.model, tr.worlds, eval_envs, wc.walk_steps, wc.n_obs,
                           seed=EVAL_SEED, keep_heading=wc.keep_heading,
                           stay_prob=wc.stay_prob)
            rows.append({"updates": updates, "seconds": seconds,
                         "walk_steps": iterations * wc.walk_steps,
                         "zero_shot": res["model"]["revisit_unseen_edge"],
                         "new_edge": res["model"]["revisit_new_edge"],
                         "revisit": res["model"]["revisit"],
                         "node_agent": res["node_agent"]["revisit_unseen_edge"],
                         "n_zero_shot": res["counts"]["revisit_unseen_edge"],
                         "eval_s": time.perf_counter() - t0})
            zs, rv = (_fmt(rows[-1][k]) for k in ("zero_shot", "revisit"))
            print(f"  {kind}: {updates:5d} updates, {seconds:7.1f} s: zero-shot {zs} "
                  f"(revisit {rv})", flush=True)
            if on_eval is not None:
                on_eval(rows)
            if keep_dir is not None and iterations > 0:
                tr.save(iterations)  # as Trainer.run: the number of iterations done

        if previous is None:
            held_out(0, 0.0)
        spent, it = rows[-1]["seconds"], tr.start
        next_t = budget_s / points * (spent // (budget_s / points) + 1)
        while spent < budget_s:
            t0 = time.perf_counter()
            tr.step(it)
            spent += time.perf_counter() - t0
            it += 1
            if spent >= next_t or spent >= budget_s or (it & (it - 1)) == 0:
                held_out(it, spent)
                while next_t <= spent:
                    next_t += budget_s / points
    return rows


def _fmt(x: float | None) -> str:
    """An accuracy, or "n/a" where the walks had no step of that type."""
    return "n/a" if x is None else f"{x:.3f}"


def _current_names(overrides) -> list[str]:
    """``KEY=VALUE`` overrides with every key under its current name
    (``train.tem_eta_ramp=1`` → ``train.tem.eta_ramp=1``, :meth:`Config.new_key`)."""
    out = []
    for text in overrides:
        key, sep, value = str(text).partition("=")
        out.append(f"{Config.new_key(key.strip())}={value}" if sep else text)
    return out


def _previous(a, overrides: dict) -> dict:
    """The JSON that ``--resume`` continues, checked to be this run's (same overrides; a
    JSON written before TEM's keys moved to [train.tem] names them by their old names)."""
    if a.keep_dir is None:
        raise SystemExit("--resume needs --keep-dir (the folder holding the checkpoints)")
    path = Path(a.learning)
    old = _read(path)
    for k, o in (old.get("overrides") or {}).items():
        if k in overrides and k not in a.fresh and \
                _current_names(o) != _current_names(overrides[k]):
            raise SystemExit(f"--resume: {str(path)!r} was made with {k} overrides {o}, "
                             f"not {overrides[k]} (seed, --set, --tem-schedule, threads)")
    return old


def merge(base_path: str, extra_path: str, label: str, out_path: str,
          model: str = "tem") -> dict:
    """``base`` with ``extra``'s ``model`` run added as ``runs[label]`` (e.g. TEM with an
    update per chunk beside TEM with one per walk), after checking both were measured on the
    same evaluation and batches and against the same run of the other model (extra's rows of
    it a prefix of base's: base may have trained on since); thresholds recomputed, written to
    ``out_path``."""
    other = "temt" if model == "tem" else "tem"
    base, extra = (_read(Path(p)) for p in (base_path, extra_path))
    for key in ("worlds", "n_obs", "walk_steps", "batch_size", "chunk_len", "lr", "seed",
                "eval_envs", "eval_seed", "tem_schedule"):
        if base.get(key) != extra.get(key):
            raise SystemExit(f"--merge: {key} differs between {base_path!r} "
                             f"({base.get(key)!r}) and {extra_path!r} ({extra.get(key)!r})")
    mine, theirs = extra["runs"].get(other) or [], base["runs"].get(other) or []
    if not mine or theirs[:len(mine)] != mine:
        raise SystemExit(f"--merge: {base_path!r} and {extra_path!r} hold different "
                         f"{other} runs")
    if label in base["runs"]:
        raise SystemExit(f"--merge: {base_path!r} already has a run {label!r}")
    out = dict(base)
    out["runs"] = {**base["runs"], label: extra["runs"][model]}
    for key in ("overrides", "budgets_s", "resumed_at"):
        out[key] = {**(base.get(key) or {}),
                    **({label: extra[key][model]} if model in (extra.get(key) or {}) else {})}
    out["complete"] = base.get("complete", True) and extra.get("complete", True)
    out["reached"] = {str(t): {k: first_reaching(r, t) for k, r in out["runs"].items()}
                      for t in THRESHOLDS}
    out["merged_from"] = [base_path, extra_path]
    write_json(out_path, out)
    return out


def _read(path: Path) -> dict:
    """A learning-speed JSON, checked by the figure's reader (one line naming file and field)."""
    try:
        return read_learning_speed(path)
    except FigureError as err:
        raise SystemExit(str(err)) from None


def with_walk_steps(rows: list[dict], cfg) -> list[dict]:
    """``rows`` with ``walk_steps`` (steps walked per batch environment) added where missing
    (rows measured before the bench recorded it), from the config the model trains with:
    its updates per walk and walk length."""
    per_walk, steps = updates_per_walk(cfg), cfg.world.walk_steps
    return [r if "walk_steps" in r else {**r, "walk_steps": r["updates"] // per_walk * steps}
            for r in rows]


def first_reaching(rows: list[dict], threshold: float) -> dict | None:
    """The first evaluation at which zero-shot accuracy reaches ``threshold`` (None: never)."""
    return next(({"updates": r["updates"], "seconds": r["seconds"]} for r in rows
                 if r["zero_shot"] is not None and r["zero_shot"] >= threshold), None)


def learning(a) -> None:
    torch.set_num_threads(a.threads)
    common = [f"train.threads={a.threads}", f"train.seed={a.seed}", *a.set]
    tem_extra = list(TEM_SHORT_SCHEDULE) if a.tem_schedule == "short" else []
    overrides = {"tem": [*common, *tem_extra, *a.tem_set], "temt": [*common, *a.temt_set]}
    budgets = {"temt": a.budget_s if a.temt_budget_s is None else a.temt_budget_s,
               "tem": a.budget_s}
    cfg = load_config("tem", common)
    runs: dict[str, list[dict]] = {}
    old = _previous(a, overrides) if a.resume else {"runs": {}, "resumed_at": {}}
    resumed_at = {k: list(v) for k, v in old.get("resumed_at", {}).items()}

    def summary(complete: bool) -> dict:
        reached = {str(t): {k: first_reaching(r, t) for k, r in runs.items()}
                   for t in THRESHOLDS}
        return {"kind": LEARNING_SPEED_KIND, "worlds": list(cfg.world.worlds),
                "n_obs": cfg.world.n_obs, "walk_steps": cfg.world.walk_steps,
                "batch_size": cfg.train.batch_size, "chunk_len": cfg.train.chunk_len,
                "lr": cfg.train.lr, "seed": a.seed, "threads": a.threads,
                "budget_s": a.budget_s, "budgets_s": budgets, "complete": complete,
                "eval_envs": a.eval_envs, "eval_seed": EVAL_SEED,
                "tem_schedule": a.tem_schedule, "overrides": overrides, "runs": runs,
                "resumed_at": resumed_at, "reached": reached,
                "node_agent": next(iter(runs.values()))[0]["node_agent"]}

    # TEM-t first: it is the short one, so a long TEM run stopped early still leaves both.
    for k in ("temt", "tem"):
        def partial(rows, k=k):
            runs[k] = rows
            write_json(a.learning, summary(complete=False))
        prev = None if k in a.fresh else old["runs"].get(k)
        ckpt = None if a.keep_dir is None else Path(a.keep_dir) / k / "checkpoint.pt"
        if prev:  # the regime the run trained in: its checkpoint's, else this command's
            trained = load_checkpoint(ckpt)[1] if ckpt is not None and ckpt.is_file() \
                else bench_config(k, overrides[k])
            prev = with_walk_steps(prev, trained)
        if k in a.fresh and ckpt.exists():
            raise SystemExit(f"--fresh {k}: {str(ckpt.parent)!r} holds a checkpoint; "
                             "remove it or choose another --keep-dir")
        if prev and prev[-1]["seconds"] >= budgets[k]:
            print(f"  {k}: kept from {a.learning} ({prev[-1]['updates']} updates, "
                  f"{prev[-1]['seconds']:.0f} s)", flush=True)
            runs[k] = prev
            continue
        if prev:
            if not ckpt.is_file():
                raise SystemExit(f"--resume: {a.learning}'s {k} run stopped at "
                                 f"{prev[-1]['seconds']:.0f} s of {budgets[k]:.0f} and "
                                 f"{str(ckpt)!r} does not exist to continue it; pass "
                                 f"--fresh {k} to train it again from update 0")
            resumed_at.setdefault(k, []).append(prev[-1]["updates"])
        runs[k] = learning_run(k, budgets[k], overrides[k], a.eval_envs, a.points, partial,
                               None if a.keep_dir is None else Path(a.keep_dir), prev)
    runs = {k: runs[k] for k in ("tem", "temt")}
    out = summary(complete=True)
    reached = out["reached"]
    write_json(a.learning, out)
    print(f"worlds {cfg.world.worlds}, walk {cfg.world.walk_steps}, chunk "
          f"{cfg.train.chunk_len}, batch {cfg.train.batch_size}, lr {cfg.train.lr}, seed "
          f"{a.seed}, {budgets['tem']:.0f} s (TEM) / {budgets['temt']:.0f} s (TEM-t) of "
          f"training, {a.eval_envs} held-out walks, TEM "
          f"schedule {a.tem_schedule}; node agent zero-shot {_fmt(out['node_agent'])}")
    print(f"{'model':6s} {'updates':>8s} {'seconds':>8s} {'upd/s':>6s} {'final zero-shot':>16s}"
          f" {'best':>6s}")
    for k, r in runs.items():
        best = max((x["zero_shot"] for x in r if x["zero_shot"] is not None), default=None)
        print(f"{k:6s} {r[-1]['updates']:8d} {r[-1]['seconds']:8.1f} "
              f"{r[-1]['updates'] / r[-1]['seconds']:6.3f} {_fmt(r[-1]['zero_shot']):>16s} "
              f"{_fmt(best):>6s}")
    print(f"{'reach':>6s} {'TEM upd':>9s} {'TEM-t upd':>10s} {'ratio':>8s} {'TEM s':>8s} "
          f"{'TEM-t s':>8s} {'ratio':>8s}")
    for t in THRESHOLDS:
        tem, temt = reached[str(t)]["tem"], reached[str(t)]["temt"]
        cells = []
        for key in ("updates", "seconds"):
            cells += [_cell(tem, runs["tem"], key), _cell(temt, runs["temt"], key),
                      _ratio(tem, temt, runs["tem"], key)]
        print(f"{t:6.1f} {cells[0]:>9s} {cells[1]:>10s} {cells[2]:>8s} {cells[3]:>8s} "
              f"{cells[4]:>8s} {cells[5]:>8s}")
    print(f"wrote {a.learning}")


def _cell(hit: dict | None, rows: list[dict], key: str) -> str:
    """Where a threshold was reached, or "> what was spent" when it was not."""
    return f"{hit[key]:.0f}" if hit else f">{rows[-1][key]:.0f}"


def _ratio(tem: dict | None, temt: dict | None, tem_rows: list[dict], key: str) -> str:
    """TEM / TEM-t to reach a threshold ("> x": TEM did not reach it; n/a: TEM-t did not)."""
    if temt is None:
        return "n/a"
    num = tem[key] if tem else tem_rows[-1][key]
    return f"{'' if tem else '>'}{num / max(temt[key], 1e-9):.1f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--iterations", type=int, default=3, help="timed iterations per model")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--torch-tem", type=float, default=TORCH_TEM_IT_PER_S,
                   help="torch_tem's 20-step iterations/s on this machine")
    p.add_argument("--set", action="append", default=[], help="extra config overrides")
    p.add_argument("--tem-set", action="append", default=[],
                   help="--learning: config overrides for TEM only (e.g. "
                        "train.tem.loss_on=all, the loss at every step)")
    p.add_argument("--temt-set", action="append", default=[],
                   help="--learning: config overrides for TEM-t only (e.g. "
                        "train.step_every_chunk=true, an update per 20-step chunk)")
    p.add_argument("--learning", metavar="OUT.json",
                   help="measure learning speed (zero-shot accuracy vs updates and seconds)")
    p.add_argument("--budget-s", type=float, default=540.0,
                   help="--learning: seconds of training per model")
    p.add_argument("--temt-budget-s", type=float, default=None,
                   help="--learning: seconds of training for TEM-t (default: --budget-s)")
    p.add_argument("--keep-dir", metavar="DIR",
                   help="--learning: train in DIR/tem and DIR/temt and keep their checkpoints "
                        "(saved at every evaluation)")
    p.add_argument("--resume", action="store_true",
                   help="--learning: continue OUT.json's runs from their checkpoints in "
                        "--keep-dir (runs that already spent their budget are kept as they "
                        "are; raise --budget-s to train on)")
    p.add_argument("--fresh", action="append", default=[], choices=("tem", "temt"),
                   help="--learning --resume: train this model again from update 0")
    p.add_argument("--eval-envs", type=int, default=16, help="--learning: held-out walks")
    p.add_argument("--points", type=int, default=12,
                   help="--learning: evaluations spread over the budget (besides 1, 2, 4, ...)")
    p.add_argument("--seed", type=int, default=0, help="--learning: training seed")
    p.add_argument("--tem-schedule", choices=("short", "torch_tem"), default="short",
                   help="--learning: TEM's annealing (see TEM_SHORT_SCHEDULE)")
    p.add_argument("--merge", nargs=2, metavar=("BASE.json", "EXTRA.json"),
                   help="write --learning OUT.json: BASE with EXTRA's TEM run added as "
                        "--merge-label (both measured against the same TEM-t run)")
    p.add_argument("--merge-label", default="tem_per_chunk",
                   help="--merge: the name of EXTRA's run in OUT.json")
    p.add_argument("--merge-model", choices=("tem", "temt"), default="tem",
                   help="--merge: which of EXTRA's runs to add (the other must be BASE's)")
    a = p.parse_args()
    if a.merge:
        if not a.learning:
            p.error("--merge needs --learning OUT.json")
        out = merge(*a.merge, a.merge_label, a.learning, a.merge_model)
        for t, hits in out["reached"].items():
            cells = [f"{k} " + ("not reached" if h is None else
                                f"at update {h['updates']} ({h['seconds']:.0f} s)")
                     for k, h in hits.items()]
            print(f"zero-shot {t}: {', '.join(cells)}")
        print(f"wrote {a.learning}")
        return
    if a.fresh and not a.resume:
        p.error("--fresh is for --resume (a new run trains every model from update 0)")
    if a.learning:
        learning(a)
        return
    torch.set_num_threads(a.threads)
    rows = [measure(k, a.iterations, [f"train.threads={a.threads}", *a.set])
            for k in ("tem", "temt")]
    tem = rows[0]
    cfg = load_config("tem")
    print(f"worlds {cfg.world.worlds}, walk {cfg.world.walk_steps}, chunk "
          f"{cfg.train.chunk_len}, batch {cfg.train.batch_size}, threads {a.threads}")
    print(f"{'model':10s} {'it/s':>8s} {'20-step chunks/s':>17s} {'x TEM':>7s} "
          f"{'x torch_tem':>12s}")
    for r in rows:
        print(f"{r['kind']:10s} {r['it_per_s']:8.3f} {r['chunk_per_s']:17.2f} "
              f"{r['chunk_per_s'] / tem['chunk_per_s']:7.2f} "
              f"{r['chunk_per_s'] / a.torch_tem:12.1f}")
    print(f"{'torch_tem':10s} {'':8s} {a.torch_tem:17.2f} {a.torch_tem / tem['chunk_per_s']:7.2f}"
          f" {1.0:12.1f}   (measured earlier on this machine; not run here)")


if __name__ == "__main__":
    main()
