"""Generated bad-input, hostile-file and kill cases against the whole CLI.

Every case asserts: exit status 2 with exactly one line on stderr (``hippo-rep CMD: error:
…``, no traceback, at most :data:`MAX_LINE` characters), no pre-existing file changed, added
or removed (inputs and the shared workspace), and no code run from a file (a pickle payload
would create a marker file). Cases are generated from the valid artefacts of a tiny
workspace: corrupt / truncated / random / wrong-kind / hostile versions of every input kind
for every command that reads it, bad values for every config key, bad paths and numeric
options, and SIGKILL during train / record / analyse writes (subprocesses; the only slow
part). In-process calls to :func:`hippo_rep.cli.main` keep the rest fast.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from hippo_rep import cli
from hippo_rep import config as C

pytestmark = pytest.mark.slow  # end to end (see pyproject's markers)

#: Longest acceptable error line, in characters.
MAX_LINE = cli.MAX_ERROR_LINE + 100
#: Seed of the random bytes of "random" files.
SEED = 13
ROOT = Path(__file__).resolve().parents[1]


class Payload:
    """Unpickling this would create ``marker`` (stands for any code a hostile file runs)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


# ------------------------------------------------------------------------ the workspace
@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    """Valid artefacts of every kind, built once (a few seconds)."""
    from hippo_rep.analysis import analyse, write_analysis
    from hippo_rep.analysis.synthetic_recording import synthetic_recording
    from hippo_rep.config import load_config
    from hippo_rep.recording import record_to_file
    from hippo_rep.tasks import passkey as P
    from hippo_rep.training.trainer import train

    root = tmp_path_factory.mktemp("ws")
    w = {"root": root}
    train(load_config("tiny", ["train.iterations=1"]), root / "run", progress=False)
    w["ck"] = root / "run" / "checkpoint.pt"
    cfg = P.PassKeyConfig().with_overrides(["train.steps=1", "train.batch_size=2",
                                            "model.d_model=8", "model.n_heads=2",
                                            "model.d_ff=8", "model.n_layers=1"])
    P.train(cfg, root / "pk")
    w["pk"] = root / "pk" / "checkpoint.pt"
    w["rec_nc"] = record_to_file(w["ck"], root / "rec.nc", n_envs=1, n_steps=30)
    w["rec_zarr"] = record_to_file(w["ck"], root / "rec.zarr", n_envs=2, n_steps=64, chunk=16,
                                   world="square:8")
    syn = synthetic_recording("square:5", n_env=2, n_steps=300, n_grid=2, n_place=2,
                              n_random=1, n_memory=4)
    w["ana_nc"] = write_analysis(analyse(syn, shuffles=2, seed=0), root / "ana.nc")
    assert cli.main(["evaluate", str(w["ck"]), "--envs", "1", "--steps", "10", "--json",
                     str(root / "eval.json")]) == 0
    w["eval"] = root / "eval.json"
    assert cli.main(["delay", str(w["ck"]), "--out", str(root / "delay.json"), "--world",
                     "square:8", "--envs", "1", "--delays", "1", "--variants", "full"]) == 0
    w["delay"] = root / "delay.json"
    (root / "pk_sweep.json").write_text(json.dumps({"rows": [
        {"variant": "fam_f4", "filler": 8, "accuracy": 0.5, "std": 0.0, "n_seeds": 1,
         "per_seed": "0:0.5"}]}))
    w["pk_sweep"] = root / "pk_sweep.json"
    w["toml"] = root / "tiny.toml"
    shutil.copy(ROOT / "hippo_rep" / "presets" / "tiny.toml", w["toml"])
    return w


def snapshot(*roots, content: bool = False) -> dict:
    """Every path under ``roots`` with its (size, mtime, inode) — any write or replacement
    changes one — or, with ``content``, its SHA-256."""
    out = {}
    for root in roots:
        for p in sorted(Path(root).rglob("*")):
            if p.is_file() and not p.is_symlink():
                st = p.stat()
                out[str(p)] = (hashlib.sha256(p.read_bytes()).hexdigest() if content
                               else (st.st_size, st.st_mtime_ns, st.st_ino))
            elif p.is_dir():
                out[str(p)] = "dir"
    return out


# ------------------------------------------------------------------------ hostile files
def _torch_edit(src, dst, edit):
    payload = torch.load(src, weights_only=True)
    payload = edit(payload)
    torch.save(payload, dst)


def _set(payload, path, value):
    node = payload
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return payload


def _nan_first_weight(payload):
    from hippo_rep.training.checkpoint import WEIGHTS_SHA256_KEY, weights_sha256

    name = next(iter(payload["model_state"]))
    payload["model_state"][name] = payload["model_state"][name].clone().fill_(float("nan"))
    payload[WEIGHTS_SHA256_KEY] = weights_sha256(payload["model_state"])
    return payload


def _with_nc_attr(src, dst, key, value):
    import xarray as xr

    with xr.open_dataset(src) as ds:
        ds = ds.load()
    ds.attrs[key] = value
    ds.to_netcdf(dst)


def _generic(src: Path, d: Path, ext: str) -> dict:
    """Corrupt versions of any file: empty, random, truncated, a folder, missing."""
    rng = np.random.default_rng([SEED, len(str(src))])
    data = src.read_bytes() if src.is_file() else b""
    files = {"empty": b"", "random": rng.bytes(4096), "zeros": bytes(2048)}
    if data:
        files["truncated"] = data[: len(data) // 2]
        files["head"] = data[:64]
    out = {}
    for name, content in files.items():
        p = d / f"{name}{ext}"
        p.write_bytes(content)
        out[name] = p
    (d / f"folder{ext}").mkdir()
    out["folder"] = d / f"folder{ext}"
    out["missing"] = d / f"missing{ext}"
    return out


def hostile(ws, kind: str, d: Path, marker: Path) -> dict:
    """Bad files standing for an input of ``kind``: name → path (a pickle payload in them
    would create ``marker``)."""
    if kind == "ck":
        out = _generic(ws["ck"], d, ".pt")
        edits = {
            "payload_config": lambda p: _set(p, ["config", "train", "lr"], Payload(marker)),
            "payload_state": lambda p: _set(p, ["model_state", "x"], Payload(marker)),
            "payload_optim": lambda p: _set(p, ["optimizer_state", "x"], Payload(marker)),
            "payload_extra": lambda p: _set(p, ["extra", "x"], Payload(marker)),
            "payload_whole": lambda p: Payload(marker),
            "nan_weights": _nan_first_weight,
            "config_none": lambda p: _set(p, ["config"], None),
            "state_none": lambda p: _set(p, ["model_state"], None),
            "state_list": lambda p: _set(p, ["model_state"], [1, 2, 3]),
            "step_str": lambda p: _set(p, ["step"], "x" * 1000),
            "huge_kind": lambda p: _set(p, ["config", "model", "kind"], "k" * 5_000_000),
            "huge_world": lambda p: _set(p, ["config", "world", "worlds"], ["w" * 5_000_000]),
            "bad_lr": lambda p: _set(p, ["config", "train", "lr"], float("nan")),
            "weights_edited": lambda p: _set(p, ["model_state", "W_a"],
                                             p["model_state"]["W_a"] + 1),
            "wrong_format": lambda p: _set(p, ["format"], "other"),
            "passkey": None,
        }
        for name, edit in edits.items():
            if edit is None:
                out[name] = ws["pk"]
                continue
            out[name] = d / f"{name}.pt"
            _torch_edit(ws["ck"], out[name], edit)
        out["recording"] = ws["rec_nc"]
        return out
    if kind == "pk":
        out = _generic(ws["pk"], d, ".pt")
        for name, edit in {
            "payload_config": lambda p: _set(p, ["config", "model"], Payload(marker)),
            "payload_history": lambda p: _set(p, ["history"], [Payload(marker)]),
            "nan_weights": _nan_first_weight,
            "config_none": lambda p: _set(p, ["config"], None),
            "huge_variant": lambda p: _set(p, ["config", "model", "variant"], "v" * 5_000_000),
        }.items():
            out[name] = d / f"{name}.pt"
            _torch_edit(ws["pk"], out[name], edit)
        out["temt"] = ws["ck"]
        return out
    if kind == "rec":
        out = _generic(ws["rec_nc"], d, ".nc")
        out["analysis"] = ws["ana_nc"]
        out["huge_attr"] = d / "huge_attr.nc"
        _with_nc_attr(ws["rec_nc"], out["huge_attr"], "hippo_rep_kind", "r" * 5_000_000)
        out["bad_steps"] = d / "bad_steps.nc"
        _with_nc_attr(ws["rec_nc"], out["bad_steps"], "n_steps", 10**9)
        for name, damage in (("chunk_deleted", "delete"), ("chunk_truncated", "truncate"),
                             ("chunk_empty", "empty"), ("meta_deleted", "meta")):
            store = d / f"{name}.zarr"
            shutil.copytree(ws["rec_zarr"], store)
            chunks = sorted(p for p in (store / "g").rglob("*")
                            if p.is_file() and p.name != "zarr.json")
            victim = chunks[len(chunks) // 2]
            if damage == "delete":
                victim.unlink()
            elif damage == "truncate":
                victim.write_bytes(victim.read_bytes()[:5])
            elif damage == "empty":
                victim.write_bytes(b"")
            else:
                (store / "zarr.json").unlink()
            out[name] = store
        return out
    if kind == "ana":
        out = _generic(ws["ana_nc"], d, ".nc")
        out["recording"] = ws["rec_nc"]
        out["huge_attr"] = d / "huge_attr.nc"
        _with_nc_attr(ws["ana_nc"], out["huge_attr"], "hippo_rep_kind", "a" * 5_000_000)
        return out
    if kind in ("eval", "delay", "pk_sweep"):
        out = _generic(ws[kind], d, ".json")
        for name, text in {"list": "[]", "number": "5", "deep": "[" * 100_000,
                           "strings": json.dumps({"model": "x" * 5_000_000}),
                           "latin1": None}.items():
            p = d / f"{name}.json"
            if text is None:
                p.write_bytes("{\"é\": 1}".encode("latin-1"))
            else:
                p.write_text(text)
            out[name] = p
        out["other_kind"] = ws["eval"] if kind != "eval" else ws["pk_sweep"]
        return out
    if kind == "toml":
        out = _generic(ws["toml"], d, ".toml")
        for name, text in {"bad_type": "[train]\nlr = \"fast\"\n",
                           "bad_section": "[nope]\nx = 1\n", "table_as_value": "train = 5\n",
                           "huge_key": "[train]\n" + "k" * 5_000_000 + " = 1\n",
                           "nan": "[train]\nlr = nan\n", "log0": "[train]\nlog_every = 0\n",
                           "deep": "x = " + "[" * 100_000}.items():
            p = d / f"{name}.toml"
            p.write_text(text)
            out[name] = p
        out["json"] = ws["eval"]
        return out
    raise AssertionError(kind)


# ------------------------------------------------------------------------ cases
def _train(d, *extra):
    return ["train", "--config", "tiny", "--set", "train.iterations=2", "--no-progress",
            "--out", d / "newrun", *extra]


#: Commands reading each input kind: kind → [(label, argv builder (ws, bad, d))].
READERS = {
    "ck": [
        ("evaluate", lambda w, f, d: ["evaluate", f, "--envs", "1", "--steps", "5"]),
        ("calibrate", lambda w, f, d: ["calibrate", f, "--out", d / "out.pt", "--envs", "1",
                                       "--steps", "5"]),
        ("record", lambda w, f, d: ["record", f, "--out", d / "out.nc", "--envs", "1",
                                    "--steps", "5"]),
        ("delay", lambda w, f, d: ["delay", f, "--out", d / "out.json", "--world", "square:8",
                                   "--envs", "1", "--delays", "1", "--variants", "full"]),
        ("init_from", lambda w, f, d: _train(d, "--set", f"train.init_from={f.as_posix()}")),
        ("resume", None),  # the bad file as the checkpoint of a copied run folder
    ],
    "pk": [("passkey_eval", lambda w, f, d: ["passkey", "eval", f, "--fillers", "1",
                                             "--samples", "2"])],
    "rec": [
        ("analyse", lambda w, f, d: ["analyse", f, "--out", d / "out.nc", "--shuffles", "2"]),
        ("figures", lambda w, f, d: ["figures", "--recording", f, "--out", d / "figs"]),
    ],
    "ana": [("figures", lambda w, f, d: ["figures", f, "--out", d / "figs"])],
    "eval": [("figures", lambda w, f, d: ["figures", "--eval", f, "--out", d / "figs"])],
    "delay": [("figures", lambda w, f, d: ["figures", "--delay", f, "--out", d / "figs"])],
    "pk_sweep": [("figures", lambda w, f, d: ["figures", "--passkey", f, "--out",
                                              d / "figs"])],
    "toml": [("train", lambda w, f, d: ["train", "--config", f, "--out", d / "newrun"])],
}

#: Names of the hostile files per kind (kept in sync with :func:`hostile` by a test).
HOSTILE_NAMES = {
    "ck": ["empty", "random", "zeros", "truncated", "head", "folder", "missing",
           "payload_config", "payload_state", "payload_optim", "payload_extra", "payload_whole",
           "nan_weights", "config_none", "state_none", "state_list", "step_str", "huge_kind",
           "huge_world", "bad_lr", "weights_edited", "wrong_format", "passkey", "recording"],
    "pk": ["empty", "random", "zeros", "truncated", "head", "folder", "missing",
           "payload_config", "payload_history", "nan_weights", "config_none", "huge_variant",
           "temt"],
    "rec": ["empty", "random", "zeros", "truncated", "head", "folder", "missing", "analysis",
            "huge_attr", "bad_steps", "chunk_deleted", "chunk_truncated", "chunk_empty",
            "meta_deleted"],
    "ana": ["empty", "random", "zeros", "truncated", "head", "folder", "missing", "recording",
            "huge_attr"],
    "eval": ["empty", "random", "zeros", "truncated", "head", "folder", "missing", "list",
             "number", "deep", "strings", "latin1", "other_kind"],
    # (an empty or truncated TOML can be valid: the tiny preset cut in half still parses)
    "toml": ["random", "zeros", "folder", "missing",
             "bad_type", "bad_section", "table_as_value", "huge_key", "nan", "log0", "deep",
             "json"],
}
HOSTILE_NAMES["delay"] = HOSTILE_NAMES["pk_sweep"] = HOSTILE_NAMES["eval"]

FILE_CASES = [(kind, label, name) for kind, readers in READERS.items()
              for label, _ in readers for name in HOSTILE_NAMES[kind]
              if (kind, label, name) != ("rec", "figures", "chunk_truncated")]
# figures only opens a --recording (no figure reads its arrays yet): a truncated chunk, which
# shows only when read, cannot change its output; `analyse` covers that case.


@pytest.fixture(scope="module")
def bad_files(ws, tmp_path_factory):
    """Every hostile file, generated once: kind → name → path (copied into each case)."""
    cache = tmp_path_factory.mktemp("hostile")
    out = {}
    for kind in HOSTILE_NAMES:
        d = cache / kind
        d.mkdir()
        out[kind] = hostile(ws, kind, d, marker=cache / "MARKER")
    out["marker"] = cache / "MARKER"
    out["root"] = cache
    return out


def check(capsys, argv, watch, d, marker=None):
    """Run the CLI; assert one line, exit 2, nothing changed, nothing executed."""
    before = snapshot(*watch)
    rc = cli.main([str(a) for a in argv])
    cap = capsys.readouterr()
    err = cap.err.strip()
    assert rc == 2, (rc, err[-500:], cap.out[-500:])
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hippo-rep "), err[:2000]
    assert len(err) <= MAX_LINE, len(err)
    assert snapshot(*watch) == before, "a pre-existing file was changed, added or removed"
    assert marker is None or not marker.exists(), "code from a file was executed"
    return err


@pytest.mark.parametrize("kind,label,name", FILE_CASES,
                         ids=[f"{k}-{lab}-{n}" for k, lab, n in FILE_CASES])
def test_bad_file(ws, bad_files, tmp_path, capsys, kind, label, name):
    d = tmp_path / "case"
    d.mkdir()
    src = bad_files[kind][name]
    bad = src
    if src.parent.parent == bad_files["root"]:  # a generated file: each case gets a copy
        bad = d / src.name
        if src.is_dir():
            shutil.copytree(src, bad)
        elif src.exists():
            shutil.copy(src, bad)
    if label == "resume":
        run = d / "run"
        shutil.copytree(ws["root"] / "run", run)
        (run / "checkpoint.pt").unlink()
        if bad.is_dir():
            shutil.copytree(bad, run / "checkpoint.pt")
        elif bad.exists():
            shutil.copy(bad, run / "checkpoint.pt")
        argv = ["train", "--out", run, "--resume", "--no-progress"]
    else:
        argv = dict(READERS[kind])[label](ws, bad, d)
    err = check(capsys, argv, [ws["root"], bad_files["root"], d], d,
                marker=bad_files["marker"])
    if bad.exists() and bad.parent == d and label != "resume":
        assert bad.name in err or str(bad) in err, err[:300]


def test_hostile_names_match_generators(bad_files):
    for kind, names in HOSTILE_NAMES.items():
        assert set(names) <= set(bad_files[kind]), kind


# ------------------------------------------------------------------------ config values
# every key that holds a value, those of nested sections ([model.tem], [train.tem]) included
NUMERIC = [f"{s}.{k}" for s, cls in C._SECTIONS.items()
           for k, f, _ in cls.keys() if f.type in ("int", "float")]
OTHER = [f"{s}.{k}" for s, cls in C._SECTIONS.items()
         for k, f, _ in cls.keys() if f.type not in ("int", "float")]
#: Values no numeric key accepts (out-of-range values per key: tests/test_training_guards.py).
NUMERIC_BAD = ["nan", "-inf", "'text'", "true", "{a=1}", "1e400"]
CONFIG_CASES = [(k, v) for k in NUMERIC for v in NUMERIC_BAD]
CONFIG_CASES += [(k, v) for k in OTHER for v in ("5", "{a=1}", "'x'" if k != "train.init_from"
                                                 else "'/nonexistent/x.pt'")
                 if not (k == "world.worlds" and v == "'x'")]
CONFIG_CASES += [("world.worlds", v) for v in ("'square:100000'", "[]", "'hex:1'",
                                               "'" + "s" * 100_000 + "'", "['square:4', 5]")]
CONFIG_CASES += [("train.device", v) for v in ("tpu", "'cuda:x'", "''", "'cpu '")]


@pytest.mark.parametrize("key,value", CONFIG_CASES,
                         ids=[f"{k}={v[:20]}" for k, v in CONFIG_CASES])
def test_bad_config_value(ws, tmp_path, capsys, key, value):
    check(capsys, _train(tmp_path, "--set", f"{key}={value}"), [ws["root"], tmp_path],
          tmp_path)
    assert not (tmp_path / "newrun").exists()


# ------------------------------------------------------------------------ paths, options
def _path_cases():
    F, D = "file.txt", "adir"
    return {
        "train-out-is-file": lambda w, d: _train(d)[:-1] + [d / F],
        "train-out-under-file": lambda w, d: _train(d)[:-1] + [d / F / "run"],
        "train-resume-missing": lambda w, d: ["train", "--out", d / "nope", "--resume"],
        "train-resume-empty-folder": lambda w, d: ["train", "--out", d / D, "--resume"],
        "train-existing-run": lambda w, d: _train(d)[:-1] + [w["root"] / "run"],
        "evaluate-json-is-input": lambda w, d: ["evaluate", w["ck"], "--json", w["ck"],
                                                "--overwrite"],
        "evaluate-json-exists": lambda w, d: ["evaluate", w["ck"], "--json", d / F],
        "evaluate-json-is-folder": lambda w, d: ["evaluate", w["ck"], "--json", d / D,
                                                 "--overwrite"],
        "evaluate-json-under-file": lambda w, d: ["evaluate", w["ck"], "--json",
                                                  d / F / "e.json"],
        "evaluate-empty-path": lambda w, d: ["evaluate", ""],
        "evaluate-folder": lambda w, d: ["evaluate", d / D],
        "record-out-is-input": lambda w, d: ["record", w["ck"], "--out", w["ck"],
                                             "--overwrite"],
        "record-out-exists": lambda w, d: ["record", w["ck"], "--out", w["rec_nc"]],
        "record-out-folder-nc": lambda w, d: ["record", w["ck"], "--out", d / "x.nc",
                                              "--overwrite"],
        "record-out-bad-suffix": lambda w, d: ["record", w["ck"], "--out", d / "x.h5"],
        "record-out-under-file": lambda w, d: ["record", w["ck"], "--out", d / F / "r.nc"],
        "record-zarr-into-folder": lambda w, d: ["record", w["ck"], "--out", d / "plain.zarr",
                                                 "--overwrite"],
        "analyse-out-is-input": lambda w, d: ["analyse", w["rec_nc"], "--out", w["rec_nc"],
                                              "--overwrite"],
        "analyse-zarr-out-is-input": lambda w, d: ["analyse", w["rec_zarr"], "--out",
                                                   w["rec_zarr"], "--overwrite"],
        "analyse-out-inside-input": lambda w, d: ["analyse", w["rec_zarr"], "--out",
                                                  w["rec_zarr"] / "a.nc"],
        "analyse-out-exists": lambda w, d: ["analyse", w["rec_nc"], "--out", w["ana_nc"]],
        "analyse-out-under-file": lambda w, d: ["analyse", w["rec_nc"], "--out",
                                                d / F / "a.nc"],
        "figures-out-is-file": lambda w, d: ["figures", w["ana_nc"], "--out", d / F],
        "figures-missing-eval": lambda w, d: ["figures", "--eval", d / "nope.json", "--out",
                                              d / "figs"],
        "delay-out-is-input": lambda w, d: ["delay", w["ck"], "--out", w["ck"], "--overwrite"],
        "delay-out-exists": lambda w, d: ["delay", w["ck"], "--out", w["delay"]],
        "passkey-eval-json-exists": lambda w, d: ["passkey", "eval", w["pk"], "--json",
                                                  d / F],
        "passkey-train-out-is-file": lambda w, d: ["passkey", "train", "--out", d / F],
        "passkey-train-exists": lambda w, d: ["passkey", "train", "--out", w["root"] / "pk"],
        "sweep-out-is-file": lambda w, d: ["sweep", "tiny", "--out", d / F],
        "demo-out-is-file": lambda w, d: ["demo", "--out", d / F],
        "config-missing": lambda w, d: ["train", "--config", d / "nope.toml", "--out",
                                        d / "newrun"],
    }


def _option_cases():
    ck = lambda w: w["ck"]  # noqa: E731
    rec = lambda w, d, *a: ["record", ck(w), "--out", d / "o.nc", *a]  # noqa: E731
    ev = lambda w, d, *a: ["evaluate", ck(w), *a]  # noqa: E731
    return {
        "evaluate-steps-0": lambda w, d: ev(w, d, "--steps", "0"),
        "evaluate-steps-neg": lambda w, d: ev(w, d, "--steps", "-5"),
        "evaluate-steps-huge": lambda w, d: ev(w, d, "--steps", "1000000000"),
        "evaluate-steps-text": lambda w, d: ev(w, d, "--steps", "ten"),
        "evaluate-envs-0": lambda w, d: ev(w, d, "--envs", "0"),
        "evaluate-envs-huge": lambda w, d: ev(w, d, "--envs", "1000000000"),
        "evaluate-world-empty": lambda w, d: ev(w, d, "--world", ""),
        "evaluate-world-huge": lambda w, d: ev(w, d, "--world", "square:100000"),
        "evaluate-world-junk": lambda w, d: ev(w, d, "--world", "x" * 10_000),
        "evaluate-world-hex": lambda w, d: ev(w, d, "--world", "hex:4"),
        "evaluate-seed-neg": lambda w, d: ev(w, d, "--seed", "-1"),
        "record-steps-0": lambda w, d: rec(w, d, "--steps", "0"),
        "record-envs-0": lambda w, d: rec(w, d, "--envs", "0"),
        "record-chunk-0": lambda w, d: rec(w, d, "--chunk", "0"),
        "record-world-empty": lambda w, d: rec(w, d, "--world", ""),
        "record-steps-huge": lambda w, d: rec(w, d, "--steps", "1000000000"),
        "record-seed-neg": lambda w, d: rec(w, d, "--seed", "-3"),
        "analyse-shuffles-0": lambda w, d: ["analyse", w["rec_nc"], "--out", d / "a.nc",
                                            "--shuffles", "0"],
        "analyse-shuffles-neg": lambda w, d: ["analyse", w["rec_nc"], "--out", d / "a.nc",
                                              "--shuffles", "-4"],
        "delay-delays-text": lambda w, d: ["delay", ck(w), "--out", d / "o.json", "--delays",
                                           "a,b"],
        "delay-delays-neg": lambda w, d: ["delay", ck(w), "--out", d / "o.json", "--world",
                                          "square:8", "--envs", "1", "--delays", "-1",
                                          "--variants", "full"],
        "delay-variant-bad": lambda w, d: ["delay", ck(w), "--out", d / "o.json",
                                           "--variants", "nope", "--envs", "1"],
        "delay-world-empty": lambda w, d: ["delay", ck(w), "--out", d / "o.json", "--world",
                                           ""],
        "passkey-fillers-empty": lambda w, d: ["passkey", "eval", w["pk"], "--fillers", ""],
        "passkey-fillers-neg": lambda w, d: ["passkey", "eval", w["pk"], "--fillers", "-1"],
        "passkey-samples-0": lambda w, d: ["passkey", "eval", w["pk"], "--samples", "0"],
        "passkey-train-bad-set": lambda w, d: ["passkey", "train", "--out", d / "pk", "--set",
                                               "train.lr=nan"],
        "passkey-train-bad-variant": lambda w, d: ["passkey", "train", "--out", d / "pk",
                                                   "--variant", "x" * 5000],
        "figures-unknown-only": lambda w, d: ["figures", w["ana_nc"], "--only", "nope",
                                              "--out", d / "figs"],
        "train-set-no-equals": lambda w, d: _train(d, "--set", "train.lr"),
        "train-set-huge": lambda w, d: _train(d, "--set", "train.lr=" + "9" * 100_000),
        "train-device-flag": lambda w, d: _train(d, "--device", "tpu"),
        "train-device-empty": lambda w, d: _train(d, "--device", ""),
        "train-stop-at-neg": lambda w, d: _train(d, "--stop-at", "-1"),
        "unknown-command": lambda w, d: ["frobnicate"],
        "unknown-flag": lambda w, d: ["evaluate", ck(w), "--frob"],
    }


ARG_CASES = {**_path_cases(), **_option_cases()}


@pytest.mark.parametrize("name", list(ARG_CASES))
def test_bad_argument(ws, tmp_path, capsys, name):
    d = tmp_path / "case"
    d.mkdir()
    (d / "file.txt").write_text("precious")
    (d / "adir").mkdir()
    (d / "x.nc").mkdir()
    (d / "plain.zarr").mkdir()
    (d / "plain.zarr" / "notes.txt").write_text("not a store")
    argv = [str(a) for a in ARG_CASES[name](ws, d)]
    try:
        check(capsys, argv, [ws["root"], d], d)
    except SystemExit as stop:  # argparse usage errors: one line too
        err = capsys.readouterr().err.strip()
        assert stop.code == 2 and len(err.splitlines()) == 1, err
        assert "Traceback" not in err and len(err) <= MAX_LINE


# ------------------------------------------------------------------------ SIGKILL
def _spawn(argv, cwd):
    code = f"from hippo_rep.cli import main; import sys; sys.exit(main({argv!r}))"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-c", code], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _kill_when(proc, ready, extra: float, timeout: float = 60.0) -> bool:
    """SIGKILL ``proc`` ``extra`` seconds after ``ready()`` first holds; True if it was
    killed (False: it had finished first)."""
    t0 = time.monotonic()
    while not ready() and proc.poll() is None and time.monotonic() - t0 < timeout:
        time.sleep(0.005)
    time.sleep(extra)
    killed = proc.poll() is None
    if killed:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    return killed


def _hidden(folder, name):
    return lambda: any(p.name.startswith(f".{name}.") for p in Path(folder).iterdir())


#: Seconds after the write began (a temporary sibling appeared, or a checkpoint was saved)
#: at which the process is killed.
KILL_DELAYS = (0.2,)


@pytest.mark.parametrize("delay", KILL_DELAYS)
def test_sigkill_during_record_overwrite_keeps_a_valid_store(ws, tmp_path, delay):
    from hippo_rep.recording import open_recording

    out = tmp_path / "rec.zarr"
    shutil.copytree(ws["rec_zarr"], out)
    before = snapshot(out, content=True)
    proc = _spawn(["record", str(ws["ck"]), "--out", str(out), "--overwrite", "--envs", "8",
                   "--steps", "3000", "--chunk", "100", "--world", "square:8"], tmp_path)
    assert _kill_when(proc, _hidden(tmp_path, "rec.zarr"), delay), "finished before the kill"
    assert snapshot(out, content=True) == before  # the old store, untouched
    with open_recording(out) as ds:
        assert ds.sizes["time"] == 64
    # the next run cleans what the kill left and succeeds
    assert cli.main(["record", str(ws["ck"]), "--out", str(out), "--overwrite", "--envs",
                     "1", "--steps", "20"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec.zarr"]


@pytest.mark.parametrize("delay", KILL_DELAYS)
def test_sigkill_during_analyse_overwrite_keeps_the_old_analysis(ws, tmp_path, delay):
    from hippo_rep.analysis import open_analysis

    out = tmp_path / "ana.nc"
    shutil.copy(ws["ana_nc"], out)
    old = out.read_bytes()
    proc = _spawn(["analyse", str(ws["rec_zarr"]), "--out", str(out), "--overwrite",
                   "--shuffles", "50"], tmp_path)
    killed = _kill_when(proc, _hidden(tmp_path, "ana.nc"), delay)
    open_analysis(out)  # whichever is there is whole
    assert out.read_bytes() == old if killed else proc.returncode == 0


@pytest.mark.parametrize("delay", KILL_DELAYS)
def test_sigkill_during_train_keeps_a_finite_resumable_checkpoint(ws, tmp_path, delay):
    from hippo_rep.training.checkpoint import load_checkpoint

    run = tmp_path / "run"
    shutil.copytree(ws["root"] / "run", run)
    first = (run / "checkpoint.pt").stat().st_mtime_ns
    proc = _spawn(["train", "--out", str(run), "--resume", "--no-progress", "--set",
                   "train.iterations=400", "--set", "train.checkpoint_every=1"], tmp_path)
    saved = lambda: (run / "checkpoint.pt").stat().st_mtime_ns != first  # noqa: E731
    assert _kill_when(proc, saved, delay), "finished before the kill"
    model, _, payload = load_checkpoint(run / "checkpoint.pt")
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert payload["step"] >= 2
    assert cli.main(["train", "--out", str(run), "--resume", "--no-progress", "--set",
                     f"train.iterations={payload['step'] + 1}"]) == 0
    assert not [p for p in run.iterdir() if p.name.startswith(".")]


def test_killed_fresh_train_leaves_a_folder_the_next_run_can_use(ws, tmp_path, capsys):
    """A fresh run killed before its first checkpoint: --resume says so in one line, and a
    new run can start in the folder."""
    run = tmp_path / "run"
    proc = _spawn(["train", "--config", "tiny", "--out", str(run), "--no-progress", "--set",
                   "train.iterations=100000", "--set", "train.checkpoint_every=100000"],
                  tmp_path)
    assert _kill_when(proc, lambda: (run / "metrics.csv").exists(), 0.5)
    rc = cli.main(["train", "--out", str(run), "--resume", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert not (run / "checkpoint.pt").exists()  # SIGKILL saves nothing; Ctrl-C would
    assert rc == 2 and len(err.splitlines()) == 1 and "no checkpoint" in err
    assert cli.main(_train(tmp_path)[:-1] + [str(run)]) == 0  # a fresh start there works
