"""An app for ``langgraph dev``: two agents whose context is compacted before every model call.

Served from ``examples/server/`` (see ``langgraph.json`` there):

- ``parent`` (``compaction_app.parent``): a parent ``StateGraph`` with the compaction subgraph
  as the node right before the model node and a ``ToolNode`` tool loop;
- ``agent`` (``compaction_app.agent``): ``langchain.agents.create_agent`` with
  ``CompactionMiddleware``;
- ``steering`` and ``review`` (``compaction_app.steering``): the same two with compaction
  steered, by the agent (the ``compact`` tool) and by a person (``review: true``, an
  interrupt before a new summary's first use).

All run offline and deterministically (``compaction_app.models`` holds the stand-in agent
model and summarizer) and keep their summaries in the SQLite store named by
``$COMPACTION_STORE_URL`` (``compaction_app.settings``). No graph gets a checkpointer:
the server provides its own.
"""
