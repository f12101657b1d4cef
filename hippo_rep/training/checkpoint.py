"""One checkpoint schema, atomic writes and validated loading.

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
from hippo_rep.models.temt import TEMt, build_model
from hippo_rep.worlds import n_actions_for

FORMAT = "hippo_rep.checkpoint"
FORMAT_VERSION = 1
#: Payload key of the SHA-256 of the model tensors (see :func:`weights_sha256`).
WEIGHTS_SHA256_KEY = "weights_sha256"
_REQUIRED = ("format", "format_version", "config", "model_state", "n_actions", "n_obs", "step")


class CheckpointError(ValueError):
    """A file that is not a usable hippo_rep checkpoint."""


def save_checkpoint(path, model: TEMt, config: Config, step: int, optimizer=None,
                    extra: dict | None = None) -> None:
    """Write a checkpoint atomically (temporary file, then rename)."""
    payload = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "package_version": __version__,
        "model_kind": config.model.kind,
        "world_kind": world_kind(config),
        "config": config.to_dict(),
        "n_actions": model.n_actions,
        "n_obs": model.n_obs,
        "step": step,
        "model_state": model.state_dict(),
        WEIGHTS_SHA256_KEY: weights_sha256(model.state_dict()),
        "optimizer_state": optimizer.state_dict() if optimizer is not None else None,
        "torch_rng_state": torch.random.get_rng_state(),
        "extra": extra or {},
    }
    write_payload(path, payload)


def write_payload(path, payload: dict) -> None:
    """Write a checkpoint payload atomically (temporary file, then rename)."""
    atomic_write(path, lambda tmp: torch.save(payload, tmp))


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


def read_checkpoint(path) -> dict:
    """Load and check a checkpoint's payload.

    Raises
    ------
    CheckpointError
        Naming the file: missing, unreadable/corrupt, not a hippo_rep checkpoint, or missing
        fields.
    """
    path = Path(path)
    payload = load_torch_file(path, CheckpointError)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{str(path)!r} is not a hippo_rep checkpoint "
                              f"(expected format {FORMAT!r})")
    missing = [k for k in _REQUIRED if k not in payload]
    if missing:
        raise CheckpointError(f"checkpoint {str(path)!r} lacks field(s) {missing}")
    where = f"checkpoint {str(path)!r}"
    for key, types in (("format_version", int), ("config", dict), ("n_actions", int),
                       ("n_obs", int), ("step", int)):
        if isinstance(payload[key], bool) or not isinstance(payload[key], types):
            raise CheckpointError(f"{where}: field {key!r} has the wrong type "
                                  f"({type(payload[key]).__name__})")
    if payload["format_version"] > FORMAT_VERSION:
        raise CheckpointError(f"{where} has format version {payload['format_version']}; "
                              f"this hippo_rep reads ≤ {FORMAT_VERSION}")
    if payload["step"] < 0 or payload["n_actions"] < 1 or payload["n_obs"] < 1:
        raise CheckpointError(f"{where}: step, n_actions or n_obs out of range")
    check_state(payload["model_state"], where, CheckpointError,
                payload.get(WEIGHTS_SHA256_KEY))
    return payload


def load_checkpoint(path, device: str | torch.device = "cpu") -> tuple[TEMt, Config, dict]:
    """Rebuild the model of a checkpoint. Returns (model in eval mode, config, payload)."""
    payload = read_checkpoint(path)
    try:
        config = from_dict(payload["config"], f"checkpoint {str(path)!r}")
    except ConfigError as err:
        raise CheckpointError(str(err)) from None
    expected = n_actions_for(world_kind(config))
    if payload["n_actions"] != expected:
        raise CheckpointError(f"checkpoint {str(path)!r}: n_actions {payload['n_actions']} does "
                              f"not match its {world_kind(config)} world ({expected})")
    if payload["n_obs"] != config.world.n_obs:
        raise CheckpointError(f"checkpoint {str(path)!r}: n_obs {payload['n_obs']} does not "
                              f"match its config's world.n_obs ({config.world.n_obs})")
    model = build_model(config.model, payload["n_actions"], payload["n_obs"])
    try:
        model.load_state_dict(payload["model_state"])
    except (RuntimeError, KeyError, TypeError, ValueError) as err:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise CheckpointError(f"checkpoint {str(path)!r}: weights do not fit the model "
                              f"({first[:MAX_QUOTE]})") from None
    model.to(device).eval()
    return model, config, payload


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
