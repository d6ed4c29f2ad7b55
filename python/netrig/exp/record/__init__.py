"""The on-disk contract of a results directory: its files (files.py) and each run's
record (run.py), written once, last, by every executor and read back the same everywhere."""
