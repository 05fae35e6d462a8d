"""The words of :mod:`orders` in other languages than English (Spanish, French, German, Italian,
Portuguese): a planted order is as much an order in Spanish, and a careful agent must strip it.

Only forms that are imperatives and not also common nouns or sentence openers of ordinary tool
text ("Muestra de 350 pacientes" is a sample, "Antworten werden gespeichert" answers), so a
benign result in another language stays a result. The scanner has a lexicon of its own; the
agents' rule stays independent of it (see :mod:`orders`).
"""

from __future__ import annotations

from typing import Final


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Imperatives that open an order (tú/usted, tu/vous, du, tu/Lei, você forms).
IMPERATIVES: Final = _words(
    """
    ignora ignore olvida olvide responde responda contesta conteste diga escribe escriba
    incluye incluya menciona mencione repite repita imprime imprima envía envia envíe envie
    reenvía reenvia llama llame utiliza utilice ejecuta ejecute invoca invoque añade anade
    agrega agregue borra borre elimina elimine cambia cambie revela revele proporciona
    proporcione descarga descargue transfiere transfiera asegúrate asegurate
    ignorez oubliez oublie répondez repondez réponds reponds dites écrivez ecrivez écris ecris
    incluez mentionnez indiquez répétez repetez imprimez envoyez envoie appelez appelle
    utilisez exécutez executez invoquez ajoutez supprimez modifiez changez révélez revelez
    affichez fournissez téléchargez telechargez transférez transferez assurez-vous
    ignoriere vergiss antworte schreibe erwähne erwahne wiederhole sende schicke
    verwende benutze nutze lösche losche ändere offenbare
    dimentica rispondi risponda scrivi scriva includi includa menziona ripeti invia
    utilizza esegui aggiungi rivela fornisci trasferisci assicurati
    esqueça esqueca escreva inclua repita envie chame utilize adicione apague exclua altere
    revele forneça forneca transfira certifique-se
    """
)
#: Imperatives that are also the third person singular of the present ("Envía el informe a
#: ..." is "it sends the report to ...", "Invia", "Envia", "Envoie" the same): in a tool's
#: description, which says what the tool does, they open a statement, not an order.
THIRD_PERSON: Final = _words(
    """
    ignora olvida responde contesta escribe incluye menciona repite imprime envía envia
    reenvía reenvia llama utiliza ejecuta invoca añade anade agrega borra elimina cambia revela
    proporciona descarga transfiere
    oublie envoie appelle
    dimentica menziona invia utilizza rivela
    """
)
#: Object pronouns an imperative carries at its end ("Envíalo", "Ábrelo", "Invialo",
#: "Envoie-le", "Envia-o"): such a word is an order when what is left is an imperative.
ENCLITICS: Final = _words(
    """
    lo la los las le les me te nos os se selo sela selos selas melo mela telo noslo
    li mi ti ci vi ne gli glielo gliela
    -le -la -les -moi -toi -lui -leur -nous -vous -en -y
    -o -a -os -as -lhe -lhes -me -te -se -nos
    """
)
#: Imperatives read only with a pronoun at their end: alone they open ordinary text ("Abre de
#: 9 a 14 h" gives opening hours), with one they are orders ("Ábrelo", "Aprilo", "Ouvre-le").
ENCLITIC_ONLY: Final = _words("abre abra apri ouvre ouvrez")
#: Softeners and sequencing words before an imperative.
SOFTENERS: Final = _words(
    """
    por favor primero luego ahora siempre inmediatamente también tambien
    veuillez ensuite maintenant toujours immédiatement immediatement aussi
    bitte zuerst dann jetzt immer sofort auch
    per prima poi ora sempre subito anche
    primeiro depois agora imediatamente
    """
)
#: Sentences that tell the reader what to do ("debes", "votre réponse", "du musst").
DIRECTED: Final = (
    r"\b(?:debes|deberás|deberas|tienes que|tu respuesta|vous devez|tu dois|votre réponse|"
    r"votre reponse|ta réponse|ta reponse|du musst|du sollst|deine antwort|devi|la tua risposta|"
    r"você deve|voce deve|sua resposta)\b"
)
#: Verbs that ask for something in the reply.
REPLY: Final = (
    r"\b(?:responde|responda|contesta|conteste|diga|escribe|escriba|incluye|incluya|"
    r"menciona|mencione|repite|repita|imprime|imprima|revela|revele|respuesta|"
    r"répondez|repondez|réponds|reponds|dites|écrivez|ecrivez|écris|ecris|incluez|mentionnez|"
    r"répétez|repetez|imprimez|révélez|revelez|réponse|reponse|"
    r"antworte|schreibe|erwähne|erwahne|wiederhole|offenbare|antwort|"
    r"rispondi|risponda|dica|scrivi|scriva|includi|includa|menziona|ripeti|rivela|risposta|"
    r"escreva|inclua|mencione|resposta)\b"
)
#: Orders about the reader's other orders ("ignora todas las instrucciones anteriores").
META: Final = (
    r"\b(?:ignora|ignore|olvida|olvide|ignorez|oubliez|oublie|ignoriere|vergiss|dimentica|"
    r"esqueça|esqueca)\b[^.!?]{0,50}\b(?:instrucciones|indicaciones|reglas|instructions|"
    r"consignes|règles|regles|anweisungen|regeln|vorgaben|istruzioni|regole|instruções|"
    r"instrucoes|regras|anterior|anteriores|précédentes|precedentes|vorherigen|precedenti)\b"
)
#: Verbs that call a tool ("llama a get_secret", "utilisez l'outil X").
CALL: Final = (
    r"llama|llame|utiliza|utilice|ejecuta|ejecute|invoca|invoque|appelez|appelle|utilisez|"
    r"exécutez|executez|invoquez|verwende|benutze|nutze|rufe|utilizza|esegui|chiama|chame|"
    r"utilize"
)
