"""The command-line tools, apart from the run-time code: ``info`` (``python -m ms_memcopy info``) and
``npu_check`` (``python -m ms_memcopy npu-check``); ``bench`` is the benchmark suite,
``ms_memcopy.benchmarks`` (the checkout's benchmarks/ directory). Importing this package imports nothing.
"""
