"""The parts of examples/paged_kv_cache.py: the model (model.py), the schedulers (scheduler.py) and the
measurements and report (report.py)."""
