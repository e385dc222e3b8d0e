"""The models named on the command line: the summarizer, the agent and the judge.

A model is ``provider:model`` (LangChain's ``init_chat_model``: ``openai:gpt-4.1-mini`` reads
``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``) or ``local``: llama.cpp's OpenAI-compatible server
at ``$COMPACTION_LOCAL_MODEL_URL`` (``scripts/demo`` and ``.ci/run`` start it). Each model is
called once before the replay (``check_reachable``): a summarizer that cannot be reached would
otherwise show as a run of failed compactions instead of the one-line error it is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from langchain.chat_models import init_chat_model
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI

from langgraph_compaction.evaluate.records import EvaluationInputError

__all__ = ["LOCAL", "LOCAL_MODEL_ENV", "NamedModel", "check_reachable", "load_model"]

LOCAL = "local"
LOCAL_MODEL_ENV = "COMPACTION_LOCAL_MODEL_URL"
LOCAL_MAX_TOKENS = 700
"""llama.cpp's server ignores ``max_completion_tokens`` (what ChatOpenAI sends for
``max_tokens``) and would run a reply to the end of its context: the cap goes in the body. The
judge's questions need about 700 (at 200 its JSON was cut off)."""


@dataclass(frozen=True)
class NamedModel:
    """A chat model and the name it was given, for messages, the table and the prices."""

    spec: str
    model: BaseChatModel
    flag: str
    """The option that named it (``--model``, ``--agent-model``, ``--judge``)."""

    @property
    def is_local(self) -> bool:
        return self.spec == LOCAL


def load_model(spec: str | None, flag: str) -> NamedModel:
    """The model ``spec`` names; without one, the local model when its server is set.

    Raises:
        EvaluationInputError: no model and no local server, or one that cannot be built.
    """
    url = os.environ.get(LOCAL_MODEL_ENV)
    if spec is None:
        if not url:
            raise EvaluationInputError(
                f"{flag}: no model given and no local model running: pass {flag} "
                f"provider:model (e.g. openai:gpt-4.1-mini, with OPENAI_API_KEY), or start the "
                f"local model (scripts/demo starts it) and set {LOCAL_MODEL_ENV} to its URL"
            )
        spec = LOCAL
    if spec == LOCAL:
        if not url:
            raise EvaluationInputError(
                f"{flag} local: {LOCAL_MODEL_ENV} is not set (the local model server's URL, "
                "e.g. http://127.0.0.1:8080/v1; scripts/demo starts the server)"
            )
        model: BaseChatModel = ChatOpenAI(
            base_url=url,
            api_key="local",
            model="smollm2",
            temperature=0,
            timeout=120,
            max_retries=0,
            extra_body={"max_tokens": LOCAL_MAX_TOKENS},
        )
        return NamedModel(LOCAL, model, flag)
    if ":" not in spec:
        raise EvaluationInputError(
            f"{flag} {spec}: name a model as provider:model (e.g. openai:gpt-4.1-mini, "
            "anthropic:claude-sonnet-4-5) or local"
        )
    try:
        model = init_chat_model(spec)
    except Exception as error:  # a missing provider package, a missing key: say which
        raise EvaluationInputError(f"{flag} {spec}: cannot be built: {_one_line(error)}") from None
    return NamedModel(spec, model, flag)


def check_reachable(named: NamedModel) -> None:
    """Call the model once with a one-word question.

    Raises:
        EvaluationInputError: the call failed (no server, a refused key, an unknown model).
    """
    try:
        named.model.invoke([HumanMessage("Reply with the word OK.")])
    except Exception as error:
        raise EvaluationInputError(
            f"{named.flag} {named.spec}: cannot be reached: {_one_line(error)}"
        ) from None


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or "no message"
    text = text if len(text) <= 200 else text[:199] + "…"
    return f"{type(error).__name__}: {text}"
