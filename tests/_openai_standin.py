"""An OpenAI-compatible chat-completions server on 127.0.0.1 that answers as a model would.

The evaluate tests run the real command in a subprocess, which reaches its models over HTTP
(``OPENAI_BASE_URL=<url> OPENAI_API_KEY=x --model openai:standin``), and the probe tests drive
a real ``ChatOpenAI`` and real ``openevals``: nothing in between knows it is not OpenAI. The
replies are deterministic and name what they read, so a test can tell what reached the model:

- a ``json_schema`` response format is filled: the probe-questions schema with questions
  quoted from the span in ``<transcript>``, openevals' judge schema (``reasoning``, ``score``)
  by how many content words of ``<reference>`` the ``<answer>`` holds, any other schema with
  plain values;
- a summary request (``<conversation>``, "summary", "Summarize") gets the sections its prompt
  names, listing the identifiers of the transcript;
- anything else is an agent asked a question in the last user message: it answers with the
  earlier sentence (or tool call) sharing most content words with it, "I do not know." when
  none does, and "OK" to "Reply with OK".

Streaming is refused with 400 (``ChatOpenAI.invoke`` does not stream). Set
``StandIn.fail_when`` to answer matching requests with 500 (or ``fail_status``), as a provider's
outage or refusal would, and ``StandIn.reply_with`` to give a reply of the test's own (a weak
model's, say).

```python
with openai_standin() as standin:
    model = ChatOpenAI(base_url=standin.url, api_key="x", model="standin", max_retries=0)
    model.invoke("Reply with OK")  # AIMessage("OK"); standin.requests[0] is the request body
```
"""

from __future__ import annotations

import ast
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langgraph_compaction.content.identifiers import identifiers_in

__all__ = ["StandIn", "content_words", "openai_standin", "sentences"]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_WORD = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
_SENTENCE_END = re.compile(r"(?<=[.!?\u061f])\s+|(?<=[\u3002\uff01\uff1f])|\n+")
_STOP_WORDS = (
    "a an the is are was were be been am to of and or in on at for with about from by as it "
    "its that this these those what which who whom whose why how when where did does do done "
    "say said says user assistant i you we he she they my your our their me us will would "
    "should can could shall may might next use used call calls called decide decided decision "
    "reason there here then than so but not no yes any all some"
)
_STOP = frozenset(_STOP_WORDS.split())
_ROLE = re.compile(r"\n\n(?=(?:user|assistant|system|tool(?: [^\s:]+)?): )")
_CALLS = re.compile(r"([\w.-]+)\((\{.*?\})\)(?=; |\]\s*$)", re.MULTILINE)
_SIX = (
    "Goal", "Constraints & Preferences", "Progress", "Key Decisions",
    "Next Steps", "Critical Context",
)  # fmt: skip
_THREE = ("Goal", "Progress", "Next Steps")
_REASON = re.compile(r"\b(because|so|since|decided|decide|chose|therefore)\b", re.IGNORECASE)


def content_words(text: str) -> set[str]:
    """Lowercased words that carry meaning (each CJK character counts as one)."""
    words = (w.lower() for w in _WORD.findall(text))
    return {w for w in words if w not in _STOP and (len(w) > 1 or re.match(f"[{_CJK}]", w))}


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


@dataclass
class StandIn:
    """A running stand-in: its base URL and every chat-completions body it got, in order."""

    url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    fail_when: Callable[[dict[str, Any]], bool] | None = None
    """Requests it matches get ``fail_status`` (recorded all the same)."""
    fail_status: int = 500
    reply_with: Callable[[dict[str, Any]], str | None] | None = None
    """A reply of its own for the requests it answers (None: the usual reply)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, body: dict[str, Any]) -> int:
        with self._lock:
            self.requests.append(body)
            return len(self.requests)


@contextmanager
def openai_standin() -> Iterator[StandIn]:
    """Serve the stand-in on a free 127.0.0.1 port until the block ends."""
    standin = StandIn(url="")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/") != "/v1/models":
                return self._send(404, _error("not found", "not_found"))
            model = {"id": "standin", "object": "model", "created": 0, "owned_by": "standin"}
            self._send(200, {"object": "list", "data": [model]})

        def do_POST(self) -> None:
            if self.path != "/v1/chat/completions":
                return self._send(404, _error("not found", "not_found"))
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            except ValueError:
                return self._send(400, _error("the body is not JSON", "invalid_request_error"))
            if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
                return self._send(400, _error("'messages' is required", "invalid_request_error"))
            number = standin.record(body)
            if body.get("stream"):
                return self._send(400, _error("streaming is not served", "invalid_request_error"))
            if standin.fail_when is not None and standin.fail_when(body):
                message = f"the stand-in was told to fail with {standin.fail_status}"
                return self._send(standin.fail_status, _error(message, "server_error"))
            own = standin.reply_with(body) if standin.reply_with is not None else None
            self._send(200, _completion(body, reply_to(body) if own is None else own, number))

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()  # ASCII: a lone surrogate survives
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    standin.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": 0.05},
        name="openai-standin",
        daemon=True,
    )
    thread.start()
    try:
        yield standin
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _completion(body: dict[str, Any], content: str, number: int) -> dict[str, Any]:
    prompt = max(1, len(json.dumps(body["messages"], ensure_ascii=False)) // 4)
    completion = max(1, len(content) // 4)
    message = {"role": "assistant", "content": content, "refusal": None}
    return {
        "id": f"chatcmpl-standin-{number}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": body.get("model", "standin"),
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
        "system_fingerprint": None,
    }


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def _tagged(text: str, tag: str) -> str | None:
    found = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", text, re.DOTALL)
    return found.group(1) if found else None


def reply_to(body: dict[str, Any]) -> str:
    """What a model would answer to this request body."""
    messages: list[dict[str, Any]] = body["messages"]
    last = _text(messages[-1]) if messages else ""
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        schema = response_format.get("json_schema", {}).get("schema", {})
        return json.dumps(_fill(schema, last), ensure_ascii=False)
    if "<conversation>" in last or re.search(r"\bsummar(y|ize)\b", last, re.IGNORECASE):
        return _summary(last, messages[:-1])
    if last.strip().rstrip(".").endswith("Reply with OK"):
        return "OK"
    return _answer(messages[:-1], last)


def _fill(schema: dict[str, Any], prompt: str) -> Any:
    properties = schema.get("properties", {})
    if "questions" in properties:
        return {"questions": _questions(_tagged(prompt, "transcript") or prompt)}
    if {"reasoning", "score"} <= properties.keys():
        return _grade(_tagged(prompt, "answer") or "", _tagged(prompt, "reference") or "")
    return _plain(schema, prompt)


def _plain(schema: dict[str, Any], prompt: str) -> Any:
    kind = schema.get("type")
    if kind == "object":
        return {k: _plain(v, prompt) for k, v in schema.get("properties", {}).items()}
    if "enum" in schema:
        return schema["enum"][0]
    return {"boolean": True, "integer": 0, "number": 0, "array": []}.get(
        str(kind), (sentences(prompt) or [""])[0]
    )


def _turns(transcript: str) -> list[tuple[str, str]]:
    """``role: text`` turns of a rendered transcript."""
    turns = []
    for chunk in _ROLE.split(transcript.strip()):
        role, _, text = chunk.partition(": ")
        turns.append((role, text))
    return turns


def _topic(sentence: str) -> str:
    """A few words of a sentence to ask about, none of its identifiers (they are the answer)."""
    named = content_words(" ".join(value for value, _ in identifiers_in(sentence)))
    words = [
        w for w in _WORD.findall(sentence) if w.lower() in content_words(w) - named
    ] or _WORD.findall(sentence)
    return " ".join(words[: min(3, max(1, (len(words) + 1) // 2))])


def _questions(transcript: str) -> list[dict[str, str]]:
    turns = _turns(transcript)
    said = {
        role: [s for r, text in turns if r == role for s in sentences(_spoken(text))]
        for role in ("user", "assistant")
    }
    questions = []
    facts = [s for s in said["user"] if content_words(s)]
    if facts:
        fact = max(facts, key=lambda s: (len(identifiers_in(s)), len(content_words(s))))
        question = f"What did the user say about {_topic(fact)}?"
        questions.append({"kind": "fact", "question": question, "expected": fact})
    for role, text in turns:
        if role == "assistant" and (call := _first_call(text)) is not None:
            name, key, value = call
            question = f"Which {key} did the assistant's {name} call act on?"
            questions.append({"kind": "artifact", "question": question, "expected": value})
            break
    last_words = [_spoken(text) for role, text in turns if role == "assistant" and _spoken(text)]
    if last_words:
        step = sentences(last_words[-1])[-1]
        question = f"What was the assistant about to do next about {_topic(step)}?"
        questions.append({"kind": "next_step", "question": question, "expected": step})
    if said["assistant"]:
        reasoned = [s for s in said["assistant"] if _REASON.search(s)]
        decision = (reasoned or said["assistant"])[0]
        question = f"What did the assistant decide about {_topic(decision)}, and why?"
        questions.append({"kind": "decision", "question": question, "expected": decision})
    return questions


def _spoken(text: str) -> str:
    """A turn's text without its ``[tool calls: ...]`` line."""
    return re.sub(r"\n?\[tool calls: .*\]\s*$", "", text, flags=re.DOTALL).strip()


def _first_call(text: str) -> tuple[str, str, str] | None:
    """(tool, argument, value) of the first call that names a string target."""
    for name, arguments in _CALLS.findall(text):
        try:
            args = ast.literal_eval(arguments)
        except (ValueError, SyntaxError):
            continue
        strings = [(k, v) for k, v in args.items() if isinstance(v, str) and v]
        named = [(k, v) for k, v in strings if identifiers_in(v)]
        if named or strings:
            key, value = (named or strings)[0]
            return name, str(key), value
    return None


def _grade(answer: str, reference: str) -> dict[str, Any]:
    wanted = content_words(reference)
    found = sorted(wanted & content_words(answer))
    missing = sorted(wanted - content_words(answer))
    score = bool(wanted) and len(found) / len(wanted) >= 0.6
    reasoning = (
        f"The answer states {', '.join(found) or 'nothing'} of the reference"
        f"{'; it misses ' + ', '.join(missing) if missing else ''}. "
        f"Thus, the score should be: {str(score).lower()}."
    )
    return {"reasoning": reasoning, "score": score}


def _summary(prompt: str, earlier_messages: list[dict[str, Any]] | None = None) -> str:
    """A summary of the ``<conversation>`` in the prompt or, for a request that closes the
    conversation itself (``summary_context: conversation``), of the messages before it."""
    tagged = _tagged(prompt, "conversation")
    spoken = [m for m in earlier_messages or () if m.get("role") in ("user", "assistant", "tool")]
    if tagged is None and spoken:
        tagged = "\n".join(f"{m['role']}: {_text(m)}" for m in spoken)
    transcript = tagged or prompt
    turns = _turns(transcript)
    earlier = _tagged(prompt, "summary") or ""
    idents = dict.fromkeys(value for value, _ in identifiers_in(f"{earlier}\n{transcript}"))
    instruction = prompt.rpartition("</conversation>")[2]
    headings = re.findall(r"^## (.+?)\s*$", instruction, re.MULTILINE)
    if not headings:  # the update prompts name their sections in a sentence
        headings = list(_SIX if "Critical Context" in instruction else _THREE)
    user = [s for role, text in turns if role == "user" for s in sentences(text)]
    assistant = [s for role, text in turns if role == "assistant" for s in sentences(_spoken(text))]
    named = ", ".join(f"`{i}`" for i in idents) or "nothing in particular"
    bodies = {
        "Goal": user[0] if user else "Continue the conversation.",
        "Progress": f"- read {len(turns)} messages; mentioned: {named}",
        "Next Steps": assistant[-1] if assistant else "- answer the user's next message",
        "Key Decisions": assistant[0] if assistant else "- none yet",
    }
    return "\n".join(f"## {h}\n{bodies.get(h, '- none stated')}" for h in headings)


def _answer(earlier: list[dict[str, Any]], question_message: str) -> str:
    question = question_message
    for line in question_message.splitlines():
        if line.startswith("Question:"):
            question = line.removeprefix("Question:")
    asked = content_words(question)
    candidates: list[str] = []
    for message in earlier:
        candidates.extend(sentences(_text(message)))
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            candidates.append(f"{function.get('name')}({function.get('arguments')})")
    best, best_shared = "I do not know.", 0
    for candidate in candidates:  # ties go to the latest: later messages supersede
        shared = len(asked & content_words(candidate))
        if shared and shared >= best_shared:
            best, best_shared = candidate, shared
    return best
