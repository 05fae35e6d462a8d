"""toolwatch.scenarios."""
