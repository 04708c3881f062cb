"""The one test kit: start real servers and build real objects for tests, ``bench`` and ``demo``.

Development only: product packages never import it, and nothing here fakes a collaborator —
devcluster over HTTPS, Debian's Prometheus, ``manage.py runoperator``, the real kubectl.
pytest fixtures (``tests/support``, the package conftests) are thin wrappers over it.

Processes and waiting:
    ``ports``       free ports, and whether a chosen port is free
    ``processes``   ``ChildProcess`` (death with parent, stop for sure), ``alive``, ``descendants``
    ``waiting``     ``wait_until``
    ``paths``       the checkout's ``manage.py``, ``crds/`` and ``deploy/``
Clusters:
    ``clusters``    the ``Cluster`` protocol every launcher meets; CRD, apply, tokens on any cluster
    ``devcluster``  ``DevCluster``, the local API server in a child process (with fault hooks)
    ``kubectl``     the real kubectl, run against a kubeconfig
    ``namespaces``  a fresh namespace per test
    ``manifests``   RolloutAnalysis, Deployment, Namespace, gauge metrics, YAML for kubectl
Prometheus and the operator:
    ``prometheus``  ``PrometheusServer``, the real Prometheus
    ``metrics_app`` ``MetricsApp`` (what Prometheus scrapes) and ``GaugeSetter``
    ``fault_proxy`` ``FaultProxy``, a proxy in front of Prometheus that breaks answers
    ``serving``, ``lifecycle``  background HTTP servers in threads; start/stop as a context
    ``operator``    ``OperatorProcess``, ``OperatorStarter``, ``SharedOperator``, the template DB
    ``observe``     conditions, events, history rows and queries the operator left behind
    ``databases``   throwaway PostgreSQL and Redis servers
"""
