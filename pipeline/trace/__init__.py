"""The records and the trace file: records (one dataclass per thing a step captures; inside, speculative, ablated and
samples the records of those parts), files (the format: dumps and load), arrays, v1 (the old format read), bounds and
check (the reader's guards). docs/architecture.md's file map says what each holds.
"""
