"""Run the store CLI: ``python -m langgraph_compaction.store inspect|check|migrate --url URL``.

``inspect`` options: ``--thread T``, ``--namespace N``, ``--full`` (whole summaries), ``--json``;
see ``--help``. Every text view fits a 100-column terminal.
"""

from langgraph_compaction.store._inspect import main

raise SystemExit(main())
