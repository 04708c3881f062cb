"""realcluster: the real Kubernetes control plane, with simulated nodes where pods run.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, built from pinned Go
modules by ``make realcluster`` (``realcluster/build.sh``, which also builds the Prometheus 3.x
of the real tier) and run by ``python -m realcluster``, which has the same interface as
``python -m devcluster`` (docs/realcluster.md).
Tests use :class:`testkit.realcluster.RealCluster`.
"""
