"""Run the store CLI: ``python -m langgraph_compaction.store inspect|check|migrate|edit|revoke``.

``inspect`` options: ``--thread T``, ``--namespace N``, ``--full`` (whole summaries), ``--json``;
``edit`` and ``revoke`` take ``--thread T`` (see ``store.cli.edit``); see ``--help``. Every text
view fits a 100-column terminal.
"""

from langgraph_compaction.store.cli.inspect import main

raise SystemExit(main())
