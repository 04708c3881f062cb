"""The operator: Kubernetes and Prometheus clients, the pure decision core, the reconcile task,
the watch that keeps the mirror current, the due-time dispatcher and leader election.

Named ``sentinel_operator`` because ``operator`` is a standard-library module that is already
imported when the interpreter starts, so a package by that name could never be imported.
"""
