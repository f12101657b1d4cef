"""One checkpoint schema for every model, atomic writes and validated loading.

Every file carries its ``kind`` (:data:`KINDS`: a TEM-t, a TEM, the sinusoidal baseline or
PassKey's TransformerFAM); a reader names the kinds it accepts and a file of another kind is
refused in one line naming the file and both kinds. Files written before ``kind`` existed
still load: the kind is inferred (PassKey's old format name, else ``model.kind``).
Checkpoints hold plain data only (tensors, dicts, lists, numbers, strings) and are read with
``torch.load(..., weights_only=True)``: a file that needs any other object (a pickled class, a
function call) is refused before anything in it runs. Every checkpoint carries the SHA-256 of
its model tensors (:func:`weights_sha256`), verified on load when present (older checkpoints
without it still load); non-finite weights are refused.
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Mapping
from pathlib import Path

import torch

from hippo_rep import __version__
from hippo_rep.config import Config, ConfigError, from_dict, world_kind
from hippo_rep.fileio import MAX_QUOTE, atomic_write, quote
from hippo_rep.model_kinds import MODEL_KINDS
from hippo_rep.models.registry import build_model
from hippo_rep.models.temt import TEMt
from hippo_rep.worlds import KINDS as KINDS_OF_WORLDS
from hippo_rep.worlds import World, n_actions_for, parse_world

FORMAT = "hippo_rep.checkpoint"
FORMAT_VERSION = 1
#: Payload key of the SHA-256 of the model tensors (see :func:`weights_sha256`).
WEIGHTS_SHA256_KEY = "weights_sha256"
#: What a checkpoint can hold, and its name in messages.
KINDS = {**{kind: traits.label for kind, traits in MODEL_KINDS.items()}, "passkey": "PassKey"}
#: The kinds :func:`load_checkpoint` rebuilds (models of the 2D worlds).
WORLD_KINDS = tuple(MODEL_KINDS)
#: The format name of PassKey checkpoints written before ``kind`` existed.
OLD_PASSKEY_FORMAT = "hippo_rep.passkey_checkpoint"
_REQUIRED = ("format_version", "config", "model_state", "step")
#: Fields the world models' checkpoints add.
_WORLD_REQUIRED = ("n_actions", "n_obs")


class CheckpointError(ValueError):
    """A file that is not a usable hippo_rep checkpoint."""


def save_checkpoint(path, model, config, step: int, optimizer=None, extra: dict | None = None,
                    kind: str | None = None, **fields) -> None:
    """Write a checkpoint atomically (temporary file, then rename).

    ``kind`` defaults to ``config.model.kind`` (TEM-t, TEM, sinusoidal), whose files also hold
    ``n_actions``, ``n_obs`` and the world kind; ``fields`` are stored as they are (PassKey's
    ``history``).
    """
    kind = config.model.kind if kind is None else kind
    if kind not in KINDS:
        raise CheckpointError(f"kind must be one of {', '.join(KINDS)}; got {quote(kind)}")
    payload = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "kind": kind,
        "package_version": __version__,
        "config": config.to_dict(),
        "step": step,
        "model_state": model.state_dict(),
        WEIGHTS_SHA256_KEY: weights_sha256(model.state_dict()),
        "optimizer_state": optimizer.state_dict() if optimizer is not None else None,
        "torch_rng_state": torch.random.get_rng_state(),
        "extra": extra or {},
        **fields,
    }
    if kind in WORLD_KINDS:
        payload.update(world_kind=world_kind(config), n_actions=model.n_actions,
                       n_obs=model.n_obs)
    write_payload(path, payload)


def write_payload(path, payload: dict) -> None:
    """Write a checkpoint payload atomically (temporary file, then rename). Through an open
    file: ``torch.save`` to a path names the archive's folder after the (random) temporary
    file, which would make the same payload a different file each time."""

    def save(tmp) -> None:
        with open(tmp, "wb") as f:
            torch.save(payload, f)

    atomic_write(path, save)


def load_torch_file(path: Path, error: type[Exception], what: str = "checkpoint"):
    """``torch.load(..., weights_only=True)`` a file on the CPU.

    Raises
    ------
    error
        Naming the file: missing, a folder, unreadable, corrupt, or holding objects other than
        tensors and plain data (a pickled class or call is refused, never run).
    """
    path = Path(path)
    if not path.exists():
        raise error(f"{what} {str(path)!r} not found")
    if not path.is_file():
        raise error(f"{what} {str(path)!r} is not a file")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        text = str(err)
        if "WeightsUnpickler" in text and "Unsupported operand" not in text:
            raise error(f"{what} {str(path)!r} refused: it holds objects other than tensors "
                        "and plain data (loaded with weights_only=True; nothing in it was "
                        "run)") from None
        raise error(f"{what} {str(path)!r} is corrupt or not a torch file "
                    "(UnpicklingError)") from None
    except MemoryError:
        raise error(f"{what} {str(path)!r} is too large to load") from None
    except Exception as err:  # torch raises many types for damaged files
        raise error(f"{what} {str(path)!r} is corrupt or not a torch file "
                    f"({type(err).__name__})") from None


def weights_sha256(state: Mapping) -> str:
    """SHA-256 of a state dict's tensors: names, dtypes, shapes and bytes, in sorted order."""
    h = hashlib.sha256()
    for name in sorted(state):
        t = state[name].detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def check_state(state, where: str, error: type[Exception], expected_sha256=None,
                key: str = "model_state") -> None:
    """Check a state dict read from a file: names → tensors, all finite, matching its SHA-256.

    Raises
    ------
    error
        Naming ``where`` (the file) and the first offending tensor.
    """
    if not isinstance(state, Mapping):
        raise error(f"{where}: {key} must be a table of tensors; got {type(state).__name__}")
    for name, t in state.items():
        if not isinstance(name, str) or not isinstance(t, torch.Tensor):
            raise error(f"{where}: {key} entry {quote(name)} is not a named tensor "
                        f"({type(t).__name__})")
    bad = [n for n, t in state.items()
           if (t.is_floating_point() or t.is_complex()) and not bool(torch.isfinite(t).all())]
    if bad:
        raise error(f"{where}: {len(bad)} weight tensor(s) hold NaN or Inf (first: "
                    f"{quote(bad[0])}); refusing a non-finite model")
    if expected_sha256 is not None:
        if not isinstance(expected_sha256, str):
            raise error(f"{where}: {WEIGHTS_SHA256_KEY} must be a string")
        if weights_sha256(state) != expected_sha256:
            raise error(f"{where}: the weights do not match their SHA-256 (the file was altered "
                        "or damaged)")


def checkpoint_kind(payload: dict) -> object:
    """The ``kind`` of a checkpoint payload; inferred for files written before it existed."""
    if "kind" in payload:
        return payload["kind"]
    if payload.get("format") == OLD_PASSKEY_FORMAT:
        return "passkey"
    config = payload.get("config")
    model = config.get("model") if isinstance(config, dict) else None
    return payload.get("model_kind", model.get("kind", "temt") if isinstance(model, dict)
                       else "temt")


def read_checkpoint(path, kinds=WORLD_KINDS, error: type[Exception] = CheckpointError) -> dict:
    """Load and check a checkpoint's payload, of one of ``kinds``.

    Raises
    ------
    error
        Naming the file: missing, unreadable/corrupt, not a hippo_rep checkpoint, another kind
        (naming both), missing fields, or weights that are not finite or not their SHA-256.
    """
    path = Path(path)
    where = f"checkpoint {str(path)!r}"
    payload = load_torch_file(path, error)
    if not isinstance(payload, dict) or payload.get("format") not in (FORMAT, OLD_PASSKEY_FORMAT):
        raise error(f"{str(path)!r} is not a hippo_rep checkpoint (expected format {FORMAT!r})")
    kind = checkpoint_kind(payload)
    if kind not in KINDS:
        raise error(f"{where} has unknown kind {quote(kind)}; known: {', '.join(KINDS)}")
    if kind not in kinds:
        def either(items):
            return " or ".join([", ".join(items[:-1]), items[-1]] if len(items) > 1 else items)
        raise error(f"{where} is a {KINDS[kind]} checkpoint (kind {kind!r}), not a "
                    f"{either([KINDS[k] for k in kinds])} checkpoint (kind "
                    f"{either([repr(k) for k in kinds])})")
    required = _REQUIRED + (_WORLD_REQUIRED if kind in WORLD_KINDS else ())
    missing = [k for k in required if k not in payload]
    if missing:
        raise error(f"{where} lacks field(s) {missing}")
    for key in ("format_version", "config", "step", *_WORLD_REQUIRED):
        want = dict if key == "config" else int
        if key in payload and (isinstance(payload[key], bool)
                               or not isinstance(payload[key], want)):
            raise error(f"{where}: field {key!r} has the wrong type "
                        f"({type(payload[key]).__name__})")
    if payload["format_version"] > FORMAT_VERSION:
        raise error(f"{where} has format version {payload['format_version']}; this hippo_rep "
                    f"reads ≤ {FORMAT_VERSION}")
    if payload["step"] < 0 or min(payload.get(k, 1) for k in _WORLD_REQUIRED) < 1:
        raise error(f"{where}: step, n_actions or n_obs out of range")
    check_state(payload["model_state"], where, error, payload.get(WEIGHTS_SHA256_KEY))
    return dict(payload, kind=kind)


def load_weights(model: torch.nn.Module, payload: dict, path, error=CheckpointError):
    """``model`` with the payload's weights, in eval mode; a state that does not fit raises
    ``error`` naming the file and the first problem."""
    try:
        model.load_state_dict(payload["model_state"])
    except (RuntimeError, KeyError, TypeError, ValueError) as err:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise error(f"checkpoint {str(path)!r}: weights do not match its config "
                    f"({first[:MAX_QUOTE]})") from None
    return model.eval()


def check_actions(world: World | str, n_actions: int, model: str,
                  error: type[Exception] = CheckpointError) -> World:
    """``world`` (a spec or a World) if its action set is the model's (``n_actions``).

    Raises
    ------
    error
        One line naming the world, ``model`` (e.g. "checkpoint 'x.pt'"), both action counts
        and the lattice kinds that would fit.
    """
    w = parse_world(world) if isinstance(world, str) else world
    if w.n_actions != n_actions:
        fits = [k for k in KINDS_OF_WORLDS if n_actions_for(k) == n_actions] or ["no"]
        raise error(f"world {w.spec!r} has {w.n_actions} actions but {model} was trained on "
                    f"{' or '.join(fits)} worlds ({n_actions} actions)")
    return w


def load_checkpoint(path, device: str | torch.device = "cpu") -> tuple[TEMt, Config, dict]:
    """Rebuild the model of a TEM-t, TEM or sinusoidal checkpoint.

    Returns (model in eval mode, config, payload).
    """
    payload = read_checkpoint(path)
    where = f"checkpoint {str(path)!r}"
    try:
        config = from_dict(payload["config"], where)
    except ConfigError as err:
        raise CheckpointError(str(err)) from None
    if config.model.kind != payload["kind"]:
        raise CheckpointError(f"{where} is of kind {payload['kind']!r} but its config has "
                              f"model.kind = {config.model.kind!r}")
    expected = n_actions_for(world_kind(config))
    if payload["n_actions"] != expected:
        raise CheckpointError(f"{where}: n_actions {payload['n_actions']} does not match its "
                              f"{world_kind(config)} world ({expected})")
    if payload["n_obs"] != config.world.n_obs:
        raise CheckpointError(f"{where}: n_obs {payload['n_obs']} does not match its config's "
                              f"world.n_obs ({config.world.n_obs})")
    model = build_model(config.model, payload["n_actions"], payload["n_obs"])
    return load_weights(model, payload, path).to(device), config, payload


def weights_only_copy(src, dst) -> None:
    """Copy a TEM-t, TEM or sinusoidal checkpoint without its optimizer and RNG state (a
    file to share, about a third of the size; it evaluates, records and fine-tunes with
    ``train.init_from``, but does not ``--resume``). ``extra.weights_only_of`` holds the
    source file's SHA-256. Written atomically; ``dst`` must differ from ``src``."""
    if Path(src).resolve() == Path(dst).resolve():
        raise CheckpointError(f"weights_only_copy: {str(dst)!r} is the source file itself")
    payload = read_checkpoint(src)
    payload = {**payload, "optimizer_state": None, "torch_rng_state": None,
               "extra": {**payload.get("extra", {}), "weights_only_of": file_sha256(src)}}
    write_payload(dst, payload)


def file_sha256(path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
