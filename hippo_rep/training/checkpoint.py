"""One checkpoint schema, atomic writes and validated loading."""

from __future__ import annotations

import hashlib
import pickle
import zipfile
from pathlib import Path

import torch

from hippo_rep import __version__
from hippo_rep.config import Config, ConfigError, from_dict, world_kind
from hippo_rep.fileio import atomic_write
from hippo_rep.models.temt import TEMt, build_model
from hippo_rep.worlds import n_actions_for

FORMAT = "hippo_rep.checkpoint"
FORMAT_VERSION = 1
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
        "optimizer_state": optimizer.state_dict() if optimizer is not None else None,
        "torch_rng_state": torch.random.get_rng_state(),
        "extra": extra or {},
    }
    atomic_write(path, lambda tmp: torch.save(payload, tmp))


def load_torch_file(path: Path, error: type[Exception]):
    """``torch.load`` a file on the CPU; a missing or unreadable file raises ``error`` naming it."""
    if not path.is_file():
        raise error(f"checkpoint {str(path)!r} not found")
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except (pickle.UnpicklingError, RuntimeError, EOFError, zipfile.BadZipFile, OSError,
            ValueError, AttributeError, ImportError, IndexError, KeyError, TypeError) as err:
        raise error(f"checkpoint {str(path)!r} is corrupt or not a torch file "
                    f"({type(err).__name__})") from None


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
    if payload["format_version"] > FORMAT_VERSION:
        raise CheckpointError(f"checkpoint {str(path)!r} has format version "
                              f"{payload['format_version']}; this hippo_rep reads "
                              f"≤ {FORMAT_VERSION}")
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
    model = build_model(config.model, payload["n_actions"], payload["n_obs"])
    try:
        model.load_state_dict(payload["model_state"])
    except (RuntimeError, KeyError) as err:
        raise CheckpointError(f"checkpoint {str(path)!r}: weights do not fit the model "
                              f"({str(err).splitlines()[0]})") from None
    model.to(device).eval()
    return model, config, payload


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
