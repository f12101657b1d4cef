"""Neural network modules only: no I/O, no plotting."""

from hippo_rep.models.temt import MemoryState, Output, TEMt, build_model, memory_activation

__all__ = ["MemoryState", "Output", "TEMt", "build_model", "memory_activation"]
