"""toolwatch.detection."""
