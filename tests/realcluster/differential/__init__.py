"""The differential test's machinery: one script of operations run against both servers.

``runner`` runs the operations and records raw answers, ``normalize`` masks what legitimately
differs between any two servers (uids, times, resourceVersions, generated names, tokens),
``compare`` lists the differences, ``allowlist`` says which ones are known and why, and the
``ops_*`` modules are the script itself.
"""
