"""What messages hold and what they cost: tool-call units and the tool-pair rule, content
blocks of every provider format, media and what their bytes say, text length by writing
system, the default token estimate, and one history's counts and prefix hashes.

May import: ``errors``.
"""
