"""Talking to the Kubernetes API server, for the operator and the web app alike.

``kube`` is the JSON client with typed errors; ``writes`` holds the one implementation of each
cluster write both sides make (the status write with its re-read on 409, pausing and unpausing
a target); ``events`` records core/v1 Events. It imports only ``sentinel_core`` and the
official client, never Django, so either side may use it.
"""
