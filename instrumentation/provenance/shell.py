"""Which parts of a shell command send data off the machine.

A command line is split into simple commands (quote-aware, heredoc bodies attached to the
command that reads them, comments dropped). A segment sends data when it runs a network program
(``curl``, ``ssh``, ``gh``, ``Invoke-WebRequest`` …) or a network subcommand (``git push``,
``docker push``, ``npm publish`` …) — unless every target of a URL program is loopback
(``curl localhost:8000/health`` stays on the machine). Interpreter code that uses a network
library (``python -c``, ``python - <<EOF``, a script written and run by the same command) is
the ``script`` class when it is the only network use: the arguments then hold code, not the
data it sends, and code copied from project files is normal there.

A heredoc fed to ``cat``/``tee`` is data: a ``curl`` line inside it is not a command.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Final

NET_PROGRAMS: Final = frozenset(
    {
        "curl", "wget", "nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp", "sftp", "ftp",
        "rsync", "aria2c", "lynx", "w3m", "gh", "aws", "gsutil", "gcloud", "az", "s3cmd",
        "rclone", "mail", "sendmail", "mutt", "mailx", "websocat", "grpcurl",
        "invoke-webrequest", "invoke-restmethod", "iwr", "irm", "start-bitstransfer",
        "send-mailmessage",
    }
)  # fmt: skip
#: network programs whose targets are URL or host words, which may all be loopback
URL_PROGRAMS: Final = frozenset(
    {
        "curl", "wget", "nc", "ncat", "netcat", "socat", "telnet", "websocat", "grpcurl",
        "aria2c", "invoke-webrequest", "invoke-restmethod", "iwr", "irm",
    }
)  # fmt: skip
NET_SUBCOMMANDS: Final = {
    "git": frozenset({"push", "pull", "fetch", "clone", "ls-remote", "send-email"}),
    "docker": frozenset({"push", "login"}),
    "podman": frozenset({"push"}),
    "npm": frozenset({"publish"}),
    "twine": frozenset({"upload"}),
    "cargo": frozenset({"publish"}),
    "certutil": frozenset({"-urlcache"}),
}
INTERPRETERS: Final = frozenset(
    {"python", "py", "node", "deno", "bun", "ruby", "perl", "php", "uv", "uvx", "pwsh",
     "powershell"}
)  # fmt: skip
NET_LIBRARIES: Final = re.compile(
    r"requests\.(get|post|put|patch|delete|request|Session)|urllib\.request|urlopen|urllib3|"
    r"http\.client|httpx|aiohttp|socket\.(socket|create_connection)|smtplib|ftplib|paramiko|"
    r"websocket|\bfetch\(|axios|https?\.(request|get)\(|Net\.WebClient|HttpClient|"
    r"Net::HTTP|open-uri|LWP::|file_get_contents\(\s*['\"]https?:|Invoke-WebRequest|"
    r"Invoke-RestMethod|Start-BitsTransfer|Send-MailMessage|Net\.Sockets",
    re.I,
)
_POWERSHELL_NET: Final = re.compile(
    r"Net\.WebClient|HttpClient|Net\.Sockets|Invoke-WebRequest|Invoke-RestMethod|"
    r"Start-BitsTransfer|Send-MailMessage",
    re.I,
)
#: words before the program that are not the program
_WRAPPERS: Final = frozenset(
    {
        "sudo", "nohup", "time", "timeout", "xargs", "env", "command", "exec", "watch", "nice",
        "stdbuf", "doas", "then", "do", "else", "!", "&", "cmd", "/c", "-command", "-c", "if",
        "while", "until",
    }
)  # fmt: skip
_ASSIGNMENT: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_HEREDOC: Final = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_HOSTISH: Final = re.compile(
    r"^(?:[a-z][a-z0-9+.-]*://\S+|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?::\d+)?\S*|localhost\S*|"
    r"\[?::1\]?\S*|\$\S+)$",
    re.I,
)
#: curl / wget / Invoke-WebRequest options whose value is not a target
_VALUE_OPTIONS: Final = frozenset(
    {
        "-o", "--output", "-O", "--output-document", "-d", "--data", "--data-raw",
        "--data-binary", "--data-urlencode", "--json", "-H", "--header", "-X", "--request",
        "-u", "--user", "-w", "--write-out", "-A", "--user-agent", "-e", "--referer", "-b",
        "--cookie", "-c", "--cookie-jar", "-F", "--form", "-T", "--upload-file", "-m",
        "--max-time", "--connect-timeout", "--retry", "-K", "--config", "-P",
        "--directory-prefix", "-method", "-body", "-headers", "-outfile", "-contenttype",
        "-timeoutsec", "-infile",
    }
)  # fmt: skip
LOOPBACK: Final = re.compile(
    r"^(?:[a-z][a-z0-9+.-]*://)?(?:[^@/\s]*@)?(?:localhost|127(?:\.\d{1,3}){3}|0\.0\.0\.0|"
    r"\[?::1\]?|host\.docker\.internal)(?::\d+)?(?:[/?#]|$)",
    re.I,
)
_SEPARATORS: Final = frozenset(";&|\n()`{}")


@dataclass(slots=True)
class Segment:
    """One simple command of a shell line: its text (quotes kept) and its heredoc bodies."""

    text: str
    body: str = ""
    #: the words, split once (a command's words are read two or three times: its program,
    #: its targets, its subcommand; ``shlex`` was an eighth of an import's provenance pass)
    _words: list[str] | None = field(default=None, repr=False, compare=False)

    def argv(self) -> list[str]:
        if self._words is None:
            try:
                self._words = shlex.split(self.text, comments=False)
            except ValueError:  # unbalanced quotes: fall back to whitespace
                self._words = self.text.split()
        return self._words

    def program(self) -> tuple[int, str]:
        """(index of the program word, its lower-case base name without ``.exe``)."""
        words = self.argv()
        i = 0
        while i < len(words) and (
            words[i].lower() in _WRAPPERS
            or _ASSIGNMENT.match(words[i])
            or (i > 0 and words[i - 1] == "timeout")
        ):
            i += 1
        if i >= len(words):
            return i, ""
        name = words[i].replace("\\", "/").rsplit("/", 1)[-1].lower().removeprefix("&")
        return i, name.removesuffix(".exe")

    def sent(self) -> str:
        return self.text + ("\n" + self.body if self.body else "")


def segments(command: str) -> list[Segment]:
    """Split a shell command into simple commands: ``;`` ``&`` ``|`` newlines ``$(`` ``(``
    ``)`` ``{`` ``}`` and backticks outside quotes separate them; heredoc bodies are attached
    to the command that reads them; ``#`` comments are dropped."""
    out: list[Segment] = []
    current: list[str] = []
    tags: list[str] = []
    bodies: list[str] = []
    i, n = 0, len(command)
    quote: str | None = None

    def close() -> None:
        text = "".join(current).strip()
        if text or bodies:
            out.append(Segment(text, "\n".join(bodies)))
        current.clear()
        bodies.clear()

    while i < n:
        ch = command[i]
        if quote is not None:
            current.append(ch)
            if ch == quote:
                quote = None
            elif ch == "\\" and quote == '"' and i + 1 < n:
                current.append(command[i + 1])
                i += 1
            i += 1
            continue
        if ch in "'\"":
            quote = ch
            current.append(ch)
            i += 1
        elif ch == "\\" and i + 1 < n:
            current.append(ch + command[i + 1])
            i += 2
        elif ch == "#" and (not current or current[-1].isspace()):
            end = command.find("\n", i)
            i = n if end < 0 else end
        elif ch == "<" and command.startswith("<<", i) and not command.startswith("<<<", i):
            match = _HEREDOC.match(command, i)
            if match:
                tags.append(match.group(2))
                current.append(match.group(0))
                i = match.end()
            else:
                current.append(ch)
                i += 1
        elif ch == "\n" and tags:
            i = _read_bodies(command, i + 1, tags, bodies)
            tags = []
            close()
        elif command.startswith("$(", i):
            close()
            i += 2
        elif ch in _SEPARATORS:
            close()
            i += 1
        else:
            current.append(ch)
            i += 1
    close()
    return out


def _read_bodies(command: str, j: int, tags: list[str], bodies: list[str]) -> int:
    """Read the heredoc bodies that follow a line (one per tag, in order); returns the end."""
    n = len(command)
    for tag in tags:
        lines = []
        while j < n:
            end = command.find("\n", j)
            end = n if end < 0 else end
            line = command[j:end]
            j = end + 1
            if line.strip() == tag:
                break
            lines.append(line)
        bodies.append("\n".join(lines))
    return j


def _loopback_only(segment: Segment, program_at: int) -> bool:
    """Every target word of a URL program is loopback (and it has one)."""
    targets = []
    skip = False
    for word in segment.argv()[program_at + 1 :]:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = word.split("=", 1)[0].lower() in _VALUE_OPTIONS and "=" not in word
        elif _HOSTISH.match(word):
            targets.append(word)
    return bool(targets) and all(LOOPBACK.match(t) for t in targets)


def network_texts(command: str) -> tuple[str, list[str]]:
    """(egress class, the texts that leave the machine) of a shell command line.

    The class is ``shell`` when a network program or subcommand sends, ``script`` when only
    interpreter code does, ``none`` otherwise.
    """
    if not command:
        return "none", []
    parts = segments(command)
    sent: list[str] = []
    code_only = True
    runs_script = False
    for segment in parts:
        at, program = segment.program()
        if not program:
            continue
        if program in NET_PROGRAMS:
            if program in URL_PROGRAMS and _loopback_only(segment, at):
                continue
            sent.append(segment.sent())
            code_only = False
            continue
        subcommands = NET_SUBCOMMANDS.get(program)
        if subcommands is not None:
            words = [
                w.lower()
                for w in segment.argv()[at + 1 :]
                if not w.startswith("-") or w in subcommands
            ]
            if any(w in subcommands for w in words[:3]):  # git -C dir push: skip option values
                sent.append(segment.sent())
                code_only = False
                continue
        base = re.sub(r"[\d.]+$", "", program)  # python3.12 -> python
        if base in INTERPRETERS or program in INTERPRETERS:
            code = segment.text + "\n" + segment.body
            if NET_LIBRARIES.search(code):
                sent.append(code)
            else:
                runs_script = True
    if runs_script:  # a script this command writes (a heredoc) and runs: its code counts
        sent.extend(s.body for s in parts if s.body and NET_LIBRARIES.search(s.body))
    if not sent:  # .NET network calls inside PowerShell expressions
        code = "\n".join(s.text for s in parts)
        if _POWERSHELL_NET.search(code):
            sent.append(code)
    if not sent:
        return "none", []
    return ("script" if code_only else "shell"), sent
