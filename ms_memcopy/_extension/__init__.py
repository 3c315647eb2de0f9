"""The CustomOpBuilder module of the copy ops (the op_def route): built, generated, loaded and called.

One import path, :mod:`.op_def_route`, for the jobs of its modules: ``route_build`` (sources, flags,
build directories, fingerprint; ``build_recipe``, the one compile recipe of every C++ build),
``route_codegen`` (the op_def YAML and C++ tables generated from configs/ops/*.yaml), ``route_load``
(load, the graph pass), ``route_call`` (direct calls), ``route_ascend_check`` (the Ascend compile
check); ``_paths`` (where the built libraries, headers and configs are) and ``_kernels_lib`` (the
kernels library's counters and names). Importing this package imports nothing.
"""
