"""The Kubernetes name patterns a spec's strings must match.

Patterns copied from crds/rolloutanalysis.yaml so that both sides agree on every string; the spec
parser, the REST API's and the admin's field validators use them (anchored, for regex validators).
"""

from __future__ import annotations

import re

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
