"""pygraphrt benchmarks: see run.py (``scripts/bench OUTDIR``)."""
