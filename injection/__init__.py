"""toolwatch.injection."""
