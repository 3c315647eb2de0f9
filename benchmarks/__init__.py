"""The benchmark suite of ``python -m ms_memcopy bench`` (installed as ``ms_memcopy.benchmarks``).

Modules, one job each:

- ``cli``: arguments, the run, progress, output files;
- ``settings``: the sizes, batch counts and timing budgets of the smoke, quick and full modes;
- ``timing``: calibrated, interleaved timing of loops (C-timed or Python-timed);
- ``native``: ctypes binding of libms_memcopy_bench.so (C timing loops: std::memcpy baselines and
  ACL calls timed without Python in the loop);
- ``baselines``: the numpy and C++ baselines over given buffers;
- ``ms_graphs``: GRAPH_MODE cells: our primitives, MindSpore built-ins, the empty graph;
- ``cases_runtime``, ``cases_primitives``, ``cases_blocks``, ``cases_mixed``, ``cases_eager``: what is
  measured, as cases of "ours" and baselines;
- ``targets``: the project's speed goals evaluated on the results;
- ``report``: the table and the JSON;  ``plot``: the PNG (needs matplotlib).
"""
