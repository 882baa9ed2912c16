"""The benchmarks of `python -m pipeline bench`: alone (traced against plain generate) and classroom (a class at once).
"""
