"""pigp's benchmark suite: ``python -m benchmarks`` (the index is ``benchmarks/README.md``)."""
