"""realcluster: the real Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager).

Built from pinned Go modules by ``make realcluster`` (``realcluster/build.sh``) and run by
``python -m realcluster``, which has the same interface as ``python -m devcluster`` (SPEC §9a).
Tests use :class:`testkit.realcluster.RealCluster`.
"""
