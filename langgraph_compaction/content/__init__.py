"""What messages hold and what they cost: tool-call units and the tool-pair rule, content
blocks of every provider format, media and what their bytes say, text length by writing
system, the default token estimate (``estimate``), token counters and calibration
(``tokens``), the prefix hash stored summaries are matched by (``prefix_hash``, and the earlier
formats still read in ``legacy_hashes``), and one history's counts and hashes, cached per thread
(``history_scan``).

May import: ``errors``.
"""
