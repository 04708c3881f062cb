"""Where the project's files are, for everything that starts the product from its checkout.

The kit, the tests, ``bench`` and ``demo`` run ``manage.py`` and apply the CRD and the
``deploy/`` tree from the repository, never from an installed copy.
"""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
MANAGE = REPO_ROOT / "manage.py"
CRD_DIR = REPO_ROOT / "crds"
CRD_PATH = CRD_DIR / "rolloutanalysis.yaml"
# The analysis CRD and the two template CRDs (docs/templates.md), applied together.
CRD_PATHS = (
    CRD_PATH,
    CRD_DIR / "rolloutanalysistemplate.yaml",
    CRD_DIR / "clusterrolloutanalysistemplate.yaml",
)
DEPLOY_DIR = REPO_ROOT / "deploy"
