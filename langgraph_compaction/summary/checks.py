"""Tell a reply that is plainly not a summary from one that is, however poor, in any script.

A small summarizer (the demo's 135M local model) often answers a summary prompt with something
else: "I'm ready to continue the conversation. Please go ahead and share...", the instruction
read back, or generic text about none of the conversation. Storing such a reply would make
every later call reuse it, so the pipeline treats it as a failed summary. The checks are
deliberately coarse: they reject what is plainly wrong and accept any reply that is about the
conversation, since judging quality needs a model, not a regular expression.

Every script is judged alike. Text is compared after NFKC normalisation, with other scripts'
digits as ASCII digits and Arabic's vowel marks and letter variants folded. Spaced scripts
(Latin, Cyrillic, Greek, Arabic, Hebrew, Devanagari and the other Indic scripts) are read by
words; a non-Latin word by its first letters, so that the inflected forms of a Russian, Arabic
or Hindi word match. Chinese, Japanese and Korean have no spaces between words (or, in Korean,
particles glued to them), so their text is read as character bigrams of Han and Hangul runs,
katakana words whole and hiragana (grammar) not at all; Thai, Lao, Khmer and Myanmar text as
character 4-grams. Each language's function words and the vocabulary of chat and of the
prompts never count as the conversation's terms.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterator

from langgraph_compaction.config.prompts import DEFAULT_SUMMARY_PROMPT, DEFAULT_UPDATE_PROMPT
from langgraph_compaction.content.writing_systems import fold_text

__all__ = ["not_a_summary", "salient_terms"]

_SHINGLE = 6
"""Consecutive words of a built-in instruction that make a reply an echo of it."""
_OPENING = 240
"""Characters at the head of a reply where a request for input gives it away."""
_QUOTED_WORDS = 6
"""Words from a request on that, found in the transcript too, make it a quote, not a request."""
_STEM = 5
"""Letters of a Cyrillic, Greek or Indic word that name it whatever its ending."""
_SEMITIC_STEM = 4
"""The same for Arabic and Hebrew, whose words are shorter (short vowels are not written)."""
_SEA_GRAM = 4
"""Characters of a Thai, Lao, Khmer or Myanmar n-gram (a letter is about a sound)."""

_HAN = "\u3005\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_KATAKANA = "\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff"
_HIRAGANA = "\u3041-\u3096\u309d-\u309f"
_HANGUL = "\u1100-\u11ff\u3131-\u318e\uac00-\ud7a3"
_SEA = "\u0e01-\u0e3a\u0e40-\u0e4e\u0e81-\u0ecd\u1000-\u103f\u1050-\u109f\u1780-\u17d3"
_UNSPACED = f"{_HAN}{_KATAKANA}{_HIRAGANA}{_HANGUL}{_SEA}"
# Letters and marks that ``\w`` misses: combining marks, and the Indic vowel signs and
# viramas, without which a Hindi word falls apart into consonants.
_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u0900-\u0963\u0966-\u0dff\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff"
)
_ALNUM = f"(?:(?![{_UNSPACED}])[^\\W_]|[{_MARKS}])"
"""A letter, digit or mark of a spaced script (underscore excluded)."""

_WORD = re.compile(f"[{_UNSPACED}]|{_ALNUM}(?:{_ALNUM}|')*")
"""A word of a spaced script, or one character of an unspaced one."""
_UNSPACED_RUN = re.compile(f"[{_UNSPACED}]+")
_TOKEN = re.compile(f"[\\w{_MARKS}]+(?:[./:@-]+[\\w{_MARKS}]+)*")
"""A word or identifier of a spaced script: ``etl/currency.py:5``, ``gpt-4o``, ``миграция``."""
_PART = re.compile(r"[./:@_-]+")
_DIGIT = re.compile(r"\d")
_RUNS = re.compile(f"([{_HAN}]+)|([{_KATAKANA}]{{3,}})|([{_HANGUL}]+)|([{_SEA}]+)")
"""Runs of unspaced text: Han (bigrams), katakana words, Hangul (bigrams), Thai and others."""

_ARTICLES = ("وال", "بال", "كال", "فال", "لل", "ال")
"""Arabic's article and the conjunctions and prepositions written onto it."""

# Words that say nothing about a particular conversation: function words, and the vocabulary
# of the prompts and of chat itself, which a reply can repeat without reading the transcript.
# English first, then Spanish, French, German and Portuguese (whole words), then Russian,
# Greek, Hebrew, Arabic and Hindi (by stem, so one form of each word covers its inflections).
_COMMON_WORDS = """
    about above after again also always another answer anything around asked back because
    been before being below best both call called came can't cannot come could didn't does
    doesn't doing done don't down each even every first from further give going good great
    have having hello help here i'll i'm into it's just keep know last later let's like look
    made make many maybe more most much must need never next okay once only other ours over
    please really right said same see seem should show since some something soon still such
    sure take tell than thank thanks that that's their them then there these they thing
    things think this those though through time today told under until upon very want wanted
    well were what what's when where which while will with within without work would yeah yes
    your yours you're
    user users assistant assistants tool tools conversation conversations summary summaries
    checkpoint transcript message messages goal goals constraints constraint preferences
    preference progress decisions decision steps step critical context continue continuing
    share ready provide sections section update updated identifier identifiers verbatim
    concise factual invent reply earlier part covers everything obsolete true drop same
    write written writes language previous discussed track information details
    success successful successfully completed complete finished improve improved improvement

    para como pero este esta esto estos estas está están sobre también todo todos toda todas
    cuando donde desde hasta entre porque aunque según mismo misma otro otra otros otras más
    menos hacer hace hecho puede pueden debe deben tiene tienen tener será sido fueron había
    hemos usuario asistente conversación resumen objetivo objetivos restricciones progreso
    preferencias decisiones pasos siguientes contexto crítico importante información detalles
    actualizar continuar listo gracias favor hola ahora después antes
    pour dans avec sont nous vous mais plus comme être cette ceci cela celui celle ceux leur
    leurs aussi tout tous toute toutes quand alors donc avant après depuis très sans sous même
    autre autres faire fait peut peuvent doit doivent avoir était sera utilisateur objectif
    objectifs contraintes préférences progrès étapes suivantes contexte critique résumé
    informations détails mettre jour continuer prêt merci bonjour maintenant
    oder aber auch noch nach über unter dass wenn weil denn dann doch schon sehr mehr nicht
    eine einen einem einer eines sind wird werden wurde haben hatte kann können muss müssen
    soll sollte diese dieser dieses jetzt hier dort alle alles ihre ihren seine seinen
    benutzer nutzer assistent gespräch unterhaltung zusammenfassung ziel ziele fortschritt
    einschränkungen präferenzen entscheidungen schritte nächste kontext kritisch wichtig
    informationen aktualisieren fortsetzen bereit danke bitte hallo
    isso isto esse essa também embora mesmo muito fazer feito podem devem têm usuário
    utilizador conversa resumo restrições preferências progresso decisões passos próximos
    informações atualizar pronto obrigado olá agora depois

    который этот того также только чтобы если когда тогда потом после перед через более менее
    очень всего весь всех были было была будет будут есть может можно нужно надо нужен свой
    себя между теперь сейчас здесь потому поэтому однако хотя вместо около какой такой каждый
    другой новый первый последний сделать делать хочет хотим хочу следует является уже даже
    просто именно вопрос ответ спасибо пожалуйста здравствуйте привет хорошо конечно давайте
    пользователь ассистент помощник разговор беседа диалог сообщение сводка резюме итоги цель
    задача ограничения предпочтения прогресс решения шаги следующие ключевые критический
    контекст важный информация детали обновить продолжить готов предоставить поделиться
    текущий сегодня успешно выполнено завершено понятно ясно
    είναι αυτό αυτή αυτά οποίο επίσης αλλά όταν όπως μετά πριν μέσα πολύ όλα όλοι κάποιο
    χρήστης βοηθός συνομιλία περίληψη στόχος πρόοδος αποφάσεις βήματα επόμενα πλαίσιο
    παρακαλώ ευχαριστώ
    אשר הזה הזאת האלה שלו שלה שלהם שלנו שלי אבל כאשר כמו אחרי לפני היה הייתה יהיה להיות
    משתמש המשתמש עוזר שיחה השיחה סיכום מטרה התקדמות החלטות צעדים הבאים הקשר בבקשה תודה
    الذي التي الذين هذا هذه ذلك تلك هناك هنا كان كانت يكون تكون كانوا ليس لقد لكن أيضا حتى
    بعد قبل عند عندما حيث بين خلال على إلى عن مع كل بعض غير مثل لدى لذلك لأن إذا ثم ماذا
    كيف لماذا متى أين نعم شكرا فضلك يرجى الرجاء مرحبا أريد نريد يريد يمكن يمكنني يجب سوف
    المستخدم المساعد المحادثة الملخص الهدف الأهداف القيود التفضيلات التقدم القرارات الخطوات
    التالية السياق المهم المعلومات التفاصيل تحديث متابعة جاهز مشاركة تقديم الحالي اليوم
    بنجاح الآن جدا
    लेकिन इसलिए क्योंकि तथा इसके उसके इनके उनके इसमें उसमें अपना अपने अपनी कुछ सभी बहुत
    अधिक अभी पहले बाद साथ लिए द्वारा तरह जैसे जैसा यहाँ वहाँ यहां वहां क्या कैसे कौन किसी कोई
    हमें आपको मुझे मैंने हमने उन्होंने करना करने करता करती करते किया करें करेंगे करेगा होना
    होने होता होती होते होगा होगी होंगे हुआ हुई रहा रही सकता सकती सकते चाहिए चाहता चाहते
    दिया लिया गया नहीं कृपया धन्यवाद नमस्ते उपयोगकर्ता सहायक बातचीत वार्तालाप सारांश लक्ष्य
    उद्देश्य बाधाएँ प्राथमिकताएँ प्रगति निर्णय अगले अगला कदम चरण संदर्भ महत्वपूर्ण जानकारी
    विवरण अपडेट जारी तैयार साझा प्रदान वर्तमान सफलतापूर्वक पूरा
"""
# The same for Chinese (simplified and traditional), Japanese, Korean and Thai, compared by
# their n-grams: a word here takes its bigrams (trigrams in Thai) out of the salient terms.
_COMMON_UNSPACED_WORDS = """
    我们 你们 他们 它们 咱们 这个 那个 这些 那些 这里 那里 一个 一些 一下 一起 一直 没有 不是
    就是 还是 但是 而且 或者 以及 然后 所以 因为 如果 虽然 可以 可能 能够 需要 应该 必须 已经
    正在 现在 目前 当前 今天 之后 之前 以后 以前 时候 时间 什么 怎么 怎样 为什么 如何 这样 那样
    知道 觉得 认为 希望 想要 进行 使用 通过 关于 对于 根据 问题 情况 方面 方式 方法 东西 事情
    内容 信息 细节 工作 完成 开始 继续 提供 分享 帮助 帮忙 请问 谢谢 你好 非常 比较 所有 其他
    自己 还有 用户 助手 对话 会话 总结 摘要 概要 概述 目标 约束 限制 偏好 进展 进度 关键 决策
    决定 下一步 步骤 上下文 背景 重要 更新 讨论 提到 表示 说明 要求 准备 了解 处理 成功 顺利
    改进 提高 需求 语言 這個 那個 這些 沒有 還是 因為 應該 已經 現在 時候 什麼 怎麼 這樣 問題
    情況 資訊 內容 細節 開始 繼續 幫助 謝謝 用戶 使用者 助理 對話 會話 總結 目標 約束 進展
    進度 關鍵 決策 決定 步驟 討論 說明 準備 處理 順利 改進 語言
    会話 要約 概要 目標 目的 制約 好み 設定 進捗 進行 重要 決定 事項 手順 文脈 内容 情報 詳細
    状況 問題 必要 可能 今日 現在 以下 以上 場合 方法 確認 対応 作業 完了 開始 継続 提供 共有
    質問 回答 説明 準備 成功 順調 改善 全体 予定 部分 記録 更新 以前 前回 議論 本日 今回 私達
    自分 使用 利用 関係 以外 言語 ユーザー ユーザ アシスタント コンテキスト ステップ サマリー
    メッセージ チェックポイント セクション
    사용자 어시스턴트 도우미 대화 요약 목표 제약 조건 선호 사항 진행 상황 주요 결정 다음 단계
    맥락 컨텍스트 중요 정보 내용 세부 현재 지금 오늘 이전 이후 필요 가능 완료 시작 계속 제공
    공유 질문 답변 설명 준비 성공 개선 문제 방법 작업 확인 업데이트 그리고 그러나 하지만 또한
    그래서 따라서 그런데 이것 그것 저것 이런 그런 여기 거기 우리 저희 당신 모든 각각 다른 같은
    어떤 무엇 어떻게 언제 어디 누구 입니다 합니다 있습니다 없습니다 했습니다 됩니다 되었습니다
    하였습니다 겠습니다 하는 하고 하여 해야 해서 하면 에서 으로 에게 까지 부터 위해 대해 대한
    통해 있는 없는 있고 있어 것이 것을 것은 것입니다 수도 감사합니다 안녕하세요 부탁 해주세요
    드립니다 바랍니다 원합니다 원하는 싶습니다 했다 한다 이다 였다 었다 있다 없다 된다 되는
    되어 언어
    ผู้ใช้ ผู้ช่วย การสนทนา บทสนทนา สรุป เป้าหมาย ข้อจำกัด ความชอบ ความคืบหน้า การตัดสินใจ
    ขั้นตอน ถัดไป บริบท สำคัญ ข้อมูล รายละเอียด อัปเดต ดำเนินการ พร้อม ที่ และ ของ ให้ ได้
    เป็น ใน มี ไม่ จะ นี้ นั้น กับ ว่า แล้ว การ ความ เพื่อ จาก โดย ครับ ค่ะ คุณ เรา ผม ฉัน กรุณา
    ต้องการ ทำ ใช้ อยู่ ยัง ถ้า หรือ แต่ ซึ่ง ทั้ง ทุก ขอบคุณ สวัสดี ตอนนี้ วันนี้ เรียบร้อย สำเร็จ
    ภาษา
"""
_HAN_PARTICLES = re.compile("[的了吗呢吧啊呀着和与及或也都就又把被很是在我你他她它这那嗎與著這]")
"""Han characters of grammar: they split a Han run, since a bigram across one spans two words."""

# Openings that ask for input instead of summarizing, in the languages small models answer in.
_REQUEST_PATTERNS = (
    r"\b(?:please|kindly)\s+(?:go ahead|share|provide|paste|send|give|tell|let me know)\b",
    r"\bgo ahead and\b",
    r"\b(?:i'?m|i am) (?:ready|happy|here) to\b",
    r"\bhow (?:can|may) i (?:help|assist)\b",
    r"\bwhat would you like\b",
    r"\b(?:could|can|would) you (?:please )?(?:share|provide|paste|send|give|tell)\b",
    r"\bi (?:would )?need (?:more|the|some) (?:information|context|details|conversation)\b",
    # Spanish, Portuguese, French, German
    r"\bpor favor,?\s+(?:comparte|comparta|proporciona|proporcione|envía|envíe|pega|dime"
    r"|compartilhe|forneça|envie|cole|diga)\b",
    r"\b(?:estoy list[oa]|estou pront[oa]) para\b|\b(?:en qué|como) (?:puedo|posso) ayudar",
    r"\b(?:veuillez|merci de)\s+(?:fournir|partager|envoyer|coller|indiquer|me donner)\b",
    r"\b(?:pouvez|pourriez)-vous\s+(?:me\s+)?(?:fournir|partager|envoyer|coller|donner)\b",
    r"\bje suis prêt(?:e)? à\b|\bcomment puis-je vous aider\b",
    r"\bbitte\s+(?:teilen|geben|senden|schicken|fügen|stellen)\s+sie\b",
    r"\bich bin bereit\b|\bwie kann ich (?:ihnen|dir) helfen\b",
    # Russian, Arabic, Hindi (written as folded: no hamza on alef, alef maqsura as yeh)
    r"пожалуйста,? +(?:предоставьте|поделитесь|отправьте|пришлите|вставьте|укажите"
    r"|расскажите|дайте|напишите|опишите)",
    r"(?:предоставьте|пришлите|отправьте|поделитесь|вставьте),? +пожалуйста",
    r"я готова? +(?:продолжить|помочь|начать)|чем (?:я )?могу (?:вам )?помочь",
    r"не могли бы вы +(?:предоставить|поделиться|отправить|прислать|вставить|рассказать)",
    r"(?:يرجى|الرجاء|من فضلك)،? *(?:تقديم|مشاركة|إرسال|تزويدي|قدم|شارك|أرسل|الصق|أخبرني)",
    r"كيف (?:يمكنني|أستطيع) مساعدتك|أنا (?:مستعد|جاهز)",
    r"कृपया +(?:[^ ]+ +){0,3}?(?:प्रदान|साझा|भेजें|भेजिए|बताएं|बताएँ|बताइए|दें|दीजिए|पेस्ट)",
    r"मैं (?:आपकी )?(?:कैसे )?मदद कर सकता|मैं तैयार हूँ|मैं तैयार हूं",
    # Chinese (simplified and traditional), Japanese, Korean
    r"[请請](?:您)?(?:提供|分享|发送|發送|发给|發給|粘贴|貼上|告诉|告訴|给我|給我|输入|輸入|上传|上傳)",
    r"我(?:已经|已經)?(?:准备|準備)好了|有什[么麼](?:我)?可以[帮幫]|我能[为為](?:您|你)做",
    r"(?:提供|共有|送信|貼り付け|入力|アップロード)して(?:ください|下さい)"
    r"|(?:教えて|送って|お知らせ|お送り)(?:ください|下さい)",
    r"準備(?:が)?(?:でき|整い)ました|お手伝いできること|どのようにお手伝い",
    r"(?:제공|공유|전송|입력|업로드)해 *주(?:세요|십시오|시겠어요)",
    r"(?:알려|보내|붙여 *넣어) *주(?:세요|십시오)",
    r"(?:무엇을|어떻게) 도와 *드릴까요|준비(?:가)? *(?:되었습니다|됐습니다)",
)
_REQUESTS = re.compile(fold_text("|".join(_REQUEST_PATTERNS)), re.IGNORECASE)


def _words(text: str) -> list[str]:
    """Lowercase words of spaced scripts and single characters of unspaced ones."""
    return _WORD.findall(text.lower())


def _shingles(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + _SHINGLE]) for i in range(len(words) - _SHINGLE + 1)}


def _instruction(template: str) -> str:
    """The template without its placeholders' surroundings: what the model is told to do."""
    return template.rsplit("</conversation>", 1)[-1]


_INSTRUCTION_SHINGLES = frozenset(
    _shingles(_words(_instruction(DEFAULT_SUMMARY_PROMPT)))
    | _shingles(_words(_instruction(DEFAULT_UPDATE_PROMPT)))
)


def _quotes(passage: str, transcript: str) -> bool:
    """Whether ``passage`` opens with words the transcript has too (a summary quoting a request)."""
    head = _words(passage)[:_QUOTED_WORDS]
    return " ".join(head) in " ".join(_words(transcript))


def _is_latin(word: str) -> bool:
    return word[0] < "\u0250" or "\u1e00" <= word[0] <= "\u1eff"


def _stem(word: str) -> str:
    """A word as matched: Latin whole, another script by its first letters (базы, базу: баз)."""
    if _is_latin(word):
        return word
    limit = _STEM
    if "\u0590" <= word[0] <= "\u06ff":
        limit = _SEMITIC_STEM
        article = next((a for a in _ARTICLES if word.startswith(a)), "")
        if len(word) - len(article) >= 3:
            word = word[len(article) :]
    return word[: min(limit, max(3, len(word) - 1))]


def _grams(text: str) -> set[str]:
    """The n-grams of ``text``'s unspaced runs (katakana words whole); ``text`` folded."""
    grams: set[str] = set()
    for han, katakana, hangul, sea in _RUNS.findall(text):
        if katakana:
            grams.add(katakana)
        elif sea:
            grams.update(sea[i : i + _SEA_GRAM] for i in range(len(sea) - _SEA_GRAM + 1))
        else:  # bigrams, joined character by character in C (a long transcript has 100,000)
            for run in _HAN_PARTICLES.split(han) if han else (hangul,):
                grams.update(map(operator.add, run, run[1:]))
    return grams


_COMMON = frozenset(_stem(word) for word in fold_text(_COMMON_WORDS).lower().split())
_COMMON_GRAMS = frozenset(_grams(fold_text(_COMMON_UNSPACED_WORDS)))


def _salient_form(term: str, written: str) -> str | None:
    """How ``term`` counts as salient (lowercase, or as written for a code), or None."""
    if term.isdigit():  # "10" or "25" is in any text; "884213" or "2025" names something
        return term if len(term) >= 3 else None
    if _DIGIT.search(term):  # "m1", "v2", "gpt-4o": an identifier
        return term if len(term) >= 2 else None
    stem = _stem(term)
    if len(term) >= 4 and stem not in _COMMON:
        return stem
    # "SEK", "UTC", "CSV": a code, matched only in capitals, so that the "AND" of a SQL query
    # is not matched by any "and".
    return written if written.isupper() and len(written) >= 3 else None


def _terms(text: str) -> Iterator[tuple[str, str]]:
    """Each token of a spaced script and each part of it, lowercase, and as it was written."""
    for token in set(_TOKEN.findall(_UNSPACED_RUN.sub(" ", text))):
        token = token.strip("_")
        if token:
            yield token.lower(), token
            parts = _PART.split(token)
            if len(parts) > 1:
                yield from ((part.lower(), part) for part in parts)


def _salient_words(text: str) -> Iterator[str]:
    """The salient words and identifiers of ``text`` (folded), one at a time."""
    for term, written in _terms(text):
        form = _salient_form(term, written)
        if form is not None:
            yield form


def salient_terms(text: str) -> frozenset[str]:
    """The words, identifiers and n-grams of ``text`` that a summary of it would repeat.

    Identifiers count whole (``etl/currency.py``) and by their parts (``currency``), so a
    summary that shortens a path still matches. Lowercase, but codes in capitals as written;
    non-Latin words by their stem; Chinese, Japanese, Korean and Thai text by its n-grams.
    """
    text = fold_text(text)
    return frozenset(_salient_words(text)).union(_grams(text) - _COMMON_GRAMS)


def _written_forms(text: str) -> set[str]:
    """Every form of ``text``'s (folded) terms that a salient term of a transcript may take."""
    forms = {form for term, written in _terms(text) for form in (term, written, _stem(term))}
    return forms | _grams(text)


def not_a_summary(text: str, transcript: str) -> str | None:
    """A short reason when ``text`` is plainly not a summary of ``transcript``, else None.

    ``transcript`` is what the summary had to cover: the rendered messages, and for an update
    the previous summary too. Checked in order: the reply has no word in any script; it reads
    back the built-in instruction; it opens by asking for input ("Please share...", "请提供",
    "пожалуйста, предоставьте"); it has none of the transcript's salient terms. A transcript
    without salient terms cannot be judged by the last check, so it passes. A reply in
    another language than the conversation passes on the names, numbers and identifiers
    they share.
    """
    folded = fold_text(text)
    words = _words(folded)
    if not words:
        return "the reply is empty"
    echoed = _shingles(words) & _INSTRUCTION_SHINGLES
    if echoed:
        echoed -= _shingles(_words(fold_text(transcript)))
    if echoed:
        return f"it repeats the instruction ({' '.join(min(echoed))!r})"
    request = _REQUESTS.search(folded[:_OPENING])
    if request and not _quotes(folded[request.start() :], fold_text(transcript)):
        return f"it asks for input ({request.group(0)!r}) instead of summarizing"
    written = _written_forms(folded)
    transcript = fold_text(transcript)
    grams = _grams(transcript) - _COMMON_GRAMS
    if not grams.isdisjoint(written):
        return None
    judged = bool(grams)
    for term in _salient_words(transcript):
        if term in written:
            return None
        judged = True
    return "it mentions none of the conversation's names, numbers or terms" if judged else None
