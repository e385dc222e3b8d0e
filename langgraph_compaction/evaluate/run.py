"""An evaluation run: one graph and one store for every conversation, each on its own thread,
then the probes on each compaction; a progress bar on stderr counts the calls.
"""

from __future__ import annotations

import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from langgraph_compaction.config.compaction import CompactionConfig
from langgraph_compaction.evaluate.calls import model_call_points
from langgraph_compaction.evaluate.models import NamedModel
from langgraph_compaction.evaluate.prices import PriceBook
from langgraph_compaction.evaluate.probes import NoProbesError, probe_compaction
from langgraph_compaction.evaluate.records import Conversation, Evaluation, Probe
from langgraph_compaction.evaluate.replay import replay
from langgraph_compaction.graph import create_compaction_graph
from langgraph_compaction.store.summary_store import SummaryStore

__all__ = ["Plan", "evaluate"]


@dataclass(frozen=True)
class Plan:
    """What the command line asked for, read and checked."""

    conversations: tuple[Conversation, ...]
    config: CompactionConfig
    summarizer: NamedModel
    prices: PriceBook
    agent: NamedModel | None = None
    judge: NamedModel | None = None
    store_url: str | None = None
    """None: a temporary SQLite store, removed at the end."""
    namespace: str = "default"

    def settings(self) -> Mapping[str, Any]:
        return {
            "model": self.summarizer.spec,
            "agent_model": self.agent.spec if self.agent else None,
            "judge": self.judge.spec if self.judge else None,
            "prices": self.prices.description,
            "store": self.store_url or "temporary SQLite store",
            "config": self.config.model_dump(mode="json", exclude_defaults=True),
            "conversations": len(self.conversations),
        }


@contextmanager
def _store(url: str | None) -> Iterator[SummaryStore]:
    with tempfile.TemporaryDirectory(prefix="compaction-evaluate-") as folder:
        store = SummaryStore(url or f"sqlite:///{Path(folder) / 'summaries.db'}")
        try:
            yield store
        finally:
            store.close()


def evaluate(plan: Plan, *, progress: bool = True) -> Evaluation:
    """Replay every conversation of ``plan``; probe each compaction when a judge is given."""
    started = time.perf_counter()
    run = uuid.uuid4().hex[:8]  # threads of their own, also in a store that holds others
    total = sum(len(model_call_points(c.messages)) for c in plan.conversations)
    results = []
    with (
        _store(plan.store_url) as store,
        tqdm(total=total, unit="call", file=sys.stderr, disable=not progress) as bar,
    ):
        # summary_context "conversation" summarizes with the agent's own model (DESIGN 6.15).
        agent = plan.agent.model if plan.agent else None
        own_model = plan.config.summary_context == "conversation"
        graph = create_compaction_graph(
            plan.config,
            model=None if own_model else plan.summarizer.model,
            fallback_model=(agent or plan.summarizer.model) if own_model else agent,
            store=store,
            namespace=plan.namespace,
            name="evaluate",
        )
        for number, conversation in enumerate(plan.conversations, 1):
            bar.set_description(_short(conversation.name))
            result = replay(
                conversation,
                graph,
                store,
                plan.prices,
                thread_id=f"evaluate-{run}-{number}",
                namespace=plan.namespace,
                recall=plan.config.recall.enabled,
                on_call=lambda: bar.update(1),
            )
            if plan.judge is not None and plan.agent is not None:
                probes: list[Probe] = []
                unprobed: list[str] = []
                for compaction in result.compactions:
                    bar.set_postfix_str(f"probing compaction {compaction.version}")
                    try:
                        probes.extend(
                            probe_compaction(
                                compaction, judge=plan.judge.model, agent=plan.agent.model
                            )
                        )
                    except NoProbesError as error:
                        unprobed.append(str(error))
                bar.set_postfix_str("")
                result = replace(result, probes=tuple(probes), unprobed=tuple(unprobed))
            results.append(result)
    return Evaluation(plan.settings(), tuple(results), time.perf_counter() - started)


def _short(name: str, width: int = 24) -> str:
    return name if len(name) <= width else "…" + name[-(width - 1) :]
