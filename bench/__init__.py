"""Benchmarks of evennia-ai. Run all with ``make bench`` (``python -m bench``)."""
