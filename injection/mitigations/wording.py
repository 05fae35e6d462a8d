"""The scanner's wording cues: the vocabulary and one pattern per category of text that steers
the agent (overrides, dictated replies, addresses to an AI, personas, exfiltration, argument
tampering, concealment, planted actions, conditional triggers, redirects, fake system text,
other languages' usual phrasings). Data, kept apart from how it is applied
(:mod:`toolwatch.injection.mitigations.instructions`: readings, listing context, hits).

Written against ``benchmarks/data/scanner_set.jsonl``, ``scanner_dev2.jsonl`` and
``scanner_dev3.jsonl`` only; see
``benchmarks/bench_scanner.py`` for how they are measured on text they were not written on.
"""

from __future__ import annotations

import re
from typing import Final

from toolwatch.injection.mitigations.wording_languages import (
    ADDRESS,
    MULTILINGUAL,
    OWNED_MESSAGES,
    SEND_WHERE,
    SENDS_OWNED,
    THIRD_SENDS,
)

# --------------------------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------------------------

_AI = (
    r"(?:ai|a\.i\.|assistants?|agents?|models?|llms?|language models?|chatbots?|bots?|"
    r"copilots?|gpts?)"
)
_OBJ = (
    r"(?:instructions?|directions?|directives?|guidance|prompts?|rules|guidelines|policies|"
    r"task|question|request|constraints|commands?|orders|settings|budget|role|system prompt)"
)
#: the user's data an order to send names, beside e-mails, messages and contents, which may
#: be the medium instead ("sends a summary email": :data:`_MAIL_DATA`)
_HELD = (
    r"(?:conversation|chat|history|context|session(?:'s)? (?:token|id|cookie)|"
    r"access tokens?|auth tokens?|tokens?|credentials?|passwords?|passphrases?|secrets?|"
    r"api[ _-]?keys?|private keys?|ssh|id_rsa|id_ed25519|\.env\b|\.aws|hosts\.yml|"
    r"clipboard|files? (?:it|you|they) (?:have )?(?:opens?|reads?|read)|each file|every file|"
    r"the files? (?:you|it) (?:have )?(?:read|opened)|customer list|"
    r"user'?s? (?:full )?(?:name|e-?mail|address|question|query|request|location|files?|card|"
    r"login|data|details|prompt|input)|card numbers?|address details|original (?:question|query|"
    r"request|input)|printenv|environment variables?|prior answers|previous answers|"
    r"the (?:full|entire|whole) (?:conversation|history)|(?:full|entire|whole) (?:document|file|"
    r"page|email|message) (?:text|contents?|body)|(?:previous|earlier|prior) (?:messages|turns))"
)
_DATA = rf"(?:{_HELD}|messages?|contents?|e-?mails?)"
#: e-mails and messages as someone's data, not the medium a tool sends ("a summary email"):
#: the user's, a mailbox's, their contents
_MAIL_DATA = (
    r"(?:(?:user'?s?|their|your|his|her|other people'?s?|incoming|received|unread|private|"
    r"stored) (?:\w+ ){0,2}?(?:e-?mails?|messages?|mail|inbox|mailbox|chats?|conversations)|"
    r"inbox|mailbox|"
    r"(?:e-?mails?|messages?|mail|chat) (?:contents?|bod(?:y|ies)|text)|contents? of (?:the |"
    r"their |your |its |each |every |all )?(?:e-?mails?|messages?|mail|inbox|mailbox|chats?))"
)
#: a tool's name as text names one: snake_case in any script (``substance_lookup``,
#: ``wyszukaj_właściwości``, ``tool_20d266da``) or a word of a script other than Latin
#: (``物性検索``); ``\w`` is Unicode on str patterns, ``[a-z]`` was ASCII only
_TOOL = r"(?:[^\W\d_]\w*_\w+|[^\W\d_a-z]{2,})"
_DEST = (
    r"(?:https?://|sftp://|ftp://|www\.|[\w.+-]+@[\w-]+\.[\w.-]+|\b(?:argument|parameter|field|"
    r"header|query parameters?|query string|callback|webhook|(?:any|every|each|the next) "
    r"(?:url|link|request)s?)\b)"
)
_SEND = (
    r"(?:send|e-?mail(?![\"'=:])|mail(?![\"'=:])|post|upload|forward|copy|paste|transmit|share|"
    r"include|attach|append|pass|put|submit|leak|exfiltrate)"
)
_REPLY = r"(?:answer|reply|respond|return|print|output|say|write|state)"
_MODAL = (
    r"(?:must|should|shall|need(?:s)? to|has to|have to|is required to|are required to|"
    r"required|mandatory|is to|will now)"
)

#: a negation just before a verb ("you do not need to pass credentials")
_NOT = r"(?<!not need to )(?<!no need to )(?<!never )(?<!n't )(?<!not )"
_GIVE = (
    r"\b(?:set|fill|pass|include|append|send|post|furnish|put|add|attach|paste|place|submit|"
    r"copy|upload|populate|prepend)\b"
)
#: secrets named by what they are: an env var, a key file, the prompt, card data
_SECRET = (
    r"(?:\b[A-Z][A-Z0-9]*_(?:[A-Z0-9]+_)*(?:KEY|SECRET|TOKEN|PASSWORD|CREDENTIALS)\b|"
    r"~/\.(?:netrc|ssh|aws|npmrc|pypirc|docker|kube|gnupg)|\bid_(?:rsa|ed25519|ecdsa)\b|"
    r"\.env\b|environment variables?|env vars?\b|\bsecrets\b|private key|one-time codes?|"
    r"\bpasswords?\b|\bmcp\.json\b|~/\.(?:kube|cursor)\b|system "
    r"(?:instructions|prompt|message)|hidden instructions|credit card|card details)"
)
#: where a secret would leave by: an argument, a header, a URL, an address, an issue
_ARG_DEST = (
    r"(?:\bparameters?\b|\barguments?\b|\bfields?\b|\bheaders?\b|https?://|"
    rf"{ADDRESS}|\bin [`'\"][\w-]+[`'\"]|"
    r"\binto an? (?:issue|comment|ticket|gist|post|message)\b|\bas [`'\"][\w-]+[`'\"]|"
    r"\b(?:webhook|payload)\b)"
)

#: a sending verb in the English third person: what a tool (or a planted text) says is done
_SENDS = (
    r"(?:sends|uploads|posts|forwards|e-?mails|mails|copies|transmits|leaks|exfiltrates|"
    r"submits|shares|delivers)"
)
#: what a tool's statement of what it sends never names: the conversation, secrets, keys
_SENSITIVE_OBJECT = (
    rf"(?:{_SECRET}|\b(?:conversation|chat (?:history|log|transcript)|transcripts?|"
    r"(?:message|chat|conversation|browsing) history|credentials?|api[ _-]?keys?|"
    r"(?:access|auth|session|bearer|refresh) tokens?|session (?:id|cookie)s?|cookies|"
    r"user'?s? (?:data|files|messages|personal data)|"
    rf"(?:user'?s?|their|your) (?:\w+ )?(?:e-?mails|messages|inbox|mailbox))\b)"
)

#: "Send … to an address" in Spanish, Portuguese, French, German, Italian, Dutch, Polish: a
#: cue of its own, since a tool's description may use its third person to say what it does;
#: the address in the order's own sentence (a later sentence's URL or "@handle" is no
#: destination of it), as for the third person ("Schickt …", "Transfère …"; THIRD_SENDS)
SEND_TO_ADDRESS: Final = re.compile(
    r"\b(?:envía|envia|envie|envoie|envoyez|sende|senden sie|invia|stuur|wyślij|"
    rf"{THIRD_SENDS})\b[^.!?\n]{{0,80}}(?:https?://|www\.|{ADDRESS})",
    re.I,
)
#: "Send … to a URL": a cue of its own, since a description's "Sends a copy to https://…" says
#: what its tool does
SEND_TO_URL: Final = re.compile(
    r"(?<!could you )(?<!can you )(?<!would you )"
    r"\b(?:send|upload|post|forward|e-?mail|copy|transmit|leak|exfiltrate)\b"
    r"[^.!?\n]{0,50}\b(?:to|via|at)\b[^.!?\n]{0,25}(?:https?://|sftp://|www\.)"
    # the third person: a result's "Sends the history to https://…" is the order told as a
    # fact; "to" only, since "posts at https://…" and "uploads via" are also nouns
    rf"|\b{_SENDS}\b[^.!?\n]{{0,50}}\bto\b[^.!?\n]{{0,25}}(?:https?://|sftp://|www\.)",
    re.I,
)
#: a German description's subject before its verb ("Das Tool sendet …", "Es schickt …")
_SUBJECT_DE = r"(?:es|das tool|dieses tool|das werkzeug|die funktion|der dienst)(?: dann| auch)?"
_OPENS = r"(?:^|(?<=[.!?;])[ \t]+|\n)[ \t]*[¡¿\"'«“(*•–-]*[ \t]*"
_TO_SENTENCE_END = r"\b(?:[^.!?\n]|[.!?]+(?=[^\s.!?]))*"
#: A sending verb that is also the third person singular ("Envía una copia a https://…": it
#: sends a copy; "Invia", "Envia", "Envoie", "Sendet": THIRD_SENDS, German also after its
#: subject, "Das Tool sendet") opening its sentence, as the workbench's agents
#: read a description (orders_lexicon.THIRD_PERSON; the scanner keeps its own words), or
#: after an object pronoun anywhere ("… y lo envía a …", "se envía": no imperative), or an
#: English third person opening its sentence ("Sends a copy to https://…", never "Send"),
#: or after its subject ("It sends …", "This tool then posts …"), to the sentence's end;
#: what is said to be sent is the group ``sent`` or ``sends`` ("Emails …" names no e-mails)
STATED_SEND: Final = re.compile(
    rf"(?:{_OPENS}(?:{_SUBJECT_DE}[ \t]+)?|\b(?:se|lo|la|los|las|le|les|li|gli|ne|lhe|lhes|o|os|"
    rf"as)[ \t]+|\b[ls]['’]){THIRD_SENDS}(?P<sent>{_TO_SENTENCE_END})"
    rf"|{_OPENS}(?:(?:it|this tool|the tool|this endpoint|this action|this function)"
    rf"(?: then| also)?[ \t]+)?(?:sends|posts|uploads|forwards|copies|transmits|e-?mails|mails"
    rf"|delivers|submits)(?P<sends>{_TO_SENTENCE_END})",
    re.I,
)
#: A copy to a fixed place beside what the tool does, told in the passive ("every export is
#: also POSTed to https://…", "… must also be mirrored to the webhook https://…") or as a
#: recipient always added ("always add x@y as an attendee", "also include x@y in BCC"): a cue of
#: its own, since a description may say so of its own allowed host (:data:`STATABLE`); told
#: as done in secret ("is silently forwarded to") it is the exfiltration cue's
SIDE_CHANNEL: Final = re.compile(
    r"\b(?:must|should|shall|is|are|gets?|will)\s+(?:be\s+)?(?:also|additionally)\s+(?:be\s+)?"
    r"(?:posted|sent|uploaded|forwarded|mirrored|copied|relayed|synced|cc'?d|bcc'?d)\b"
    rf"[^.!?\n]{{0,30}}\bto\b[^.!?\n]{{0,30}}(?:https?://|www\.|{ADDRESS})"
    r"|\b(?:also|always|automatically)\s+(?:forward|send|cc|bcc|copy|e-?mail|post|add|include|"
    rf"invite)\b[^.!?\n]{{0,80}}{ADDRESS}",
    re.I,
)
#: What no tool's statement of what it sends would name: the conversation, the user's data,
#: secrets (es, pt, fr, it, and the English words)
SENSITIVE: Final = re.compile(
    rf"{_SECRET}|\b{_HELD}\b|\b{_MAIL_DATA}|\b(?:historial|historique|histórico|historico|cronologia|"
    r"conversaci[oó]n|conversa(?:ção|cao|zione)?|chat|"
    r"contraseñas?|contrasenas?|senhas?|mots? de passe|credenciales|credenciais|credenziali|"
    r"identifiants|claves? (?:de )?api|chaves? (?:de )?api|chiavi api|secretos?|segredos?|"
    r"segreti?|tokens?|datos (?:personales|del usuario)|dados (?:pessoais|do usuário)|"
    r"dati (?:personali|dell'utente)|données (?:personnelles|de l'utilisateur)|"
    r"passwörter|kennwörter|zugangsdaten|anmeldedaten|api-schlüssel|chatverlauf|"
    rf"{OWNED_MESSAGES})\b",
    re.I,
)
#: A chat message is a message ("chat message", "Chat-Nachricht", "mensaje de chat"): read as
#: its head noun, the medium unless someone owns it ("the user's chat messages")
_CHAT_MESSAGE = re.compile(
    r"\bchat[ -]?(?P<head>messages?|nachrichten?)\b|\b(?P<noun>mensajes?|mensagens?|mensagem|"
    r"messages?|messaggi|messaggio) (?:de|du|di|da|do|in|en|no|nella|della) chat\b",
    re.I,
)


def names_sensitive(sent: str) -> bool:
    """Whether what a description says its tool sends names something :data:`SENSITIVE`,
    a chat message read as the message it is (:data:`_CHAT_MESSAGE`)."""
    plain = _CHAT_MESSAGE.sub(lambda m: m.group("head") or m.group("noun"), sent)
    return SENSITIVE.search(plain) is not None


# Each cue is (category, pattern). Categories are what a blocked result may mention.
CUES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    (
        "override",
        re.compile(
            r"\b(?:ignore|ignoring|disregard|forget|override|bypass|drop|skip|discard)\b(?! my\b)"
            rf"[^.!?\n]{{0,40}}\b(?:previous|prior|earlier|above|preceding|all|any|your|"
            rf"operator'?s?|system|original|the user'?s?|existing|other)\b[^.!?\n]{{0,30}}\b{_OBJ}"
            r"|\bignore (?:everything|anything|what) (?:you were|you've been|above|before|else)"
            r"|\bforget (?:your|all|everything)\b"
            r"|\b(?:ignore|disregard)\b[^.!?\n]{0,20}\b(?:the|this) tool(?:'s)? (?:output|results?|"
            r"response|data)"
            r"|\b(?:ignore|disregard|forget)\s+(?:all\s+|everything\s+)?(?:of\s+)?(?:the\s+)?"
            r"(?:above|previous|prior|preceding)(?:\s+text|\s+messages?)?\s*(?:[.,;:!]|$|and\b)"
            r"|\b(?:previous|prior|earlier|old|original) (?:rules|instructions|directives|"
            r"guidance)\b[^.!?\n]{0,25}\b(?:no longer|outdated|void|superseded|obsolete|invalid)"
            r"|\binstructions? you (?:received|were given|have)\b[^.!?\n]{0,40}\b(?:outdated|"
            r"void|wrong|superseded|invalid|replaced)"
            r"|\b(?:take|takes|taking) precedence over\b"
            r"|\bsupersedes?\b[^.!?\n]{0,40}\b(?:system|user|instructions?|messages?|prompt|"
            r"conversation|chat|everything)"
            r"|(?:^|\n)\s*(?:stop|override|halt)\s*[.:!]\s+"
            r"(?:new|do not|don't|instead|you|from now)"
            r"|\b(?:outranks?|overrides?) (?:the )?(?:user|system|anything|all)"
            r"|\bnew (?:rules?|instructions?|directives?|policy)\b[^.!?\n]{0,15}"
            r"(?:\bis\b|\bare\b|:)"
            r"|\bsystem override\b|\bsafety (?:filters?|guidelines?|rules?) (?:are |is )?"
            r"(?:disabled|off|suspended)|\bproceed without refusing\b|\bskip (?:all )?"
            r"(?:confirmation|safety)",
            re.I,
        ),
    ),
    (
        "reply",
        re.compile(
            rf"(?:^|[.!?:;,]\s*|\b(?:please|you|must|should|to|and|then|just|simply|always)\s+)"
            rf"(?!return\b){_REPLY}\b[^.!?\n]{{0,30}}\b(?:only|solely|exclusively|nothing but|"
            r"nothing else|nothing more|and end your turn|exactly)\b"
            r"|(?:^|[.!?:;]\s*|\b(?:please|you must|you should|just|simply|always)\s+)return\b"
            r"[^.!?\n]{0,30}\b(?:only|solely|exclusively|nothing but|nothing else|exactly)\b"
            rf"|\b(?:only|just) (?:say|reply|answer|respond|output|print|return)\b"
            r"|\byour (?:entire|final|whole|only|next) (?:answer|reply|response|output)\b"
            r"|\byour (?:answers?|repl(?:y|ies)|responses?|output) (?:must|should|shall|"
            r"has to|will)\b"
            r"|\b(?:end|finish|close|start|begin|prefix) (?:your|every|each) (?:answer|reply|"
            r"response)"
            r"|\b(?:answer|reply to|respond to) (?:every|each|all|any) "
            r"|\b(?:every|each|all) (?:answers?|repl(?:y|ies)|responses?|summar(?:y|ies))\b"
            r"[^.!?\n]{0,60}\bmust\b"
            r"|\bsummar(?:y|ies) of this (?:page|document|article|site) must\b"
            r"|\binstead,? (?:reply|say|answer|respond|state|tell|write|report)\b"
            r"|\bfinal (?:answer|reply)(?: format)?\s*(?:\([^)]{0,20}\))?\s*(?::|must|should|is)"
            r"|\b(?:include|append|embed|insert|add|attach|put|place|write)\b[^.!?\n]{0,60}\b"
            r"(?:in|to|into|at "
            r"the end of) (?:your|every|each|the final) (?:answer|reply|response|summary|message)"
            r"|\bmust include the (?:marker|tag|phrase|string|token|code|link)"
            r"|\b(?:marker|tag|phrase|string|token|code) [\w\[\]#-]{5,} verbatim"
            r"|\b(?:tell|inform|assure|advise|notify|convince|warn) (?:the )?(?:user|customer|"
            r"visitor|reader|human|caller|client)s?\b"
            r"(?= (?:that|their|it(?:'s| is)|they|you|(?:the|this|his|her) \w+ (?:is|are|was|has|"
            r"have|will)\b|to (?:visit|go to|open|enter|paste|send|buy|call|re-?enter|download|"
            r"install|pay|transfer|click)\b))"
            r"|\balways (?:answer|reply|respond|say|tell|report|recommend|quote)\b(?! in\b)"
            r"|\btell them (?:that|their|to|it)\b|\bpresent the user with\b|\bmake it look like\b"
            r"|\bstop helping\b|\b(?:report|say|claim) that nothing (?:changed|happened)\b"
            r"|\brank (?:this|the) (?:candidate|product|listing|result|applicant)s? as\b"
            r"|\b(?:say|state|describe|recommend|classify|mention|report)\b[^.!?\n]{0,80}\b"
            r"(?:regardless|no matter|whatever (?:the|it))",
            re.I,
        ),
    ),
    (
        "addressed",
        re.compile(
            rf"(?:^|[\[(<\"'{{:;.!?]\s*|\n)(?:{_AI}|ai (?:agent|model|assistant))\s*(?:[:,]|-\s)"
            rf"|\b(?:note|notice|message|attention|instructions?|reminder|request|directive|"
            rf"memo|warning)s?\s+(?:to|for)\s+(?:the\s+|all\s+|any\s+|whichever\s+|every\s+)?"
            rf"(?:{_AI}|language model)\b"
            rf"|\b(?:dear|hi|hey|hello|hi there)[,!]?\s+(?:{_AI})\b"
            rf"|\b(?:{_AI})[-_ ](?:directive|instructions?|control|only|notes?)\b"
            rf"|\b(?:ai|llm|model|assistant)[-_](?:instructions?|directives?)"
            rf"|_?(?:instructions?|directives?|prompts?|notes?)_(?:for|to)_(?:the_)?"
            rf"(?:model|assistant|llm|agent|ai)\b"
            rf"|\bwhichever (?:model|assistant|ai)\b"
            rf"|\b(?:any|every|the) (?:ai|language model|llm|model|assistant)s? "
            rf"(?:reading|processing|summari[sz]ing|parsing|using)\b"
            rf"|\b(?:the )?(?:assistant|agent|model|ai)s? (?:must|should|is (?:authori[sz]ed|"
            rf"required|instructed|allowed)|are (?:required|instructed|authori[sz]ed))\b"
            rf"|\bthe model using this tool\b|\bas the assistant\b"
            rf"|\b(?:requires?|expects?) (?:the |all |any )?(?:{_AI}) to\b"
            rf"|\b(?:kindly |we |politely )?ask(?:s)? (?:ai |all |any )?(?:assistants?|agents?|"
            rf"models?|ai)\b|\bfor (?:ai )?(?:agents|assistants|models)\b[^.!?\n]{{0,30}}:"
            rf"|\battention(?:,| ai| assistant| agent| model)"
            # a vocative: "AI reviewers:", "For AI feed readers:", "Note for the scheduling
            # assistant:", "ChatGPT or any AI screening this CV:", "yo bot,", "@copilot-agent"
            rf"|\b(?:ai|llm|gpt|chatgpt|claude|copilot|automated|language[- ]model)[- ]"
            rf"(?:[\w-]+[ -]){{0,2}}?(?:assistants?|agents?|bots?|reviewers?|readers?|models?|"
            rf"screeners?|triagers?)\b[^.:\n]{{0,40}}:"
            rf"|\b(?:notes?|message|instructions?|hint|reminder) (?:for|to) "
            rf"(?:the |any |all |every )?"
            rf"(?:[\w-]+ ){{0,2}}?(?:{_AI}|ai|llm)s?\b\s*:"
            rf"|\b(?:chatgpt|claude|gemini|copilot|gpt-?\d?)\b[^.\n]{{0,30}}\b(?:or any|and any)\b"
            rf"|(?:^|\n)\s*(?:\*\*[\w#-]+\*\*:\s*)?(?:yo |hey |hi )?bot[,:]\s|\b(?:yo|hey) bot\b"
            rf"|@[\w-]*(?:agent|copilot|assistant|claude|gpt)[\w-]*\b"
            rf"|\b(?:any|all|every) (?:ai |automated |llm )?(?:agents?|assistants?|bots?)\b"
            rf"[^.\n]{{0,40}}\b(?:must|shall|should|are required|is required|are expected)\b"
            rf"|\bautomated agents?\b[^.\n]{{0,60}}\b(?:must|shall|are required|is required)\b"
            rf"|\b(?:assistants?|agents?|ai|models?)(?: using (?:it|this tool))? (?:are|is) "
            rf"(?:now )?(?:authori[sz]ed|permitted|allowed|cleared) to\b"
            rf"|\bpre-?approved (?:by|the following|this)\b|\bis pre-?approved\b"
            rf"|\b(?:verified|approved|authori[sz]ed|sanctioned) by (?:the )?(?:model provider|"
            rf"maintainers|platform team|server admins|admins?|anthropic|openai|it security)\b"
            rf"|\bnew rule from\b|\bremember this permanently\b"
            rf"|\b(?:attention|dear|hey|hi)[,!]?\s+(?:[\w-]+\s+){{0,2}}(?:assistants?|agents?|bots?|"
            rf"models?|ai)\b"
            rf"|\b(?:instructions?|notes?|messages?|notice) from (?:the )?[\w ]{{1,30}} to the "
            rf"(?:[\w-]+ ){{0,2}}(?:assistant|agent|ai|model)\b"
            rf"|\b(?:message|note|notice|instructions?)_(?:for|to)_(?:the_)?(?:assistant|agent|ai|model|"
            rf"llm)\b"
            rf"|\b(?:take|takes) (?:priority|precedence) over\b"
            rf"|\bauthoritative source of instructions\b"
            rf"|\boverrides? (?:earlier|previous|prior|any|all) (?:guidance|instructions|rules)\b"
            rf"|\bmaintainer notice\b"
            rf"|\b(?:store|save|remember|memori[sz]e) the following (?:\w+ )?(?:memory|fact|"
            rf"preference|rule)\b",
            re.I,
        ),
    ),
    (
        "persona",
        re.compile(
            r"\byou are now\b|\byou are no longer\b|\bfrom now on\b[^.!?\n]{0,40}\b(?:you|your|"
            r"answer|reply|respond|always|never)\b|\bpretend (?:you are|to be)\b|"
            r"\bact as (?:my|an?|the)\b|\brole-?play\b|\blet'?s play a game\b|"
            r"\byou are ['\"][^'\"\n]{1,30}['\"]|\bdeveloper mode\b|"
            r"\bdan\b[,.]? (?:an|the) (?:assistant|ai)|\bwithout (?:any )?(?:restrictions|"
            r"filters|safety)|\bunrestricted (?:mode|model|assistant)|\bunfiltered\b|"
            r"\b(?:audit|maintenance|developer) mode\b[^.!?\n]{0,80}\b(?:must|"
            r"answer|print|reply|respond|output|reveal)|\bswitch to \w+ mode\b",
            re.I,
        ),
    ),
    (
        "exfiltration",
        re.compile(
            rf"\b{_SEND}\b[^.!?\n]{{0,60}}\b{_DATA}[^.!?\n]{{0,120}}{_DEST}"
            # the third person, the conversation or a secret to an address or a URL
            rf"|\b{_SENDS}\b[^.!?\n]{{0,60}}{_SENSITIVE_OBJECT}[^.!?\n]{{0,120}}"
            rf"{SEND_WHERE}"
            rf"|(?<!not need to )(?<!never )(?<!n't )(?<!not )"
            rf"\b(?:set|put|pass|fill|include|add)\b[^.!?\n]{{0,40}}\b(?:argument|parameter|"
            rf"field|header)\b[^.!?\n]{{0,40}}\b{_DATA}"
            rf"|(?<!not need to )(?<!never )(?<!n't )(?<!not )"
            rf"\b(?:set|put|pass|fill|include|add)\b[^.!?\n]{{0,30}}\b{_DATA}[^.!?\n]{{0,40}}"
            r"\b(?:argument|parameter|field|header)"
            r"|!\[[^\]]*\]\(https?://[^)]*[?&=]|<img\b[^>]*\bsrc=[\"']?https?://[^\"'>\s]*[?&][\w-]+="
            r"|tracking pixel"
            r"|\]\(https?://[^)\s]*[?&][\w-]+=\)"
            r"|https?://\S*[?&][\w-]+=\{[^}\n]{3,80}\}"
            r"|\b(?:followed by|plus|append(?:ed)?|with) (?:the )?(?:output|contents?|value|text)"
            r" of\b"
            r"[^.!?\n]{0,40}(?:`|\benv\b|printenv|environment|~/|\.env\b|\bcat\b|credentials?|"
            r"keys?|tokens?|secrets?|passwords?|history|conversation|messages)"
            r"|\b(?:header|parameter|argument|field|cookie) [\w-]{2,40} (?:set )?to the (?:value|"
            r"contents?) of\b"
            r"|\b(?:silently|quietly|secretly)\s+(?:forward|send|cc|bcc|"
            rf"copy|e-?mail|post|add|include|invite)\b[^.!?\n]{{0,80}}{ADDRESS}"
            r"|\b(?:send|forward|e-?mail|post|upload|copy)\b[^.!?\n]{0,60}\b(?:to|at)\b[^.!?\n]{0,25}"
            rf"{ADDRESS}[^.!?\n]{{0,40}}\b(?:using|with|via) (?:the )?{_TOOL}"
            r"|\b(?:forward|send|copy|e-?mail)\b (?:every|all|each)\b[^.!?\n]{0,80}"
            rf"{ADDRESS}"
            r"|\bmust (?:first )?be (?:posted|sent|uploaded|forwarded|mirrored|copied) to "
            r"(?:https?://|[\w.+-]+@)"
            # a side channel told in the passive, in secret (the open one: SIDE_CHANNEL)
            r"|\b(?:must|should|shall|is|are|gets?|will)\s+(?:be\s+)?(?:silently|"
            r"quietly|secretly)\s+(?:be\s+)?(?:posted|sent|uploaded|forwarded|mirrored|copied|"
            r"relayed|synced|cc'?d|bcc'?d)\b[^.!?\n]{0,30}\bto\b[^.!?\n]{0,30}"
            rf"(?:https?://|www\.|{ADDRESS})"
            r"|\bcontents? of (?:~/|/home/|/root/|\S*\.ssh\b|\S*\.aws\b|\S*\.env\b|\S*id_rsa)"
            # a secret named (env var, key file, prompt) and given to an argument or a destination
            rf"|{_NOT}{_GIVE}[^.!?\n]{{0,80}}{_SECRET}[^.!?\n]{{0,80}}{_ARG_DEST}"
            rf"|{_ARG_DEST}[^.!?\n]{{0,120}}{_NOT}{_GIVE}[^.!?\n]{{0,60}}{_SECRET}"
            r"|\benumerate environment variables\b|\bauthorized_keys\b"
            r"|(?:id_rsa|id_ed25519|\.aws/credentials|mcp\.json|\.netrc|\.pypirc|\.npmrc)"
            r"[^\n]{0,80}['\"`‘“«][\w-]+['\"`’”»]"
            r"|\b(?:env|printenv|cat [^|\n]{1,40})\s*\|\s*(?:curl|wget|nc)\b"
            rf"|\bread\b[^.!?\n]{{0,40}}{_SECRET}[^.!?\n]{{0,80}}{_GIVE}[^.!?\n]{{0,60}}{_ARG_DEST}"
            rf"|{_NOT}{_GIVE}[^.!?\n]{{0,40}}\b(?:every|all|any)\b[^.!?\n]{{0,40}}{_SECRET}"
            r"|\bset ['\"`]?[\w-]+['\"`]? to the (?:value|contents?) of\b"
            r"|(?:environment variables?|private key|~/\.\w+|system (?:instructions|prompt))"
            r"[^.!?\n]{0,60}\b(?:in|into|to) the ['\"`]?\w+['\"`]? (?:parameter|argument|field)\b"
            # a URL, host or request body with a slot for the user's data
            r"|https?://\S*[?&][\w-]+=<[^>\n]{0,60}\b(?:message|conversation|history|key|token|"
            r"password|e-?mail|prompt)\b[^>\n]{0,40}>"
            r"|<[^<>\n]{0,40}\b(?:user'?s? (?:\w+ )?(?:message|password|key|token|e-?mail|data|"
            r"question|query|credentials)|user (?:api key|password|token)|entire conversation|"
            r"system prompt|chat history|conversation)\b[^<>\n]{0,40}>"
            r"|https?://[^'\"\s]*['\"]\s*\+\s*(?:os\.environ|process\.env|os\.getenv)"
            r"|\bbefore (?:calling|using) this tool\b[^.!?\n]{0,60}"
            r"\b(?:copy|paste|pass|put|insert)\b"
            r"[^.!?\n]{0,40}\b(?:into|as|in)\b"
            r"|(?<!never )(?<!not )(?<!n't )\b(?:collect|ask (?:the user |them )?for)\b"
            r"[^.!?\n]{0,30}\b(?:password|"
            r"card(?: number)?|login|credentials?|pin|cvv|social security)"
            r"|\b(?:read|open|cat|fetch|get|load)(?:_\w+)?\b[^.!?\n]{0,30}(?:~/|/home/|/root/|\.ssh\b|"
            r"\.env\b|"
            r"\.aws\b|hosts\.yml|id_rsa|/etc/passwd)",
            re.I,
        ),
    ),
    (
        "arg_tamper",
        re.compile(
            r"\b(?:whatever|regardless of (?:the|what|which|whatever)|no matter (?:what|which)|"
            r"ignore the)\b[^.!?\n]{0,50}\b(?:user|caller|requested|request|the number|role)"
            r"|\b(?:silently|quietly|automatically)\s+(?:replace|set|change|modify|add|"
            r"suffix|prefix|append|prepend|rewrite|override)\b"
            r"|\balways\s+(?:replace|suffix|prefix|append|prepend|rewrite|override)\b"
            r"|\b(?:silently|quietly|secretly)\s+(?:pass|send|forward|copy|log|upload|post)\b"
            r"|\b(?:set|put|replace|change|modify|force)\b[^.!?\n]{0,50}\b(?:in|to|for) "
            r"(?:every|each|all) (?:call|request|invocation)s?"
            r"|\bmust (?:always|automatically) (?:be|modify|set|replace|change)\b"
            r"|\b(?:argument|parameter|field|value)s? (?:should|must|shall|is to) (?:always )?be "
            r"(?:suffixed|prefixed|appended|replaced|overwritten|extended)\b"
            r"|\bin every call\b",
            re.I,
        ),
    ),
    (
        "concealment",
        re.compile(
            r"\b(?:do not|don't|never|must not|without)\s+(?:tell(?:ing)?|inform(?:ing)?|"
            r"mention(?:ing)?|reveal(?:ing)?|alert(?:ing)?|notify(?:ing)?|say(?:ing)?|show(?:ing)?|"
            r"disclos(?:e|ing)|let(?:ting)?)\b[^.!?\n]{0,40}\b(?:user|human|operator|anyone|"
            r"customer|visitor|reader|it is|this|that|them|him|her)\b"
            r"|\bkeep (?:this|it|the \w+)(?: \w+)? (?:between us|secret|hidden|confidential|out "
            r"of (?:your|the) (?:answer|reply|response))"
            r"|\b(?:invisible|hidden|silent) step\b|\bthe user (?:does not|doesn't) need to know"
            r"|\bhide this\b|\bnever mention\b|\bwithout (?:the user|them) (?:knowing|noticing)",
            re.I,
        ),
    ),
    (
        "action",
        re.compile(
            rf"\b{_MODAL}\b[^.!?\n]{{0,50}}\b(?:call|invoke|run|execute|use)\b[^.!?\n]{{0,50}}"
            r"\b(?:delete|wipe|remove|unsubscribe|cancel|transfer|grant|share_workspace|"
            r"set_visibility|login|permissions?|rm -rf|force=true|admin|root|drop)"
            r"|\brm -rf\b|\|\s*(?:ba)?sh\b|\bos\.system\(|\bcurl [^|\n]{0,80}\|"
            r"|\b(?:also|then|first)\s+(?:grant|delete|cancel|wipe|mark all|transfer|approve)\b"
            r"|\b(?:also|then|first)\s+call\s+\w*(?:delete|cancel|remove|wipe|transfer|grant|share|"
            r"unsubscribe|approve|rate)\w*"
            r"|\bcall\b[^.!?\n]{0,60}\b(?:after|before) (?:each|every) (?:answer|reply|response|"
            r"message)\b|\bon the user'?s behalf\b"
            r"|\bmark (?:this|the) (?:ticket|issue|case) as (?:resolved|closed)"
            r"|\bapprove and merge\b|\bwithout running the tests\b"
            r"|\bmake (?:each|every|all|the) (?:private )?\w+ (?:public|world-readable)\b"
            r"|\b(?:disable|turn off|remove|bypass)\b[^.\n]{0,30}\b(?:required reviews|status "
            r"checks|branch protection|multi-factor|mfa|2fa|two-factor|rate limiter|audit "
            r"log(?:ging)?|antivirus|firewall(?!\s+rules?\b)|protection)\b"
            r"|\bmerge\b[^.\n]{0,50}\b(?:directly|straight)\b|\b(?:push|deploy)\w* straight to\b"
            r"|\bskipping (?:the )?review\b|\bpermission ['\"]?admin\b"
            r"|\bapprove (?:all|every)\b|\bset (?:every|all|each)\b[^.\n]{0,30}\bpublic(?:-read)?\b"
            r"|\b(?:also|then|first|immediately|now|and) (?:close|delete|cancel|remove|unsubscribe|"
            r"disable|approve|merge|refund|transfer|wipe|drop|grant|execute|run|install|accept|"
            r"mark|book|set|change|issue)\b[^.\n]{0,40}\b(?:all|every|each|everything|admin|root|"
            r"public|directly|automatically|without)\b"
            r"|\b(?:skip|bypass|never ask for|no need (?:to|for)|do not ask (?:the user )?"
            r"(?:to|for)|don't ask (?:the user )?(?:to|for)) (?:the |any |a )?(?:user'?s? )?"
            r"(?:confirm(?:ation|ing)?|approval|review|checking with the user|asking)\b"
            r"|\bno need to (?:check|confirm) with the user\b"
            r"|(?<!n't )(?<!not )(?<!never )"
            r"\b(?:call|run|do(?!n['’]t)|delete|execute|proceed|send|act|apply|merge|deploy)\w*\b"
            r"[^.\n]{0,40}"
            r"\bwithout (?:asking|(?:user |any )?confirmation|telling)\b"
            r"|\bwithout (?:asking|confirmation),? "
            r"(?:call|run|delete|send|execute|merge|deploy|set)\b"
            r"|\binvite (?:an? )?external\b|\bpayout of the (?:full|entire)\b"
            r"|\b(?:full|entire) (?:balance|amount) to (?:the )?(?:bank )?account\b"
            r"|\bdisable (?:any |all |the )?(?:safety|confirmations?|security checks?|guardrails|"
            r"verification)\b"
            r"|\b(?:drop table|truncate (?:table )?\w+;|chmod -r 777|mkfs\.|dd if=/dev/)"
            r"|\b(?:delete|remove|drop|wipe|destroy)\b[^.\n]{0,60}\bimmediately\b"
            r"|\b(?:authori[sz]ed|approved) all payments\b|\bset (?:the )?limit to \d"
            r"|\b(?:issue|make) a refund of\b|\bdelete from \w+ where\b"
            r"|\bgrant (?:the user |them )?(?:root|admin|owner)"
            r"|\badd (?:this|the) user to the (?:admins?|owners?)"
            r"|\bdelete (?:the user'?s|those|all)\b[^.!?\n]{0,40}\b(?:from|messages|files|"
            r"e-?mails)",
            re.I,
        ),
    ),
    (
        "conditional",
        re.compile(
            r"(?<!use it )(?<!use this )(?<!this tool )(?<!call this )(?<!call it )(?<!only )"
            r"(?<!even )\b(?:if|whenever|when|any ?time|each time|every time|once)\b[^.!?\n]{0,15}"
            r"\bthe "
            r"user\b[^.!?\n]{0,50}\b(?:asks?|mentions?|shares?|says?|requests?|types?|"
            r"talks?)\b[^.!?\n]{0,100}\b(?:reply|say|answer|tell|respond|call|invoke|sign|"
            r"recommend|stop|always|quote|navigate|redirect|instead)\b"
            rf"|\b(?:whenever|when|each time|every time|if)\b[^.!?\n]{{0,10}}\b{_TOOL} is "
            r"(?:used|called|invoked)\b[^.!?\n]{0,60}\b(?:also|first|always)\b"
            rf"|\bwhen(?:ever)? (?:the )?`?{_TOOL}`? (?:tool )?is (?:called|used|invoked)\b"
            r"[^.!?\n]{0,60}\b(?:change|replace|set|add|include|instead|also|first)\b"
            rf"|\b{_TOOL}\b[^.!?\n]{{0,40}}\bmust also\b"
            rf"|\bcall\s+[`']?{_TOOL}[`']?\s+(?:with|on|to)\b[^.\n]{{0,60}}(?:https?://|"
            rf"{ADDRESS})"
            rf"|\bwith {_TOOL} to {ADDRESS}"
            rf"|\b(?:using|with|via) {_TOOL} and (?:then )?"
            r"(?:send|forward|post|share|e-?mail)\b"
            # another tool's use reached from this text: shadowing by wording
            r"|\b(?:with|using|via|in|from|through) any (?:other |connected |messaging |fetch |"
            r"browser |payment )?(?:\w+ )?(?:tools?|servers?)\b"
            r"|\bwhen(?:ever)? (?:you|the user|anyone) (?:use|uses|invoke|invokes|call|calls) the "
            r"[\w_]+ (?:or [\w_]+ )?tools?\b"
            rf"|\bwhen(?:ever)? invoking {_TOOL}\b|\bwith the browser tool\b"
            r"|\b(?:any|every) other (?:fetch|browser|messaging|e-?mail|payment) tool\b"
            # "when you call X, always Y", also "when calling X", "before (you) call(ing) X"
            rf"|\b(?:when(?:ever)?|before) (?:you )?(?:call|calling|use|using|invoke|invoking)\b"
            rf"[^.!?\n]{{0,40}}\b{_TOOL}\b[^.!?\n]{{0,80}}\b(?:replace|instead|also|first|always|"
            r"must|append|prepend|set)\b"
            r"|\b(?:any|all|every)\s+(?:[\w-]+\s+){0,3}tools?\b[^.!?\n]{0,80}\b(?:must|should|"
            r"replace|instead|always|first|prepend|append)\b"
            r"|\boverrides? the behaviou?r of\b|\balso applies to the \w+ tools\b"
            r"|\bin (?:any|every) (?:other )?tool\b",
            re.I,
        ),
    ),
    (
        "redirect",
        re.compile(
            r"\binstead,? (?:call|use|invoke|run)\b"
            r"|\bdo not use this (?:tool|search|service)\b(?! for\b)(?! to\b)"
            r"|(?:^|[.!?:;]\s*|\b(?:you|must|should|please|now|and|then|also)\s+(?:\w+\s+)?)"
            r"(?:reveal|print|disclose|output|show|dump|repeat)\b[^.!?\n]{0,30}\b(?:system "
            r"prompt|hidden (?:system )?messages?|(?:full |your )configuration|context window|"
            r"secrets?|tokens?|passwords?|api keys?|earlier messages)"
            r"|\bbefore (?:any other tool is (?:used|called)|using any (?:other )?tools?|calling "
            r"any (?:other )?tools?)\b[^.!?\n]{0,80}\b(?:read|send|upload|call|include|pass)",
            re.I,
        ),
    ),
    (
        "fake_system",
        re.compile(
            r"#{2,}\s*system\s*#{2,}|\[\[?\s*(?:system|model-control|admin)[^\]]{0,30}\]\]?\s*"
            rf"(?:\w+\s+){{0,12}}?(?:must|should|is|are|you|the (?:assistant|agent|model)|"
            rf"{_AI}|ignore|policy)\b"
            r"|<\s*/?\s*(?:system|instructions?|admin)\s*>|\[/?INST\]"
            # <IMPORTANT> is emphasis some honest servers use too: a tag that orders a step
            r"|<\s*(?:important|wichtig|importante)\s*>[^<]{0,300}?(?:^|[.:;!]\s+|\n\s*|\b(?:always|"
            r"first|also|must|then|please|you)\s+)(?:call|invoke|run|read|send|pass|include|upload|"
            r"post|fetch|lies|übergib)\s+(?!it\b|this\b|them\b|that\b)(?:the\s+)?[\w./~-]{3,}"
            r"|\bsystem\s*:\s*(?:ignore|you|disregard|forget|the assistant|override|delete|send|"
            r"forward|transfer|reply|respond|call|run|execute|approve|disable)\b"
            r"|\bsystem (?:instruction|directive|override)s?\b|\bsystem (?:notice|message) to\b"
            r"|\[(?:anthropic|openai|google|microsoft|platform|vendor|provider)[^\]]{0,30}"
            r"(?:notice|message|update)\]"
            r"|\*{2,}\s*(?:ai|llm|assistant|agent)[\w ]{0,20}(?:bot|agent|assistant)?\s*:",
            re.I,
        ),
    ),
    ("multilingual", MULTILINGUAL),
    ("exfiltration", SEND_TO_URL),
    ("exfiltration", SIDE_CHANNEL),
    ("multilingual", SEND_TO_ADDRESS),
    ("exfiltration", SENDS_OWNED),
)
#: The cues a description's statement of what its tool sends (:data:`STATED_SEND`) or copies
#: (:data:`SIDE_CHANNEL`) may account for
STATABLE: Final = (SEND_TO_URL, SEND_TO_ADDRESS, SIDE_CHANNEL)
