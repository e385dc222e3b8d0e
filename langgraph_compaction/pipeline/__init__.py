"""What one call of a compaction graph carries and what the graph keeps between calls.

The frozen records the nodes hand each other (``records``), the state schemas (``state``), the
report and its gauge (``report``), the typed effects and their sync and async drivers
(``effects``), the per-graph memory and the records it keeps (``memory``, ``remembered``), one
summary flight per prefix (``flights``), background jobs' books (``jobs``), what a node works
with (``context``) and the OpenTelemetry span (``telemetry``).

May import: ``config``, ``content``, ``store``, ``errors``.
"""
