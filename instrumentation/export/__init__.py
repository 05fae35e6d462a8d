"""Getting spans out: toolwatch's OTLP/HTTP tracer provider (only toolwatch's spans by default),
and the replay that re-sends stored call records as the spans the instrumentation would have
sent (for importers and the simulator). Users import from :mod:`toolwatch.instrumentation`."""
