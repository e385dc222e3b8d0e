"""What messages hold and what they cost: tool-call units and the tool-pair rule, content
blocks of every provider format, media and what their bytes say, text length and folding by
writing system, the default token estimate (``estimate``), token counters and calibration
(``tokens``), the prefix hash stored summaries are matched by (``prefix_hash``, and the earlier
formats still read in ``legacy_hashes``), and one history's counts and hashes, cached per thread
(``history_scan``). What a summary must keep (DESIGN 6.13): the identifiers in the messages
(``identifiers``: URLs, paths, ids, amounts, dates, code names, names; the rules for one text in
``identifier_scan``, ordinary words told from names and codes by ``common_words``) and the
artifacts of the tool calls (``artifacts``: each tool and target, its calls, last outcome and
whether it changed something).

May import: ``errors``.
"""
