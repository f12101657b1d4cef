"""Neural network modules only: no I/O, no plotting."""

from hippo_rep.models.memory import MemoryState, memory_activation
from hippo_rep.models.registry import MODELS, ModelSpec, build_model, model_spec
from hippo_rep.models.temt import Output, TEMt

__all__ = ["MODELS", "MemoryState", "ModelSpec", "Output", "TEMt", "build_model",
           "memory_activation", "model_spec"]
