"""The grading waterfall and everything that feeds it.

``ingest`` (formats -> Task, Trajectory, errors with file:line:field) -> ``checks`` (policy, calls,
answer, grounding; ``matching`` holds the value rules) with optional ``replay`` in an ``env`` ->
``grade_case`` (one trajectory: escalation bookkeeping, ``attribution``, ``scoring``) -> ``grade_run``
(the whole run: streaming, judge rounds, outputs) -> ``aggregate`` (summary.json). ``cli`` is the ``judge`` command.
"""
