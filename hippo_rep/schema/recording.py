"""The recording format: a model walking fresh environments (see :mod:`hippo_rep.recording`),
checked by :func:`validate` (in full) and :func:`require_recording` (what the analysis
reads). Every name below is part of the file format that the analysis code reads; change none
of them without bumping :data:`SCHEMA_VERSION`.

Dimensions
    ``env`` (environment, one walk each), ``time`` (step of the walk), ``g_unit``
    (positional-encoding unit), ``memory`` (memory neuron = memory slot, in order of writing),
    ``world_node`` (node of the world graph).

Data variables
    ``g(env, time, g_unit)``: positional encoding after landmark correction;
    ``g_pi(env, time, g_unit)``: path-integrated positional encoding;
    ``memory_activity(env, time, memory)``: memory-neuron softmax activity for the query that
    the prediction is made from (the one from ``g_pi``); 0 where a memory does not exist yet
    (a memory written at step τ is first available at step τ + 1).

Coordinates
    per step, on (env, time): ``node``, ``x``, ``y`` (lattice units), ``action``,
    ``observation``, ``prediction``, ``correct``, ``step_type`` (see
    :data:`hippo_rep.worlds.STEP_TYPES`); per memory, on (env, memory): ``memory_node``,
    ``memory_time``, ``memory_observation`` (−1 where an environment has fewer memories);
    per world node: ``node_x``, ``node_y`` (lattice units; hexagonal rows are offset by 1/2
    and spaced √3/2), so rate maps can be built for any lattice.

TEM recordings (``model.kind = "tem"``, :data:`OPTIONAL_VARS`)
    TEM has no memory slots, so instead of ``memory_activity`` (and the ``memory`` dim and
    ``memory_*`` coords) they hold ``p(env, time, p_unit)``, TEM's conjunctive grounded
    location, as its own population; ``g``/``g_pi`` are TEM's raw g_inf/g_gen (every module,
    not TEM-t's unit RMS) with coord ``module(g_unit)``; per p unit ``p_module``,
    ``p_g_unit``, ``p_sensory_unit``. ``p`` is the place-like population
    (:data:`PLACE_POPULATIONS`) of such a recording.

Conventions: lengths in lattice units (the distance between neighbouring nodes), angles in
degrees from +x towards +y, maps indexed ``[row = y, col = x]``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from hippo_rep.datasets import open_raw
from hippo_rep.fileio import quote
from hippo_rep.worlds import STEP_TYPES

#: Version of this schema, stored in the ``schema_version`` attr.
SCHEMA_VERSION = 1

# --------------------------------------------------------------------------- dimensions
ENV, TIME, G_UNIT, MEMORY, WORLD_NODE = "env", "time", "g_unit", "memory", "world_node"
DIMS = (ENV, TIME, G_UNIT, MEMORY, WORLD_NODE)

# --------------------------------------------------------------------------- data variables
G, G_PI, MEMORY_ACTIVITY = "g", "g_pi", "memory_activity"

# --------------------------------------------------------------------------- coordinates
NODE, X, Y, ACTION, OBSERVATION = "node", "x", "y", "action", "observation"
PREDICTION, CORRECT, STEP_TYPE = "prediction", "correct", "step_type"
MEMORY_NODE, MEMORY_TIME, MEMORY_OBSERVATION = "memory_node", "memory_time", "memory_observation"
NODE_X, NODE_Y = "node_x", "node_y"
#: Per-memory coordinates, dims (env, memory); −1 in unused slots.
MEMORY_COORDS = (MEMORY_NODE, MEMORY_TIME, MEMORY_OBSERVATION)
#: Value of the per-memory coordinates where an environment has no memory in that slot.
UNUSED = -1

# --------------------------------------------------------------------------- attrs
KIND_ATTR, KIND = "hippo_rep_kind", "recording"
MODEL_CONFIG, WORLD_CONFIG, RECORDING_CONFIG = "model_config", "world_config", "recording_config"
WORLD, CHECKPOINT_SHA256, PACKAGE_VERSION = "world", "checkpoint_sha256", "package_version"
SEED, N_STEPS, SAME_OBSERVATIONS = "seed", "n_steps", "same_observations"
SCHEMA_VERSION_ATTR = "schema_version"
#: Optional attr: JSON of the model's transition diagnostics (inverse errors, loop returns,
#: wave vectors; :func:`hippo_rep.models.transitions.transition_diagnostics`).
TRANSITIONS = "transition_diagnostics"
#: Attrs every recording carries (``schema_version`` is written but not required).
ATTRS = (KIND_ATTR, MODEL_CONFIG, WORLD_CONFIG, RECORDING_CONFIG, WORLD, CHECKPOINT_SHA256,
         PACKAGE_VERSION, SEED, N_STEPS, SAME_OBSERVATIONS)
#: Attrs holding JSON objects.
JSON_ATTRS = (MODEL_CONFIG, WORLD_CONFIG, RECORDING_CONFIG)
#: Attrs every variable and coordinate carries.
VARIABLE_ATTRS = ("units", "long_name")

#: Units of dimensionless quantities and of indices (CF convention).
DIMENSIONLESS = "1"
#: Unit of lengths: the distance between neighbouring nodes of the lattice.
LATTICE_UNITS = "lattice_spacing"
#: Unit of time: one step of the walk.
STEPS = "step"


@dataclass(frozen=True)
class VarSpec:
    """What the schema requires of one variable or coordinate.

    ``kind`` is the accepted numpy dtype kind ("f" float, "i" signed integer, "b" bool);
    ``dtype`` the dtype the recorder writes.
    """

    dims: tuple[str, ...]
    kind: str
    dtype: str
    units: str
    long_name: str


DATA_VARS: dict[str, VarSpec] = {
    G: VarSpec((ENV, TIME, G_UNIT), "f", "float32", DIMENSIONLESS,
               "positional encoding after landmark correction (g_t, unit RMS)"),
    G_PI: VarSpec((ENV, TIME, G_UNIT), "f", "float32", DIMENSIONLESS,
                  "path-integrated positional encoding (g_pi_t, unit RMS)"),
    MEMORY_ACTIVITY: VarSpec((ENV, TIME, MEMORY), "f", "float32", DIMENSIONLESS,
                             "memory-neuron softmax activity for the prediction from g_pi "
                             "(0 before the memory exists)"),
}

COORDS: dict[str, VarSpec] = {
    ENV: VarSpec((ENV,), "i", "int64", DIMENSIONLESS, "environment index"),
    TIME: VarSpec((TIME,), "i", "int64", STEPS, "step of the walk"),
    G_UNIT: VarSpec((G_UNIT,), "i", "int64", DIMENSIONLESS, "positional-encoding unit index"),
    MEMORY: VarSpec((MEMORY,), "i", "int64", DIMENSIONLESS,
                    "memory neuron index (memory slot, in order of writing)"),
    WORLD_NODE: VarSpec((WORLD_NODE,), "i", "int64", DIMENSIONLESS, "world node index"),
    NODE: VarSpec((ENV, TIME), "i", "int64", DIMENSIONLESS, "node occupied at this step"),
    X: VarSpec((ENV, TIME), "f", "float64", LATTICE_UNITS, "x position of the agent"),
    Y: VarSpec((ENV, TIME), "f", "float64", LATTICE_UNITS, "y position of the agent"),
    ACTION: VarSpec((ENV, TIME), "i", "int64", DIMENSIONLESS,
                    "action that led to this step's node (0 = stay; 0 at the first step)"),
    OBSERVATION: VarSpec((ENV, TIME), "i", "int64", DIMENSIONLESS,
                         "observation (sensory category) at this step's node"),
    PREDICTION: VarSpec((ENV, TIME), "i", "int64", DIMENSIONLESS,
                        "observation predicted from g_pi (argmax)"),
    CORRECT: VarSpec((ENV, TIME), "b", "bool", DIMENSIONLESS, "prediction equals observation"),
    STEP_TYPE: VarSpec((ENV, TIME), "i", "int8", DIMENSIONLESS,
                       "step type (first visit, revisit via a known edge, via a new edge)"),
    MEMORY_NODE: VarSpec((ENV, MEMORY), "i", "int64", DIMENSIONLESS,
                         "node where the memory was written (-1 = unused slot)"),
    MEMORY_TIME: VarSpec((ENV, MEMORY), "i", "int64", STEPS,
                         "step at which the memory was written (-1 = unused slot)"),
    MEMORY_OBSERVATION: VarSpec((ENV, MEMORY), "i", "int64", DIMENSIONLESS,
                                "observation stored in the memory (-1 = unused slot)"),
    NODE_X: VarSpec((WORLD_NODE,), "f", "float64", LATTICE_UNITS, "x position of the node"),
    NODE_Y: VarSpec((WORLD_NODE,), "f", "float64", LATTICE_UNITS, "y position of the node"),
}

SPECS: dict[str, VarSpec] = {**DATA_VARS, **COORDS}

# ------------------------------------------------------------------ optional (memory="fam")
#: Dim of the FAM feedback slots (recordings of ``model.memory = "fam"`` models only).
FAM_SLOT = "fam_slot"
#: Attention of the prediction query on each FAM slot, (env, time, fam_slot).
FAM_ACTIVITY = "fam_activity"

# ------------------------------------------------------------------ optional (model.kind="tem")
#: TEM's conjunctive grounded-location units p and their dim (recordings of TEM only). TEM
#: has no memory slots (its Hebbian matrices change at every step), so a TEM recording holds
#: ``p`` in place of ``memory_activity`` and has no ``memory`` dim or ``memory_*`` coords.
P, P_UNIT = "p", "p_unit"
#: Frequency module of each g unit (0 = highest frequency), coord (g_unit,), TEM only.
MODULE = "module"
#: Per-p-unit coords (p_unit,): its module, the g unit and the compressed sensory unit whose
#: product it is (p = flatten(g_down ⊗ x̃) per module).
P_MODULE, P_G_UNIT, P_SENSORY = "p_module", "p_g_unit", "p_sensory_unit"
#: Variables present only for some models; checked by :func:`validate` when present.
OPTIONAL_VARS: dict[str, VarSpec] = {
    FAM_ACTIVITY: VarSpec((ENV, TIME, FAM_SLOT), "f", "float32", DIMENSIONLESS,
                          "attention of the prediction from g_pi on each FAM feedback slot "
                          "(shares one softmax with memory_activity)"),
    P: VarSpec((ENV, TIME, P_UNIT), "f", "float32", DIMENSIONLESS,
               "TEM's inferred conjunctive grounded location p_inf (f_p of g_down ⊗ x̃)"),
    MODULE: VarSpec((G_UNIT,), "i", "int64", DIMENSIONLESS,
                    "frequency module of the g unit (0 = highest frequency)"),
    P_UNIT: VarSpec((P_UNIT,), "i", "int64", DIMENSIONLESS, "grounded-location unit index"),
    P_MODULE: VarSpec((P_UNIT,), "i", "int64", DIMENSIONLESS,
                      "frequency module of the p unit (0 = highest frequency)"),
    P_G_UNIT: VarSpec((P_UNIT,), "i", "int64", DIMENSIONLESS,
                      "g unit (g_unit index) of the p unit's conjunction"),
    P_SENSORY: VarSpec((P_UNIT,), "i", "int64", DIMENSIONLESS,
                       "compressed sensory unit of the p unit's conjunction"),
}
#: What a recording that holds ``p`` (TEM) need not hold: the memory slots.
MEMORY_SLOT_NAMES: tuple[str, ...] = (MEMORY, MEMORY_ACTIVITY, *MEMORY_COORDS)


# --------------------------------------------------------------------------- populations
#: Activity variables (populations) a recording may hold, in the order they are analysed.
POPULATIONS: tuple[str, ...] = (G, G_PI, MEMORY_ACTIVITY, FAM_ACTIVITY, P)
#: The unit dim of each population (``fam_activity``: FAM slots, ``model.memory="fam"`` only;
#: ``p``: TEM's grounded-location units, ``model.kind="tem"`` only).
UNIT_DIMS: dict[str, str] = {G: G_UNIT, G_PI: G_UNIT, MEMORY_ACTIVITY: MEMORY,
                             FAM_ACTIVITY: FAM_SLOT, P: P_UNIT}
#: Populations of memory neurons (masked by the analysis before their memory exists).
MEMORY_POPULATIONS: tuple[str, ...] = (MEMORY_ACTIVITY,)
#: The conjunctive, place-like population of a model, in order of preference: TEM-t's memory
#: neurons, or TEM's grounded locations p (see :func:`place_population`).
PLACE_POPULATIONS: tuple[str, ...] = (MEMORY_ACTIVITY, P)


def place_population(names) -> str | None:
    """The first of :data:`PLACE_POPULATIONS` among ``names`` (population names, or a
    dataset's variables); None when there is none."""
    return next((p for p in PLACE_POPULATIONS if p in names), None)


class SchemaError(ValueError):
    """A dataset or file that is not a valid hippo_rep recording."""


class AnalysisError(ValueError):
    """A recording or analysis input that cannot be analysed (names the field at fault)."""


def var_attrs(name: str) -> dict:
    """The ``units`` / ``long_name`` attrs of ``name`` (plus the flag attrs of ``step_type``)."""
    spec = SPECS[name]
    attrs = {"units": spec.units, "long_name": spec.long_name}
    if name == STEP_TYPE:
        attrs["flag_values"] = np.arange(len(STEP_TYPES), dtype=np.int8)
        attrs["flag_meanings"] = " ".join(STEP_TYPES)
    return attrs


def validate(ds, source: str | Path | None = None) -> None:
    """Check that ``ds`` is a hippo_rep recording; raise one error naming every problem.

    Parameters
    ----------
    ds : xarray.Dataset or path
        A dataset, or the path of a ``.nc`` file or ``.zarr`` store (opened, checked, closed).
    source : str or Path, optional
        Name used in the error message (the file the dataset came from).

    Raises
    ------
    SchemaError
        Listing, in one message, every missing dimension, variable, coordinate and attr,
        every variable with wrong dims or dtype or without ``units``/``long_name``, and
        unreadable JSON attrs; naming ``source`` (or the path) when given.
    """
    if isinstance(ds, (str, Path)):
        with open_raw(ds) as opened:
            return validate(opened, source or ds)
    where = f"{str(source)!r}" if source is not None else "dataset"
    problems = _problems(ds)
    if problems:
        raise SchemaError(f"{where} is not a valid hippo_rep recording: " + "; ".join(problems))


def _problems(ds) -> list[str]:
    problems = []
    kind = ds.attrs.get(KIND_ATTR)
    if kind is not None and kind != KIND:
        problems.append(f"attr {KIND_ATTR} is {quote(kind)}, expected {KIND!r}")
    optional = MEMORY_SLOT_NAMES if P in ds.data_vars else ()  # TEM: p, no memory slots
    for what, names, held in (("dim(s)", DIMS, ds.dims), ("variable(s)", DATA_VARS, ds.variables),
                              ("coordinate(s)", COORDS, ds.variables),
                              ("attr(s)", ATTRS, ds.attrs)):
        missing = [n for n in names if n not in held and n not in optional]
        if missing:
            problems.append(f"missing {what} {', '.join(missing)}")
    bad_place, bad_dims, bad_dtype, no_attrs = [], [], [], []
    for name, spec in {**SPECS, **OPTIONAL_VARS}.items():
        if name not in ds.variables:
            continue
        var = ds.variables[name]
        if name in COORDS and name not in ds.coords:
            bad_place.append(f"{name} (should be a coordinate)")
        if (name in DATA_VARS or name in POPULATIONS) and name not in ds.data_vars:
            bad_place.append(f"{name} (should be a data variable)")
        if name in OPTIONAL_VARS and name not in POPULATIONS and name not in ds.coords:
            bad_place.append(f"{name} (should be a coordinate)")
        if tuple(var.dims) != spec.dims:
            bad_dims.append(f"{name}{tuple(var.dims)} (expected {spec.dims})")
        if var.dtype.kind != spec.kind and not (spec.kind == "i" and var.dtype.kind == "u"):
            bad_dtype.append(f"{name} {var.dtype} (expected {spec.dtype})")
        lacking = [a for a in VARIABLE_ATTRS if a not in var.attrs]
        if lacking:
            no_attrs.append(f"{name} ({', '.join(lacking)})")
    for label, items in (("misplaced", bad_place), ("wrong dims", bad_dims),
                         ("wrong dtype", bad_dtype), ("missing units/long_name", no_attrs)):
        if items:
            problems.append(f"{label}: {', '.join(items)}")
    for name in JSON_ATTRS:
        if name in ds.attrs:
            try:
                ok = isinstance(json.loads(ds.attrs[name]), dict)
            except (TypeError, ValueError):
                ok = False
            if not ok:
                problems.append(f"attr {name} is not a JSON object")
    if N_STEPS in ds.attrs:
        n = ds.attrs[N_STEPS]
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            problems.append(f"attr {N_STEPS} must be a non-negative integer; got {quote(n)}")
    return problems


def require_recording(recording: object, populations: Sequence[str] = (),
                      need_xy: bool = False) -> xr.Dataset:
    """Check that ``recording`` holds what the analysis needs (lighter than :func:`validate`:
    recordings made by hand need only the kind attr, the populations asked for and the
    coords the analysis reads).

    Parameters
    ----------
    recording : object
        Should be an :class:`xarray.Dataset` with attr ``hippo_rep_kind = "recording"``.
    populations : sequence of str
        Activity variables (:data:`POPULATIONS`) that must be present, with dims
        ``(env, time, <unit dim>)`` (:data:`UNIT_DIMS`); memory populations also need the
        ``memory_time`` coord.
    need_xy : bool
        Also require the per-step position coords ``x`` and ``y`` (env, time).

    Returns
    -------
    xarray.Dataset
        ``recording`` unchanged.

    Raises
    ------
    AnalysisError
        Naming the missing or malformed variable, coord or attr.
    """
    if not isinstance(recording, xr.Dataset):
        raise AnalysisError(
            f"a recording must be an xarray.Dataset; got {type(recording).__name__}"
        )
    kind = recording.attrs.get(KIND_ATTR)
    if kind != KIND:
        raise AnalysisError(f"not a hippo_rep recording: attr {KIND_ATTR!r} is {kind!r}, "
                            f"expected {KIND!r}")
    for name in (ENV, TIME):
        if name not in recording.dims:
            raise AnalysisError(f"recording has no {name!r} dim (dims: {sorted(recording.dims)})")
    for name in populations:
        if name not in UNIT_DIMS:
            raise AnalysisError(f"unknown activity variable {name!r}; known: {POPULATIONS}")
        if name not in recording.data_vars:
            present = [v for v in POPULATIONS if v in recording.data_vars]
            raise AnalysisError(
                f"recording has no variable {name!r} (activity variables present: {present})"
            )
        want = (ENV, TIME, UNIT_DIMS[name])
        if set(recording[name].dims) != set(want):
            raise AnalysisError(
                f"recording variable {name!r} must have dims {want}; got {recording[name].dims}"
            )
        if name in MEMORY_POPULATIONS and MEMORY_TIME not in recording.coords:
            raise AnalysisError(f"recording has no {MEMORY_TIME!r} coord (env, memory)")
    for name in (NODE, NODE_X, NODE_Y) + ((X, Y) if need_xy else ()):
        dims = COORDS[name].dims
        if name not in recording.variables:
            raise AnalysisError(f"recording has no {name!r} coord {dims}")
        if set(recording[name].dims) != set(dims):
            raise AnalysisError(
                f"recording coord {name!r} must have dims {dims}; got {recording[name].dims}"
            )
    return recording


def describe_recording(ds: xr.Dataset) -> str:
    """One line on a recording: environments × steps of its world, seed and populations,
    e.g. ``"4 envs × 1000 steps of square:11 (seed 0, 64 g units, 300 memory neurons)"``."""
    cells = (f"{ds.sizes['p_unit']} TEM p units" if "p_unit" in ds.dims
             else f"{ds.sizes['memory']} memory neurons")
    return (f"{ds.sizes['env']} envs × {ds.attrs['n_steps']} steps of {ds.attrs['world']} "
            f"(seed {ds.attrs['seed']}, {ds.sizes['g_unit']} g units, {cells})")
