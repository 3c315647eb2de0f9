"""acl.rt: devices, contexts, streams, events, memory and memory copies in pyACL's conventions.

Every call parses its positional arguments as pyACL's C wrapper of the same call (PyArg_ParseTuple,
see ms_memcopy/_pyacl/args.py) and returns the aclError ``ret``, or ``(value, ret)`` when the C call
has an output (``get_mem_info``: ``(free, total, ret)``); it never raises on an ACL failure.

* Pointers, sizes and stream or event handles (format ``k``) are ints, bool included, masked to 64 bits:
  ``free(-1)`` passes ``0xFFFF_FFFF_FFFF_FFFF`` and returns the C call's code. numpy integers, None and
  floats are a TypeError.
* Device ids, timeouts, kinds, policies and memset values (``i``) are ints or ``__index__`` objects that
  fit a C int; flags (``I``) are masked to 32 bits. A value out of range is a TypeError, as pyACL reports
  every parse failure.
* Every argument is required (``malloc(size, policy)``, ``set_memcpy_desc(desc, kind, src, dst, count,
  config)`` with config 0). Keyword arguments are a TypeError.
* The calls without arguments (``get_device``, ``get_device_count``, ``get_run_mode``,
  ``synchronize_device``, ``get_context``, ``create_stream``, ``create_event``) ignore any they are given,
  as pyACL's wrappers never read them.

Extension of this project (pyACL has no batch wrapper): ``memcpy_batch*`` take Python lists, in pyACL's list
convention (as ``acl.op.execute_v2``): the C counts (numBatches, numAttrs) are the list lengths and are not
arguments. Lists of different lengths (dsts, dest_maxs, srcs, sizes; attrs, attrs_indexes) return
ACL_ERROR_INVALID_PARAM (100000) without calling the runtime, the ACL layer's code for inconsistent array
arguments. The calls with a failIndex return ``(fail_index, ret)``; fail_index starts at SIZE_MAX, which is
what it stays at when no single copy is at fault.
"""
from .._pyacl.rt import *  # noqa: F403
from .._pyacl.rt import __all__  # noqa: F401
