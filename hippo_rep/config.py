"""Configuration as frozen dataclasses, read from and written to TOML.

A run is described by a :class:`Config` with three sections, ``world``, ``model`` and ``train``.
Presets (``tiny``, ``small``, ``paper``, ``tem``) are TOML files shipped in
``hippo_rep/presets``; any key can be overridden with ``section.key=value`` strings (values
in TOML syntax, bare strings allowed). Unknown sections or keys raise :class:`ConfigError`
listing the valid ones.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import tomllib
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import tomli_w

from hippo_rep.fileio import quote
from hippo_rep.worlds import WorldError, parse_world

PRESETS = ("tiny", "small", "paper", "tem")
#: Valid ``train.device`` values: one of :data:`DEVICES` or ``cuda:N``.
DEVICE_PATTERN = re.compile(r"(auto|cpu|cuda|mps)|cuda:\d{1,3}")


class ConfigError(ValueError):
    """A configuration that cannot be used (unknown key, wrong type, bad value)."""


@dataclass(frozen=True)
class WorldConfig:
    # World specs sampled uniformly per environment (see hippo_rep.worlds.parse_world); all must
    # share one action set. "square:8" = the 8x8 four-connected world of the paper's Fig. 1.
    worlds: tuple[str, ...] = ("square:8",)
    # Sensory categories; observations are one-hot, drawn per node with replacement (TEM: 45).
    n_obs: int = 45
    # Steps per walk; ~3x the node count lets most nodes be revisited (measured in prototypes).
    walk_steps: int = 192
    # Probability of repeating the previous move (TEM's 0.25 heading persistence).
    keep_heading: float = 0.25
    # Probability of staying put; 0 because stays are trivially predictable.
    stay_prob: float = 0.0
    # Training walks: "random" (the paper's), or "delay" (the long-delay task's home tour,
    # excursion of D ~ U[0, max_delay] steps and return, then a random walk to fill
    # walk_steps; see hippo_rep.tasks.delay), which rewards memories that outlast a window.
    walk: str = "random"
    # Longest excursion of "delay" walks, in steps.
    max_delay: int = 128


@dataclass(frozen=True)
class ModelConfig:
    # "temt": recurrent positional encodings; "sinusoidal": fixed time-index encodings (baseline).
    kind: str = "temt"
    # Positional-encoding units (the cells expected to become grid-like).
    n_g: int = 64
    # Width of keys/queries z(g)·W_e.
    d_key: int = 64
    # Width of values x·W_x.
    d_value: int = 64
    # Hidden width of the readout, retrieval and gate MLPs.
    hidden: int = 128
    # Nonlinearity of the transition g_t = f(g_{t-1} W_a): linear | relu | tanh | leaky_relu.
    transition_activation: str = "linear"
    # W_a starts at identity + N(0, this²): near-identity keeps early products stable.
    transition_init_std: float = 0.01
    # "orthogonal" W_a = exp(S - Sᵀ), or "free" W_a (the paper). Free matrices with the
    # landmark correction collapsed in every 8x8 run here (W_a contracts all positions onto one;
    # memories fall to the number of distinct observations); orthogonal ones cannot contract
    # and reached 0.99 training loop closure in ~150 iterations.
    transition_param: str = "orthogonal"
    # "direct": the prediction is the activity-weighted vote of the stored one-hot
    # observations (values = X, W_x = identity); "mlp": an MLP of activity·(X W_x) (step 2 of
    # hippo_rep.models.temt), which learned ~2x slower per iteration here.
    readout: str = "direct"
    # Memory-neuron activation: softmax (exact transformer) | relu | power (normalised).
    memory_activation: str = "softmax"
    # Exponent of the "power" memory activation.
    memory_power: float = 4.0
    # Initial inverse temperature of the prediction attention (multiplied by log #memories).
    beta_init: float = 1.0
    # Landmark correction (Whittington, Warren & Behrens 2022, appendix A.2): off gives the
    # path-integration-only core.
    landmark: bool = True
    # Conjunction of the landmark query: multiplicative (TEM-t) or additive (the alternative
    # named by Whittington, Warren & Behrens 2022, section 7).
    conjunction: str = "multiplicative"
    # Initial inverse temperature of the landmark retrieval (multiplied by log #memories).
    retrieval_beta_init: float = 3.0
    # A memory is added only if no stored memory of the same observation has cosine similarity
    # of z(g) above this. Training uses it as given (0.9 merged distinct nodes in prototypes;
    # training at 0.95 lost loop closure); after training, `hippo-rep calibrate` sets it
    # between revisits and new places (training.calibrate): 0.94 for the shipped model, whose
    # revisits fall below 0.98 often enough to write 2.4 memories per node.
    write_threshold: float = 0.98
    # Hopfield-style retrieval iterations for the prediction (Whittington, Warren & Behrens 2022,
    # appendix A.2); 1 = one transformer pass.
    retrieval_iterations: int = 1
    # Let loss 2 (prediction from the corrected g_t) train the landmark path (gate, retrieval
    # MLP). Off: with it on, the gate opened on every retrieval and accuracy collapsed (8x8,
    # ~150 iterations); off, loss 2 still trains W_e and the readout on corrected encodings.
    loss2_through_landmark: bool = False
    # Scale of g after each transition: "rms" rescales g to unit RMS after every step (keeps
    # repeated products with a free W_a bounded; makes the L2 loss on g, loss 5, nominal);
    # "none" is the paper's e_{t+1} = σ(e_t W_a), kept bounded by loss 5 (train.loss_l2_g).
    g_norm: str = "rms"
    # Initial bias of the gate's last layer: sigmoid(-2) ≈ 0.12, a mostly-open path integrator.
    gate_bias_init: float = -2.0
    # Memory variant: "full" (every memory stays), "window" (block sliding window over the
    # memory sequence: the current block plus the last memory_blocks blocks), "fam" (the window
    # plus fam_slots feedback slots updated per block, TransformerFAM), "hebbian" (TEM's
    # outer-product memory matrix, Whittington, Warren & Behrens 2022, appendix A.1, with linear
    # retrieval; no softmax memory neurons).
    memory: str = "full"
    # Block length B of "window"/"fam", in steps.
    memory_block: int = 16
    # Previous blocks M a query still sees ("window"/"fam"); the window spans M*B to (M+1)*B steps.
    memory_blocks: int = 4
    # Feedback slots F of "fam".
    fam_slots: int = 8
    # Initial inverse temperature of the FAM slot update (softplus-parameterised, learned).
    fam_beta_init: float = 3.0
    # FAM slot update: "soft" (TransformerFAM: each slot becomes the attention-weighted mix of
    # [slots; block memories]) or "hard" (each slot copies the one it attends to most, so it
    # keeps a whole (g, x) conjunction; no gradient through the choice).
    fam_update: str = "soft"
    # Per-step decay of the Hebbian memory matrix (1 = no forgetting; TEM's lambda).
    hebbian_decay: float = 1.0
    # --- kind = "tem" (hippo_rep.models.tem; Whittington et al. 2020). Module 0 is the
    # highest frequency. Abstract-location units per frequency module (torch_tem default
    # n_g = 3 x n_g_subsampled).
    tem_n_g: tuple[int, ...] = (30, 30, 24, 18, 18)
    # Units of each module that enter the memory, g_down (torch_tem n_g_subsampled).
    tem_n_g_sub: tuple[int, ...] = (10, 10, 8, 6, 6)
    # Compressed (two-hot) sensory units x_c (torch_tem n_x_c); needs n_x_c choose 2 >= n_obs.
    tem_n_x_c: int = 10
    # Initial temporal-filtering rate per module, x_f <- (1 - a) x_f + a x_c, learned
    # (torch_tem f_initial); higher = less smoothing = higher frequency.
    tem_freqs: tuple[float, ...] = (0.99, 0.3, 0.09, 0.03, 0.01)
    # Hidden units per module of the action -> D_a transition MLP (torch_tem d_hidden_dim).
    tem_transition_hidden: int = 20
    # Hebbian forgetting lambda and learning rate eta (paper; torch_tem lambda, eta), reached
    # after train.tem_lambda_ramp / train.tem_eta_ramp iterations.
    tem_lambda: float = 0.9999
    tem_eta: float = 0.5
    # Attractor decay kappa of h <- f(kappa h + h M) (paper; torch_tem kappa).
    tem_kappa: float = 0.8
    # Attractor iterations per module: generative memory (low frequencies stop early,
    # torch_tem i_attractor_max_freq_gen) and inference memory (torch_tem ..._inf).
    tem_iters_gen: tuple[int, ...] = (5, 4, 3, 2, 1)
    tem_iters_inf: tuple[int, ...] = (5, 5, 5, 5, 5)


@dataclass(frozen=True)
class TrainConfig:
    # Seed of weights and of every training batch (batch i uses the stream (seed, i)).
    seed: int = 0
    # Gradient steps; each uses a fresh batch of environments.
    iterations: int = 400
    # Environments per batch.
    batch_size: int = 16
    # AdamW learning rate (1e-3 for 8x8; 3e-4–5e-4 for larger worlds, measured in prototypes).
    lr: float = 1e-3
    # Linear warm-up of the learning rate, in iterations.
    warmup: int = 20
    # Learning rate of the transition matrices W_a relative to ``lr``. Once path integration
    # works, Adam's noise-driven steps on W_a break loop closure on long walks (measured on
    # 10x10/11x11 fine-tunes), so the paper preset lowers or freezes it (0 = frozen).
    transition_lr_scale: float = 1.0
    # AdamW decoupled weight decay (TEM-t's L2 weight regularisation, loss 4;
    # Whittington, Warren & Behrens 2022, appendix A.2).
    weight_decay: float = 1e-5
    # Gradient-norm clipping; stabilises the recurrent products.
    grad_clip: float = 10.0
    # Truncated BPTT: gradients stop every this many steps (0 = the whole walk). Memories persist.
    chunk_len: int = 0
    # Loss 1: cross-entropy of the prediction from g_pi (the real next-step prediction).
    loss_pi: float = 1.0
    # Loss 2: cross-entropy of the prediction from the corrected g_t.
    loss_g: float = 1.0
    # Loss 3: squared error between g_pi and the corrected g_t (g_t detached: pulls W_a).
    loss_g_pi: float = 0.1
    # Loss 5: L2 on g_t (mean square over units). Nominal under model.g_norm = "rms" (g then
    # has unit RMS after each transition); with g_norm = "none" it is what bounds g.
    loss_l2_g: float = 0.0
    # Inverse-action loss: mean over opposite move pairs (a, ā) of ||W_a W_ā − I||²_F / n_g.
    # Opposite moves that undo each other return g to where it was, so the add-if-novel test
    # recognises the node (the rule of Whittington, Warren & Behrens 2022, appendix A.2) instead of
    # writing a duplicate memory.
    loss_inverse: float = 0.0
    # Save a checkpoint every this many iterations (and at the end and on Ctrl-C).
    checkpoint_every: int = 100
    # Log to metrics.csv every this many iterations.
    log_every: int = 10
    # Held-out environments evaluated every eval_every iterations (0 = never during training).
    eval_every: int = 100
    eval_envs: int = 8
    # Start from the weights of this checkpoint ("" = fresh weights from seed); the model config
    # must match. A curriculum: 8x8-trained weights path-integrate 10x10 worlds at once.
    init_from: str = ""
    # "cpu", "cuda" or "auto" (cuda when available).
    device: str = "auto"
    # torch threads (0 = torch's default). Small matrices: 1–2 threads are fastest here.
    threads: int = 0
    # --- model.kind = "tem": loss weights and annealing (torch_tem parameters.py defaults;
    # see hippo_rep.models.tem.tem_schedule). Weights of the p losses (p_g, p_x), the three
    # x cross-entropies and the g loss (torch_tem loss_weights_p/x/g).
    tem_loss_p: float = 1.0
    tem_loss_x: float = 1.0
    tem_loss_g: float = 1.0
    # L2 on g and L1 on p (torch_tem loss_weights_reg_g / reg_p).
    tem_loss_reg_g: float = 0.01
    tem_loss_reg_p: float = 0.02
    # Iterations over which the p and g losses ramp in (torch_tem loss_weights_p_g_it).
    tem_latent_ramp: int = 2000
    # Iterations over which the L1 on p decays to 0 (torch_tem loss_weights_reg_p_it).
    tem_reg_p_decay: int = 4000
    # Iterations over which eta and lambda ramp up to model.tem_eta / tem_lambda
    # (torch_tem eta_it, lambda_it).
    tem_eta_ramp: int = 16000
    tem_lambda_ramp: int = 200
    # Centre and width, in iterations, of the logistic fall of the offset that makes
    # inference ignore memory-inferred g early on (torch_tem p2g_sig_half_it, p2g_sig_scale_it).
    tem_p2g_half: int = 400
    tem_p2g_width: int = 200


@dataclass(frozen=True)
class Config:
    world: WorldConfig = field(default_factory=WorldConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def replace(self, **sections) -> Config:
        return dataclasses.replace(self, **sections)


_SECTIONS = {"world": WorldConfig, "model": ModelConfig, "train": TrainConfig}

#: Keys that older versions wrote and that did nothing; dropped when an old checkpoint or TOML
#: is read (``model.n_context`` was never read by the model).
_REMOVED_KEYS = {("model", "n_context")}

_CHOICES = {
    ("model", "kind"): ("temt", "sinusoidal", "tem"),
    ("model", "transition_activation"): ("linear", "relu", "tanh", "leaky_relu"),
    ("model", "memory_activation"): ("softmax", "relu", "power"),
    ("model", "conjunction"): ("multiplicative", "additive"),
    ("model", "transition_param"): ("free", "orthogonal"),
    ("model", "readout"): ("mlp", "direct"),
    ("model", "memory"): ("full", "window", "fam", "hebbian"),
    ("model", "fam_update"): ("soft", "hard"),
    ("model", "g_norm"): ("rms", "none"),
    ("world", "walk"): ("random", "delay"),
}


#: Caps on sizes (a config beyond them would exhaust memory or never finish; raise them here).
#: Width of any layer (model.n_g, d_key, d_value, hidden, fam_slots).
MAX_WIDTH = 4096
#: Sensory categories (world.n_obs).
MAX_OBS = 100_000
#: Steps of one training walk (world.walk_steps, and step counts derived from it).
MAX_WALK_STEPS = 100_000
#: Environments per batch (train.batch_size, train.eval_envs).
MAX_BATCH = 4096
#: Gradient steps of a run (train.iterations and the iteration periods).
MAX_ITERATIONS = 100_000_000
#: Retrieval iterations of the prediction attention.
MAX_RETRIEVAL_ITERATIONS = 100
#: Torch threads.
MAX_THREADS = 1024
#: Seeds: numpy and torch accept non-negative 63-bit integers.
MAX_SEED = 2**63 - 1
#: Devices ``train.device`` may name ("cuda:N" picks a GPU).
DEVICES = ("auto", "cpu", "cuda", "mps")


@dataclass(frozen=True)
class Rule:
    """The allowed range of one numeric config key. Every float must also be finite.

    ``low``/``high`` are bounds (``None`` = unbounded), exclusive when ``low_open``/``high_open``;
    ``cap`` names the module constant that ``high`` is (quoted in the error); ``why`` says why
    the bound exists (e.g. "it divides").
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    cap: str = ""
    why: str = ""

    def check(self, name: str, v) -> str | None:
        """The problem with value ``v`` of key ``name``, or None when it is allowed."""
        if isinstance(v, float) and not math.isfinite(v):
            return f"{name} must be a finite number; got {v}"
        if self.low is not None and (v <= self.low if self.low_open else v < self.low):
            op = ">" if self.low_open else "≥"
            why = f" ({self.why})" if self.why else ""
            return f"{name} must be {op} {self.low:g}{why}; got {v}"
        if self.high is not None and (v >= self.high if self.high_open else v > self.high):
            op = "<" if self.high_open else "≤"
            bound = f"{self.cap} = {self.high}" if self.cap else f"{self.high:g}"
            return f"{name} must be {op} {bound}; got {v}"
        return None


def _size(cap: str, low: int = 1) -> Rule:
    """An integer size of at least ``low`` and at most the module constant named ``cap``."""
    return Rule(low=low, high=globals()[cap], cap=cap)


_ANY = Rule()
_NON_NEGATIVE = Rule(low=0)
_POSITIVE = Rule(low=0, low_open=True)
_PROBABILITY = Rule(low=0, high=1)

#: One rule per numeric key ("section.key"); a new numeric config field needs one entry here
#: (tests check that every numeric field has one).
RULES: dict[str, Rule] = {
    "world.n_obs": _size("MAX_OBS", low=2),
    "world.walk_steps": _size("MAX_WALK_STEPS"),
    "world.keep_heading": _PROBABILITY,
    "world.stay_prob": Rule(low=0, high=1, high_open=True, why="a walk must move"),
    "world.max_delay": _size("MAX_WALK_STEPS", low=0),
    "model.n_g": _size("MAX_WIDTH"),
    "model.d_key": _size("MAX_WIDTH"),
    "model.d_value": _size("MAX_WIDTH"),
    "model.hidden": _size("MAX_WIDTH"),
    "model.transition_init_std": _NON_NEGATIVE,
    "model.memory_power": _POSITIVE,
    "model.beta_init": Rule(low=0, low_open=True, why="an inverse temperature"),
    "model.retrieval_beta_init": Rule(low=0, low_open=True, why="an inverse temperature"),
    "model.write_threshold": Rule(low=-1, why="a cosine similarity"),
    "model.retrieval_iterations": _size("MAX_RETRIEVAL_ITERATIONS"),
    "model.gate_bias_init": _ANY,
    "model.memory_block": _size("MAX_WALK_STEPS"),
    "model.memory_blocks": _size("MAX_WALK_STEPS", low=0),
    "model.fam_slots": _size("MAX_WIDTH", low=0),
    "model.fam_beta_init": Rule(low=0, low_open=True, why="an inverse temperature"),
    "model.hebbian_decay": Rule(low=0, high=1, low_open=True),
    "model.tem_n_x_c": _size("MAX_WIDTH", low=2),
    "model.tem_transition_hidden": _size("MAX_WIDTH"),
    "model.tem_lambda": Rule(low=0, high=1, low_open=True, why="a per-step decay"),
    "model.tem_eta": _POSITIVE,
    "model.tem_kappa": _NON_NEGATIVE,
    "train.seed": _size("MAX_SEED", low=0),
    "train.iterations": _size("MAX_ITERATIONS", low=0),
    "train.batch_size": _size("MAX_BATCH"),
    "train.lr": _POSITIVE,
    "train.warmup": _size("MAX_ITERATIONS", low=0),
    "train.transition_lr_scale": _NON_NEGATIVE,
    "train.weight_decay": _NON_NEGATIVE,
    "train.grad_clip": Rule(low=0, low_open=True, why="a gradient-norm bound"),
    "train.chunk_len": _size("MAX_WALK_STEPS", low=0),
    "train.loss_pi": _NON_NEGATIVE,
    "train.loss_g": _NON_NEGATIVE,
    "train.loss_g_pi": _NON_NEGATIVE,
    "train.loss_l2_g": _NON_NEGATIVE,
    "train.loss_inverse": _NON_NEGATIVE,
    "train.checkpoint_every": Rule(low=1, high=MAX_ITERATIONS, cap="MAX_ITERATIONS",
                                   why="it divides"),
    "train.log_every": Rule(low=1, high=MAX_ITERATIONS, cap="MAX_ITERATIONS", why="it divides"),
    "train.eval_every": _size("MAX_ITERATIONS", low=0),
    "train.eval_envs": _size("MAX_BATCH"),
    "train.threads": _size("MAX_THREADS", low=0),
    "train.tem_loss_p": _NON_NEGATIVE,
    "train.tem_loss_x": _NON_NEGATIVE,
    "train.tem_loss_g": _NON_NEGATIVE,
    "train.tem_loss_reg_g": _NON_NEGATIVE,
    "train.tem_loss_reg_p": _NON_NEGATIVE,
    "train.tem_latent_ramp": Rule(low=1, high=MAX_ITERATIONS, cap="MAX_ITERATIONS",
                                  why="it divides"),
    "train.tem_reg_p_decay": Rule(low=1, high=MAX_ITERATIONS, cap="MAX_ITERATIONS",
                                  why="it divides"),
    "train.tem_eta_ramp": Rule(low=1, high=MAX_ITERATIONS, cap="MAX_ITERATIONS",
                               why="it divides"),
    "train.tem_lambda_ramp": Rule(low=1, high=MAX_ITERATIONS, cap="MAX_ITERATIONS",
                                  why="it divides"),
    "train.tem_p2g_half": Rule(low=-MAX_ITERATIONS, high=MAX_ITERATIONS, cap="MAX_ITERATIONS"),
    "train.tem_p2g_width": Rule(low=1, high=MAX_ITERATIONS, cap="MAX_ITERATIONS",
                                why="it divides"),
}

#: Attractor iterations per module, at most (model.tem_iters_gen / tem_iters_inf).
MAX_TEM_ITERS = 100


def _coerce(section: str, key: str, value, typ):
    where = f"{section}.{key}"
    origin = typing.get_origin(typ)
    if origin is tuple:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where} must be a list; got {quote(value)}")
        (inner, _) = typing.get_args(typ)
        return tuple(_coerce(section, key, v, inner) for v in value)
    if typ is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false; got {quote(value)}")
        return value
    if typ is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where} must be an integer; got {quote(value)}")
        return value
    if typ is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where} must be a number; got {quote(value)}")
        return float(value)
    if typ is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where} must be a string; got {quote(value)}")
        choices = _CHOICES.get((section, key))
        if choices and value not in choices:
            raise ConfigError(f"{where} must be one of {choices}; got {quote(value)}")
        return value
    raise ConfigError(f"{where}: unsupported type {typ}")  # pragma: no cover


def from_dict(data: dict, source: str = "config") -> Config:
    """Build a :class:`Config` from nested dicts, checking every section, key and type.

    Raises
    ------
    ConfigError
        Naming ``source`` and the offending key, listing the valid keys.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the config must be a table of sections; got "
                          f"{type(data).__name__}")
    unknown = set(data) - set(_SECTIONS)
    if unknown:
        raise ConfigError(f"{source}: unknown section(s) {quote(sorted(map(str, unknown)))}; "
                          f"valid sections: {sorted(_SECTIONS)}")
    sections = {}
    for name, cls in _SECTIONS.items():
        raw = data.get(name, {})
        if not isinstance(raw, dict):
            raise ConfigError(f"{source}: [{name}] must be a table")
        raw = {k: v for k, v in raw.items() if (name, k) not in _REMOVED_KEYS}
        hints = typing.get_type_hints(cls)
        bad = set(raw) - set(hints)
        if bad:
            names = ", ".join(f"{name}.{k}" for k in sorted(map(str, bad)))
            raise ConfigError(f"{source}: unknown key(s) {quote(names)[1:-1]}; "
                              f"valid keys in [{name}]: {', '.join(sorted(hints))}")
        try:
            sections[name] = cls(**{k: _coerce(name, k, v, hints[k]) for k, v in raw.items()})
        except ConfigError as err:
            raise ConfigError(f"{source}: {err}") from None
    cfg = Config(**sections)
    validate(cfg, source)
    return cfg


def validate(cfg: Config, source: str = "config") -> None:
    """Check values that types alone do not catch: every numeric key against its entry in
    :data:`RULES` (finite, in range, within its size cap), the device, one action set."""
    for prefix in _SECTIONS:
        section = getattr(cfg, prefix)
        for f in dataclasses.fields(section):
            v = getattr(section, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                continue
            name = f"{prefix}.{f.name}"
            problem = RULES.get(name, _ANY).check(name, v)
            if problem:
                raise ConfigError(f"{source}: {problem}")
    if not DEVICE_PATTERN.fullmatch(cfg.train.device):
        raise ConfigError(f"{source}: train.device must be one of {DEVICES} or cuda:N; "
                          f"got {quote(cfg.train.device)}")
    if not cfg.world.worlds:
        raise ConfigError(f"{source}: world.worlds must name at least one world")
    kinds = set()
    for spec in cfg.world.worlds:
        try:
            kinds.add(parse_world(spec).kind)
        except WorldError as err:
            raise ConfigError(f"{source}: world.worlds: {err}") from None
    if len(kinds) > 1:
        raise ConfigError(f"{source}: world.worlds mixes lattice kinds {sorted(kinds)}; "
                          "one model has one action set")
    m = cfg.model
    if m.memory == "fam" and m.fam_slots < 1:
        raise ConfigError(f"{source}: model.memory = \"fam\" needs model.fam_slots ≥ 1; "
                          f"got {m.fam_slots}")
    _validate_tem(m, cfg.world.n_obs, source)
    if m.memory != "full" and m.kind != "temt":
        raise ConfigError(f"{source}: model.memory = {m.memory!r} needs model.kind = \"temt\"")


def _validate_tem(m: ModelConfig, n_obs: int, source: str) -> None:
    """TEM's per-module tuples: one entry per module each, sizes and rates in range."""
    n_f = len(m.tem_n_g)
    if n_f < 1:
        raise ConfigError(f"{source}: model.tem_n_g must list at least one module")
    for key in ("tem_n_g_sub", "tem_freqs", "tem_iters_gen", "tem_iters_inf"):
        if len(getattr(m, key)) != n_f:
            raise ConfigError(f"{source}: model.{key} must have one entry per module "
                              f"({n_f}, as model.tem_n_g); got {len(getattr(m, key))}")
    for key, low, high, cap in (("tem_n_g", 1, MAX_WIDTH, "MAX_WIDTH"),
                                ("tem_n_g_sub", 1, MAX_WIDTH, "MAX_WIDTH"),
                                ("tem_iters_gen", 0, MAX_TEM_ITERS, "MAX_TEM_ITERS"),
                                ("tem_iters_inf", 0, MAX_TEM_ITERS, "MAX_TEM_ITERS")):
        for v in getattr(m, key):
            if not low <= v <= high:
                raise ConfigError(f"{source}: model.{key} entries must be ≥ {low} and ≤ "
                                  f"{cap} = {high}; got {v}")
    for f, (g, sub) in enumerate(zip(m.tem_n_g, m.tem_n_g_sub, strict=True)):
        if sub > g:
            raise ConfigError(f"{source}: model.tem_n_g_sub[{f}] = {sub} exceeds "
                              f"model.tem_n_g[{f}] = {g} (it is a subset of the module)")
    for v in m.tem_freqs:
        if not (math.isfinite(v) and 0 < v < 1):
            raise ConfigError(f"{source}: model.tem_freqs entries must be > 0 and < 1 "
                              f"(filtering rates); got {v}")
    if m.kind == "tem" and math.comb(m.tem_n_x_c, 2) < n_obs:
        raise ConfigError(f"{source}: model.tem_n_x_c = {m.tem_n_x_c} has "
                          f"{math.comb(m.tem_n_x_c, 2)} two-hot codes, fewer than "
                          f"world.n_obs = {n_obs}")


def world_kind(cfg: Config) -> str:
    """The lattice kind shared by the config's worlds."""
    return cfg.world.worlds[0].split(":")[0]


def parse_override(text: str) -> tuple[str, str, object]:
    """Split ``section.key=value``; the value is read as TOML, else kept as a bare string."""
    lhs, sep, rhs = text.partition("=")
    if not sep or "." not in lhs:
        raise ConfigError(f"override {quote(text)} is not section.key=value (e.g. train.lr=3e-4)")
    section, _, key = lhs.strip().partition(".")
    try:
        value = tomllib.loads(f"v = {rhs.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = rhs.strip()
        if "," in value:  # a bare comma list: a,b → ["a", "b"]
            value = [v.strip() for v in value.split(",") if v.strip()]
    return section, key, value


def apply_overrides(data: dict, overrides) -> dict:
    """Return a copy of nested ``data`` with ``section.key=value`` overrides applied."""
    out = {k: dict(v) for k, v in data.items()}
    for text in overrides or ():
        section, key, value = parse_override(text)
        out.setdefault(section, {})[key] = value
    return out


def load_config(source: str | Path = "small", overrides=()) -> Config:
    """Load a preset name or a TOML file, then apply overrides.

    Raises
    ------
    ConfigError
        If the file is missing or unreadable, or any key or value is invalid.
    """
    data, name = read_raw(source)
    for section, value in data.items():
        if not isinstance(value, dict):
            raise ConfigError(f"{name}: {quote(section)} must be a [section] table; got "
                              f"{type(value).__name__}")
    return from_dict(apply_overrides(data, overrides), name)


def read_raw(source: str | Path) -> tuple[dict, str]:
    """The nested dict of a preset or TOML file, and a name for error messages."""
    if str(source) in PRESETS:
        text = resources.files("hippo_rep").joinpath(f"presets/{source}.toml").read_text()
        name = f"preset {source!r}"
    else:
        path = Path(source)
        if not path.is_file():
            raise ConfigError(f"config {str(path)!r} not found (presets: {', '.join(PRESETS)})")
        name = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ConfigError(f"config {name!r} is not a text (UTF-8) TOML file") from None
        except OSError as err:
            raise ConfigError(f"config {name!r} cannot be read ({err.strerror})") from None
    try:
        return tomllib.loads(text), name
    except RecursionError:
        raise ConfigError(f"{name}: nested too deeply to be a config") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{name}: not valid TOML ({quote(str(err))[1:-1]})") from None


def to_toml(cfg: Config) -> str:
    return tomli_w.dumps(cfg.to_dict())


def from_json(text: str) -> Config:
    return from_dict(json.loads(text), "checkpoint config")
