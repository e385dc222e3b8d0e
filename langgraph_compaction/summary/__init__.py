"""Making a summary and choosing one: prompts and transcript, chunks, the summary call and its
errors, checks of a reply, the cap, a custom compactor, review by a person, and which stored
summaries still match a history.

May import: ``pruning``, ``pipeline``, ``config``, ``content``, ``store``, ``errors``.
"""
