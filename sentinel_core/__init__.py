"""The pure domain of Rollout Sentinel: what a RolloutAnalysis says and how it is judged.

Its place among the layers is in docs/architecture.md#layers.

Spec parsing, the status API, condition and event vocabularies, measurements, the decision core
and backoff. Nothing here imports Django, another package of the project, or does I/O: every
function is given what it needs (the clock and randomness included) and returns data, which is
what makes the reconciler idempotent and these modules testable without a cluster.
"""
