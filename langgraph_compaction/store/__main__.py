"""Run the store CLI: ``python -m langgraph_compaction.store inspect|check|migrate --url URL``.

``inspect`` options: ``--thread T``, ``--namespace N``, ``--json``; see ``--help``.
"""

from langgraph_compaction.store._inspect import main

raise SystemExit(main())
