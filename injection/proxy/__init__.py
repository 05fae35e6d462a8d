"""The live fault proxy: an MCP server in front of a real upstream (stdio or HTTP) that forwards
every call, and answers the calls a scenario's fault is due on with the faulted response (the
same fault engine the workbench replays with), labelling them for ground truth.

Users need :class:`FaultProxy` and :func:`upstream_command`; the command is ``toolwatch proxy``.
The names load on first use (:mod:`toolwatch.lazy`): ``options`` (the serving commands'
options) needs no mcp.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwatch.lazy import lazy_names

if TYPE_CHECKING:
    from toolwatch.injection.proxy.proxy import FaultProxy
    from toolwatch.injection.proxy.upstream import upstream_command

__all__ = ["FaultProxy", "upstream_command"]
__getattr__ = lazy_names(
    __name__,
    {
        "FaultProxy": "toolwatch.injection.proxy.proxy",
        "upstream_command": "toolwatch.injection.proxy.upstream",
    },
)
