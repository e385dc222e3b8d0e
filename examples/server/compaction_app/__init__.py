"""An app for ``langgraph dev``: two agents whose context is compacted before every model call.

Served from ``examples/server/`` (see ``langgraph.json`` there):

- ``parent`` (``compaction_app.parent``): a parent ``StateGraph`` with the compaction subgraph
  as the node right before the model node and a ``ToolNode`` tool loop;
- ``agent`` (``compaction_app.agent``): ``langchain.agents.create_agent`` with
  ``CompactionMiddleware``.

Both run offline and deterministically (``compaction_app.models`` holds the stand-in agent
model and summarizer) and keep their summaries in the SQLite store named by
``$COMPACTION_STORE_URL`` (``compaction_app.settings``). Neither graph gets a checkpointer:
the server provides its own.
"""
