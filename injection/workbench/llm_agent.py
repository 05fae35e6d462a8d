"""An agent driven by any OpenAI-compatible chat-completions endpoint (optional, off by default).

Configured only from the environment, so no key ever lands in a config file or a store row:

* ``TOOLWATCH_LLM_BASE_URL`` — e.g. ``http://127.0.0.1:8000/v1`` (``/chat/completions`` is
  appended);
* ``TOOLWATCH_LLM_MODEL`` — the model name the endpoint expects;
* ``TOOLWATCH_LLM_API_KEY`` — sent as ``Authorization: Bearer``; optional for local servers.

The loop is the standard tool-calling one: the MCP tools are offered as functions, each
assistant message is one model step (its ``id`` is declared with ``model_response``, so all
tool calls of one message share a response id), every requested call goes through the
(instrumented, possibly mitigated) MCP client, and its outcome is sent back as a ``tool``
message. The final assistant text is the answer the checks read.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import Any, Final

import httpx2
from mcp.types import CallToolResult

from toolwatch.documents import loads_json
from toolwatch.injection.faults.scenario import Scenario
from toolwatch.injection.mitigations.failures import first_line
from toolwatch.injection.mitigations.results import result_text
from toolwatch.injection.mitigations.wrapper import try_call
from toolwatch.injection.workbench.agent import Agent, AgentConfig
from toolwatch.injection.workbench.trajectory import AgentEvent, Trajectory
from toolwatch.instrumentation import model_response

log = logging.getLogger(__name__)

ENV_BASE_URL: Final = "TOOLWATCH_LLM_BASE_URL"
ENV_MODEL: Final = "TOOLWATCH_LLM_MODEL"
ENV_API_KEY: Final = "TOOLWATCH_LLM_API_KEY"

SYSTEM_PROMPT: Final = (
    "You are an assistant that completes the user's task by calling the available tools. "
    "When you have what you need, answer the user directly."
)


class LLMNotConfigured(RuntimeError):
    """The environment does not name an endpoint and model."""


class LLMError(RuntimeError):
    """The endpoint answered with something that is not a chat completion."""

    #: its text is the endpoint's URL and status, never a model's or a tool's words
    message_is_content_free = True


@dataclass(frozen=True)
class LLMSettings:
    base_url: str
    model: str
    api_key: str | None = None
    max_steps: int = 12
    request_timeout: float = 60.0

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> LLMSettings:
        env = dict(os.environ if env is None else env)
        base = env.get(ENV_BASE_URL, "").strip()
        model = env.get(ENV_MODEL, "").strip()
        missing = [n for n, v in ((ENV_BASE_URL, base), (ENV_MODEL, model)) if not v]
        if missing:
            raise LLMNotConfigured(
                "the llm agent is off: set " + " and ".join(missing) + " (and "
                f"{ENV_API_KEY} if the endpoint needs a key) to an OpenAI-compatible endpoint"
            )
        return cls(base_url=base.rstrip("/"), model=model, api_key=env.get(ENV_API_KEY) or None)

    @property
    def completions_url(self) -> str:
        if self.base_url.endswith("/chat/completions"):
            return self.base_url
        return f"{self.base_url}/chat/completions"


def tool_to_function(tool: Any) -> dict[str, Any]:
    """An MCP ``Tool`` as an OpenAI ``tools`` entry."""
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": tool.input_schema or {"type": "object", "properties": {}},
        },
    }


def outcome_text(result: CallToolResult | None, error: str | None) -> str:
    """What the model is told a call returned (errors included, as a real host would)."""
    if error is not None:
        return f"Error: {error}"
    assert result is not None
    text = result_text(result, annotations=True)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    return f"Error: {text}" if result.is_error else text


class LLMAgent(Agent):
    """Tool-calling loop over an OpenAI-compatible endpoint."""

    name = "llm"

    def __init__(
        self,
        settings: LLMSettings,
        config: AgentConfig | None = None,
        *,
        http: httpx2.AsyncClient | None = None,
    ) -> None:
        super().__init__(config)
        self.settings = settings
        self._http = http

    @classmethod
    def from_env(cls, config: AgentConfig | None = None) -> LLMAgent:
        return cls(LLMSettings.from_env(), config)

    async def _complete(
        self, http: httpx2.AsyncClient, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self.settings.api_key:
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        body = {
            "model": self.settings.model,
            "messages": messages,
            "tools": tools,
            "tool_choice": "auto",
            "temperature": 0,
            "seed": self.config.seed,
        }
        response = await http.post(self.settings.completions_url, json=body, headers=headers)
        if response.status_code != 200:
            raise LLMError(f"{self.settings.completions_url} answered HTTP {response.status_code}")
        try:
            data: dict[str, Any] = response.json()
            data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMError(
                f"{self.settings.completions_url} did not return a chat completion"
            ) from exc
        return data

    async def run(
        self, scenario: Scenario, client: Any, trajectory: Trajectory, *, conversation_id: str
    ) -> str:
        listed = await client.list_tools()
        tools = [tool_to_function(t) for t in listed.tools]
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": scenario.task},
        ]
        http = self._http or httpx2.AsyncClient(timeout=self.settings.request_timeout)
        try:
            for step in range(self.settings.max_steps):
                data = await self._complete(http, messages, tools)
                message = data["choices"][0]["message"]
                rid = str(data.get("id") or f"{conversation_id}/r{step}")
                calls = message.get("tool_calls") or []
                messages.append(
                    {
                        "role": "assistant",
                        "content": message.get("content"),
                        **({"tool_calls": calls} if calls else {}),
                    }
                )
                if not calls:
                    return str(message.get("content") or "")
                with model_response(rid, conversation_id=conversation_id):
                    for call in calls:
                        messages.append(await self._execute(client, trajectory, call))
            trajectory.events.append(AgentEvent("gave_up", None, "step limit"))
            return "I could not finish the task within the step limit."
        finally:
            if self._http is None:
                await http.aclose()

    async def _execute(
        self, client: Any, trajectory: Trajectory, call: dict[str, Any]
    ) -> dict[str, Any]:
        fn = call.get("function") or {}
        name = str(fn.get("name", ""))
        try:
            arguments = loads_json(fn.get("arguments") or "{}")
            if not isinstance(arguments, dict):
                raise ValueError("arguments are not an object")
        except ValueError as exc:
            content = f"Error: the arguments are not a JSON object ({exc})"
        else:
            result, failure = await try_call(
                lambda timeout: client.call_tool(name, arguments, read_timeout_seconds=timeout),
                self.config.call_timeout,
            )
            error = None if failure is None else first_line(failure) or type(failure).__name__
            content = outcome_text(result, error)
        return {"role": "tool", "tool_call_id": call.get("id", ""), "content": content}
