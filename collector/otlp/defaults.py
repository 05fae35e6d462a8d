"""The receiver's defaults, apart from the receiver (uvicorn, Arrow, the store): ``toolwatch
collector --help`` shows them without loading the server. Standard library only."""

from __future__ import annotations

from typing import Final

DEFAULT_PORT: Final = 4318
DEFAULT_MAX_BODY: Final = 16 * 1024 * 1024  # bytes, on the wire and after decompression
DEFAULT_QUEUE_LIMIT: Final = 100_000  # spans admitted but not yet durable
DEFAULT_QUEUE_BYTES: Final = 128 * 1024 * 1024  # bytes held by requests being read ... written
DEFAULT_COMPACT_INTERVAL: Final = 300.0  # seconds
DEFAULT_PROGRESS_INTERVAL: Final = 60.0  # seconds between "stored ..." log lines under traffic

DEFAULT_HEADER_TIMEOUT: Final = 10.0
DEFAULT_BODY_TIMEOUT: Final = 30.0
#: seconds for a whole body: an OTLP exporter gives up on a request after 10 s (the SDKs'
#: default export timeout), so two minutes is ample for a 16 MiB body on a slow link
DEFAULT_BODY_DEADLINE: Final = 120.0
DEFAULT_MAX_CONNECTIONS: Final = 4096
