"""Grid expansion: ``--grid section.key=V1,V2`` values × seeds → the runs of a sweep, each with
its config and a readable, stable folder name."""

from __future__ import annotations

import copy
import itertools
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hippo_rep.config import (
    Config,
    ConfigError,
    apply_overrides,
    from_dict,
    parse_override,
    read_raw,
)
from hippo_rep.defaults import SWEEP_SEEDS
from hippo_rep.typed_config import get_path, set_path

#: Seeds per grid combination when not given (``train.seed`` = 0).
DEFAULT_SEEDS = SWEEP_SEEDS
#: Dims of :func:`~hippo_rep.sweep.open_sweep` besides the grid's (grid dims may not take
#: these names).
RESERVED_DIMS = ("seed", "agent", "step_type")
#: Characters kept in run-folder names; any other becomes "-".
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9._+=-]")


class SweepError(ValueError):
    """A sweep that cannot run: bad grid, a folder holding another sweep, no scheduler."""


@dataclass(frozen=True)
class Run:
    """One combination of grid values and seed.

    Attributes
    ----------
    name : str
        Folder name under ``OUT/runs``.
    labels : dict
        Grid dim → coordinate label (the config value; a tuple joined by ",").
    seed : int
        ``train.seed``.
    config : Config
        The run's full config.
    """

    name: str
    labels: dict
    seed: int
    config: Config


# ------------------------------------------------------------------------------ the grid
def config_keys() -> list[str]:
    """Every ``section.key`` of :class:`~hippo_rep.config.Config` (``section.sub.key`` in a
    section's section, e.g. ``model.tem.n_g``)."""
    return [key for key, _, _ in Config.keys()]


def parse_values(text: str, key: str = "value") -> list:
    """The values of one ``--grid KEY=V1,V2,...``, each read like a ``--set`` value.

    The list is first read as a TOML array (``1e-3,3e-4``, ``true,false``,
    ``"square:8:holes=3,4;4,4","square:6"``, ``["square:6","square:8"],["square:10"]``); if
    that fails, it is split at commas and each item read as ``--set`` reads a value (TOML,
    else a bare string: ``linear,relu``, ``square:6,square:8``).
    """
    text = text.strip()
    try:
        values = tomllib.loads(f"v = [{text}]")["v"]
    except tomllib.TOMLDecodeError:
        values = [parse_override(f"x.y={item}")[2] for item in text.split(",") if item.strip()]
    if not values:
        raise SweepError(f"--grid {key}: no values (write {key}=V1,V2,...)")
    return values


def parse_grid(specs: Iterable[str] | Mapping[str, Sequence]) -> dict[str, list]:
    """``["section.key=v1,v2", ...]`` (or a mapping key → values) → ``{key: [values]}``.

    A key that moved is read under its new name (``model.tem_n_g`` → ``model.tem.n_g``).

    Raises
    ------
    ConfigError
        An unknown key (the message lists the valid keys), ``train.seed`` (use the seeds),
        a repeated key, or no values.
    """
    valid = config_keys()
    items = specs.items() if isinstance(specs, Mapping) else None
    grid: dict[str, list] = {}
    if items is None:
        pairs = []
        for spec in specs:
            key, sep, rhs = spec.partition("=")
            if not sep:
                raise ConfigError(f"--grid {spec!r} is not section.key=V1,V2,... "
                                  "(e.g. model.transition_activation=linear,relu)")
            pairs.append((key.strip(), parse_values(rhs, key.strip())))
    else:
        pairs = [(str(k), list(v) if isinstance(v, (list, tuple)) else [v]) for k, v in items]
    for key, values in pairs:
        key = Config.new_key(key)
        if key not in valid:
            raise ConfigError(f"unknown grid key {key!r}; valid keys: {', '.join(valid)}")
        if key == "train.seed":
            raise ConfigError("train.seed cannot be a grid key: seeds are set by the number "
                              "of seeds (--seeds N gives train.seed = 0..N-1)")
        if key in grid:
            raise ConfigError(f"grid key {key!r} is given twice")
        if not values:
            raise ConfigError(f"grid key {key!r} has no values")
        grid[key] = list(values)
    return grid


def _label(value):
    """A coordinate label of a config value: tuples joined by ","; scalars as they are."""
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    return value


def grid_dims(keys: Sequence[str]) -> dict[str, str]:
    """Grid key → dim name: the key without its section, unless that is ambiguous or reserved."""
    short = [k.partition(".")[2] for k in keys]
    return {k: (s if short.count(s) == 1 and s not in RESERVED_DIMS else k)
            for k, s in zip(keys, short, strict=True)}


def _slug(value) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return _NAME_UNSAFE.sub("-", text)


def expand_grid(config: str | Path, grid=(), n_seeds: int = DEFAULT_SEEDS,
                overrides: Sequence[str] = ()) -> list[Run]:
    """The runs of a sweep: every combination of ``grid`` values × ``n_seeds`` seeds.

    Parameters
    ----------
    config : str or path
        Preset name or TOML file (as for ``hippo-rep train``).
    grid : sequence of str or mapping
        ``"section.key=V1,V2"`` strings (:func:`parse_grid`) or ``{key: [values]}``.
    n_seeds : int
        Seeds per combination: ``train.seed`` = 0 .. n_seeds - 1.
    overrides : sequence of str
        ``section.key=value`` applied to the base config before the grid.

    Returns
    -------
    list of Run
        In grid order (keys as given, then values as given), seeds innermost.

    Raises
    ------
    ConfigError
        An unknown key or invalid value (naming the combination), or values of one key that
        are equal once read.
    SweepError
        ``n_seeds`` < 1, or two runs whose folder names coincide.
    """
    if isinstance(n_seeds, bool) or not isinstance(n_seeds, int) or n_seeds < 1:
        raise SweepError(f"the number of seeds must be an int ≥ 1; got {n_seeds!r}")
    grid = parse_grid(grid)
    raw, source = read_raw(config)
    raw = apply_overrides(raw, overrides)
    from_dict(raw, source)  # the base config alone is valid
    keys = list(grid)
    dims = grid_dims(keys)
    labels: dict[str, dict] = {k: {} for k in keys}  # key → value index → label (once each)
    runs, names = [], {}
    for index in itertools.product(*(range(len(grid[k])) for k in keys)):
        combo = [grid[k][i] for k, i in zip(keys, index, strict=True)]
        for seed in range(n_seeds):
            data = copy.deepcopy(raw)
            for key, value in zip(keys, combo, strict=True):
                set_path(data, key, value)
            set_path(data, "train.seed", seed)
            where = ", ".join(f"{k}={v!r}" for k, v in zip(keys, combo, strict=True))
            cfg = from_dict(data, f"{source} with {where or 'no grid'}")
            lab = {dims[k]: _label(get_path(cfg, k)) for k in keys}
            for k, i in zip(keys, index, strict=True):
                labels[k][i] = lab[dims[k]]
                seen = [v for j, v in labels[k].items() if j != i]
                if lab[dims[k]] in seen:
                    raise ConfigError(f"grid key {k!r}: value {lab[dims[k]]!r} is given twice "
                                      f"(values {grid[k]} read as {[*seen, lab[dims[k]]]})")
            name = "__".join([*(f"{d}={_slug(v)}" for d, v in lab.items()), f"seed={seed}"])
            if name in names:
                raise SweepError(f"runs {names[name]} and {lab} would share the folder "
                                 f"{name!r}; use distinguishable grid values")
            names[name] = lab
            runs.append(Run(name, lab, seed, cfg))
    return runs
