"""Local Kubernetes API server for development, tests and the demo (SPEC §9)."""
