"""toolwatch.app."""
