"""The metric kinds: threshold, compare, sequential, each a package behind one surface.

Each kind's ``__init__`` is its surface; its parts are private modules (``_spec``, ``_read``,
``_judge``, …) that nothing outside the kind imports (an import-linter contract). ``_fields`` holds
the field shapes more than one kind parses.
"""
