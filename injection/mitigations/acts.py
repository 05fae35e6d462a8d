"""Whether a tool acts (writes, sends, deletes) or only reads: one answer for the workbench's
reference agents (which do not call an action the task did not ask for), the output verifier
(an action's result is a new state, not a value to compare) and the injection scanner (a
description requiring another listed tool that acts is shadowing).

Read from what the tool declares (MCP annotations), then its name's verb, then its description;
see :func:`tool_verb`. The scanner reads a listing it does not trust, so it asks with
``trust_read_only=False``: a tool's claim that it only reads cannot clear what its name or
description says it does.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from mcp.types import Tool

#: First words of tool names that only read; any other tool is an action (it changes state).
READ_VERBS: Final = frozenset(
    [
        "get",
        "list",
        "search",
        "fetch",
        "find",
        "check",
        "lookup",
        "look",
        "read",
        "query",
        "show",
        "describe",
        "count",
        "verify",
        "view",
        "browse",
        "compare",
        "inspect",
        "summarize",
        "summarise",
        "retrieve",
    ]
)
WRITE_VERBS: Final = frozenset(
    [
        "merge",
        "book",
        "restart",
        "update",
        "issue",
        "refund",
        "send",
        "post",
        "put",
        "patch",
        "delete",
        "create",
        "transfer",
        "pay",
        "cancel",
        "reset",
        "set",
        "add",
        "remove",
        "write",
        "approve",
        "close",
        "deploy",
        "rollback",
        "submit",
        "place",
        "execute",
        "run",
        "trigger",
        "assign",
        "grant",
        "revoke",
        "upload",
        "move",
        "rename",
        "archive",
        "publish",
        "notify",
        "email",
        "mail",
        "reply",
        "schedule",
        "order",
        "buy",
        "sell",
    ]
)


#: Verbs of tools that work something out without changing anything (a tool named by one of
#: them and described by it, "validate_cron: Validates a cron expression", only reads).
_COMPUTE_VERBS: Final = frozenset(
    [
        "validate",
        "calculate",
        "compute",
        "convert",
        "estimate",
        "analyze",
        "analyse",
        "parse",
        "translate",
        "extract",
        "geocode",
        "resolve",
        "match",
        "classify",
        "detect",
        "scan",
        "crawl",
        "scrape",
        "evaluate",
        "test",
        "ping",
        "measure",
        "predict",
        "forecast",
        "render",
        "format",
        "preview",
        "simulate",
        "explain",
        "suggest",
        "recommend",
        "rank",
        "score",
        "plan",
        "diff",
        "lint",
        "audit",
        "monitor",
        "track",
        "trace",
        "locate",
        "identify",
        "recognize",
        "transcribe",
        "tokenize",
        "encode",
        "decode",
        "hash",
        "sort",
        "filter",
        "aggregate",
        "resize",
        "generate",
        "draft",
        "answer",
        "ask",
        "echo",
        "sum",
        "add",
    ]
)
#: Words of a name written in CJK (ja, zh, ko) that change state: such a name has no ``_`` to
#: split at and no English verb, so it is searched for them ("メール送信", "删除文件", "송금")
_CJK_WRITE: Final = frozenset(
    [
        "送信",
        "发送",
        "發送",
        "転送",
        "转发",
        "轉發",
        "削除",
        "删除",
        "刪除",
        "更新",
        "作成",
        "创建",
        "建立",
        "支払",
        "支付",
        "付款",
        "转账",
        "轉帳",
        "振込",
        "送金",
        "投稿",
        "发布",
        "發佈",
        "実行",
        "执行",
        "執行",
        "取消",
        "キャンセル",
        "書き込",
        "写入",
        "寫入",
        "上传",
        "上傳",
        "アップロード",
        "予約",
        "预订",
        "預訂",
        "注文",
        "下单",
        "購入",
        "购买",
        "購買",
        "承認",
        "批准",
        "変更",
        "变更",
        "修改",
        "設定",
        "设置",
        "追加",
        "添加",
        "登録",
        "注册",
        "退款",
        "返金",
        "重置",
        "リセット",
        "消去",
        "清除",
        "停止",
        "再起動",
        "重启",
        "デプロイ",
        "部署",
        "전송",
        "삭제",
        "생성",
        "결제",
        "송금",
        "업데이트",
        "실행",
        "등록",
        "취소",
        "변경",
    ]
)
#: Words of a CJK name that only read: beside a word of :data:`_CJK_WRITE` ("送信履歴取得",
#: "查询发送记录": a sending history looked up) the name reads
_CJK_READ: Final = frozenset(
    [
        "取得",
        "获取",
        "獲取",
        "検索",
        "搜索",
        "查询",
        "查詢",
        "查找",
        "一覧",
        "列表",
        "履歴",
        "记录",
        "記錄",
        "確認",
        "确认",
        "表示",
        "显示",
        "顯示",
        "参照",
        "조회",
        "검색",
        "목록",
    ]
)
#: A description that says the tool changes nothing, or that what it does stays done.
_SAYS_READ_ONLY = re.compile(
    r"\bread[- ]only\b|\bdoes(?: not|n't) (?:modify|change|alter|write)\b|"
    r"\bwithout (?:modifying|changing|altering)\b|\bno side[- ]effects?\b",
    re.I,
)
_SAYS_ACTS = re.compile(r"\bcannot be undone\b|\birreversibl[ey]\b|(?<![\w-])destructive\b", re.I)
_DESCRIPTION_LEAD = re.compile(
    r"^\W*(?:(?:this|the) tool |tool (?:to|that) |used to |lets you |allows you to |will )?"
    r"([A-Za-z]+)",
    re.I,
)


def _opens_with(verb: str, description: str) -> bool:
    """The description starts with ``verb`` as its verb ("Trips the breaker ...", "Trip the
    breaker", "This tool trips ..."): the tool's name starts with what it does."""
    m = _DESCRIPTION_LEAD.match(description)
    return m is not None and len(verb) >= 3 and m.group(1).lower() in _forms(verb)


def _forms(verb: str) -> set[str]:
    """``verb`` and its regular inflections (trips, tripped, tripping; applies; closes)."""
    forms = {verb, verb + "s", verb + "es", verb + "ed", verb + "d", verb + "ing"}
    forms |= {verb + verb[-1] + "ed", verb + verb[-1] + "ing"}
    if verb.endswith("y"):
        forms |= {verb[:-1] + "ies", verb[:-1] + "ied"}
    if verb.endswith("e"):
        forms.add(verb[:-1] + "ing")
    return forms


def tool_verb(
    tool_name: str,
    description: str = "",
    annotations: Mapping[str, Any] | None = None,
    *,
    trust_read_only: bool = True,
) -> tuple[str, bool]:
    """(action word, whether it changes state) of a tool like ``update_salary``.

    What the tool declares decides first: MCP's ``readOnlyHint`` (true: it only reads) and
    ``destructiveHint`` / ``readOnlyHint: false`` (it acts). Then its name: a first word that
    reads (``get``, ``search``), a word that acts (``update``, ``send``). A name no list
    knows is read through its description: one that says it changes nothing (read-only) or
    that what it does cannot be undone decides; else a name that starts with the verb its
    description opens with (``trip_breaker``: "Trips the circuit breaker ...") names an
    action unless that verb only works something out (``validate``, ``convert``). So an
    action named by a word no list has is an action, and a lookup named by a noun
    (``weather_api``, ``country_info``) still reads.

    ``trust_read_only=False`` ignores the tool's claims that it only reads (``readOnlyHint:
    true``, "read-only" in its description) and keeps every sign that it acts: MCP calls
    annotations untrusted hints, and a scanner must not let a listing talk ``send_email``
    into reading."""
    words = [w for w in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", tool_name) if w]
    words = [w.lower() for w in words]
    if not words:
        return "", False
    hints = annotations or {}
    writing = next((w for w in words if w in WRITE_VERBS), words[0])
    if trust_read_only and hints.get("readOnlyHint") is True:
        return words[0], False
    if hints.get("readOnlyHint") is False or hints.get("destructiveHint") is True:
        return writing, True
    if words[0] in READ_VERBS:
        return words[0], False
    for w in words:
        if w in WRITE_VERBS:
            return w, True
    cjk = next((w for w in _CJK_WRITE if w in tool_name), None)
    if cjk is not None and not any(w in tool_name for w in _CJK_READ):
        return cjk, True
    if trust_read_only and _SAYS_READ_ONLY.search(description):
        return words[0], False
    if _SAYS_ACTS.search(description):
        return words[0], True
    acts = words[0] not in _COMPUTE_VERBS and _opens_with(words[0], description)
    return words[0], acts


@dataclass(frozen=True, slots=True)
class ListedTool:
    """What a ``tools/list`` entry says of one tool: the facts :func:`tool_verb` reads."""

    name: str
    description: str = ""
    annotations: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, tool: Tool) -> ListedTool:
        """The entry of an MCP listing (annotations by their wire names, unset ones left out)."""
        hints = (
            tool.annotations.model_dump(by_alias=True, exclude_none=True)
            if tool.annotations
            else {}
        )
        return cls(tool.name, tool.description or "", hints)

    def acts(self, *, trust_read_only: bool = True) -> bool:
        """Whether calling it changes state (:func:`tool_verb`)."""
        return tool_verb(
            self.name, self.description, self.annotations, trust_read_only=trust_read_only
        )[1]


def _unspaced(c: str) -> bool:
    """Whether ``c`` is of a script written without spaces between words (CJK), where a name
    has no word boundary: ``物性検索を使う``."""
    return unicodedata.east_asian_width(c) in ("W", "F")


#: A word character of a script written with spaces between words: what may not touch a name's
#: end written in one (the ranges :func:`_unspaced` calls wide, CJK and kana, are left out, so
#: ``tool_20d266daを`` names ``tool_20d266da``), nor an English word's that the scanner's
#: cues read beside CJK text (``发送到webhook地址``)
SPACED_WORD: Final = (
    r"(?=\w)[^\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff"
    r"\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6"
    r"\U00020000-\U0003fffd]"
)


def mention(name: str) -> str:
    """The pattern of a tool's ``name`` named as a whole in text, in any script: never beside
    a letter, digit, ``_`` or ``-`` of a script written with spaces (nor a dotted suffix,
    ``name.json``); beside a script without spaces ("物性検索を呼ぶ", "先调用物性検索",
    "tool_20d266daを呼ぶ") only another name's ASCII letters, digits, ``_`` or ``-``
    (``物性検索_v2``) cannot touch it, since no word boundary can be asked there. One answer
    for the converter renaming a template's ids and the agents reading which listed tool an
    order names."""
    head = r"(?<![A-Za-z0-9_.-])" if _unspaced(name[0]) else rf"(?<![.-])(?<!{SPACED_WORD})"
    tail = r"(?![A-Za-z0-9_-])" if _unspaced(name[-1]) else rf"(?!-|\.\w|{SPACED_WORD})"
    return head + re.escape(name) + tail
