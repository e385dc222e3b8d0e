"""Run the evaluation: ``python -m langgraph_compaction.evaluate FILE [options]`` (``--help``).

Its dependencies are the ``evaluate`` extra; without them the command says which extra to
install instead of failing on an import.
"""

import sys

EXTRA_MODULES = {"genai_prices", "openevals", "tqdm", "matplotlib", "psycopg"}
EXTRA_MODULES |= {"langgraph.checkpoint.sqlite", "langgraph.checkpoint.postgres"}

try:
    from langgraph_compaction.evaluate.cli import main
except ModuleNotFoundError as error:
    if error.name not in EXTRA_MODULES and (error.name or "").split(".")[0] not in EXTRA_MODULES:
        raise
    print(
        f"error: python -m langgraph_compaction.evaluate needs the evaluate extra ({error.name} "
        "is not installed): pip install 'langgraph-compaction[evaluate]'",
        file=sys.stderr,
    )
    raise SystemExit(2) from None

raise SystemExit(main())
