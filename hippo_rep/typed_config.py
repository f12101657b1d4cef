"""Typed configs: frozen dataclasses whose fields declare a type, a documented default and a rule.

A config subclasses :class:`TypedConfig` (and is a ``@dataclass(frozen=True)``); each field
has a type annotation (``int``, ``float``, ``bool``, ``str``, ``tuple[...]``, ``X | None``),
a default with a comment saying what it means, and optionally a :class:`Rule`
(``field: int = setting(4, Rule(low=1))``). Constructing one coerces values (an integer given
for a float, a list for a tuple), checks every type and rule and then the class's own
:meth:`TypedConfig.check`, so every instance is valid. A field whose type is another
:class:`TypedConfig` is a section (``[model]`` in TOML), and a section may hold sections of
its own (``[model.tem]``, keys ``model.tem.n_g``); :meth:`TypedConfig.from_dict` refuses
unknown sections and keys with a did-you-mean and prefixes every message with its source (the
file). Errors are one line, of the class's :attr:`TypedConfig.error` type. A key that moved
(:attr:`TypedConfig.moved`, e.g. ``model.tem_n_g`` → ``model.tem.n_g``) is still read under
its old name, so files written before the move load unchanged.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import math
import tomllib
import types
import typing
from dataclasses import dataclass
from pathlib import Path

import tomli_w

from hippo_rep.fileio import quote


class ConfigError(ValueError):
    """A configuration that cannot be used (unknown key, wrong type, bad value)."""


@dataclass(frozen=True)
class Rule:
    """The allowed values of one config key. Every float must also be finite.

    ``low``/``high`` are bounds (``None`` = unbounded), exclusive when ``low_open``/``high_open``;
    ``cap`` names the module constant that ``high`` is (quoted in the error); ``why`` says why
    the bound exists (e.g. "it divides"); ``choices`` lists the allowed strings.
    """

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    cap: str = ""
    why: str = ""
    choices: tuple[str, ...] = ()

    def check(self, name: str, v) -> str | None:
        """The problem with value ``v`` of key ``name``, or None when it is allowed."""
        if self.choices:
            return None if v in self.choices else \
                f"{name} must be one of {self.choices}; got {quote(v)}"
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


def setting(default, rule: Rule | None = None):
    """A config field with an (immutable) ``default`` and the ``rule`` its values obey."""
    return dataclasses.field(default=default, metadata={"rule": rule} if rule else {})


def choice(default: str, choices) -> dataclasses.Field:
    """A string field that must be one of ``choices``."""
    return setting(default, Rule(choices=tuple(choices)))


@functools.cache
def _fields(cls) -> tuple[tuple[dataclasses.Field, object], ...]:
    hints = typing.get_type_hints(cls)
    return tuple((f, hints[f.name]) for f in dataclasses.fields(cls))


def _is_section(typ) -> bool:
    return isinstance(typ, type) and issubclass(typ, TypedConfig)


def _coerce(value, typ, name: str):
    """``value`` as type ``typ`` (int → float, list → tuple), or raise ConfigError."""
    origin = typing.get_origin(typ)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(typ)
        if value is None and type(None) in args:
            return None
        (typ,) = [a for a in args if a is not type(None)]
        return _coerce(value, typ, name)
    if origin is tuple:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{name} must be a list; got {quote(value)}")
        inner = typing.get_args(typ)[0]
        return tuple(_coerce(v, inner, name) for v in value)
    if typ is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{name} must be true or false; got {quote(value)}")
    elif typ is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{name} must be an integer; got {quote(value)}")
    elif typ is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{name} must be a number; got {quote(value)}")
        if not math.isfinite(value):
            raise ConfigError(f"{name} must be a finite number; got {value}")
        return float(value)
    elif typ is str:
        if not isinstance(value, str):
            raise ConfigError(f"{name} must be a string; got {quote(value)}")
    elif _is_section(typ):
        if not isinstance(value, typ):
            raise ConfigError(f"{name} must be a {typ.__name__}; got {type(value).__name__}")
    else:  # pragma: no cover - a config class declaring an unsupported type
        raise TypeError(f"{name}: unsupported config type {typ}")
    return value


class TypedConfig:
    """Base of the frozen-dataclass configs (see the module docstring)."""

    # Class attributes, not annotated: typing.get_type_hints of a config lists its fields only.
    #: The section's name in messages and TOML ("model" → "model.n_g"); "" for a top level.
    section = ""
    #: The exception type raised for a bad value.
    error = ConfigError
    #: Keys that older versions wrote and that did nothing: dropped by :meth:`from_dict`.
    removed = frozenset()
    #: Keys that older versions wrote under another name: old key → its path now, dotted and
    #: relative to this section (``"tem_n_g": "tem.n_g"`` in ``model``). :meth:`from_dict`
    #: (through :meth:`upgrade`) reads the old key as the new one; giving both is an error;
    #: what :meth:`to_dict` writes has the new names only.
    moved = types.MappingProxyType({})

    def __post_init__(self):
        for f, typ in _fields(type(self)):
            name = f"{self.section}.{f.name}" if self.section else f.name
            try:
                value = _coerce(getattr(self, f.name), typ, name)
            except ConfigError as err:
                raise self.error(str(err)) from None
            object.__setattr__(self, f.name, value)
            rule = f.metadata.get("rule")
            problem = rule.check(name, value) if rule and value is not None else None
            if problem:
                raise self.error(problem)
        self.check()

    def check(self) -> None:
        """Checks across fields (each raises :attr:`error`); none by default."""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def to_toml(self) -> str:
        """TOML of :meth:`to_dict` (keys whose value is None are left out: their default)."""
        def drop_none(d):
            return {k: drop_none(v) if isinstance(v, dict) else v for k, v in d.items()
                    if v is not None}
        return tomli_w.dumps(drop_none(self.to_dict()))

    def replace(self, **changes):
        """A copy with ``changes`` (checked like any new config)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_dict(cls, data, source: str = "config"):
        """Build from (nested) dicts, checking every section, key, type and rule.

        Raises
        ------
        error
            One line naming ``source`` and the offending key (with the valid keys and, for a
            misspelt one, the nearest).
        """
        try:
            return cls._build(data)
        except tuple({cls.error, ConfigError, *_section_errors(cls)}) as err:
            raise cls.error(f"{source}: {err}") from None

    @classmethod
    def upgrade(cls, data):
        """A copy of the (nested) table ``data`` with every moved key (:attr:`moved`, in this
        section and the sections it holds) at its new path; ``data`` itself is not changed
        and anything that is not a table comes back as it is.

        Raises
        ------
        ConfigError
            An old key given beside its new path, or a new path through a key that is not a
            table.
        """
        if not isinstance(data, dict):
            return data
        prefix = f"{cls.section}." if cls.section else ""
        out = dict(data)
        for old, new in cls.moved.items():
            if old not in out:
                continue
            value = out.pop(old)
            *parents, leaf = new.split(".")
            table, path = out, prefix
            for part in parents:
                sub = table.get(part, {})
                if not isinstance(sub, dict):
                    raise ConfigError(f"{path}{part} must be a table (it holds {prefix}{new}, "
                                      f"the new name of {prefix}{old}); got "
                                      f"{type(sub).__name__}")
                sub = table[part] = dict(sub)  # a copy: data is not changed
                table, path = sub, f"{path}{part}."
            if leaf in table:
                raise ConfigError(f"{prefix}{old} is the old name of {prefix}{new}; give one "
                                  "of them")
            table[leaf] = value
        for name, typ in _sections(cls):
            if name in out:
                out[name] = typ.upgrade(out[name])
        return out

    @classmethod
    def new_key(cls, key: str) -> str:
        """The dotted ``key`` (relative to this class: ``"model.tem_n_g"`` of the whole
        config) under its current name (``"model.tem.n_g"``); a key that did not move, or that
        names nothing, comes back as it is."""
        head, dot, rest = key.partition(".")
        moved = cls.moved.get(head)
        if moved is not None:
            return cls.new_key(f"{moved}.{rest}" if dot else moved)
        sections = dict(_sections(cls))
        if dot and head in sections:
            return f"{head}.{sections[head].new_key(rest)}"
        return key

    @classmethod
    def keys(cls) -> list[tuple[str, dataclasses.Field, object]]:
        """Every key of this config that holds a value (not a section), as (dotted path
        relative to this class, field, type), in field order, a section's keys in its
        place."""
        out = []
        for f, typ in _fields(cls):
            if _is_section(typ):
                out += [(f"{f.name}.{k}", g, t) for k, g, t in typ.keys()]
            else:
                out.append((f.name, f, typ))
        return out

    @classmethod
    def _build(cls, data):
        names = {f.name: typ for f, typ in _fields(cls)}
        where = f"[{cls.section}]" if cls.section else "the config"
        if not isinstance(data, dict):
            raise ConfigError(f"{where} must be a table; got {type(data).__name__}")
        data = {k: v for k, v in cls.upgrade(data).items() if k not in cls.removed}
        unknown = sorted(map(str, set(data) - set(names)))
        if unknown:
            kind = "section" if all(map(_is_section, names.values())) else "key"
            prefix = f"{cls.section}." if cls.section else ""
            # a misspelt old name (cls.moved) gets the new name as its hint
            near = difflib.get_close_matches(unknown[0], [*names, *cls.moved], n=1)
            near = [cls.moved.get(k, k) for k in near]
            hint = f" (did you mean {prefix}{near[0]}?)" if near else ""
            shown = quote(", ".join(prefix + k for k in unknown))[1:-1]
            raise ConfigError(f"unknown {kind}(s) {shown}{hint}; valid {kind}s in {where}: "
                              f"{', '.join(sorted(names))}")
        return cls(**{k: names[k]._build(v) if _is_section(names[k]) else v
                      for k, v in data.items()})

    @classmethod
    def from_json(cls, text: str, source: str = "config"):
        """Build from :meth:`to_json`'s text (errors name ``source``)."""
        try:
            return cls.from_dict(json.loads(text), source)
        except (json.JSONDecodeError, RecursionError):
            raise cls.error(f"{source}: not valid JSON") from None

    @classmethod
    def from_toml(cls, path: str | Path):
        """Read a TOML file (errors name it)."""
        return cls.from_dict(read_toml(path, cls.error), str(path))


def read_toml(path: str | Path, error: type[Exception] = ConfigError, text: str | None = None,
              name: str | None = None) -> dict:
    """The table in TOML file ``path`` (or in ``text``, called ``name`` in errors).

    Raises
    ------
    error
        One line naming the file: missing, unreadable, not UTF-8, or not valid TOML.
    """
    if text is None:
        path = Path(path)
        name = str(path)
        if not path.is_file():
            raise error(f"config {name!r} not found")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise error(f"config {name!r} is not a text (UTF-8) TOML file") from None
        except OSError as err:
            raise error(f"config {name!r} cannot be read ({err.strerror})") from None
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise error(f"{name}: nested too deeply to be a config") from None
    except tomllib.TOMLDecodeError as err:
        raise error(f"{name}: not valid TOML ({quote(str(err))[1:-1]})") from None


def _sections(cls) -> list[tuple[str, type]]:
    """(name, class) of each section field of config class ``cls``."""
    return [(f.name, typ) for f, typ in _fields(cls) if _is_section(typ)]


def _section_errors(cls) -> list[type[Exception]]:
    """The error types of the sections ``cls`` holds, at any depth."""
    return [err for _, typ in _sections(cls) for err in (typ.error, *_section_errors(typ))]


def get_path(data, key: str):
    """The value at dotted ``key`` of a (nested) dict or config (``"model.tem.n_g"``)."""
    for part in key.split("."):
        data = data[part] if isinstance(data, dict) else getattr(data, part)
    return data


def set_path(data: dict, key: str, value) -> None:
    """Set dotted ``key`` of nested dict ``data`` to ``value`` in place, making the tables on
    its way (``"model.tem.n_g"`` → ``data["model"]["tem"]["n_g"]``).

    Raises
    ------
    ConfigError
        A part on the way holds a value, not a table.
    """
    *parents, leaf = key.split(".")
    table, path = data, ""
    for part in parents:
        path += part
        sub = table.setdefault(part, {})
        if not isinstance(sub, dict):
            raise ConfigError(f"{path} is not a [section] table (it holds {quote(sub)}), so it "
                              f"has no key {key}")
        table = sub
        path += "."
    table[leaf] = value


def flat_items(data: dict, prefix: str = "") -> dict:
    """A nested dict as one level of dotted keys (``{"model.tem.n_g": ...}``)."""
    out = {}
    for k, v in data.items():
        if isinstance(v, dict):
            out.update(flat_items(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out
