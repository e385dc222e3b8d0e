"""``python -m langgraph_compaction.evaluate``: replay a team's own conversations through a
configuration and report what the agent would lose and what it would cost (DESIGN 6.14).

Reading the conversations (``conversations``), the models named on the command line
(``models``), prices (``prices``), the replay call by call (``replay``), where each identifier
and artifact ends (``fates``), probe questions graded by a judge (``probes``), the terminal
table (``table``), the HTML page (``page``) and the command itself (``cli``). Its dependencies
beyond the core install are the ``evaluate`` extra.

May import every other subpackage: it is a user of the package, not a part of the pipeline.
"""
