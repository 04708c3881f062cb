"""Local Kubernetes API server for development, tests and the demo (docs/devcluster.md)."""
