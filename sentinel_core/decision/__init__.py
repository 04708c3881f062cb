"""The pure decision core: from what was observed, decide the new status and what to do.

``decide(Observation) -> Decision`` is the whole judgement of one evaluation
(docs/operator.md): it reads the spec, the previous status, the target's state and the fresh
measurements, and returns the new status, the actions (pause the target, events, notification
intents) and whether the attempt was transient. ``resume`` is a person's resume from the UI or
the REST API; ``reapplied`` what a status write carries after a 409 and ``after_conflict`` the
whole decision then; ``interrupted`` the history entry of an attempt the Kubernetes API cut
short; ``judge`` one metric's verdict. No I/O, no clock.

The parts are private: ``_decide`` (the three functions and their types), ``_conflict``
(``reapplied``), ``_rules`` (the Ready and Healthy conditions and their messages), ``_judge``
(one metric, judged by its kind: ``sentinel_core.metric_kinds``), ``_window`` (the failure count).
"""

from sentinel_core.decision._conflict import after_conflict, reapplied
from sentinel_core.decision._decide import (
    Decision,
    Event,
    HistoryEntry,
    Observation,
    Resumption,
    decide,
    interrupted,
    resume,
)
from sentinel_core.decision._judge import Judgement, judge

__all__ = [
    "Decision",
    "Event",
    "HistoryEntry",
    "Judgement",
    "Observation",
    "Resumption",
    "after_conflict",
    "decide",
    "interrupted",
    "judge",
    "reapplied",
    "resume",
]
