"""PassKey retrieval (TransformerFAM, Hwang et al. 2024, appendix D.1) in tokens, for the
TransformerFAM variants of :mod:`hippo_rep.models.fam`.

The paper's prompt "The pass key is K. Remember it. K is the pass key. <filler> What is the pass
key? The pass key is K" becomes, over a vocabulary of 36 tokens::

    BOS KEY k k  f_1 … f_n  QUERY  → k

``KEY`` ("the pass key is"), ``QUERY`` ("what is the pass key? the pass key is"), ``k`` one of 16
key values, ``f_i`` drawn uniformly from 16 filler tokens, ``n`` the filler length. The model
reads everything up to and including ``QUERY`` and must predict ``k`` there; its answer is the
most probable of the 16 key values (so chance is 1/16 = 0.0625), and training's cross-entropy
is over the whole vocabulary. Training draws one filler length per
batch, uniformly in ``[filler_min, filler_max]``, and is scored only on the answer.

Randomness is explicit: model initialisation from ``torch.manual_seed(train.seed)``, training
batches from ``numpy.random.default_rng([train.seed, 0])``, state-passing draws from
``default_rng([train.seed, 1])``, evaluation prompts from ``default_rng([seed, filler])`` (the
same prompts for a filler length whatever other lengths are evaluated).

The machinery is shared: training takes the trainer's learning-rate schedule and gradient
step (``warmup_cosine``, ``apply_gradients`` of :mod:`hippo_rep.training.trainer`), checkpoints
are :mod:`hippo_rep.training.checkpoint`'s (kind ``"passkey"``), the configs are typed
(:mod:`hippo_rep.typed_config`), a sweep's runs are the jobs of
:func:`hippo_rep.cluster.run_jobs` (as ``hippo-rep sweep``'s: in this process or on dask),
and the sweep table's statistics, writer and reader live, torch-free, in
:mod:`hippo_rep.tasks.results`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from hippo_rep.cluster import dask_client, run_jobs
from hippo_rep.fileio import read_json, write_csv, write_json
from hippo_rep.models.fam import (
    FAM_VARIANTS,
    FAMConfig,
    FAMTransformer,
    build_fam_model,
)
from hippo_rep.run_files import ERROR_FILE
from hippo_rep.tasks import (
    PASSKEY_DEFAULT_FILLERS,
    PASSKEY_DEFAULT_PROMPTS,
    PASSKEY_DEFAULT_SWEEP,
    PASSKEY_VARIANT_DEFINED_BY,
    PASSKEY_VARIANTS,
)

# the sweep table (statistics, writer, reader) is torch-free, so that figures read sweeps
# without torch; the names marked F401 are re-exported for callers of the task
from hippo_rep.tasks.results import (
    CHANCE,  # noqa: F401
    CONFIDENCE,
    N_KEYS,
    TARGET_HALF_WIDTH,  # noqa: F401
    PassKeyError,
    accuracy_text,  # noqa: F401
    format_table,  # noqa: F401
    prompts_needed,  # noqa: F401
    read_sweep,  # noqa: F401
    summarise,
    wide_intervals,  # noqa: F401
    wide_text,  # noqa: F401
    wilson_interval,
    write_sweep,
)
from hippo_rep.training import checkpoint
from hippo_rep.training.trainer import apply_gradients, warmup_cosine
from hippo_rep.typed_config import Rule, TypedConfig, setting

PAD, BOS, KEY, QUERY = 0, 1, 2, 3
#: Number of filler tokens (the key values: N_KEYS, from hippo_rep.tasks.results).
N_FILLER = 16
#: First key-value token and first filler token.
KEY0, FILLER0 = 4, 4 + N_KEYS
#: Vocabulary: 4 specials + 16 key values + 16 fillers.
VOCAB = FILLER0 + N_FILLER
#: Tokens before the filler (BOS KEY k k).
PREFIX = 4
#: The sweep's named variants, the default sweep and the default filler lengths.
SWEEP_VARIANTS = PASSKEY_VARIANTS
DEFAULT_SWEEP = PASSKEY_DEFAULT_SWEEP
DEFAULT_FILLERS = PASSKEY_DEFAULT_FILLERS
#: Prompts per filler length evaluated by default (see ``hippo_rep.tasks``).
DEFAULT_PROMPTS = PASSKEY_DEFAULT_PROMPTS
#: Columns of a run's metrics.csv (one row per ``train.log_every`` steps).
METRICS_COLUMNS = ("step", "loss", "accuracy", "lr", "seconds")

#: Options that act only for some attention variants: option → the variants it acts on, and
#: what the others lack. Setting one for another variant is refused: it would do nothing.
#: (``model.block_size`` also acts for ``full`` when the diversity loss is on: that loss is
#: averaged per block of B queries; ``model.mem_stop_grad`` needs ``model.n_mem`` ≥ 1 and
#: ``model.rope_base`` needs ``model.pos_encoding = "rope"``.) Every other option acts for
#: every variant; ``train.log_every`` only groups the logged history.
VARIANT_OPTIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "model.n_mem": (("bswa", "fam", "fm", "sum"), "full attention has no memory segments"),
    "model.block_size": (("bswa", "fam", "fm", "sum"), "full attention has no blocks"),
    "model.mem_stop_grad": (("bswa", "fam", "fm", "sum"),
                            "full attention has no memory segments"),
    "model.n_fam": (FAM_VARIANTS, "it has no feedback slots"),
    "train.state_passing": (FAM_VARIANTS, "it carries no FAM state from prompt to prompt"),
    "train.recon_weight": (FAM_VARIANTS, "it has no FAM slots to reconstruct from"),
}


_NON_NEGATIVE = Rule(low=0)


@dataclass(frozen=True)
class PassKeyTrainConfig(TypedConfig):
    section = "train"
    error = PassKeyError
    # Optimisation steps (~800 steps of batch 32 reproduced PassKey in a CPU pilot).
    steps: int = setting(800, _NON_NEGATIVE)
    # Prompts per step; all prompts of a step share one filler length.
    batch_size: int = setting(32, Rule(low=1))
    # Peak AdamW learning rate.
    lr: float = setting(2e-3, Rule(low=0, low_open=True))
    # Steps of linear warm-up, then cosine decay to 10 % of lr.
    warmup: int = setting(50, _NON_NEGATIVE)
    # AdamW weight decay.
    weight_decay: float = setting(0.0, _NON_NEGATIVE)
    # Gradient-norm clipping (0 = off).
    grad_clip: float = setting(1.0, _NON_NEGATIVE)
    # Shortest filler length drawn for training.
    filler_min: int = setting(0, _NON_NEGATIVE)
    # Longest filler length drawn for training (8 blocks of 16 at the default).
    filler_max: int = 128
    # Random state passing: probability that a prompt starts from the final FAM of the
    # previous step's prompt (same batch row) instead of the learned initial FAM (fam/sum).
    state_passing: float = setting(0.0, Rule(low=0, high=1, why="a probability"))
    # Weight of the diversity loss (Hwang et al. 2024, eq. 2, appendix C.4; it always hurt there).
    diversity_weight: float = setting(0.0, _NON_NEGATIVE)
    # Weight of the reconstruction loss (Hwang et al. 2024, appendix C.5: did not help;
    # fam/sum only).
    recon_weight: float = setting(0.0, _NON_NEGATIVE)
    # Seed of the initialisation, batches and state-passing draws.
    seed: int = 0
    # Steps per logged row of the training history.
    log_every: int = setting(50, Rule(low=1))

    def check(self) -> None:
        if self.filler_max < self.filler_min:
            raise PassKeyError(f"train.filler_max ({self.filler_max}) must be ≥ "
                               f"train.filler_min ({self.filler_min})")


@dataclass(frozen=True)
class PassKeyConfig(TypedConfig):
    error = PassKeyError
    model: FAMConfig = field(default_factory=FAMConfig)
    train: PassKeyTrainConfig = field(default_factory=PassKeyTrainConfig)

    def check(self) -> None:
        if self.model.vocab_size != VOCAB:
            raise PassKeyError(f"model.vocab_size must be {VOCAB} for PassKey; "
                               f"got {self.model.vocab_size}")
        if self.train.recon_weight and not self.model.slots:
            raise PassKeyError(inert_option(self, "train.recon_weight"))

    def check_options(self) -> PassKeyConfig:
        """Refuse an option switched on (a value other than off) where it does nothing for
        the variant (:data:`VARIANT_OPTIONS`); returns self. Run before training
        (:func:`train`, :meth:`with_overrides`), not on loading: a checkpoint trained with
        such a setting still loads and evaluates.

        Raises
        ------
        PassKeyError
            Naming the option and the variant.
        """
        on = [("train.state_passing", self.train.state_passing > 0),
              ("train.recon_weight", self.train.recon_weight > 0),
              ("model.mem_stop_grad", self.model.mem_stop_grad)]
        for option, value in on:
            why = inert_option(self, option) if value else None
            if why:
                raise PassKeyError(why)
        return self

    def with_overrides(self, overrides: Sequence[str] = (), variant: str | None = None
                       ) -> PassKeyConfig:
        """Apply a named sweep variant (see :data:`SWEEP_VARIANTS`), then ``section.key=value``
        overrides (values in TOML syntax, as ``hippo-rep train --set``).

        The overrides win over the variant's presets (``fam_f4`` presets ``n_mem = 1``:
        ``model.n_mem=3`` gives M = 3), but an override that contradicts what the variant's
        name defines (:data:`~hippo_rep.tasks.PASSKEY_VARIANT_DEFINED_BY`: ``model.n_fam=16``
        for ``fam_f4``) is refused, and so is one that does nothing for the resulting variant
        (:data:`VARIANT_OPTIONS`, e.g. ``train.state_passing`` for ``bswa``).

        Raises
        ------
        PassKeyError
            Naming the override and the variant.
        """
        from hippo_rep.config import apply_overrides, parse_override

        data = self.to_dict()
        parsed = [parse_override(text) for text in overrides]
        if variant is not None:
            preset = resolve_variant(variant)
            defined = PASSKEY_VARIANT_DEFINED_BY.get(variant, ("variant",))
            for section, key, value in parsed:
                if section == "model" and key in defined and value != preset[key]:
                    hint = "name the variant instead" if key == "variant" else \
                        f"pick a variant that has it (or the bare {preset['variant']!r})"
                    raise PassKeyError(
                        f"model.{key}={value!r} conflicts with variant {variant!r}, which is "
                        f"defined by model.{key} = {preset[key]!r}; {hint}")
            data["model"].update(preset)
        cfg = PassKeyConfig.from_dict(apply_overrides(data, overrides), "passkey config")
        for section, key, _ in parsed:
            why = inert_option(cfg, f"{section}.{key}")
            if why:
                raise PassKeyError(why)
        return cfg.check_options()


def inert_option(cfg: PassKeyConfig, option: str) -> str | None:
    """Why ``option`` (``"section.key"``) does nothing for ``cfg``'s variant, or None if it
    acts (see :data:`VARIANT_OPTIONS`)."""
    variant = cfg.model.variant
    if option == "model.block_size" and variant == "full" and cfg.train.diversity_weight:
        return None  # full attention's diversity loss is averaged per block of B queries
    if option in VARIANT_OPTIONS:
        acts_on, lacks = VARIANT_OPTIONS[option]
        if variant not in acts_on:
            return (f"{option} does nothing for variant {variant!r} ({lacks}); it acts for "
                    f"{', '.join(acts_on)}")
    if option == "model.mem_stop_grad" and cfg.model.n_mem == 0:
        return (f"model.mem_stop_grad does nothing for variant {variant!r} with model.n_mem = 0 "
                "(no memory segments)")
    if option == "model.rope_base" and cfg.model.pos_encoding != "rope":
        return (f"model.rope_base does nothing for variant {variant!r} with model.pos_encoding "
                f"= {cfg.model.pos_encoding!r} (no rotary embeddings)")
    return None


def resolve_variant(name: str) -> dict:
    """Model settings of a sweep variant name, or of a bare variant (full, bswa, …)."""
    if name in SWEEP_VARIANTS:
        return dict(SWEEP_VARIANTS[name])
    from hippo_rep.models.fam import VARIANTS

    if name in VARIANTS:
        return {"variant": name}
    raise PassKeyError(f"unknown variant {name!r}; valid: {', '.join(SWEEP_VARIANTS)} "
                       f"(or a bare one of {', '.join(VARIANTS)})")


# ------------------------------------------------------------------------------ data
def make_batch(n: int, filler: int, rng: np.random.Generator
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` PassKey prompts with ``filler`` filler tokens each.

    Returns ``(tokens, answers)``: tokens (n, PREFIX + filler + 1) ending with QUERY, answers
    (n,) the key-value token to predict at the last position.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise PassKeyError(f"n (prompts) must be a positive integer; got {n!r}")
    if isinstance(filler, bool) or not isinstance(filler, (int, np.integer)) or filler < 0:
        raise PassKeyError(f"filler (length) must be a non-negative integer; got {filler!r}")
    keys = rng.integers(KEY0, KEY0 + N_KEYS, size=n)
    tok = np.empty((n, PREFIX + int(filler) + 1), dtype=np.int64)
    tok[:, 0], tok[:, 1], tok[:, 2], tok[:, 3] = BOS, KEY, keys, keys
    tok[:, PREFIX:-1] = rng.integers(FILLER0, FILLER0 + N_FILLER, size=(n, int(filler)))
    tok[:, -1] = QUERY
    return torch.from_numpy(tok), torch.from_numpy(keys)


def answer_of(logits: torch.Tensor) -> torch.Tensor:
    """The model's answer: the most probable key value under ``logits`` (..., vocab)."""
    return logits[..., KEY0:KEY0 + N_KEYS].argmax(-1) + KEY0


# -------------------------------------------------------------------------- training
def train(cfg: PassKeyConfig, out: str | Path | None = None,
          log: Callable[[dict], None] | None = None) -> tuple[FAMTransformer, list[dict]]:
    """Train a model on PassKey; write ``checkpoint.pt`` and ``metrics.csv`` into ``out``.

    Returns the model (eval mode) and the history: one row per ``log_every`` steps with the
    mean loss and answer accuracy over those steps. ``log`` is called with each row.
    """
    if not isinstance(cfg, PassKeyConfig):
        raise PassKeyError(f"cfg must be a PassKeyConfig; got {type(cfg).__name__}")
    cfg.check_options()
    tc, mc = cfg.train, cfg.model
    model = build_fam_model(mc, seed=tc.seed)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=tc.lr, weight_decay=tc.weight_decay)
    # the trainer's schedule: linear warm-up, then cosine decay to 10% of train.lr
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: warmup_cosine(s, 1.0, tc.warmup, tc.steps))
    data_rng = np.random.default_rng([tc.seed, 0])
    pass_rng = np.random.default_rng([tc.seed, 1])
    weights = {a: w for a, w in (("diversity", tc.diversity_weight),
                                 ("recon", tc.recon_weight)) if w}
    history, prev = [], None
    acc_loss = acc_hits = acc_n = 0.0
    t0 = time.perf_counter()
    for step in range(tc.steps):
        filler = int(data_rng.integers(tc.filler_min, tc.filler_max + 1))
        tokens, answers = make_batch(tc.batch_size, filler, data_rng)
        state = None
        if mc.slots and tc.state_passing > 0 and prev is not None:
            carry = torch.from_numpy(pass_rng.random(tc.batch_size) < tc.state_passing)
            state = torch.where(carry[None, :, None, None], prev,
                                model.initial_state(tc.batch_size))
        res = model(tokens, state, aux=tuple(weights))
        last = res.logits[:, -1]
        loss = F.cross_entropy(last, answers)
        total = loss
        for a, w in weights.items():  # diversity, then recon
            total = total + w * res.aux[a]
        total.backward()
        apply_gradients(model, opt, tc.grad_clip)
        sched.step()
        if res.state is not None:
            prev = res.state.detach()
        acc_loss += loss.item() * tc.batch_size
        acc_hits += float((answer_of(last.detach()) == answers).sum())
        acc_n += tc.batch_size
        if (step + 1) % tc.log_every == 0 or step + 1 == tc.steps:
            row = {"step": step + 1, "loss": acc_loss / acc_n, "accuracy": acc_hits / acc_n,
                   "lr": sched.get_last_lr()[0], "seconds": time.perf_counter() - t0}
            history.append(row)
            if log is not None:
                log(row)
            acc_loss = acc_hits = acc_n = 0.0
    model.eval()
    if out is not None:
        out = Path(out)
        save_checkpoint(out / "checkpoint.pt", model, cfg, tc.steps, opt, history)
        write_csv(out / "metrics.csv", METRICS_COLUMNS, history, extrasaction="ignore",
                  lineterminator="\n")
    return model, history


@torch.no_grad()
def evaluate(model: FAMTransformer, fillers: Sequence[int] = DEFAULT_FILLERS,
             n_samples: int = DEFAULT_PROMPTS, seed: int = 0, batch_size: int = 64
             ) -> dict[int, float]:
    """Answer accuracy per filler length on ``n_samples`` fresh prompts each
    (``default_rng([seed, filler])``); :func:`wilson_interval` gives their 95% intervals."""
    if not isinstance(model, FAMTransformer):
        raise PassKeyError(f"model must be a FAMTransformer; got {type(model).__name__}")
    if model.cfg.vocab_size != VOCAB:
        raise PassKeyError(f"model vocabulary is {model.cfg.vocab_size}; PassKey needs {VOCAB}")
    if n_samples < 1 or batch_size < 1:
        raise PassKeyError(f"n_samples and batch_size must be ≥ 1; got {n_samples}, "
                           f"{batch_size}")
    was = model.training
    model.eval()
    out = {}
    for filler in fillers:
        if isinstance(filler, bool) or not isinstance(filler, (int, np.integer)) or filler < 0:
            raise PassKeyError(f"fillers must be non-negative integers; got {filler!r}")
        rng = np.random.default_rng([seed, int(filler)])
        tokens, answers = make_batch(n_samples, int(filler), rng)
        hits = 0
        for s in range(0, n_samples, batch_size):
            logits = model(tokens[s:s + batch_size]).logits[:, -1]
            hits += int((answer_of(logits) == answers[s:s + batch_size]).sum())
        out[int(filler)] = hits / n_samples
    model.train(was)
    return out


def evaluate_checkpoint(path, fillers: Sequence[int] = DEFAULT_FILLERS,
                        n_samples: int = DEFAULT_PROMPTS, seed: int = 0) -> dict:
    """Accuracy of a PassKey checkpoint against filler length (:func:`evaluate`), with the
    Wilson intervals of :data:`CONFIDENCE`: the JSON ``hippo-rep passkey eval --json`` writes
    (``checkpoint``, ``label``, ``config``, ``step``, ``seed``, ``n_samples``, ``threads``,
    ``confidence``, and ``accuracy`` and ``interval`` by filler length).

    Raises
    ------
    PassKeyError
        A checkpoint that cannot be used (:func:`load_checkpoint`), or bad fillers.
    """
    model, cfg, payload = load_checkpoint(path)
    acc = evaluate(model, fillers, n_samples=n_samples, seed=seed)
    return {"checkpoint": str(path), "label": cfg.model.label, "config": cfg.to_dict(),
            "step": payload.get("step"), "seed": seed, "n_samples": n_samples,
            "threads": torch.get_num_threads(), "confidence": CONFIDENCE,
            "accuracy": {str(f): a for f, a in acc.items()},
            "interval": {str(f): list(wilson_interval(a, n_samples)) for f, a in acc.items()}}


# ------------------------------------------------------------------------ checkpoints
def save_checkpoint(path, model: FAMTransformer, cfg: PassKeyConfig, step: int,
                    optimizer=None, history: list | None = None) -> None:
    """Write a PassKey checkpoint (kind ``"passkey"``, :mod:`hippo_rep.training.checkpoint`);
    the config is stored inside, so :func:`load_checkpoint` rebuilds the model alone."""
    checkpoint.save_checkpoint(path, model, cfg, step, optimizer, kind="passkey",
                               history=history or [])


def load_checkpoint(path) -> tuple[FAMTransformer, PassKeyConfig, dict]:
    """Rebuild the model of a PassKey checkpoint (eval mode).

    Raises
    ------
    PassKeyError
        Naming the file: missing, corrupt, another kind of checkpoint (e.g. TEM-t's), or a
        state that does not fit its config.
    """
    payload = checkpoint.read_checkpoint(path, ("passkey",), PassKeyError)
    cfg = PassKeyConfig.from_dict(payload["config"], f"checkpoint {str(path)!r}")
    return checkpoint.load_weights(FAMTransformer(cfg.model), payload, path, PassKeyError), \
        cfg, payload


# ------------------------------------------------------------------------------ sweep
def sweep(out: str | Path, variants: Sequence[str] = DEFAULT_SWEEP,
          seeds: Sequence[int] = (0, 1), base: PassKeyConfig | None = None,
          fillers: Sequence[int] = DEFAULT_FILLERS, n_samples: int = DEFAULT_PROMPTS,
          log: Callable[[str], None] | None = None, reuse: bool = True,
          overrides: Sequence[str] = (), *, scheduler: str | None = None,
          workers: int | None = None) -> list[dict]:
    """Train every variant with every seed, evaluate against filler length, and write
    ``sweep.csv`` / ``sweep.json`` (seed-averaged) and ``runs.json`` (per run) into ``out``
    after each run, so an interrupted sweep keeps what it finished.

    A run's config is ``base``, then the variant's presets, then ``overrides``
    (``section.key=value``, as ``--set``), which win over the presets or are refused when they
    contradict the variant's name or do nothing for it (:meth:`PassKeyConfig.with_overrides`);
    every run's config is checked before any training. ``sweep.json`` and ``runs.json`` record
    the config read back from each run's checkpoint.

    Each run lives in ``out/runs/<variant>_s<seed>/`` (checkpoint, metrics, eval.json) and is
    one job of :func:`~hippo_rep.cluster.run_jobs`: one after the other in this process, or
    one dask task each on a ``scheduler``'s workers or a local cluster of ``workers``
    processes (:func:`~hippo_rep.cluster.dask_client`), each with torch's thread count of
    this process. With ``reuse``, a run whose ``eval.json`` holds the same config and fillers
    is not repeated. A run that fails does not stop the others (its traceback is in its
    ``error.txt``); the sweep then raises :class:`PassKeyError` naming it, after the tables
    of the others are written.
    """
    base = base or PassKeyConfig()
    if not variants or not seeds:
        raise PassKeyError("sweep needs at least one variant and one seed")
    overrides = [str(o) for o in overrides]
    fillers = [int(f) for f in fillers]
    out, say = Path(out), log or (lambda _msg: None)
    jobs = []
    for variant in variants:
        resolve_variant(variant)
        for seed in seeds:
            cfg = base.with_overrides([*overrides, f"train.seed={int(seed)}"], variant=variant)
            jobs.append((out / "runs" / f"{variant}_s{seed}", run_one,
                         (variant, int(seed), cfg, fillers, n_samples, reuse,
                          torch.get_num_threads())))
    order = [run_dir.name for run_dir, _, _ in jobs]
    finished = {}

    def ended(res):
        if res["status"] == "failed":
            say(f"{res['name']}: failed: {res['error']}")
            return
        finished[res["name"]] = res["result"]
        say(res["message"])
        write_sweep(out, [finished[n] for n in order if n in finished], overrides, seeds,
                    n_samples)

    with dask_client(scheduler=scheduler, workers=workers) as client:
        failed = [r for r in run_jobs(jobs, client, on_result=ended) if r["status"] == "failed"]
    if failed:
        raise PassKeyError(f"{len(failed)} of {len(jobs)} PassKey runs failed, first "
                           f"{failed[0]['name']}: {failed[0]['error']} (traceback: "
                           f"{out / 'runs' / failed[0]['name'] / ERROR_FILE}); the tables "
                           "hold the others")
    return summarise([finished[n] for n in order])


def run_one(run_dir: Path, variant: str, seed: int, cfg: PassKeyConfig, fillers: list[int],
            n_samples: int, reuse: bool, threads: int) -> dict:
    """One run of :func:`sweep` (a job of :func:`~hippo_rep.cluster.run_job`): train
    ``cfg`` into ``run_dir`` on ``threads`` torch threads, evaluate it on ``n_samples``
    prompts per filler length (seed 1000 + ``seed``) and write ``eval.json``; or, with
    ``reuse``, take an ``eval.json`` there of the same config, fillers and prompts
    (status "skipped"). Returns ``result`` (the eval.json) and ``message`` (a line)."""
    meta_path = run_dir / "eval.json"
    if reuse and meta_path.is_file():
        old = read_json(meta_path, PassKeyError, "sweep run result")
        if isinstance(old, dict) and old.get("config") == cfg.to_dict() \
                and old.get("fillers") == fillers and old.get("n_samples") == n_samples \
                and (run_dir / "checkpoint.pt").is_file():
            return {"status": "skipped", "result": old,
                    "message": f"{variant} seed {seed}: reusing {meta_path}"}
    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    model, hist = train(cfg, run_dir)
    t_train = time.perf_counter() - t0
    acc = evaluate(model, fillers, n_samples=n_samples, seed=1000 + seed)
    # what ran: the config stored in the checkpoint the model was saved to
    _, ran, _ = load_checkpoint(run_dir / "checkpoint.pt")
    result = {"variant": variant, "seed": seed, "config": ran.to_dict(), "fillers": fillers,
              "n_samples": n_samples, "threads": threads, "train_seconds": t_train,
              "eval_seconds": time.perf_counter() - t0 - t_train,
              "final_train_accuracy": hist[-1]["accuracy"] if hist else None,
              "accuracy": {str(f): a for f, a in acc.items()}}
    write_json(meta_path, result)
    return {"result": result, "message": f"{variant} seed {seed}: trained {t_train:.0f} s, "
            + " ".join(f"{f}:{a:.2f}" for f, a in acc.items())}
