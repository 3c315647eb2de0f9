"""The copy primitives: Cell-compatible ops.Custom primitives over the ACL copy kernels.

Each works inside nn.Cell.construct, inside ms.jit and eagerly, in GRAPH_MODE and PYNATIVE_MODE.
Importing this module imports MindSpore.
"""
from .batch import MemcpyBatch
from .blocks import CopyBlocks, SwapBlocks
from .condition import MemcpyWithCondition
from .desc import MemcpyWithDesc
from .memcpy2d import Memcpy2D

__all__ = ["MemcpyBatch", "Memcpy2D", "MemcpyWithDesc", "MemcpyWithCondition", "SwapBlocks", "CopyBlocks"]
