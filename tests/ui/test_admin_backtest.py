"""The admin's Backtest button and the job's page (docs/backtest.md), without a cluster.

The button stores a queued job for the saved spec (the operator runs it); the page shows the
progress while the job runs, reloading itself, and a row per rollout once it succeeded.
"""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from accounts.models import NamespaceGrant
from analyses.models import Analysis, BacktestJob, BacktestState
from tests.ui import factories
from tests.ui.forms import change_form, with_fields

pytestmark = pytest.mark.django_db

# What a finished job stores: the JSON of manage.py backtest --json (abridged to two rollouts).
RESULT = {
    "analysis": "default/checkout",
    "rollouts": [
        {
            "revision": 1,
            "hash": "6f857f95c",
            "startedAt": "2026-12-06T18:51:55Z",
            "endedAt": "2026-12-06T18:52:06Z",
            "rolledBack": False,
            "wouldPauseAt": None,
            "evaluation": None,
            "metric": None,
            "value": None,
            "limit": None,
            "message": "",
            "verdicts": {"pass": 2, "fail": 0, "inconclusive": 0, "error": 0},
            "noData": False,
            "evaluations": [],
        },
        {
            "revision": 2,
            "hash": "7b7d84ccb8",
            "startedAt": "2026-12-06T18:52:06Z",
            "endedAt": "2026-12-06T18:52:28Z",
            "rolledBack": True,
            "wouldPauseAt": "2026-12-06T18:52:16Z",
            "evaluation": 2,
            "metric": "latency",
            "value": "0.5",
            "limit": 0.3,
            "message": "paused Deployment checkout: 2 consecutive failed evaluations reached "
            "failureLimit 2: latency is 0.5, above maxValue 0.3",
            "verdicts": {"pass": 2, "fail": 2, "inconclusive": 0, "error": 0},
            "noData": False,
            "evaluations": [
                {
                    "at": f"2026-12-06T18:52:{second}Z",
                    "outcome": outcome,
                    "metrics": [
                        {
                            "name": "latency",
                            "verdict": outcome,
                            "value": value,
                            "limit": 0.3,
                            "message": "",
                        }
                    ],
                    **({"paused": True} if second == 16 else {}),
                }
                for second, outcome, value in (
                    (11, "Fail", "0.5"),
                    (16, "Fail", "0.5"),
                    (21, "Pass", "0.1"),
                    (26, "Pass", "NaN"),
                )
            ],
        },
    ],
    "summary": {
        "rollouts": 2,
        "wouldPause": 1,
        "rolledBack": 1,
        "noData": 0,
        "caught": [{"revision": 2, "pausedAfterSeconds": 10.0, "beforeEndSeconds": 12.0}],
        "missed": [],
        "pausedNotRolledBack": [],
        "queries": 8,
    },
}


def test_the_button_queues_a_job_and_its_page_follows_it(viewer_client: Client) -> None:
    row = factories.analysis("checkout")
    detail = viewer_client.get(reverse("admin:analyses_analysis_change", args=[row.pk]))
    start = reverse("admin:analyses_analysis_backtest", args=[row.pk])
    assert f'action="{start}"' in detail.content.decode()
    assert viewer_client.get(start).status_code == 405

    answer = viewer_client.post(start)
    job = BacktestJob.objects.get()
    assert (job.namespace, job.name, job.state) == (row.namespace, row.name, "queued")
    assert job.requested_by == "viewer" and job.draft is None and job.rollouts == 10
    page = reverse("admin:analyses_analysis_backtest_job", args=[row.pk, job.pk])
    assert answer.status_code == 302 and answer["Location"] == page

    running = viewer_client.get(page).content.decode()
    assert "State: <strong>queued</strong>" in running
    assert '<progress id="backtest-progress" max="100" value="0">' in running
    assert 'http-equiv="refresh"' in running

    BacktestJob.objects.filter(pk=job.pk).update(
        state=BacktestState.SUCCEEDED, result=RESULT, done=8, total=8
    )
    done = viewer_client.get(page).content.decode()
    assert 'http-equiv="refresh"' not in done and "<progress" not in done
    assert "2 rollouts: 1 would have paused, 1 rolled back by a person" in done
    assert "at evaluation 2, 2026-12-06T18:52:16Z: paused Deployment checkout" in done
    begin = done.index('id="backtest-rollouts"')
    table = done[begin : done.index("</table>", begin)]
    # The header and one row per rollout.
    assert table.count("<tr>") == 3
    # The rollout replayed evaluation by evaluation: its metric's graph, the pause marked at
    # the evaluation that would have made it; none for the rollout without evaluations.
    assert "backtest-graphs-1" not in done
    begin = done.index('id="backtest-graphs-2"')
    graphs = done[begin : done.index("</section>", begin)]
    assert graphs.count("<svg") == 1 and "the would-be pause marked" in graphs
    assert 'data-points="4"' in graphs
    assert graphs.count('class="chart-pause"') == 1
    assert "Rollout paused at 2026-12-06 18:52:16 UTC" in graphs


def test_someone_who_may_not_view_it_gets_nothing() -> None:
    row = factories.analysis("checkout")
    user = User.objects.create_user("elsewhere", None, None, is_staff=True)
    user.user_permissions.add(
        Permission.objects.get(codename="view_analysis", content_type__app_label="analyses")
    )
    NamespaceGrant.objects.create(user=user, namespace="other", can_view=True)
    client = Client()
    client.force_login(user)
    start = reverse("admin:analyses_analysis_backtest", args=[row.pk])
    assert client.post(start).status_code in (302, 404)
    assert not BacktestJob.objects.exists()


def test_try_on_past_rollouts_queues_the_forms_draft_unsaved(viewer_client: Client) -> None:
    row = factories.analysis("checkout")
    editor = User.objects.create_user("editor", None, None, is_staff=True)
    # The metrics inline is a model of its own: editing it takes its permissions too.
    editor.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="analyses",
            content_type__model__in=("analysis", "analysismetric"),
        ).exclude(codename__in=("add_analysis", "delete_analysis"))
    )
    NamespaceGrant.objects.create(user=editor, namespace="*", can_view=True, can_edit=True)
    client = Client()
    client.force_login(editor)
    url = reverse("admin:analyses_analysis_change", args=[row.pk])
    # The button is the edit form's: shown to whoever may change the analysis, and only them.
    assert 'name="_backtest"' in client.get(url).content.decode()
    assert 'name="_backtest"' not in viewer_client.get(url).content.decode()
    spec_before, generation = row.spec, row.generation

    draft = {**change_form(row, metrics=[("p99-latency", "up", 0.1)]), "_backtest": "Try"}
    del draft["_save"]
    answer = client.post(url, draft)
    job = BacktestJob.objects.get()
    assert answer.status_code == 302
    assert answer["Location"] == reverse(
        "admin:analyses_analysis_backtest_job", args=[row.pk, job.pk]
    )
    assert (job.namespace, job.name, job.requested_by) == (row.namespace, row.name, "editor")
    assert job.draft is not None and job.draft["metrics"][0]["maxValue"] == 0.1
    # Nothing saved: the mirror (which follows the cluster) and the change log are as they were.
    row.refresh_from_db()
    assert (row.spec, row.generation) == (spec_before, generation)
    assert not LogEntry.objects.exists()

    # A viewer may not try a draft; a draft the form refuses queues nothing.
    assert viewer_client.post(url, draft).status_code == 403
    broken = client.post(url, with_fields(draft, provider="thanos"))
    assert broken.status_code == 200 and "thanos" in broken.content.decode()
    assert BacktestJob.objects.count() == 1


def test_try_on_past_rollouts_on_the_add_form_queues_a_draft_of_an_analysis_to_come(
    staff_client: Client, viewer_client: Client
) -> None:
    add = reverse("admin:analyses_analysis_add")
    # Shown to whoever may add analyses; the viewer may not open the add form at all.
    assert 'name="_backtest"' in staff_client.get(add).content.decode()
    assert viewer_client.get(add).status_code == 403

    draft = {
        **change_form(None, namespace="shop", name="checkout-guard", metrics=[("p99", "up", 0.2)]),
        "_backtest": "Try",
    }
    del draft["_save"]
    answer = staff_client.post(add, draft)
    job = BacktestJob.objects.get()
    page = reverse("admin:analyses_analysis_backtest_draft", args=[job.pk])
    assert answer.status_code == 302 and answer["Location"] == page
    assert (job.namespace, job.name, job.requested_by) == ("shop", "checkout-guard", "platform")
    assert job.draft is not None and job.draft["metrics"][0]["maxValue"] == 0.2
    assert job.draft["target"] == {"kind": "Deployment", "name": "checkout"}
    # Nothing created: no analysis (the mirror follows the cluster), no change logged.
    assert not Analysis.objects.exists() and not LogEntry.objects.exists()

    # Its page, found by the job alone: whoever may view analyses in its namespace.
    shown = viewer_client.get(page).content.decode()
    assert "Backtest of draft shop/checkout-guard" in shown
    assert "State: <strong>queued</strong>" in shown
    elsewhere = User.objects.create_user("elsewhere", None, None, is_staff=True)
    elsewhere.user_permissions.add(
        Permission.objects.get(codename="view_analysis", content_type__app_label="analyses")
    )
    NamespaceGrant.objects.create(user=elsewhere, namespace="other", can_view=True)
    client = Client()
    client.force_login(elsewhere)
    assert client.get(page).status_code == 404

    # Refused as a save would be: a provider the namespace may not use, or a namespace the
    # user may not create analyses in; nothing queued.
    broken = staff_client.post(add, with_fields(draft, provider="thanos"))
    assert broken.status_code == 200 and "thanos" in broken.content.decode()
    creator = User.objects.create_user("creator", None, None, is_staff=True)
    creator.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="analyses",
            content_type__model__in=("analysis", "analysismetric"),
        )
    )
    NamespaceGrant.objects.create(user=creator, namespace="shop", can_view=True)
    client.force_login(creator)
    refused = client.post(add, draft)
    assert refused.status_code == 200
    assert "You may not create analyses in namespace shop." in refused.content.decode()
    assert BacktestJob.objects.count() == 1
