"""Cheap before expensive: LibreChat's position-based pruning rule, the epochs that keep its
treatments sticky between trigger crossings, old media out of the model input, and pins.

May import: ``pipeline``, ``config``, ``content``, ``store``, ``errors``.
"""
