"""The typed-config helper: coercion, rules beside defaults, unknown keys with a did-you-mean,
one-line errors naming the source, TOML/JSON round trips; and that every config uses it."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

import pytest

from hippo_rep.config import Config
from hippo_rep.models.fam import FAMConfig, FAMConfigError
from hippo_rep.pipeline import SweepSettings
from hippo_rep.sweep import SweepError
from hippo_rep.tasks.passkey import PassKeyConfig, PassKeyError, PassKeyTrainConfig
from hippo_rep.typed_config import ConfigError, Rule, TypedConfig, choice, setting


class ToyError(ValueError):
    pass


@dataclass(frozen=True)
class Inner(TypedConfig):
    section = "inner"
    error = ToyError
    removed = frozenset({"old"})
    # A size.
    n: int = setting(3, Rule(low=1, high=10, cap="TEN"))
    # A rate.
    rate: float = setting(0.5, Rule(low=0, high=1, high_open=True))
    # A mode.
    mode: str = choice("a", ("a", "b"))
    # A list.
    sizes: tuple[int, ...] = (1, 2)
    # Optional.
    limit: int | None = setting(None, Rule(low=0))
    flag: bool = False

    def check(self) -> None:
        if self.mode == "b" and self.n > 5:
            raise ToyError("inner.mode = 'b' needs inner.n ≤ 5")


@dataclass(frozen=True)
class Outer(TypedConfig):
    error = ToyError
    inner: Inner = field(default_factory=Inner)


def test_coercion_and_defaults():
    c = Outer.from_dict({"inner": {"rate": 0, "sizes": [4, 5], "limit": 7, "old": 1}}, "t.toml")
    assert c.inner.rate == 0.0 and isinstance(c.inner.rate, float)
    assert c.inner.sizes == (4, 5) and c.inner.limit == 7 and c.inner.n == 3
    assert Inner(sizes=[3]).sizes == (3,)  # constructing directly coerces too
    assert Outer.from_dict({}) == Outer()


@pytest.mark.parametrize("data,needle", [
    ({"inner": {"n": 0}}, "t.toml: inner.n must be ≥ 1; got 0"),
    ({"inner": {"n": 11}}, "t.toml: inner.n must be ≤ TEN = 10; got 11"),
    ({"inner": {"n": 2.0}}, "t.toml: inner.n must be an integer; got 2.0"),
    ({"inner": {"n": True}}, "inner.n must be an integer"),
    ({"inner": {"rate": 1}}, "inner.rate must be < 1; got 1.0"),
    ({"inner": {"rate": float("nan")}}, "inner.rate must be a finite number"),
    ({"inner": {"mode": "c"}}, "inner.mode must be one of ('a', 'b'); got 'c'"),
    ({"inner": {"flag": 1}}, "inner.flag must be true or false; got 1"),
    ({"inner": {"sizes": 3}}, "inner.sizes must be a list; got 3"),
    ({"inner": {"limit": -1}}, "inner.limit must be ≥ 0; got -1"),
    ({"inner": {"mode": "b", "n": 6}}, "t.toml: inner.mode = 'b' needs inner.n ≤ 5"),
    ({"inner": {"rat": 1}}, "t.toml: unknown key(s) inner.rat (did you mean inner.rate?); "
                            "valid keys in [inner]: flag, limit, mode, n, rate, sizes"),
    ({"iner": {}}, "t.toml: unknown section(s) iner (did you mean inner?); valid sections in "
                   "the config: inner"),
    ({"inner": 3}, "t.toml: [inner] must be a table; got int"),
    ([], "t.toml: the config must be a table; got list"),
])
def test_bad_values_are_one_line_errors_naming_source_and_key(data, needle):
    with pytest.raises(ToyError) as info:
        Outer.from_dict(data, "t.toml")
    assert str(info.value) == needle if needle.startswith("t.toml") else needle in str(info.value)
    assert len(str(info.value).splitlines()) == 1


def test_no_hint_for_a_key_unlike_any():
    with pytest.raises(ToyError) as info:
        Inner.from_dict({"zzzzzz": 1})
    assert "did you mean" not in str(info.value)


def test_toml_and_json_round_trips(tmp_path):
    c = Outer(Inner(n=4, rate=0.25, mode="b", sizes=(7,), limit=None, flag=True))
    assert Outer.from_json(c.to_json()) == c
    (tmp_path / "c.toml").write_text(c.to_toml())
    assert Outer.from_toml(tmp_path / "c.toml") == c
    (tmp_path / "bad.toml").write_text("[inner\n")
    with pytest.raises(ToyError, match="bad.toml.*not valid TOML"):
        Outer.from_toml(tmp_path / "bad.toml")
    with pytest.raises(ToyError, match="missing.toml' not found"):
        Outer.from_toml(tmp_path / "missing.toml")


@pytest.mark.parametrize("cls", [Config, PassKeyConfig, FAMConfig, PassKeyTrainConfig,
                                 SweepSettings])
def test_every_config_uses_the_helper_and_round_trips(cls, tmp_path):
    assert issubclass(cls, TypedConfig)
    default = cls()
    assert cls.from_json(default.to_json()) == default
    (tmp_path / "c.toml").write_text(default.to_toml())
    assert cls.from_toml(tmp_path / "c.toml") == default


@pytest.mark.parametrize("cls,data,error,needle", [
    (Config, {"train": {"lrr": 1}}, ConfigError, "did you mean train.lr?"),
    (PassKeyConfig, {"train": {"step": 1}}, PassKeyError, "did you mean train.steps?"),
    (PassKeyConfig, {"model": {"n_fams": 1}}, PassKeyError, "did you mean model.n_fam?"),
    (FAMConfig, {"d_modle": 8}, FAMConfigError, "did you mean model.d_model?"),
    (SweepSettings, {"eval_env": 3}, SweepError, "did you mean settings.eval_envs?"),
])
def test_each_config_raises_its_own_error_with_a_hint(cls, data, error, needle):
    with pytest.raises(error, match=r"^src: .*" + needle.replace(".", r"\.").replace("?", r"\?")):
        cls.from_dict(data, "src")


# ------------------------------------------------------------- sections inside sections
@dataclass(frozen=True)
class Sub(TypedConfig):
    section = "mid.sub"
    error = ToyError
    # A size.
    k: int = setting(2, Rule(low=1))
    # Sizes.
    ks: tuple[int, ...] = (1,)


@dataclass(frozen=True)
class Mid(TypedConfig):
    section = "mid"
    error = ToyError
    moved = MappingProxyType({"sub_k": "sub.k", "sub_ks": "sub.ks"})
    # A flag.
    on: bool = False
    sub: Sub = field(default_factory=Sub)


@dataclass(frozen=True)
class Top(TypedConfig):
    error = ToyError
    mid: Mid = field(default_factory=Mid)


def test_a_section_in_a_section_round_trips_as_a_dotted_table(tmp_path):
    c = Top(Mid(on=True, sub=Sub(k=5, ks=(3, 4))))
    assert Top.from_json(c.to_json()) == c
    text = c.to_toml()
    assert "[mid.sub]" in text and "sub_k" not in text
    (tmp_path / "c.toml").write_text(text)
    assert Top.from_toml(tmp_path / "c.toml") == c
    assert Top.from_dict({"mid": {"sub": {"k": 5, "ks": [3, 4]}, "on": True}}) == c
    assert [k for k, _, _ in Top.keys()] == ["mid.on", "mid.sub.k", "mid.sub.ks"]


def test_moved_keys_are_read_under_their_new_names():
    old = {"mid": {"sub_k": 5, "sub_ks": [3], "on": True}}
    assert Top.from_dict(old) == Top(Mid(on=True, sub=Sub(k=5, ks=(3,))))
    assert Top.upgrade(old) == {"mid": {"on": True, "sub": {"k": 5, "ks": [3]}}}
    assert old == {"mid": {"sub_k": 5, "sub_ks": [3], "on": True}}  # not changed
    assert Top.upgrade({"mid": 3}) == {"mid": 3}  # not a table: left for _build to refuse
    assert Top.new_key("mid.sub_k") == "mid.sub.k" and Mid.new_key("sub_ks") == "sub.ks"
    for key in ("mid.on", "mid.sub.k", "nope.sub_k", "mid.zzz"):
        assert Top.new_key(key) == key


@pytest.mark.parametrize("data,needle", [
    ({"mid": {"sub": {"kk": 1}}}, "t.toml: unknown key(s) mid.sub.kk (did you mean mid.sub.k?); "
                                  "valid keys in [mid.sub]: k, ks"),
    ({"mid": {"sbu": {}}}, "t.toml: unknown key(s) mid.sbu (did you mean mid.sub?); valid keys "
                           "in [mid]: on, sub"),
    ({"mid": {"sub": 3}}, "t.toml: [mid.sub] must be a table; got int"),
    ({"mid": {"sub": {"k": 0}}}, "t.toml: mid.sub.k must be ≥ 1; got 0"),
    ({"mid": {"sub_k": 0}}, "t.toml: mid.sub.k must be ≥ 1; got 0"),
    ({"mid": {"sub_k": 1, "sub": {"k": 2}}},
     "t.toml: mid.sub_k is the old name of mid.sub.k; give one of them"),
    ({"mid": {"sub_k": 1, "sub": 3}},
     "t.toml: mid.sub must be a table (it holds mid.sub.k, the new name of mid.sub_k); got int"),
])
def test_errors_in_a_section_in_a_section_name_the_key_and_the_section(data, needle):
    with pytest.raises(ToyError) as info:
        Top.from_dict(data, "t.toml")
    assert str(info.value) == needle
