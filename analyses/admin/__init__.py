"""The Django admin of analyses: Django's autodiscovery imports this package.

Importing it registers ``analysis.AnalysisAdmin`` with the admin site. The parts, each named for
its job: ``analysis`` (the model admin: list, change form, saves to the cluster), ``views`` (the
pages and actions around an analysis: detail, overview, resume, evaluate now), ``forms`` (the
editors of the spec), ``metric_groups`` (a metric's optional groups) and ``compat`` (the one
place the admin leans on Django internals). The admin site itself is the project's
(``sentinel_site.admin_site``); numbers as the admin shows them are ``analyses.numbers`` (the
charts use them too).
"""

from analyses.admin import analysis as analysis
