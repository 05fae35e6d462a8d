"""The fault engine: decides, call by call, whether a scenario's fault is due (occurrence rules that
count retries too) and applies the action.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from toolwatch.injection.faults.actions import ACTIONS
from toolwatch.injection.faults.edits import error_result, label_result, rename_schema, tool_in
from toolwatch.injection.faults.effects import CallPlan, FaultEffect, ListingEffect
from toolwatch.injection.faults.scenario import (
    FaultSpec,
    Scenario,
    argument_errors,
    validation_errors_text,
)


class FaultEngine:
    """One armed fault. Every method is a pure function of its arguments and the spec."""

    def __init__(self, fault: FaultSpec, label: str, *, seed: int = 0) -> None:
        if fault.action not in ACTIONS:
            raise ValueError(f"unknown fault action {fault.action!r}")
        self.fault = fault
        self.label = label
        self.seed = seed
        self.params: Mapping[str, Any] = fault.params

    @classmethod
    def for_scenario(cls, scenario: Scenario, *, seed: int = 0) -> FaultEngine:
        return cls(scenario.fault, scenario.label, seed=seed)

    # -- which calls -------------------------------------------------------------------------

    def targets(self, tool: str) -> bool:
        return tool == self.fault.tool

    def due(self, occurrence: int) -> bool:
        """Whether occurrence ``occurrence`` (1-based) is faulted under the occurrence rule."""
        return self.fault.occurrence.due(occurrence, seed=self.seed, key=self.label)

    @property
    def counts_listings(self) -> bool:
        """The fault lives in ``tools/list`` (C2, C4 in a description): occurrences are
        listings, and calls of the tool are only labelled while its listing is poisoned."""
        action = self.fault.action
        return action == "poison_description" or (
            action == "inject_exfiltration_instruction"
            and self.params.get("placement") == "description"
        )

    @property
    def rewrites_listing(self) -> bool:
        """Whether ``tools/list`` changes when the fault is due: A4 announces renamed
        arguments (the server enforces them) and, only with ``rename_output_schema``, renamed
        result fields; by default the declared output schema stays, so drifted results break
        the declaration the client holds."""
        if self.counts_listings:
            return True
        p = self.params
        return self.fault.action == "alter_schema" and bool(
            p.get("argument_renames") or (p.get("field_renames") and p.get("rename_output_schema"))
        )

    def describe(self) -> str:
        """One line saying what is armed (for the proxy's start-up message)."""
        basis = "tools/list response" if self.counts_listings else "call"
        rule = self.fault.occurrence.describe().replace("call", basis, 1)
        extras = ", ".join(f"{k}={v!r}" for k, v in _summary_params(self.params).items())
        return (
            f"{self.fault.fault_id} {self.fault.action} on tool {self.fault.tool!r} at {rule}"
            f"{' (' + extras + ')' if extras else ''}; label {self.label}"
        )

    # -- tools/call ----------------------------------------------------------------------------

    def plan(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        occurrence: int,
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> CallPlan:
        args = dict(arguments or {})
        if not self.targets(tool) or self.counts_listings or not self.due(occurrence):
            return CallPlan(tool, occurrence, False, args)
        renames = dict(self.params.get("argument_renames") or {})
        if self.fault.action == "alter_schema" and renames:
            named = any(old in args or new in args for old, new in renames.items())
            if not named and not self.params.get("field_renames") and "response" not in self.params:
                # a call that names no renamed argument cannot tell the drifted interface
                # from the old one: the fault does not touch it (not exercised, not labelled);
                # a drifted result (renamed fields, a replacement response) still reaches it
                return CallPlan(tool, occurrence, False, args)
            listed = tool_in(tools, tool)
            schema = rename_schema((listed or {}).get("inputSchema"), renames)
            problems = [f"{old}: unexpected argument" for old in renames if old in args]
            problems += [p for p in argument_errors(schema, args) if p not in problems]
            if problems:
                reject = error_result(validation_errors_text(tool, problems), self.label, None)
                return CallPlan(tool, occurrence, True, args, call_upstream=False, reject=reject)
            back = {new: old for old, new in renames.items()}
            args = {back.get(k, k): v for k, v in args.items()}
        return CallPlan(tool, occurrence, True, args, call_upstream=self._needs_clean())

    def _needs_clean(self) -> bool:
        """Whether the fault reads the clean result (otherwise the upstream is not called: a
        denied or failed call does not run, so it has no side effects)."""
        action, p = self.fault.action, self.params
        if action in ("replace_with_error", "replace_with_403", "return_irrelevant"):
            return False
        if action == "delay":
            return p.get("mode", "sleep") == "sleep"
        if action in ("inject_stale_data", "return_conflicting", "alter_schema", "return_empty"):
            return "response" not in p
        return True

    def apply(self, plan: CallPlan, clean: Mapping[str, Any] | None) -> FaultEffect:
        """The effect of a planned call given the upstream's clean result (``None`` when the
        plan said not to call it)."""
        if plan.reject is not None:
            return FaultEffect(True, result=plan.reject, note="call rejected: old argument names")
        if not plan.due:
            return FaultEffect(False, result=None if clean is None else dict(clean))
        return ACTIONS[self.fault.action](self, plan, None if clean is None else dict(clean))

    def call(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        clean: Mapping[str, Any],
        tools: Sequence[Mapping[str, Any]] = (),
        occurrence: int = 1,
    ) -> FaultEffect:
        """Plan and apply in one step, for replaying a recorded clean result."""
        plan = self.plan(tool, arguments, occurrence, tools)
        return self.apply(plan, clean if plan.call_upstream else None)

    # -- tools/list ----------------------------------------------------------------------------

    def rewrite_listing(
        self, tools: Sequence[Mapping[str, Any]], *, listing: int, next_call: int
    ) -> ListingEffect:
        """The ``tools/list`` the client sees. ``listing`` is this listing's 1-based number,
        ``next_call`` the number the target tool's next call will have: A4 shows the drifted
        schema exactly when that next call will be served drifted."""
        out = [copy.deepcopy(dict(t)) for t in tools]
        if not self.rewrites_listing:
            return ListingEffect(out, False)
        due = self.due(listing) if self.counts_listings else self.due(next_call)
        if not due:
            return ListingEffect(out, False)
        target = next((t for t in out if t.get("name") == self.fault.tool), None)
        if target is None:
            return ListingEffect(out, False, f"no tool {self.fault.tool!r} in tools/list", True)
        p = self.params
        if self.fault.action == "alter_schema":
            before = copy.deepcopy(target)
            if p.get("argument_renames"):
                target["inputSchema"] = rename_schema(
                    target.get("inputSchema"), p["argument_renames"]
                )
            if (
                p.get("rename_output_schema")
                and p.get("field_renames")
                and target.get("outputSchema")
            ):
                target["outputSchema"] = rename_schema(target["outputSchema"], p["field_renames"])
            if target == before:  # no renamed argument (or output schema) in the listing
                return ListingEffect(out, False, "nothing to rename in the tool's schema", True)
            return ListingEffect(out, True, "schema renamed", True)
        original = target.get("description") or ""
        if self.fault.action == "poison_description":
            if "description" in p:
                target["description"] = p["description"]
            else:
                target["description"] = f"{original}\n\n{p['append']}" if original else p["append"]
        else:
            target["description"] = (
                f"{original}\n\n{p['instruction']}" if original else p["instruction"]
            )
        return ListingEffect(out, True, "description rewritten", True)

    def poisoned_after(
        self, tools: Sequence[Mapping[str, Any]], effect: ListingEffect, before: bool
    ) -> bool:
        """Whether the poisoned description is in force once this listing (the upstream's
        ``tools``, rewritten into ``effect``) is served: a listing naming the target replaces
        what the client holds; one without it (another page) changes nothing."""
        if not self.counts_listings or tool_in(tools, self.fault.tool) is None:
            return before
        return effect.applied

    def listed_call(self, clean: Mapping[str, Any], *, poisoned: bool) -> FaultEffect:
        """A call of the target tool of a ``tools/list`` fault (C2, C4 in a description): its
        result is the clean one, labelled while the poisoned description is in force, since
        the agent made the call under it."""
        if not poisoned:
            return FaultEffect(False, dict(clean), note="clean listing in force")
        return FaultEffect(
            True, label_result(clean, self.label), note="served under a poisoned listing"
        )


def _summary_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The params worth printing at start-up (short scalars, never document text)."""
    keep = (
        "delay_ms",
        "mode",
        "error_after_ms",
        "as",
        "status",
        "code",
        "jsonrpc_code",
        "required_role",
        "placement",
        "rename_output_schema",
    )
    out = {k: params[k] for k in keep if k in params}
    if "argument_renames" in params:
        out["argument_renames"] = dict(params["argument_renames"])
    if "field_renames" in params:
        out["field_renames"] = dict(params["field_renames"])
    if "patch" in params:
        out["patch"] = sorted(params["patch"])
    return out
