"""Cells built on the primitives (moved from ms_memcopy/nn.py; split into one module per job next)."""
from .queue import *  # noqa: F401,F403
from .queue import __all__  # noqa: F401
