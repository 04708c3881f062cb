"""The database plumbing the Django apps share, below all of them (docs/architecture.md).

``sql`` is the one module that writes SQL by hand on Django's connection, and says which Django
internals it leans on and why; ``claims`` is the pollers' compare-and-set on a due column and
the loop they run. It holds no models: callers hand in theirs.
"""
