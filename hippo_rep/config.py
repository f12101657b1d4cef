"""Configuration as frozen dataclasses, read from and written to TOML.

A run is described by a :class:`Config` with three sections, ``world``, ``model`` and ``train``.
Settings that only one model kind reads sit in a section of their own inside ``model`` and
``train``, named after the kind: TEM's are ``[model.tem]`` (:class:`TEMModelConfig`) and
``[train.tem]`` (:class:`TEMTrainConfig`), keys ``model.tem.n_g``, ``train.tem.eta_ramp``.
Presets (``tiny``, ``small``, ``paper``, ``tem``) are TOML files shipped in
``hippo_rep/presets``; any key can be overridden with ``section.key=value`` strings
(``model.tem.n_g=[6,4]``; values in TOML syntax, bare strings allowed). Types, rules and
unknown-key errors come from :mod:`hippo_rep.typed_config`; every field's rule is declared
beside its default. Keys that moved (TEM's were ``model.tem_*`` and ``train.tem_*``; see
``moved`` of :class:`ModelConfig` and :class:`TrainConfig`) are still read, in files,
checkpoints and overrides, under their old names.
"""

from __future__ import annotations

import copy
import numbers
import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType

from hippo_rep.defaults import N_OBS
from hippo_rep.fileio import quote
from hippo_rep.model_kinds import MODEL_KINDS, needs
from hippo_rep.typed_config import (
    ConfigError,
    Rule,
    TypedConfig,
    choice,
    read_toml,
    set_path,
    setting,
)
from hippo_rep.worlds import WorldError, parse_world

__all__ = ["ConfigError", "Rule"]  # re-exported: the error and rule types of every config

PRESETS = ("tiny", "small", "paper", "tem")
#: Valid ``train.device`` values: one of :data:`DEVICES` or ``cuda:N``.
DEVICE_PATTERN = re.compile(r"(auto|cpu|cuda|mps)|cuda:\d{1,3}")

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
#: Attractor iterations per module, at most (model.tem.iters_gen / iters_inf).
MAX_TEM_ITERS = 100


def size_rule(cap: str, low: int = 1) -> Rule:
    """An integer size of at least ``low`` and at most the module constant named ``cap``."""
    return Rule(low=low, high=globals()[cap], cap=cap)


#: Bounds of the walk sizes that evaluating, calibrating and recording a checkpoint take (a
#: training config's own are its rules): argument → its rule.
WALK_SIZES = {"n_envs": size_rule("MAX_BATCH"), "n_steps": size_rule("MAX_WALK_STEPS"),
              "chunk": size_rule("MAX_WALK_STEPS"), "seed": size_rule("MAX_SEED", low=0)}


def check_walk_sizes(error: type[Exception], **values) -> dict[str, int | None]:
    """Each of ``values`` (named as in :data:`WALK_SIZES`; None passes, for a default) an
    integer within its bounds, else ``error`` naming it. Returns them as ints."""
    for name, value in values.items():
        rule = WALK_SIZES[name]
        if value is not None and (isinstance(value, bool) or not isinstance(
                value, numbers.Integral) or not rule.low <= value <= rule.high):
            raise error(f"{name} must be an integer ≥ {rule.low} and ≤ {rule.cap} = "
                        f"{rule.high:,}; got {value!r}")
    return {k: None if v is None else int(v) for k, v in values.items()}


_ANY = Rule()
_NON_NEGATIVE = Rule(low=0)
_POSITIVE = Rule(low=0, low_open=True)
_PROBABILITY = Rule(low=0, high=1)
_INVERSE_TEMPERATURE = Rule(low=0, low_open=True, why="an inverse temperature")
_DIVIDES = Rule(low=1, high=MAX_ITERATIONS, cap="MAX_ITERATIONS", why="it divides")


@dataclass(frozen=True)
class WorldConfig(TypedConfig):
    """The ``world`` section: worlds, observations and walks."""

    section = "world"
    # World specs sampled uniformly per environment (see hippo_rep.worlds.parse_world); all must
    # share one action set. "square:8" = the 8x8 four-connected world of the paper's Fig. 1.
    worlds: tuple[str, ...] = ("square:8",)
    # Sensory categories; observations are one-hot, drawn per node with replacement.
    n_obs: int = setting(N_OBS, size_rule("MAX_OBS", low=2))
    # Steps per walk; ~3x the node count lets most nodes be revisited (measured in prototypes).
    walk_steps: int = setting(192, size_rule("MAX_WALK_STEPS"))
    # Probability of repeating the previous move (TEM's 0.25 heading persistence).
    keep_heading: float = setting(0.25, _PROBABILITY)
    # Probability of staying put; 0 because stays are trivially predictable.
    stay_prob: float = setting(0.0, Rule(low=0, high=1, high_open=True, why="a walk must move"))
    # Training walks: "random" (the paper's), or "delay" (the long-delay task's home tour,
    # excursion of D ~ U[0, max_delay] steps and return, then a random walk to fill
    # walk_steps; see hippo_rep.tasks.delay), which rewards memories that outlast a window.
    walk: str = choice("random", ("random", "delay"))
    # Longest excursion of "delay" walks, in steps.
    max_delay: int = setting(128, size_rule("MAX_WALK_STEPS", low=0))

    def check(self) -> None:
        if not self.worlds:
            raise ConfigError("world.worlds must name at least one world")
        try:
            kinds = {parse_world(spec).kind for spec in self.worlds}
        except WorldError as err:
            raise ConfigError(f"world.worlds: {err}") from None
        if len(kinds) > 1:
            raise ConfigError(f"world.worlds mixes lattice kinds {sorted(kinds)}; one model has "
                              "one action set")


@dataclass(frozen=True)
class TEMModelConfig(TypedConfig):
    """The ``model.tem`` section (``[model.tem]``): TEM's sizes, rates and attractor, read when
    model.kind = "tem" (hippo_rep.models.tem; Whittington et al. 2020). Module 0 is the
    highest frequency."""

    section = "model.tem"
    # Abstract-location units per frequency module (torch_tem default
    # n_g = 3 x n_g_subsampled).
    n_g: tuple[int, ...] = (30, 30, 24, 18, 18)
    # Units of each module that enter the memory, g_down (torch_tem n_g_subsampled).
    n_g_sub: tuple[int, ...] = (10, 10, 8, 6, 6)
    # Compressed (two-hot) sensory units x_c (torch_tem n_x_c); needs n_x_c choose 2 >= n_obs.
    n_x_c: int = setting(10, size_rule("MAX_WIDTH", low=2))
    # Initial temporal-filtering rate per module, x_f <- (1 - a) x_f + a x_c, learned
    # (torch_tem f_initial); higher = less smoothing = higher frequency.
    freqs: tuple[float, ...] = (0.99, 0.3, 0.09, 0.03, 0.01)
    # Hidden units per module of the action -> D_a transition MLP (torch_tem d_hidden_dim).
    transition_hidden: int = setting(20, size_rule("MAX_WIDTH"))
    # Hebbian forgetting lambda and learning rate eta (paper; torch_tem lambda, eta), reached
    # after train.tem.lambda_ramp / train.tem.eta_ramp iterations. ("lambda_": lambda is a
    # Python keyword.)
    lambda_: float = setting(
        0.9999, Rule(low=0, high=1, low_open=True, why="a per-step decay"))
    eta: float = setting(0.5, _POSITIVE)
    # Attractor decay kappa of h <- f(kappa h + h M) (paper; torch_tem kappa).
    kappa: float = setting(0.8, _NON_NEGATIVE)
    # Attractor iterations per module: generative memory (low frequencies stop early,
    # torch_tem i_attractor_max_freq_gen) and inference memory (torch_tem ..._inf).
    iters_gen: tuple[int, ...] = (5, 4, 3, 2, 1)
    iters_inf: tuple[int, ...] = (5, 5, 5, 5, 5)

    def check(self) -> None:
        """TEM's per-module tuples: one entry per module each, sizes and rates in range."""
        n_f = len(self.n_g)
        if n_f < 1:
            raise ConfigError("model.tem.n_g must list at least one module")
        for key in ("n_g_sub", "freqs", "iters_gen", "iters_inf"):
            if len(getattr(self, key)) != n_f:
                raise ConfigError(f"model.tem.{key} must have one entry per module ({n_f}, as "
                                  f"model.tem.n_g); got {len(getattr(self, key))}")
        for key, low, high, cap in (("n_g", 1, MAX_WIDTH, "MAX_WIDTH"),
                                    ("n_g_sub", 1, MAX_WIDTH, "MAX_WIDTH"),
                                    ("iters_gen", 0, MAX_TEM_ITERS, "MAX_TEM_ITERS"),
                                    ("iters_inf", 0, MAX_TEM_ITERS, "MAX_TEM_ITERS")):
            for v in getattr(self, key):
                if not low <= v <= high:
                    raise ConfigError(f"model.tem.{key} entries must be ≥ {low} and ≤ {cap} = "
                                      f"{high}; got {v}")
        for f, (g, sub) in enumerate(zip(self.n_g, self.n_g_sub, strict=True)):
            if sub > g:
                raise ConfigError(f"model.tem.n_g_sub[{f}] = {sub} exceeds model.tem.n_g[{f}] "
                                  f"= {g} (it is a subset of the module)")
        for v in self.freqs:
            if not 0 < v < 1:
                raise ConfigError("model.tem.freqs entries must be > 0 and < 1 (filtering "
                                  f"rates); got {v}")


@dataclass(frozen=True)
class ModelConfig(TypedConfig):
    """The ``model`` section: TEM-t, TEM or the baseline, and their memories."""

    section = "model"
    #: ``model.n_context`` was never read by the model; older checkpoints and TOML hold it.
    removed = frozenset({"n_context"})
    #: TEM's keys were ``model.tem_*`` before the [model.tem] section held them: older
    #: checkpoints, config.toml files and recordings hold them under these names.
    moved = MappingProxyType({"tem_n_g": "tem.n_g", "tem_n_g_sub": "tem.n_g_sub",
                              "tem_n_x_c": "tem.n_x_c", "tem_freqs": "tem.freqs",
                              "tem_transition_hidden": "tem.transition_hidden",
                              "tem_lambda": "tem.lambda_", "tem_eta": "tem.eta",
                              "tem_kappa": "tem.kappa", "tem_iters_gen": "tem.iters_gen",
                              "tem_iters_inf": "tem.iters_inf"})
    # "temt": recurrent positional encodings; "sinusoidal": fixed time-index encodings
    # (baseline); "tem": TEM. What each accepts: hippo_rep.model_kinds.MODEL_KINDS.
    kind: str = choice(next(iter(MODEL_KINDS)), tuple(MODEL_KINDS))
    # Positional-encoding units (the cells expected to become grid-like).
    n_g: int = setting(64, size_rule("MAX_WIDTH"))
    # Width of keys/queries z(g)·W_e.
    d_key: int = setting(64, size_rule("MAX_WIDTH"))
    # Width of values x·W_x.
    d_value: int = setting(64, size_rule("MAX_WIDTH"))
    # Hidden width of the readout, retrieval and gate MLPs.
    hidden: int = setting(128, size_rule("MAX_WIDTH"))
    # Nonlinearity of the transition g_t = f(g_{t-1} W_a): linear | relu | tanh | leaky_relu.
    transition_activation: str = choice("linear", ("linear", "relu", "tanh", "leaky_relu"))
    # W_a starts at identity + N(0, this²): near-identity keeps early products stable.
    transition_init_std: float = setting(0.01, _NON_NEGATIVE)
    # W_a's start: "random" (near identity, above) or "triad", a known-weights control: every
    # grid module (model.g_module_size = 6, three rotation planes) an exact hexagonal triad of
    # plane waves (equal lengths, 60° apart, a random orientation per module; module m's
    # wavelength triad_wavelength · triad_scale_ratio^m nodes). With
    # train.transition_lr_scale = 0 the spectrum stays a triad, so training shows what the
    # rest of TEM-t (the read-out cells, the energy cost) makes of it.
    transition_init: str = choice("random", ("random", "triad"))
    # Wavelength in nodes of the first module's triad (transition_init = "triad"); waves of
    # 2 nodes or less alias on the lattice.
    triad_wavelength: float = setting(5.0, Rule(low=2, low_open=True,
                                                why="waves of 2 nodes or less alias"))
    # Ratio of consecutive modules' triad wavelengths (transition_init = "triad"): 1.15 keeps
    # ten modules within 5-18 nodes, all visible in a 16x16 recording.
    triad_scale_ratio: float = setting(1.15, _POSITIVE)
    # "orthogonal" W_a = exp(S - Sᵀ), or "free" W_a (the paper). Free matrices with the
    # landmark correction collapsed in 8x8 runs (W_a contracts all positions onto one;
    # memories fall to the number of distinct observations); orthogonal ones cannot contract.
    # "waves": W_a a representation of the lattice's 2D moves, learned only through each
    # rotation plane's wave vector k_p (W_a turns plane p by k_p · u_a, u_a move a's known
    # displacement; stay is the identity): the moves commute and undo each other by
    # construction, so g is a function of the node; whether k's of a module form a hexagonal
    # triad is learned, not set (the learned route to grid cells; needs an even model.n_g).
    transition_param: str = choice("orthogonal", ("free", "orthogonal", "waves"))
    # Grid modules: W_a block-diagonal in blocks of this many units (0 = one block of all n_g
    # units). A block is a module of waves that train.loss_isometry shapes on its own (Gao,
    # Xie, Zhu, Wu & Wu 2021; Xu, Gao, Zhang, Wei & Wu, ICLR 2025); 6 units hold three
    # rotation planes, the fewest waves a hexagonal lattice needs. Even, and divides n_g.
    g_module_size: int = setting(0, size_rule("MAX_WIDTH", low=0))
    # "direct": the prediction is the activity-weighted vote of the stored one-hot
    # observations (values = X, W_x = identity); "mlp": an MLP of activity·(X W_x) (step 2 of
    # hippo_rep.models.temt), which learned ~2x slower per iteration here.
    readout: str = choice("direct", ("mlp", "direct"))
    # Memory-neuron activation: softmax (exact transformer) | relu | power (normalised).
    memory_activation: str = choice("softmax", ("softmax", "relu", "power"))
    # Exponent of the "power" memory activation.
    memory_power: float = setting(4.0, _POSITIVE)
    # Initial inverse temperature of the prediction attention (multiplied by log #memories).
    beta_init: float = setting(1.0, _INVERSE_TEMPERATURE)
    # Landmark correction (Whittington, Warren & Behrens 2022, appendix A.2): off gives the
    # path-integration-only core.
    landmark: bool = True
    # Conjunction of the landmark query: multiplicative (TEM-t) or additive (the alternative
    # named by Whittington, Warren & Behrens 2022, section 7).
    conjunction: str = choice("multiplicative", ("multiplicative", "additive"))
    # Initial inverse temperature of the landmark retrieval (multiplied by log #memories).
    retrieval_beta_init: float = setting(3.0, _INVERSE_TEMPERATURE)
    # A memory is added only if no stored memory of the same observation has cosine similarity
    # of z(g) above this. Training uses it as given (lower values merged distinct nodes or
    # lost loop closure in training); after training, `hippo-rep calibrate` sets it between
    # revisits and new places (training.calibrate), because revisits after long excursions
    # fall below 0.98 and write duplicate memories.
    write_threshold: float = setting(0.98, Rule(low=-1, why="a cosine similarity"))
    # Hopfield-style retrieval iterations for the prediction (Whittington, Warren & Behrens 2022,
    # appendix A.2); 1 = one transformer pass.
    retrieval_iterations: int = setting(1, size_rule("MAX_RETRIEVAL_ITERATIONS"))
    # Let loss 2 (prediction from the corrected g_t) train the landmark path (gate, retrieval
    # MLP). Off: with it on, the gate opened on every retrieval and accuracy collapsed (8x8,
    # ~150 iterations); off, loss 2 still trains W_e and the readout on corrected encodings.
    loss2_through_landmark: bool = False
    # Scale of g after each transition: "rms" rescales g to unit RMS after every step (keeps
    # repeated products with a free W_a bounded; makes the L2 loss on g, loss 5, nominal);
    # "none" is the paper's e_{t+1} = σ(e_t W_a), kept bounded by loss 5 (train.loss_l2_g);
    # "plane" rescales each rotation plane (units 2p, 2p + 1 of transition_param = "waves") to
    # unit RMS, so every wave keeps an equal share of g's power and g is a point on a torus of
    # phases (a structural assumption: with unequal shares the isometry loss's optimum is no
    # triad; benchmarks/isometry_waves_toy.py).
    g_norm: str = choice("rms", ("rms", "none", "plane"))
    # Initial bias of the gate's last layer: sigmoid(-2) ≈ 0.12, a mostly-open path integrator.
    gate_bias_init: float = setting(-2.0, _ANY)
    # Memory variant: "full" (every memory stays), "window" (block sliding window over the
    # memory sequence: the current block plus the last memory_blocks blocks), "fam" (the window
    # plus fam_slots feedback slots updated per block, TransformerFAM), "hebbian" (TEM's
    # outer-product memory matrix, Whittington, Warren & Behrens 2022, appendix A.1, with linear
    # retrieval; no softmax memory neurons).
    memory: str = choice("full", ("full", "window", "fam", "hebbian"))
    # Block length B of "window"/"fam", in steps.
    memory_block: int = setting(16, size_rule("MAX_WALK_STEPS"))
    # Previous blocks M a query still sees ("window"/"fam"); the window spans M*B to (M+1)*B steps.
    memory_blocks: int = setting(4, size_rule("MAX_WALK_STEPS", low=0))
    # Feedback slots F of "fam".
    fam_slots: int = setting(8, size_rule("MAX_WIDTH", low=0))
    # Initial inverse temperature of the FAM slot update (softplus-parameterised, learned).
    fam_beta_init: float = setting(3.0, _INVERSE_TEMPERATURE)
    # FAM slot update: "soft" (TransformerFAM: each slot becomes the attention-weighted mix of
    # [slots; block memories]) or "hard" (each slot copies the one it attends to most, so it
    # keeps a whole (g, x) conjunction; no gradient through the choice) or "keep" (hard, plus
    # a learned keep logit on each slot's score for itself, fam_keep + fam_keep_conf x the
    # slot's largest observation probability, and a straight-through gradient: forward the
    # copy, backward the softmax's gradient, so the keep rule and slot queries train).
    fam_update: str = choice("soft", ("soft", "hard", "keep"))
    # Per-step decay of the Hebbian memory matrix (1 = no forgetting; TEM's lambda).
    hebbian_decay: float = setting(1.0, Rule(low=0, high=1, low_open=True))
    # The positional population that is recorded, analysed and keys the prediction: "g" (the
    # recurrent encoding itself), or "readout": cells r = σ_c(A g + b) with a free linear A
    # (n_cells x n_g) and a per-cell offset b (Dorrell, Latham, Behrens & Whittington, ICLR
    # 2023: a group representation mixed into non-negative, energy-limited cells). The
    # prediction's keys are then r W_e (no z-score: the cells' scale is what the energy cost
    # trades against the task), so the task needs r to tell places apart; the landmark
    # retrieval and the write test stay on g. A rotation of g's units cannot select a
    # hexagonal mixing of its waves; non-negativity and energy on r can.
    cells: str = choice("g", ("g", "readout"))
    # Cells r of model.cells = "readout".
    n_cells: int = setting(64, size_rule("MAX_WIDTH"))
    # σ_c of the read-out cells: "relu" (non-negative by construction) or "none" (signed;
    # train.loss_cells_neg then penalises negative rates).
    cells_activation: str = choice("relu", ("relu", "none"))
    # Initial per-cell offset b: a positive start keeps ReLU cells active (a cell at r = 0
    # everywhere gets no gradient).
    cells_bias_init: float = setting(0.5, _ANY)
    # Each read-out cell reads one grid module of g (cell c reads module c mod M; A is
    # block-sparse; needs model.g_module_size): false, cells mix modules freely, and mixing
    # modules of different spacing gives interference patterns rather than one lattice. True
    # is a structural assumption (modular cells), so that what the energy cost selects
    # *within* a module is what training shows.
    cells_modular: bool = False
    # Each read-out cell reads a unit-norm row of A (r = σ_c(Â g + b), Â_c = A_c / ‖A_c‖).
    # With g's rotation planes at unit RMS (g_norm = "plane") and no two planes on one wave
    # vector, every cell's variance over the unbounded plane is then 1: a fixed firing
    # budget (Dorrell et al. 2023; train.loss_cells_var holds it where planes share waves),
    # so the energy cost pays for the offset b a non-negative cell needs, least for three
    # waves of one triad in phase (a lattice of peaks). False: A's scale is free against
    # W_e and the energy cost mostly shrinks the cells (benchmarks/cell_objective_toy.py).
    cells_unit_norm: bool = False
    # The TEM section, [model.tem]: TEM's sizes, rates and attractor (model.kind = "tem").
    tem: TEMModelConfig = field(default_factory=TEMModelConfig)

    def check(self) -> None:
        if self.memory == "fam" and self.fam_slots < 1:
            raise ConfigError(f"model.memory = \"fam\" needs model.fam_slots ≥ 1; got "
                              f"{self.fam_slots}")
        if self.cells == "readout" and (wrong := needs("readout_cells", self.kind)):
            raise ConfigError(f"model.cells = \"readout\" needs {wrong}")
        if self.cells == "readout" and self.memory not in ("full", "window"):
            raise ConfigError("model.cells = \"readout\" needs model.memory = \"full\" or "
                              "\"window\" (FAM slots and the Hebbian memory key on g); got "
                              f"memory = {self.memory!r}")
        if self.g_module_size and (wrong := needs("action_transitions", self.kind)):
            raise ConfigError(f"model.g_module_size = {self.g_module_size} needs {wrong}")
        if self.g_module_size and (self.g_module_size % 2 or self.n_g % self.g_module_size):
            raise ConfigError(f"model.g_module_size = {self.g_module_size} must be even and "
                              f"divide model.n_g = {self.n_g}")
        if self.cells_unit_norm and self.cells != "readout":
            raise ConfigError("model.cells_unit_norm = true needs model.cells = \"readout\"; "
                              f"got cells = {self.cells!r}")
        if self.cells_modular and (self.cells != "readout" or not self.g_module_size):
            raise ConfigError("model.cells_modular = true needs model.cells = \"readout\" and "
                              f"grid modules (model.g_module_size > 0); got cells = "
                              f"{self.cells!r}, g_module_size = {self.g_module_size}")
        if self.memory != "full" and (wrong := needs("memory_variants", self.kind)):
            raise ConfigError(f"model.memory = {self.memory!r} needs {wrong}")
        if self.transition_init == "triad" and (self.g_module_size != 6
                                                or self.transition_param == "free"):
            raise ConfigError("model.transition_init = \"triad\" needs model.g_module_size = 6 "
                              "(three rotation planes a module) and model.transition_param = "
                              f"\"orthogonal\" or \"waves\"; got g_module_size = "
                              f"{self.g_module_size}, transition_param = "
                              f"{self.transition_param!r}")
        if self.transition_param == "waves" and (wrong := needs("action_transitions",
                                                                self.kind)):
            raise ConfigError(f"model.transition_param = \"waves\" needs {wrong}")
        if self.transition_param == "waves" and self.n_g % 2:
            raise ConfigError("model.transition_param = \"waves\" needs an even model.n_g "
                              f"(rotation planes of two units); got n_g = {self.n_g}")
        if self.g_norm == "plane" and self.transition_param != "waves":
            raise ConfigError("model.g_norm = \"plane\" needs model.transition_param = "
                              "\"waves\" (rotation planes of two units); got "
                              f"transition_param = {self.transition_param!r}")


@dataclass(frozen=True)
class TEMTrainConfig(TypedConfig):
    """The ``train.tem`` section (``[train.tem]``): TEM's loss weights and annealing, read when
    model.kind = "tem" (torch_tem parameters.py defaults; see
    hippo_rep.models.tem.tem_schedule)."""

    section = "train.tem"
    # Weights of the p losses (p_g, p_x), the three x cross-entropies and the g loss
    # (torch_tem loss_weights_p/x/g).
    loss_p: float = setting(1.0, _NON_NEGATIVE)
    loss_x: float = setting(1.0, _NON_NEGATIVE)
    loss_g: float = setting(1.0, _NON_NEGATIVE)
    # L2 on g and L1 on p (torch_tem loss_weights_reg_g / reg_p).
    loss_reg_g: float = setting(0.01, _NON_NEGATIVE)
    loss_reg_p: float = setting(0.02, _NON_NEGATIVE)
    # Steps whose loss terms count: "all", or only "revisits" (steps at a node the walk has
    # visited before, as torch_tem trains (its run.py): a first visit's observation cannot
    # be predicted, and its latent terms pull p and g toward an empty memory's retrievals).
    loss_on: str = choice("all", ("all", "revisits"))
    # Iterations over which the p and g losses ramp in (torch_tem loss_weights_p_g_it).
    latent_ramp: int = setting(2000, _DIVIDES)
    # Iterations over which the L1 on p decays to 0 (torch_tem loss_weights_reg_p_it).
    reg_p_decay: int = setting(4000, _DIVIDES)
    # Iterations over which eta and lambda ramp up to model.tem.eta / model.tem.lambda_
    # (torch_tem eta_it, lambda_it).
    eta_ramp: int = setting(16000, _DIVIDES)
    lambda_ramp: int = setting(200, _DIVIDES)
    # Centre and width, in iterations, of the logistic fall of the offset that makes
    # inference ignore memory-inferred g early on (torch_tem p2g_sig_half_it, p2g_sig_scale_it).
    p2g_half: int = setting(
        400, Rule(low=-MAX_ITERATIONS, high=MAX_ITERATIONS, cap="MAX_ITERATIONS"))
    p2g_width: int = setting(200, _DIVIDES)


@dataclass(frozen=True)
class TrainConfig(TypedConfig):
    """The ``train`` section: optimiser, schedule, losses, checkpoints and evaluation."""

    section = "train"
    #: TEM's keys were ``train.tem_*`` before the [train.tem] section held them: older
    #: checkpoints and config.toml files hold them under these names.
    moved = MappingProxyType({f"tem_{k}": f"tem.{k}" for k in (
        "loss_p", "loss_x", "loss_g", "loss_reg_g", "loss_reg_p", "loss_on", "latent_ramp",
        "reg_p_decay", "eta_ramp", "lambda_ramp", "p2g_half", "p2g_width")})
    # Seed of weights and of every training batch (batch i uses the stream (seed, i)).
    seed: int = setting(0, size_rule("MAX_SEED", low=0))
    # Gradient steps; each uses a fresh batch of environments.
    iterations: int = setting(400, size_rule("MAX_ITERATIONS", low=0))
    # Environments per batch.
    batch_size: int = setting(16, size_rule("MAX_BATCH"))
    # AdamW learning rate (1e-3 for 8x8; 3e-4–5e-4 for larger worlds, measured in prototypes).
    lr: float = setting(1e-3, _POSITIVE)
    # Linear warm-up of the learning rate, in iterations.
    warmup: int = setting(20, size_rule("MAX_ITERATIONS", low=0))
    # Learning rate of the transition matrices W_a relative to ``lr``. Once path integration
    # works, Adam's noise-driven steps on W_a break loop closure on long walks (measured on
    # 10x10/11x11 fine-tunes), so the paper preset lowers or freezes it (0 = frozen).
    transition_lr_scale: float = setting(1.0, _NON_NEGATIVE)
    # AdamW decoupled weight decay (TEM-t's L2 weight regularisation, loss 4;
    # Whittington, Warren & Behrens 2022, appendix A.2).
    weight_decay: float = setting(1e-5, _NON_NEGATIVE)
    # Gradient-norm clipping; stabilises the recurrent products.
    grad_clip: float = setting(10.0, Rule(low=0, low_open=True, why="a gradient-norm bound"))
    # Truncated BPTT: gradients stop every this many steps (0 = the whole walk). Memories persist.
    chunk_len: int = setting(0, size_rule("MAX_WALK_STEPS", low=0))
    # One optimiser step per chunk instead of one per walk (torch_tem's regime: its iteration
    # is one 20-step chunk with the memory carried on). An iteration then makes
    # ceil(walk_steps / chunk_len) updates, and TEM's annealing ([train.tem]) counts updates.
    step_every_chunk: bool = False
    # Loss 1: cross-entropy of the prediction from g_pi (the real next-step prediction).
    loss_pi: float = setting(1.0, _NON_NEGATIVE)
    # Loss 2: cross-entropy of the prediction from the corrected g_t.
    loss_g: float = setting(1.0, _NON_NEGATIVE)
    # Loss 3: squared error between g_pi and the corrected g_t (g_t detached: pulls W_a).
    loss_g_pi: float = setting(0.1, _NON_NEGATIVE)
    # Loss 5: L2 on g_t (mean square over units). Nominal under model.g_norm = "rms" (g then
    # has unit RMS after each transition); with g_norm = "none" it is what bounds g.
    loss_l2_g: float = setting(0.0, _NON_NEGATIVE)
    # Inverse-action loss: mean over opposite move pairs (a, ā) of ||W_a W_ā − I||²_F / n_g.
    # Opposite moves that undo each other return g to where it was, so the add-if-novel test
    # recognises the node (the rule of Whittington, Warren & Behrens 2022, appendix A.2) instead of
    # writing a duplicate memory.
    loss_inverse: float = setting(0.0, _NON_NEGATIVE)
    # Loop loss: mean over the lattice's smallest loops (a square's four moves, a hex
    # lattice's two triangles) of ||Π W_a − I||²_F / n_g. With loss_inverse it makes the moves
    # commute, so that g depends on the node and not on the path (a torus of plane waves,
    # which the isometry loss can then shape; non-commuting W_a leave g path-dependent).
    loss_loop: float = setting(0.0, _NON_NEGATIVE)
    # Energy cost of the read-out cells (model.cells = "readout"): mean r² over cells and
    # steps (the activity cost of Whittington, Dorrell, Ganguli & Behrens, ICLR 2023).
    loss_cells_energy: float = setting(0.0, _NON_NEGATIVE)
    # Non-negativity of the read-out cells: mean relu(-r)² (for model.cells_activation =
    # "none"; ReLU cells are non-negative already).
    loss_cells_neg: float = setting(0.0, _NON_NEGATIVE)
    # Each read-out cell's variance held at 1: the mean over cells of (Var r_c − 1)², over the
    # places of the cell constraints (below). A fixed firing budget that a cell cannot meet by
    # reading two planes of one wave in antiphase, as unit-norm rows can where two modules
    # share their waves (model.cells_unit_norm; the energy over a virtual square then fell
    # to 0.58 < 1). The energy cost then pays only for the offset.
    loss_cells_var: float = setting(0.0, _NON_NEGATIVE)
    # Where the cell constraints (loss_cells_energy, _neg, _var) are evaluated: 0 on the
    # walk's own states; n > 0 on n states of the chunk, each moved by W_a to a random
    # displacement in a square of cells_virtual_extent nodes (model.transition_param =
    # "waves": plane p turns by k_p · x), states and W_a detached, so the constraints shape
    # only A and b. A small world shows less than a period of the longer waves, and there the
    # cheapest cells mix modules into bumps at the arena's scale; the virtual square shows
    # them whole periods, the unbounded plane of the theory (benchmarks/cell_objective_toy.py).
    cells_virtual: int = setting(0, size_rule("MAX_BATCH", low=0))
    # Side (nodes) of cells_virtual's square: several periods of the longest waves.
    cells_virtual_extent: float = setting(60.0, _POSITIVE)
    # Walk-constant power of g: per environment ||mean_t g_t||² / mean_t ||g_t||² over the
    # chunk (0 for a zero-mean code, 1 for a constant one). A recurrence with an eigenvalue-1
    # subspace can carry an offset in g itself, which crowds out the spatial code under
    # unit-RMS g; penalised, an offset can come only through the cells' b.
    loss_g_const: float = setting(0.0, _NON_NEGATIVE)
    # Conformal isometry of each grid module m (model.g_module_size; Xu, Gao, Zhang, Wei & Wu,
    # ICLR 2025): for two steps i, j of a walk at most isometry_lags apart whose nodes are at
    # most isometry_range apart, ||u_m(i) − u_m(j)|| = s_m |x_i − x_j|, u_m = g_m / ||g_m||;
    # mean squared error over pairs and modules. Hexagonal lattices are the most
    # distance-preserving tori, so this is what selects a triad of waves in a module.
    loss_isometry: float = setting(0.0, _NON_NEGATIVE)
    # s_0: the scale of module 0, per lattice unit (a module of three equal waves at 60° has
    # wavelength ≈ 4.4 / s nodes: 0.7 → about 6 nodes on a square lattice).
    isometry_scale: float = setting(0.7, _POSITIVE)
    # s_{m+1} = s_m / isometry_scale_ratio: modules of growing spacing (1 = one scale).
    isometry_scale_ratio: float = setting(1.0, _POSITIVE)
    # Largest node distance (lattice units) of a pair in the isometry loss: 2.3 takes the
    # displacements (1,0), (1,1), (2,0) and (2,1) of a square lattice, enough to tell a
    # hexagonal from a square lattice of waves; a smaller range cannot.
    isometry_range: float = setting(2.3, _POSITIVE)
    # Pairs of steps at most this many steps apart along the walk (isometry_pairs = "walk").
    isometry_lags: int = setting(8, size_rule("MAX_WALK_STEPS"))
    # Which pairs: "transition" moves every isometry_stride-th state of the walk by W_a along
    # each lattice displacement within isometry_range (Xu et al.'s form: every displacement
    # weighs the same, and only W_a and the states' spread over the planes can satisfy it),
    # or "walk" takes pairs of the walk's own steps (corrected g, memory and all; short
    # displacements dominate, as a random walk makes them).
    isometry_pairs: str = choice("transition", ("transition", "walk"))
    # Every this-many-th step's state starts the "transition" pairs.
    isometry_stride: int = setting(8, size_rule("MAX_WALK_STEPS"))
    # isometry_pairs = "transition": each module m takes the displacements within
    # isometry_range x s_0 / s_m, the same range relative to its wavelength (false: every
    # module the same isometry_range). Seen only at displacements far below its wavelength,
    # a module of long waves meets the loss with any isotropic set of waves, not only a
    # triad; with isometry_scale_ratio 1.15 and one range no module became a triad.
    isometry_range_per_module: bool = False
    # The cell constraints (loss_cells_energy, loss_cells_neg, loss_g_const) come in after path
    # integration is learned: weight 0 before this iteration, then a linear ramp...
    cells_ramp_start: int = setting(300, size_rule("MAX_ITERATIONS", low=0))
    # ... to full weight over this many iterations (0 = a step).
    cells_ramp: int = setting(200, size_rule("MAX_ITERATIONS", low=0))

    # Save a checkpoint every this many iterations (and at the end and on Ctrl-C).
    checkpoint_every: int = setting(100, _DIVIDES)
    # Log to metrics.csv every this many iterations.
    log_every: int = setting(10, _DIVIDES)
    # Held-out environments evaluated every eval_every iterations (0 = never during training).
    eval_every: int = setting(100, size_rule("MAX_ITERATIONS", low=0))
    eval_envs: int = setting(8, size_rule("MAX_BATCH"))
    # Start from the weights of this checkpoint ("" = fresh weights from seed); the model config
    # must match. A curriculum: 8x8-trained weights path-integrate 10x10 worlds at once.
    init_from: str = ""
    # Continue init_from's run instead of starting one: begin at its iteration, so the
    # learning-rate schedule, TEM's annealing and the walks (functions of seed and iteration)
    # go on where it stopped. Its config must equal this run's (as for --resume); Adam's
    # moments restart from zero, since a weights-only copy (data/*.pt) carries none.
    init_continue: bool = False
    # "cpu", "cuda" or "auto" (cuda when available).
    device: str = "auto"
    # torch threads (0 = torch's default). Small matrices: 1–2 threads are fastest here.
    threads: int = setting(0, size_rule("MAX_THREADS", low=0))
    # TEM-t's time loop fused (hippo_rep.models.fused): the eager loop's forward without an
    # autograd graph and a hand-written backward with weight gradients batched over steps;
    # the same losses, gradients and weights as false (the eager step, kept as its oracle).
    # Not covered: model.memory "fam"/"hebbian", model.kind "tem"; they train eagerly and
    # the trainer says so once. With a full memory the fused loop runs in C++ (built once per
    # machine with g++ and ninja, ~1 minute; hippo_rep.models.fused_cpp), the same numbers;
    # where it cannot build, the fused Python loop runs and says so once.
    fast_step: bool = True
    # The TEM section, [train.tem]: TEM's loss weights and annealing (model.kind = "tem").
    tem: TEMTrainConfig = field(default_factory=TEMTrainConfig)

    def check(self) -> None:
        if self.init_continue and not self.init_from:
            raise ConfigError("train.init_continue = true needs train.init_from (the "
                              "checkpoint whose run it continues)")
        if not DEVICE_PATTERN.fullmatch(self.device):
            raise ConfigError(f"train.device must be one of {DEVICES} or cuda:N; got "
                              f"{quote(self.device)}")



@dataclass(frozen=True)
class Config(TypedConfig):
    """A whole run: the ``world``, ``model`` and ``train`` sections."""

    world: WorldConfig = field(default_factory=WorldConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def check(self) -> None:
        m = self.model
        if self.train.loss_isometry > 0 and (wrong := needs("action_transitions", m.kind)):
            raise ConfigError(f"train.loss_isometry needs {wrong}: the modules of its g")
        if self.train.loss_cells_var > 0 and m.cells != "readout":
            raise ConfigError("train.loss_cells_var > 0 needs model.cells = \"readout\"; got "
                              f"cells = {m.cells!r}")
        if self.train.cells_virtual and (m.cells != "readout" or m.transition_param != "waves"
                                         or m.transition_activation != "linear"):
            raise ConfigError("train.cells_virtual > 0 needs model.cells = \"readout\" and a "
                              "linear wave W_a (model.transition_param = \"waves\", "
                              "model.transition_activation = \"linear\") to move g to any "
                              f"displacement; got cells = {m.cells!r}, transition_param = "
                              f"{m.transition_param!r}, transition_activation = "
                              f"{m.transition_activation!r}")
        check = MODEL_KINDS[m.kind].check
        if check is not None and (wrong := check(self)):
            raise ConfigError(wrong)


_SECTIONS = {"world": WorldConfig, "model": ModelConfig, "train": TrainConfig}

#: One rule per numeric key ("section.key", "model.tem.n_x_c" in a section's section), as the
#: fields declare them (tests check that every numeric field has one).
RULES: dict[str, Rule] = {key: f.metadata["rule"] for key, f, typ in Config.keys()
                          if typ in (int, float) and "rule" in f.metadata}


def from_dict(data: dict, source: str = "config") -> Config:
    """Build a :class:`Config` from nested dicts, checking every section, key and type.

    Raises
    ------
    ConfigError
        Naming ``source`` and the offending key, listing the valid keys.
    """
    return Config.from_dict(data, source)


def validate(cfg: Config, source: str = "config") -> None:
    """Check ``cfg`` again (types, :data:`RULES`, the checks across keys), naming ``source``."""
    Config.from_dict(cfg.to_dict(), source)


def world_kind(cfg: Config) -> str:
    """The lattice kind shared by the config's worlds."""
    return cfg.world.worlds[0].split(":")[0]


def parse_override(text: str) -> tuple[str, str, object]:
    """Split ``section.key=value``; the value is read as TOML, else kept as a bare string.

    The key may be dotted itself (``model.tem.n_g=[6,4]`` → ``("model", "tem.n_g", [6, 4])``).
    """
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
    """Return a copy of nested ``data`` with ``section.key=value`` overrides applied.

    ``data`` and the overrides' keys are read under their current names first
    (:meth:`~hippo_rep.typed_config.TypedConfig.upgrade`, :data:`ModelConfig.moved`): an old
    ``model.tem_n_g=...`` sets ``model.tem.n_g``, also over a file that has either name.
    """
    out = Config.upgrade(copy.deepcopy(data))
    for text in overrides or ():
        section, key, value = parse_override(text)
        set_path(out, Config.new_key(f"{section}.{key}"), value)
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
    """The nested dict of a preset or TOML file, its moved keys under their current names
    (an older file's ``[model] tem_n_g`` as ``[model.tem] n_g``), and a name for error
    messages."""
    if str(source) in PRESETS:
        name = f"preset {source!r}"
        text = resources.files("hippo_rep").joinpath(f"presets/{source}.toml").read_text()
        data = read_toml(None, text=text, name=name)
    elif not Path(source).is_file():
        raise ConfigError(f"config {str(source)!r} not found (presets: {', '.join(PRESETS)})")
    else:
        data, name = read_toml(source), str(source)
    try:
        return Config.upgrade(data), name
    except ConfigError as err:
        raise ConfigError(f"{name}: {err}") from None
