"""Tests of the Kubernetes client (sentinel_cluster) against devcluster over HTTPS."""
