"""Run the store CLI: ``python -m langgraph_compaction.store inspect --url URL``.

Options: ``--thread T``, ``--namespace N``, ``--json``; see ``--help``.
"""

from langgraph_compaction.store._inspect import main

raise SystemExit(main())
