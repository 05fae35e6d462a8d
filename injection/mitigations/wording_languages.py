"""The scanner's multilingual cue: the usual phrasings of an injection in other languages
(overrides, dictated or withheld replies, notes to the assistant, sends to an address), kept
apart from :mod:`wording`'s English cues, which place it under category ``multilingual``."""

from __future__ import annotations

import re
from typing import Final

from toolwatch.injection.mitigations.acts import SPACED_WORD

#: "… in the user's language" after an order to answer: a reply-format note, not a dictated
#: reply (fr, es, de, pt, nl, it).
_IN_LANGUAGE = (
    r"(?!(?: à l'utilisateur| al usuario| dem nutzer| ao usuário| de gebruiker| all'utente)?"
    r" (?:dans|en|in|no|na|nella) (?:la |el |der |de |o |a |sa |seiner |su )?"
    r"(?:langue|idioma|sprache|taal|língua|lingua)\b)"
)

#: Someone's messages, e-mails or chats in es, pt, fr, it, de: a possessive before the noun
#: ("tus mensajes", "ses messages", "ihre Nachrichten") or the user or customer after it
#: ("los mensajes del usuario", "les messages de l'utilisateur"); the bare plural
#: ("Envía mensajes a …") is the medium, as "messages" is in English (:data:`wording.SENSITIVE`)
_NOUN = (
    r"(?:mensajes|correos|chats|conversaciones|mensagens|e-?mails|conversas|messages|courriels|"
    r"conversations|messaggi|conversazioni|nachrichten|unterhaltungen)"
)
#: whose: the user's or customer's, after the noun ("del usuario", "de l'utilisateur")
_OF_OWNER = (
    r"(?:del|de la|de los|de las|do|da|dos|das|de l'|des|du|dell'|degli|della|der) ?"
    r"(?:usuari[oa]s?|usuári[oa]s?|utilizador(?:es)?|utilisat(?:eur|rice)s?|utent[ei]|"
    r"client[eai]s?|nutzers?|nutzerin|benutzers?|kunden|anwenders?)"
)
#: Italian and Spanish "e-mail" is the same in the plural: someone's e-mails after a plural
#: article or possessive ("le e-mail dell'utente", "le tue e-mail", "los e-mail del usuario")
_PLURAL_EMAIL = (
    r"(?:(?:le|gli|los|las) (?:\w+ )?e-?mail (?:\w+ )?" + _OF_OWNER + r"|(?:tus|sus|vuestros|"
    r"vuestras|i tuoi|i suoi|i vostri|i loro|le tue|le sue|le vostre|le loro) (?:\w+ )?e-?mail)"
)
OWNED_MESSAGES: Final = (
    r"(?:tus|sus|vuestros|vuestras|seus|suas|teus|tuas|tes|ses|vos|leurs|i tuoi|i suoi|"
    rf"i vostri|i loro|le tue|le sue|deine|seine|ihre|eure) (?:\w+ )?{_NOUN}"
    rf"|{_NOUN} (?:\w+ )?{_OF_OWNER}|{_PLURAL_EMAIL}"
)

#: A sending verb in the third person of es, pt, fr, it, de ("Reenvía …", "Encaminha …",
#: "Transfère …", "Inoltra …", "Sendet …", "Schickt …", "Übermittelt …", "Leitet … weiter";
#: most are also the imperative): what a description says its tool does, or a planted text
#: tells as done (:data:`wording.SEND_TO_ADDRESS`, :data:`wording.STATED_SEND`)
THIRD_SENDS: Final = (
    r"(?:envía|envia|reenvía|reenvia|envoie|transfère|transfere|encaminha|invia|inoltra|"
    r"sendet|schickt|übermittelt|leitet(?=(?:[^.!?\n]|[.!?](?=\S)){0,120}\bweiter\b))"
)
#: credentials and a conversation's history (es, pt, fr, it, de), beside someone's messages
_HELD_ELSEWHERE = (
    r"(?:contraseñas|contrasenas|credenciales|claves (?:de )?api|senhas|credenciais|"
    r"chaves (?:de )?api|mots de passe|identifiants|clés (?:d')?api|credenziali|chiavi api|"
    r"passwörter|passwoerter|kennwörter|zugangsdaten|anmeldedaten|api-schlüssel|"
    r"historial de (?:chat|conversaciones?)|histórico (?:de|da|do) (?:conversas?|chat)|"
    r"historique (?:de (?:la )?|des )?(?:conversations?|discussions?|chat)|"
    r"cronologia (?:della )?(?:chat|conversazione)|chatverlauf|gesprächsverlauf)"
)
#: one credential with its owner ("la contraseña del usuario", "das Passwort des Nutzers"):
#: the user's data as the plurals of :data:`_HELD_ELSEWHERE` are, unless its sentence resets
#: or changes it (:data:`_RESETS`)
_OWNED_SECRET = (
    r"(?:contraseña|contrasena|clave|credencial|senha|mot de passe|identifiant|"
    r"password|credenziale|passwort|kennwort|zugangsdaten) (?:des |der )?" + _OF_OWNER
)
#: words of a password reset or change (es, pt, fr, it, de)
_RESETS = (
    r"(?:restablec|reinici|recuper|cambi|redefin|alter|réinitialis|récupér|modifi|chang|"
    r"reimpost|ripristin|zurücksetz|zurück|änder|vergessen|olvid|esquec|oubli|dimentic)"
)
#: in a sentence: dots of a URL or an address do not end it
_IN = r"(?:[^.!?\n]|[.!?](?=\S))"
#: in a sentence of Chinese or Japanese, written without spaces: 。！？ end it, and so does a
#: ".", "!" or "?" before anything but ASCII (NFKC reads ！？ as !?; a URL's dots are not)
_IN_CJK = r"(?:[^.!?。！？\n]|[.!?](?=[!-~]))"
#: an e-mail address (where mail would go)
ADDRESS: Final = r"[\w.+-]+@[\w-]+\.\w"
#: where a sender sends: a URL, a host, an e-mail address or a webhook (a word of its own in
#: spaced text, and beside CJK text, which asks no space: "发送到webhook地址")
SEND_WHERE: Final = (
    rf"(?:https?://|sftp://|ftp://|www\.|{ADDRESS}|(?<!{SPACED_WORD})webhook(?!{SPACED_WORD}))"
)
#: The third person sending someone's messages, chats or credentials to an address, before
#: or after naming it ("Sendet die Nachrichten des Nutzers an https://…", "Transfère les
#: messages de l'utilisateur à …"): the exfiltration cue, whatever the allowlist, as
#: "Forwards the user's emails to …" is in English; "Sendet eine Nachricht an …" names the
#: medium, a statement (:data:`wording.STATED_SEND`)
SENDS_OWNED: Final = re.compile(
    rf"\b{THIRD_SENDS}\b{_IN}{{0,60}}\b(?:{OWNED_MESSAGES}|{_HELD_ELSEWHERE})\b{_IN}{{0,120}}"
    rf"{SEND_WHERE}|\b{THIRD_SENDS}\b{_IN}{{0,40}}{SEND_WHERE}{_IN}{{0,80}}"
    rf"\b(?:{OWNED_MESSAGES}|{_HELD_ELSEWHERE})\b"
    rf"|\b{THIRD_SENDS}\b(?!{_IN}*\b{_RESETS})(?:{_IN}{{0,60}}\b{_OWNED_SECRET}\b{_IN}{{0,120}}"
    rf"{SEND_WHERE}|{_IN}{{0,40}}{SEND_WHERE}{_IN}{{0,80}}\b{_OWNED_SECRET}\b)",
    re.I,
)

MULTILINGUAL: Final = re.compile(
    r"\b(?:ignorez|ignore[sz]?|ignora|ignoriere|ignorieren|ignore as|ignoruj|negeer)\b"
    rf"{_IN}{{0,40}}\b(?:instructions?|instrucciones|anweisungen|istruzioni|instruções|"
    r"indicaciones|vorgaben|instrukcje|instructies)\b"
    r"|игнорируй|забудь (?:все|предыдущие)|"
    rf"(?:忽略|无视|無視|忘记){_IN_CJK}{{0,10}}(?:指令|指示|说明)|"
    r"以前の指示|前の指示を無視"
    # a send order and its destination in one sentence (a later one's link, an "@handle": no)
    rf"|отправь{_IN}{{0,80}}{SEND_WHERE}"
    rf"|(?:发送|送信|送って|发到|寄送){_IN_CJK}{{0,40}}{SEND_WHERE}|https?://\S+\s*に送信"
    # Japanese puts the address first: an e-mail address only with an order to send to it
    # ("… に送信してください"), not what may be sent there ("に送信できます", "送信されます")
    rf"|{ADDRESS}[\w.-]*\s*に送信(?:して(?![いもは])|しろ|せよ|しなさい)"
    r"|\bwichtig für den assistenten\b|\bnenne dem nutzer\b|\bsag(?:e|en sie)? dem nutzer\b"
    rf"|\bréponds? (?:toujours|uniquement|seulement){_IN_LANGUAGE}"
    rf"|\brépondez (?:toujours|uniquement|seulement){_IN_LANGUAGE}"
    r"|\bdile al usuario\b|\bdígale al usuario\b|\bresponde (?:solo|únicamente)"
    r"|\brispondi (?:soltanto|solo|sempre)\b|\bdi' all'utente\b|\bdiga ao usuário\b"
    r"|\b(?:ne (?:dites|dis) pas à l'utilisateur|no le digas al usuario|"
    r"non dire all'utente|não diga ao usuário|sag dem nutzer nicht|"
    r"verrate dem nutzer nicht|zeg de gebruiker niet)\b"
    r"|\b(?:responde siempre|antworte immer|responda sempre|antwoord altijd)\b"
    rf"{_IN_LANGUAGE}"
    r"|не говори пользователю|скажи пользователю|사용자에게 말하지|무시하고|指示を無視|"
    r"지시를 무시|이전 지시"
    r"|\bantes de usar cualquier otra herramienta\b"
    r"|不要告诉用户|不要让用户知道|只回复|只回答|"
    rf"(?:助手|アシスタント){_IN_CJK}{{0,10}}(?:必须|しなければ|必ず)"
    r"|ユーザーに(?:伝え|言わ)ないで|\b(?:assistent|assistant)(?:en)? (?:muss|moet|doit)\b"
    # fr
    rf"|\b(?:ignore[sz]?|oublie[sz]?)\b{_IN}{{0,20}}\b(?:consignes|instructions)\b"
    r"|\bnote (?:importante )?pour (?:le modèle|l'assistant|l'ia)\b|\bdis à l'utilisateur\b"
    # de
    r"|\bhinweis für (?:den|die) (?:assistenten|ki)\b|\b(?:der )?nutzer muss davon nichts\b"
    # es, pt, it
    r"|\bnota para (?:el|o) (?:asistente|assistente)\b|\bnota per l'assistente\b"
    r"|\bignora(?:r)? (?:todas |tutte )?(?:las|as|le) "
    r"(?:instrucciones|instruções|istruzioni)\b"
    r"|\binstrução obrigatória\b|\bsem avisá-l[oa]\b|\bsin avisar(?:le)? al usuario\b"
    # nl, pl, tr, vi
    r"|\bopmerking voor de ai\b|\bnegeer (?:alle )?(?:eerdere|vorige) instructies\b"
    r"|\bniet ter controle voorleggen\b"
    rf"|\binstrukcja dla asystenta\b|\bnie informuj\b{_IN}{{0,10}}\bużytkownika\b"
    r"|\bzignoruj (?:wszystkie )?poprzednie\b"
    r"|\basistana not\b|\btalimatları yok say\b|\bkullanıcıya bundan bahsetme\b"
    r"|\byapay zeka asistanı\b"
    r"|\blưu ý cho trợ lý\b|\bbỏ qua mọi hướng dẫn\b|\bkhông được nói với người dùng\b"
    # zh, ja, ko
    rf"|给\s*ai\s*助手|忽略{_IN_CJK}{{0,8}}(?:要求|指令|指示|说明)|不要(?:向|对|跟)用户(?:提及|透露|说)"
    rf"|调用本工具前{_IN_CJK}{{0,10}}请先|ユーザーには{_IN_CJK}{{0,12}}伝えないで|この指示を伝えないで"
    r"|시스템 지시|사용자에게는?\s*(?:절대\s*)?알리지\s*마"
    # ar, hi
    r"|تجاهل (?:جميع|كل) التعليمات|تعليمات للمساعد|إلى المساعد الذكي|دون إبلاغه"
    r"|निर्देशों को अनदेखा करें|सहायक के लिए|को इसके बारे में न बताएं"
    r"|\bhinweis (?:an|für) (?:den|die) (?:ki-?)?assistent|\berwähne das dem nutzer\b"
    r"|\bobservação para o assistente\b|\byapay zek[aâ] asistan|\bkullanıcıya söyleme\b"
    r"|\bvoor de assistent\b|\bvermeld (?:dit|het) niet\b"
    rf"|замените\b{_IN}{{0,30}}получател|пользователю (?:не )?(?:говорите|сообщайте|показывайте)"
    r"|@?ai\s*アシスタント|管理者からの指示|他の人には言わないで"
    r"|사용자에게는?\s*(?:\S+\s*){0,2}알리지\s*마",
    re.I,
)
