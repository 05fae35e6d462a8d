"""Injection: anomalies rewritten into stored spans and the study's experiment (``spans``,
``experiment``), faults injected into real MCP responses (``faults``, ``proxy``), the
reproduce → intervene → mitigate ``workbench``, and the client-side ``mitigations`` a production
agent can stack."""
