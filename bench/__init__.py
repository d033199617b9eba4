"""Benchmarks of dongjing: the five workloads W1-W5 in several systems, one harness.

Run with ``python -m bench`` (see ``docs/performance.md``). Importing this package must
not import NumPy: the thread-count environment variables are set first.
"""
