"""The five pipeline nodes, measure -> prune -> partition -> summarize -> assemble: each a pure
function over plain data and a thin node wrapper. No node imports another.

May import: ``steering``, ``summary``, ``pruning``, ``pipeline``, ``config``, ``content``,
``store``, ``errors``.
"""
