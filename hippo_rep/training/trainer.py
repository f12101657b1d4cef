"""The training loop: fresh environments every batch, truncated BPTT, atomic checkpoints."""

from __future__ import annotations

import csv
import math
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from hippo_rep.config import Config, apply_overrides, from_dict, world_kind
from hippo_rep.fileio import atomic_write, remove_path, write_csv
from hippo_rep.models import fused
from hippo_rep.models.memory import load_across_memory
from hippo_rep.models.registry import Chunk, build_model, model_spec
from hippo_rep.random_streams import batch_rng
from hippo_rep.training.checkpoint import (
    check_actions,
    file_sha256,
    load_checkpoint,
    save_checkpoint,
)
from hippo_rep.training.evaluate import evaluate
from hippo_rep.typed_config import flat_items
from hippo_rep.worlds import (
    WorldError,
    home_region,
    n_actions_for,
    parse_world,
    sample_delay_episodes,
    sample_episodes,
    step_types,
)

#: Seed of the fixed held-out environments evaluated during training.
TRAINING_EVAL_SEED = 10_000
METRIC_FIELDS = ("iteration", "elapsed_s", "lr", "loss", "loss_pi", "loss_g", "loss_g_pi",
                 "loss_l2_g", "loss_inverse", "acc_revisit", "acc_new_edge", "n_memories",
                 "eval_revisit", "eval_new_edge", "eval_unseen_edge", "eval_first_visit")



def metric_fields(config: Config) -> tuple[str, ...]:
    """Columns of metrics.csv: the common ones, then those of this run's model kind and loss
    terms (its spec's ``metric_columns``: e.g. TEM's loss terms, cell and isometry terms)."""
    return METRIC_FIELDS + model_spec(config.model.kind).metric_columns(config)


#: Keys that may differ when resuming (they do not change what one iteration computes).
#: Model keys that may differ between a run and its ``train.init_from`` source.
_MEMORY_KEYS = ("memory", "memory_block", "memory_blocks", "fam_slots", "fam_beta_init",
                "fam_update", "hebbian_decay")
#: ... and the read-out cells' rules, which keep A's shape (a trained read-out model's g with
#: other cell constraints: its cells re-learn under them).
_CELL_RULE_KEYS = ("cells_activation", "cells_unit_norm", "cells_modular", "cells_bias_init")
_RESUMABLE_CHANGES = {"train.iterations", "train.checkpoint_every", "train.log_every",
                      "train.eval_every", "train.eval_envs", "train.device", "train.threads",
                      "train.fast_step"}

#: Keys naming where a run's weights come from (they may differ from the source's).
_INIT_KEYS = {"train.init_from", "train.init_continue"}


def continue_config(path, overrides=()) -> Config:
    """The config of a run that continues checkpoint ``path`` (``hippo-rep train
    --continue-from``): the checkpoint's own, with ``overrides`` (``section.key=value``; only
    the keys ``--resume`` may change pass the trainer's check), ``train.init_from = path`` and
    ``train.init_continue = true``."""
    _, cfg, _ = load_checkpoint(path)
    data = apply_overrides(cfg.to_dict(), overrides)
    data["train"].update(init_from=str(path), init_continue=True)
    return from_dict(data, f"--continue-from {str(path)!r} with --set")


def _changed_keys(a: Config, b: Config) -> set[str]:
    da, db = flat_items(a.to_dict()), flat_items(b.to_dict())
    return {k for k in da if da[k] != db[k]}


def _check_same_run(saved: Config, config: Config, where: str, source: str,
                    also=frozenset()) -> None:
    """Refuse to go on with ``saved``'s run under a ``config`` that changes what an iteration
    computes (only :data:`_RESUMABLE_CHANGES` and the keys in ``also`` may differ)."""
    changed = _changed_keys(saved, config) - _RESUMABLE_CHANGES - also
    if changed:
        raise TrainingError(f"{where}: {', '.join(sorted(changed))} differ(s) from {source}; "
                            f"only {', '.join(sorted(_RESUMABLE_CHANGES))} may change")


class TrainingError(RuntimeError):
    """Training cannot go on (non-finite loss, output folder in use, ...)."""


def resolve_device(name: str) -> torch.device:
    """The torch device of a ``train.device`` value (its form checked by TrainConfig)."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise TrainingError(f"--device {name}: CUDA is not available on this machine")
    return torch.device(name)


def updates_per_walk(cfg: Config) -> int:
    """Optimiser steps per iteration (one walk per batch environment): one, or one per chunk
    with ``train.step_every_chunk``."""
    wc, tc = cfg.world, cfg.train
    return math.ceil(wc.walk_steps / (tc.chunk_len or wc.walk_steps)) \
        if tc.step_every_chunk else 1


def warmup_cosine(step: int, peak: float, warmup: int, total: int) -> float:
    """Learning rate at ``step`` (0-based) of ``total``: linear warm-up over ``warmup`` steps
    to ``peak``, then cosine decay to 10% of ``peak`` at the last step (also PassKey's,
    :mod:`hippo_rep.tasks.passkey`, through ``LambdaLR`` with ``peak`` 1)."""
    if step < warmup:
        return peak * (step + 1) / warmup
    frac = (step - warmup) / max(1, total - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))


def lr_at(cfg: Config, iteration: int) -> float:
    """The learning rate of ``iteration`` (:func:`warmup_cosine` of ``train.lr``)."""
    tc = cfg.train
    return warmup_cosine(iteration, tc.lr, tc.warmup, tc.iterations)


def apply_gradients(model: torch.nn.Module, optimizer, grad_clip: float) -> None:
    """Clip the accumulated gradient's norm to ``grad_clip`` (0: no clipping), take an
    optimiser step and clear the gradients."""
    if grad_clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


class Trainer:
    """Train a TEM-t (or baseline) model into ``out_dir``.

    The folder holds ``config.toml``, ``metrics.csv`` and ``checkpoint.pt``.
    """

    def __init__(self, config: Config, out_dir, resume: bool = False, progress: bool = True):
        self.cfg, self.out = config, Path(out_dir)
        self.progress = progress
        self.ckpt_path = self.out / "checkpoint.pt"
        self.metrics_path = self.out / "metrics.csv"
        tc = config.train
        if tc.threads > 0:
            torch.set_num_threads(tc.threads)
        self.device = resolve_device(tc.device)
        self.worlds = [parse_world(s) for s in config.world.worlds]
        if config.world.walk == "delay":
            for w in self.worlds:
                try:
                    home_region(w)
                except WorldError as err:
                    raise TrainingError(f"world.walk = \"delay\": {err}") from None
        self.n_actions = n_actions_for(world_kind(config))
        self.start = 0
        self.init_sha256 = None
        self.saved_step = None  # iteration of the checkpoint on disk (None: none exists)
        self.created_out = not self.out.exists()  # a failed fresh run removes what it made
        # torch's global RNG inside run(): a resumed run continues the checkpoint's
        self.rng_state = torch.Generator().manual_seed(tc.seed).get_state()
        if resume:
            if not self.ckpt_path.is_file():
                raise TrainingError(f"--resume: no checkpoint at {str(self.ckpt_path)!r}")
            model, saved_cfg, payload = load_checkpoint(self.ckpt_path, self.device)
            _check_same_run(saved_cfg, config, "--resume",
                            f"the checkpoint in {str(self.ckpt_path)!r}")
            self.model = model.train()
            self.start = self.saved_step = payload["step"]
            self.optim = self._optimizer()
            self._restore_state(payload)
            _drop_rows_after(self.metrics_path, self.start, metric_fields(config))
        else:
            if self.ckpt_path.exists():
                raise TrainingError(f"{str(self.ckpt_path)!r} exists; use --resume to continue "
                                    "it or choose another --out")
            self.model = build_model(config.model, self.n_actions, config.world.n_obs,
                                     seed=tc.seed).to(self.device)
            if tc.init_from:
                self._init_from(tc.init_from)
            if tc.init_continue and self.start >= tc.iterations:
                raise TrainingError(f"train.init_continue: {tc.init_from!r} is at iteration "
                                    f"{self.start}, not before train.iterations = "
                                    f"{tc.iterations}; raise train.iterations")
            self.optim = self._optimizer()
            self.out.mkdir(parents=True, exist_ok=True)
            atomic_write(self.out / "config.toml",
                         lambda tmp: Path(tmp).write_text(config.to_toml()))
            _write_metrics(self.metrics_path, metric_fields(config))
        self._set_fast_step()
        self.tb = _tensorboard(self.out)

    def _set_fast_step(self) -> None:
        """``train.fast_step``: the model's fused loop on or off; a model without one trains
        eagerly, said once (a warning)."""
        fast = self.cfg.train.fast_step
        if hasattr(self.model, "fast_step"):
            self.model.fast_step = fast
        why = fused.unsupported(self.model)
        if fast and why is not None:
            warnings.warn(f"train.fast_step: {why}; this run trains with the eager step",
                          fused.FastStepFallback, stacklevel=3)

    def _restore_state(self, payload: dict) -> None:
        """Optimizer and torch RNG state of a checkpoint being resumed, checked first."""
        where = f"--resume: checkpoint {str(self.ckpt_path)!r}"
        rng = payload.get("torch_rng_state")
        if rng is None and "weights_only_of" in (payload.get("extra") or {}):
            raise TrainingError(f"{where} is a weights-only copy (no optimizer or RNG state): "
                                "it cannot be resumed; start a new run from it with "
                                "train.init_from")
        if not isinstance(rng, torch.Tensor) or rng.dtype != torch.uint8 or rng.dim() != 1:
            raise TrainingError(f"{where}: torch_rng_state is not a byte tensor")
        state = payload.get("optimizer_state")
        if state:
            if not isinstance(state, dict):
                raise TrainingError(f"{where}: optimizer_state is not a table")
            tensors = [t for s in (state.get("state") or {}).values() if isinstance(s, dict)
                       for t in s.values() if isinstance(t, torch.Tensor)]
            if any(t.is_floating_point() and not bool(torch.isfinite(t).all())
                   for t in tensors):
                raise TrainingError(f"{where}: optimizer_state holds NaN or Inf")
            try:
                self.optim.load_state_dict(state)
            except (ValueError, KeyError, TypeError, RuntimeError, IndexError) as err:
                first = (str(err).strip().splitlines() or [type(err).__name__])[0]
                raise TrainingError(f"{where}: optimizer_state does not fit the model "
                                    f"({first[:200]})") from None
        try:
            torch.Generator().set_state(rng)
        except (RuntimeError, TypeError, ValueError) as err:
            raise TrainingError(f"{where}: torch_rng_state is unusable "
                                f"({type(err).__name__})") from None
        self.rng_state = rng

    def _init_from(self, path: str) -> None:
        """Start from another run's weights (a curriculum: e.g. 8x8 → 10x10/11x11, or a
        "full"-memory run → a bounded-memory variant: only the memory keys may differ, and
        weights the source lacks (FAM slots) keep their fresh initialisation)."""
        model, cfg, payload = load_checkpoint(path)
        check_actions(self.worlds[0], payload["n_actions"], f"train.init_from {path!r}",
                      TrainingError)
        free = (*_MEMORY_KEYS, *(_CELL_RULE_KEYS if cfg.model.cells == "readout" else ()))
        same = replace(cfg.model, **{k: getattr(self.cfg.model, k) for k in free})
        if same != self.cfg.model or payload["n_obs"] != self.cfg.world.n_obs:
            raise TrainingError(f"train.init_from: {path!r} has another model config or n_obs "
                                "than this run (only model.memory* and, between read-out "
                                "models, the cells' rules may differ)")
        problems = load_across_memory(self.model, model.state_dict())
        if problems:
            raise TrainingError(f"train.init_from: {path!r}: weights do not fit "
                                f"({', '.join(problems)})")
        self.init_sha256 = file_sha256(path)
        if self.cfg.train.init_continue:
            _check_same_run(cfg, self.cfg, "train.init_continue", f"{path!r}'s config",
                            also=_INIT_KEYS)
            self.start = payload["step"]

    def _optimizer(self):
        tc = self.cfg.train
        named = dict(self.model.named_parameters())
        # W_a's parameter (its generators, free matrices or, under "waves", wave vectors)
        trans = [p for n, p in named.items() if n == "W_a"]
        rest = [p for n, p in named.items() if n != "W_a"]
        if tc.transition_lr_scale == 0:
            for p in trans:
                p.requires_grad_(False)
        groups = [{"params": rest, "lr_scale": 1.0}]
        if trans and tc.transition_lr_scale > 0:
            groups.append({"params": trans, "lr_scale": tc.transition_lr_scale})
        return torch.optim.AdamW(groups, lr=tc.lr, weight_decay=tc.weight_decay)

    def save(self, step: int) -> None:
        """Checkpoint the model, unless a weight is non-finite (then stop, keeping the old one)."""
        self._check_finite(step)
        extra = {"init_from_sha256": self.init_sha256} if self.init_sha256 else {}
        save_checkpoint(self.ckpt_path, self.model, self.cfg, step, self.optim, extra)
        self.saved_step = step

    def kept(self) -> str:
        """What a stopped run leaves behind, truthfully."""
        if self.saved_step is None:
            return "No checkpoint was saved before this (none exists)"
        return (f"The last good checkpoint (iteration {self.saved_step}, finite weights) is "
                f"kept at {str(self.ckpt_path)!r}")

    def _check_finite(self, iteration: int) -> None:
        for name, p in self.model.named_parameters():
            if not bool(torch.isfinite(p).all()):
                raise TrainingError(f"weights became non-finite ({name} holds NaN or Inf) at "
                                    f"iteration {iteration}; stopped (try a lower train.lr). "
                                    f"{self.kept()}")

    def step(self, iteration: int) -> dict[str, float]:
        """One gradient step on a fresh batch of environments."""
        cfg, wc, tc = self.cfg, self.cfg.world, self.cfg.train
        if wc.walk == "delay":
            ep = sample_delay_episodes(self.worlds, tc.batch_size, wc.walk_steps, wc.n_obs,
                                       batch_rng(tc.seed, iteration), wc.max_delay)
        else:
            ep = sample_episodes(self.worlds, tc.batch_size, wc.walk_steps, wc.n_obs,
                                 batch_rng(tc.seed, iteration), wc.keep_heading, wc.stay_prob)
        obs = torch.as_tensor(ep.observations, device=self.device)
        act = torch.as_tensor(ep.actions, device=self.device)
        for group in self.optim.param_groups:
            group["lr"] = lr_at(cfg, iteration) * group.get("lr_scale", 1.0)
        self.model.train()
        self.optim.zero_grad(set_to_none=True)
        with torch.enable_grad():  # whatever grad mode a caller left behind
            return self._step(iteration, ep, obs, act)

    @property
    def updates_per_iteration(self) -> int:
        """Optimiser steps per iteration (:func:`updates_per_walk` of this run's config)."""
        return updates_per_walk(self.cfg)

    def _step(self, iteration, ep, obs, act) -> dict[str, float]:
        cfg, wc, tc = self.cfg, self.cfg.world, self.cfg.train
        chunk = tc.chunk_len or wc.walk_steps
        state, sums, preds = None, {}, []
        n_chunks = math.ceil(wc.walk_steps / chunk)
        per_chunk = self.updates_per_iteration > 1
        spec = model_spec(cfg.model.kind)
        types = [step_types(ep.nodes[i], ep.actions[i]) for i in range(tc.batch_size)]
        rev = np.stack([t["revisit"] for t in types])  # (B, walk_steps)
        revisit = torch.as_tensor(rev, device=self.device)
        pos = None
        if tc.loss_isometry > 0 and tc.isometry_pairs == "walk":  # node positions
            pos = torch.as_tensor(np.stack([w.coords[n] for w, n in zip(ep.worlds, ep.nodes,
                                                                         strict=True)]),
                                  dtype=torch.float32, device=self.device)
        for c, s in enumerate(range(0, wc.walk_steps, chunk)):
            update = iteration * n_chunks + c if per_chunk else iteration
            if spec.anneal is not None and (per_chunk or c == 0):
                spec.anneal(self.model, update, tc)
            out, state = self.model(obs[:, s:s + chunk], act[:, s:s + chunk], state)
            parts = spec.losses(self.model, out, Chunk(
                obs[:, s:s + chunk], revisit[:, s:s + chunk],
                None if pos is None else pos[:, s:s + chunk], iteration, update), cfg)
            if not torch.isfinite(parts["loss"]):
                raise TrainingError(
                    f"loss became {parts['loss'].item()} at iteration {iteration}; stopped "
                    f"(try a lower train.lr). {self.kept()}")
            (parts["loss"] if per_chunk else parts["loss"] / n_chunks).backward()
            state = state.detach()
            preds.append(out.logits_pi.argmax(-1))
            for k, v in parts.items():
                sums[k] = sums.get(k, 0.0) + v.item() / n_chunks
            if per_chunk and c < n_chunks - 1:
                self._update(iteration)
        # once per iteration (they depend on the weights only, e.g. W_a's inverse and loop
        # errors)
        for name, (weight, value) in (spec.walk_losses(self.model, cfg)
                                      if spec.walk_losses is not None else {}).items():
            (weight * value).backward()
            sums[name] = value.item()
            sums["loss"] += weight * value.item()
        self._update(iteration)
        correct = (torch.cat(preds, 1) == obs).cpu().numpy()
        rev = rev.reshape(-1)
        new = np.concatenate([t["revisit_new_edge"] for t in types])
        flat = correct.reshape(-1)
        sums["acc_revisit"] = float(flat[rev].mean()) if rev.any() else float("nan")
        sums["acc_new_edge"] = float(flat[new].mean()) if new.any() else float("nan")
        sums["n_memories"] = float(state.count.float().mean())
        sums["lr"] = lr_at(cfg, iteration)
        return sums

    def _update(self, iteration: int) -> None:
        """Clip the accumulated gradient, take an optimiser step, check the weights."""
        apply_gradients(self.model, self.optim, self.cfg.train.grad_clip)
        self._check_finite(iteration + 1)

    def held_out(self) -> dict[str, float]:
        wc = self.cfg.world
        res = evaluate(self.model, self.worlds, self.cfg.train.eval_envs, wc.walk_steps,
                       wc.n_obs, seed=TRAINING_EVAL_SEED, keep_heading=wc.keep_heading,
                       stay_prob=wc.stay_prob)["model"]
        return {"eval_revisit": res["revisit"], "eval_new_edge": res["revisit_new_edge"],
                "eval_unseen_edge": res["revisit_unseen_edge"],
                "eval_first_visit": res["first_visit"]}

    def run(self, stop_at: int | None = None) -> Path:
        """Train to ``train.iterations``; checkpoint periodically, at the end and on Ctrl-C.

        ``stop_at`` ends the run after that iteration instead (the learning-rate schedule still
        runs to ``train.iterations``), leaving a checkpoint that ``--resume`` continues.

        Torch's global RNG is the run's own inside (seeded by ``train.seed``, or the resumed
        checkpoint's ``torch_rng_state``) and the caller's is left as it was, so the
        checkpoint's ``torch_rng_state``, and with it the file's hash, is the same in every
        rerun (torch seeds its global RNG differently in each process).
        """
        with torch.random.fork_rng(devices=[]):
            torch.random.set_rng_state(self.rng_state)
            try:
                return self._run(stop_at)
            finally:
                self.rng_state = torch.random.get_rng_state()

    def _run(self, stop_at: int | None) -> Path:
        tc = self.cfg.train
        end = tc.iterations if stop_at is None else min(tc.iterations, stop_at)
        if end < self.start:
            self.discard_if_new()
            raise TrainingError(f"stop_at {stop_at} is before the checkpoint's iteration "
                                f"{self.start}")
        bar = _progress(self.start, end, self.progress)
        t0 = time.perf_counter()
        done = self.start  # iterations whose optimiser step has been applied
        try:
            for it in range(self.start, end):
                row = self.step(it)
                done = it + 1
                log = done % tc.log_every == 0 or done == tc.iterations
                if tc.eval_every and (done % tc.eval_every == 0 or done == tc.iterations):
                    row.update(self.held_out())
                    log = True
                if log:
                    row.update(iteration=done, elapsed_s=time.perf_counter() - t0)
                    self._log(row)
                if done % tc.checkpoint_every == 0:
                    self.save(done)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(loss=f"{row['loss']:.3f}",
                                    acc_new_edge=f"{row['acc_new_edge']:.3f}")
        except KeyboardInterrupt:
            # Save the weights of the last finished iteration, then let the caller stop.
            self.save(done)
            raise
        except BaseException as err:
            if self.discard_if_new() and isinstance(err, TrainingError):
                raise TrainingError(f"{err}; the new run folder {str(self.out)!r} was "
                                    "removed") from None
            raise
        finally:
            if bar is not None:
                bar.close()
        self.save(end)
        return self.ckpt_path

    def discard_if_new(self) -> bool:
        """Remove the run folder when this run created it and saved no checkpoint in it."""
        if not self.created_out or self.saved_step is not None or not self.out.exists():
            return False
        if self.tb is not None:
            self.tb.close()
        remove_path(self.out)
        return True

    def _log(self, row: dict) -> None:
        with open(self.metrics_path, "a", newline="") as f:
            csv.DictWriter(f, metric_fields(self.cfg), extrasaction="ignore").writerow(
                {k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})
        if self.tb is not None:
            for k, v in row.items():
                if k != "iteration" and isinstance(v, (int, float)) and v == v:
                    self.tb.add_scalar(k, v, row["iteration"])


def _drop_rows_after(path: Path, iteration: int, fields=METRIC_FIELDS) -> None:
    """Forget metrics logged after the checkpoint we resume from (they will be redone)."""
    rows = []
    if path.is_file():
        with open(path, newline="") as f:
            rows = [r for r in csv.DictReader(f) if int(r["iteration"]) <= iteration]
    _write_metrics(path, fields, rows)


def _write_metrics(path: Path, fields, rows=()) -> None:
    """Write metrics.csv (its header, then ``rows``) atomically."""
    write_csv(path, fields, rows)


def _progress(start: int, total: int, enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm  # only when a bar is shown

    return tqdm(total=total, initial=start, desc="train", unit="it", dynamic_ncols=True)


def _tensorboard(out: Path):
    """A TensorBoard writer when tensorboard is installed, else None (metrics.csv always)."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        return None
    return SummaryWriter(str(out / "tensorboard"))


def train(config: Config, out_dir, resume: bool = False, progress: bool = True,
          stop_at: int | None = None) -> Path:
    """Train and return the checkpoint path (see :class:`Trainer` and :meth:`Trainer.run`)."""
    return Trainer(config, out_dir, resume=resume, progress=progress).run(stop_at)
