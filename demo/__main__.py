"""Entry point of ``python -m demo``; see ``demo.runner``."""

import sys

from demo.runner import main

sys.exit(main())
