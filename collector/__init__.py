"""toolwatch.collector."""
