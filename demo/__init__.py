"""``python -m demo`` (``make demo``): the whole Rollout Sentinel story on one machine.

devcluster (or, with ``make demo CLUSTER=real``, the real control plane of ``realcluster``) with
the CRD, a ``checkout`` Deployment and its analysis; a demo app whose latency regresses
after a while, scraped by the real Prometheus; the operator and the web UI. On the real control
plane the Deployment's pods run on a kwok node, the demo serves their metrics and releases a
slower version, and ``compare`` pauses that rollout mid-way.
Modules: ``settings`` (environment knobs), ``app`` (the synthetic checkout service),
``manifests`` (what is applied), ``children`` (the subprocesses), ``status`` (the status log),
``banner`` (the text for a person) and ``runner`` (the orchestration). devcluster, Prometheus,
realcluster, free ports and kubectl come from the test kit (``testkit``), shared with the tests
and ``bench``.
"""
