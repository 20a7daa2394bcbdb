"""The red team's access matrix, replayed on every run: no identity reaches another team's object.

Issue 37's red team requested every page and API route that takes an object id as every
identity that must not reach the object (69 read paths x 9 identities, 55 write operations
x 7 identities) and found no cross-team read or write. That result holds only for the routes
that existed then. This module keeps it true as routes are added: it does not list the
routes by hand but walks Django's URL resolver (includes and the DRF router too), takes every
pattern with a keyword that names an object, points it at team A's object of that kind and
asks as each outsider:

- a read (GET) answers 302 to a login page, 401, 403, 404 or 405, never team A's data;
- a write (POST, and PUT/PATCH/DELETE where the API route takes them) answers the same, and
  afterwards every row of the project's own tables is as it was (nothing changed, nothing
  added or removed, in team A or elsewhere);
- a viewer of team A may read but not write either.

A route with a keyword the table below does not know fails
``test_every_route_keyword_is_in_the_table``, and its cases fail too: a new route cannot slip
past uncovered. Each (route, identity, method) is one test id, e.g.
``test_outsider_cannot_read[GET jobs/<int:pk>/ as a member of team B]``.

In-process only (django.test.Client with force_login for pages, APIClient with
force_authenticate for /api/): the fast tier.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse
from django.utils import timezone
from rest_framework.test import APIClient

from jobs.choices import JobStatus
from jobs.models import Artifact, JobEvent, Schedule, TunedFile
from jobs.services.paths import artifact_dir
from results.models import AlertSettings, Baseline, Verdict
from roadmap.gates import roadmap_state
from roadmap.models import GateOverride
from roadmap.plan import ensure_roadmap
from stack.kinds.profile import KIND as PROFILE
from teams.choices import Role
from teams.models import ApiDecision, SourceSnapshot
from teams.sources import tree_of
from tests.factories import (
    add_member,
    make_environment,
    make_job,
    make_measurement,
    make_project,
    make_team,
    make_user,
    make_worker,
)

# ~2,100 cases, about 85 s in one process: in make test, kept out of make test-fast.
pytestmark = [pytest.mark.django_db, pytest.mark.slow]

# What only team A's objects say: no refusal and no shared page may show it to an outsider.
SECRET = "SECRET-OF-TEAM-A"

# --- the routes, from the resolver ----------------------------------------------------------


@dataclass(frozen=True)
class Route:
    route: str  # the full pattern text, as the resolver spells it
    pattern: URLPattern
    kwargs: tuple[str, ...]
    api: bool
    admin: bool
    writes: tuple[str, ...] = field(default=())  # the write methods the route takes

    @property
    def noun(self) -> str:
        """What a plain ``pk`` names: the path segment before it (``jobs/<int:pk>/``: jobs,
        ``jobs/<int:job_pk>/artifacts/<int:pk>/``: artifacts); else the first segment."""
        text = self.route.removeprefix("api/v1/").lstrip("^")
        before = re.split(r"/(?:<(?:\w+:)?pk>|\(\?P<pk>)", text, maxsplit=1)[0]
        return before.rsplit("/", 1)[-1] if before != text else text.split("/", 1)[0]


def _walk(patterns: list[Any], prefix: str = "", names: tuple[str, ...] = ()) -> list[Any]:
    found = []
    for p in patterns:
        here = names + tuple(p.pattern.regex.groupindex)
        if isinstance(p, URLResolver):
            found += _walk(p.url_patterns, prefix + str(p.pattern), here)
        else:
            found.append((prefix + str(p.pattern), p, here))
    return found


WRITE_METHODS = ("post", "put", "patch", "delete")


def _writes(pattern: URLPattern, api: bool) -> tuple[str, ...]:
    callback = pattern.callback
    if not api:
        # A page is a function view whose methods the resolver cannot tell: every page is
        # posted to (a GET-only one answers 405, which is a refusal too).
        return ("post",)
    actions = getattr(callback, "actions", None)
    if actions:  # a DRF viewset route: its method → action map
        return tuple(m for m in WRITE_METHODS if m in actions)
    cls = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
    return tuple(m for m in WRITE_METHODS if cls is not None and hasattr(cls, m))


# What a keyword names. ``pk`` names the object of the route's noun; the others name the
# same object on every route. Keywords that name no object are listed apart, so that a new
# keyword (an object id or not) is a decision someone makes here.
PK_NOUNS = {
    "jobs": "job",
    "artifacts": "artifact",
    "projects": "project",
    "schedules": "schedule",
    "baselines": "baseline",
    "verdicts": "verdict",
    "environments": "environment",
    "workers": "worker",
    "teams": "team",
}
OBJECT_KWARGS = {
    "job_pk": "job",
    "artifact_pk": "artifact",
    "source_pk": "source",
    "override_id": "override",
    # Django's admin: object_id is the row of the admin's model, id a user, content_type_id
    # the model of admin/r/ (view on site).
    "object_id": "admin object",
    "id": "user",
    "content_type_id": "content type",
}
NOT_OBJECT_KWARGS = {
    "number": "1",  # a roadmap phase's number within the project (1 to 4)
    "fmt": None,  # an output format; per route below
    "format": "json",  # DRF's format suffix
    "url": None,  # the admin's catch-all
    "app_label": None,  # the admin's app index
}


def _unknown(kwargs: tuple[str, ...], noun: str) -> list[str]:
    unknown = [k for k in kwargs if k not in OBJECT_KWARGS and k not in NOT_OBJECT_KWARGS]
    unknown = [k for k in unknown if k != "pk"]
    if "pk" in kwargs and noun not in PK_NOUNS:
        unknown.append(f"pk of {noun!r}")
    return unknown


def _routes() -> list[Route]:
    routes = []
    for text, pattern, kwargs in _walk(get_resolver().url_patterns):
        if "pk" not in kwargs and not set(kwargs) & set(OBJECT_KWARGS) and not _unknown(kwargs, ""):
            continue  # takes no object id
        api = text.startswith("api/")
        routes.append(
            Route(
                route=text,
                pattern=pattern,
                kwargs=kwargs,
                api=api,
                admin=text.startswith("admin/"),
                writes=_writes(pattern, api),
            )
        )
    return routes


ROUTES = _routes()
_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)|<(?:\w+:)?(\w+)>")


def _crashes_on_suffix(route: Route, method: str) -> bool:
    """A DRF format-suffix route (``.json``) whose action for the method does not take the
    ``format`` keyword the suffix passes it: the view raises TypeError, a 500, for everyone."""
    actions = getattr(route.pattern.callback, "actions", None) or {}
    if "format" not in route.kwargs or method not in actions:
        return False
    handler = getattr(route.pattern.callback.cls, actions[method])
    parameters = inspect.signature(handler).parameters.values()
    return not any(p.name == "format" or p.kind is p.VAR_KEYWORD for p in parameters)


def _plain_value(route: Route, kwarg: str) -> str:
    """A keyword's value where it names no object; an object id ("1") where it does."""
    if kwarg == "fmt":
        return "csv" if "csv|json" in route.route else "md"
    return str(NOT_OBJECT_KWARGS.get(kwarg) or "1")


def _shadowed(route: Route) -> bool:
    """Whether an earlier pattern answers the route's URLs (the route is never reached).

    The worker API's detail route takes any name up to a slash (jobs.api.views.WorkerViewSet,
    lookup_value_regex, for Celery node names with dots), so its ``.json`` suffix route is
    never reached: /api/v1/workers/7.json/ asks for the worker named "7.json". Such a route
    still has its cases: they ask what its URL answers.
    """
    text = _GROUP.sub(lambda m: _plain_value(route, m.group(1) or m.group(2)), route.route)
    text = text.replace("^", "").replace("$", "").replace("\\.", ".").replace("/?", "/")
    return set(resolve("/" + text).kwargs) != set(route.kwargs)


# Found by this matrix: /api/v1/jobs/7/events.json/ and every other extra action's .json
# suffix route crashed (TypeError, a 500) for team A's own members too, as the actions did
# not take the ``format`` keyword the suffix passes. They do now; this keeps them so.
CRASHING = {
    (r.route, m)
    for r in ROUTES
    if not _shadowed(r)
    for m in ("get", *r.writes)
    if _crashes_on_suffix(r, m)
}


def test_every_format_suffix_route_takes_its_format_keyword() -> None:
    assert set() == CRASHING


# --- the world: team A owns one of everything; team B has an admin, a member, a viewer ------


def _world() -> dict[str, Any]:
    a = make_team(f"A {SECRET}")
    a_admin = make_user()
    add_member(a, a_admin, Role.ADMIN)
    a_viewer = make_user()
    add_member(a, a_viewer, Role.VIEWER)
    project = make_project(a, f"project {SECRET}")
    project.codebase_description = SECRET
    project.save()
    environment = make_environment(gpu=f"GPU {SECRET}")
    source = SourceSnapshot.objects.create(
        project=project,
        origin=SourceSnapshot.Origin.UPLOAD,
        status=SourceSnapshot.Status.READY,
        name=f"{SECRET}.tar.gz",
        file_count=1,
        total_bytes=len(SECRET),
    )
    tree = tree_of(source)
    tree.mkdir(parents=True)
    (tree / "kernel.cu").write_text(f"// {SECRET}\n")
    schedule = Schedule.objects.create(
        name=f"nightly {SECRET}",
        team=a,
        project=project,
        kind="noop",
        cron="0 3 * * *",
        next_run_at=timezone.now(),
    )
    worker = make_worker("celery@gpu-shared")
    running = make_job(a, status=JobStatus.RUNNING, project=project, worker=worker.name)
    running.params = {"note": SECRET}
    running.save()
    job = make_job(
        a,
        status=JobStatus.SUCCEEDED,
        worker=worker.name,
        project=project,
        source=source,
        schedule=schedule,
        environment=environment,
        created_by=a_admin,
        finished_at=timezone.now(),
        summary={"note": SECRET},
    )
    profile = make_job(
        a, status=JobStatus.SUCCEEDED, project=project, kind=PROFILE.name, params={"n": SECRET}
    )
    JobEvent.objects.create(job=job, kind="log", message=SECRET)
    make_measurement(job, 123.0, m=4096, label=SECRET)
    out = artifact_dir(job.pk)
    out.mkdir(parents=True)
    (out / "report.md").write_text(SECRET)
    artifact = Artifact.objects.create(
        job=job, path="report.md", size=len(SECRET), sha256="0" * 64, content_type="text/plain"
    )
    baseline = Baseline.objects.create(
        project=project, benchmark="gemm", fingerprint=environment.fingerprint, job=job, note=SECRET
    )
    verdict = Verdict.objects.create(
        job=job,
        baseline=baseline,
        baseline_job=job,
        benchmark="gemm",
        case={"m": 4096, "label": SECRET},
        case_key="case-1",
        metric="throughput",
        verdict="regressed",
        value=88.0,
        baseline_value=100.0,
    )
    alerts = AlertSettings.objects.create(
        project=project, emails=["a-secret@example.test"], webhook_urls=["https://a.test/"]
    )
    tuned = TunedFile.objects.create(team=a, project=project, job=job, method="tunableop")
    ApiDecision.objects.create(project=project, api="cudaGraph", decision="port", note=SECRET)
    phases = ensure_roadmap(project)
    override = GateOverride.objects.create(
        phase=phases[0], criterion="libraries_compared", reason=f"{SECRET} by hand", by=a_admin,
        expires_at=timezone.now() + timedelta(days=30),
    )  # fmt: skip
    # The roadmap records when a phase's state changes on the first read of it (roadmap.gates):
    # read once here, so that a later read changes nothing and a change means a write.
    roadmap_state(project)
    b = make_team("B")
    identities: dict[str, Any] = {"anonymous": None, "a signed-in user of no team": make_user()}
    for role, words in (
        (Role.ADMIN, "an admin"),
        (Role.MEMBER, "a member"),
        (Role.VIEWER, "a viewer"),
    ):
        someone = make_user()
        add_member(b, someone, role)
        identities[f"{words} of team B"] = someone
    return {
        "team": a,
        "job": job,
        "profile job": profile,
        "project": project,
        "schedule": schedule,
        "baseline": baseline,
        "verdict": verdict,
        "environment": environment,
        "worker": worker,
        "artifact": artifact,
        "source": source,
        "alerts": alerts,
        "tuned": tuned,
        "phase": phases[0],
        "override": override,
        "user": a_admin,
        "a_admin": a_admin,
        "a_viewer": a_viewer,
        "identities": identities,
    }


OUTSIDERS = (
    "anonymous",
    "a signed-in user of no team",
    "an admin of team B",
    "a member of team B",
    "a viewer of team B",
)


def _admin_object(route: Route, world: dict[str, Any]) -> str:
    """The admin's model's row of team A (the admin refuses every non-staff user first)."""
    app_label, model_name = route.route.split("/")[1:3]
    try:
        model = apps.get_model(app_label, model_name)
    except LookupError:
        return str(world["project"].pk)
    for value in world.values():
        if isinstance(value, model):
            return str(value.pk)
    row = model._default_manager.order_by("pk").first()
    return str(row.pk) if row is not None else "1"


# Routes whose ``pk`` is a job of one kind: the profile pages take only a profile job.
PK_BY_NAME = {"profile-diff": "profile job", "profile-replay": "profile job"}
# What a route reads besides its path: the file of a source snapshot.
QUERY_BY_NAME = {"source-file": {"path": "kernel.cu"}}


def _value(route: Route, kwarg: str, world: dict[str, Any]) -> str:
    if kwarg == "pk" and route.pattern.name in PK_BY_NAME:
        return str(world[PK_BY_NAME[route.pattern.name]].pk)
    if kwarg == "pk":
        return str(world[PK_NOUNS[route.noun]].pk)
    if kwarg == "object_id":
        if route.route.startswith("admin/r/"):
            return str(world["project"].pk)
        return _admin_object(route, world)
    if kwarg == "content_type_id":
        return str(ContentType.objects.get_for_model(world["project"]).pk)
    if kwarg in OBJECT_KWARGS:
        return str(world[OBJECT_KWARGS[kwarg]].pk)
    return _plain_value(route, kwarg)


def url_of(route: Route, world: dict[str, Any]) -> str:
    """The route's path with team A's ids in it, checked to resolve back to the route's view."""
    text = _GROUP.sub(lambda m: _value(route, m.group(1) or m.group(2), world), route.route)
    text = text.replace("^", "").replace("$", "").replace("\\.", ".").replace("/?", "/")
    url = "/" + text
    match = resolve(url)
    assert match.func is route.pattern.callback, f"{url} resolved to {match.route}, not {route}"
    return url


# --- what an outsider may get back -----------------------------------------------------------

REFUSALS = {401, 403, 404, 405}

# Routes whose object is shared by all signed-in users, not a team's: the fleet. A worker
# runs every team's jobs, and the fleet pages and API show any signed-in user every worker
# (portal.fleet.worker_detail, jobs.api.views.WorkerViewSet), with only the reader's own
# jobs on it (jobs.fleet_view.member). There a 200 is right, but not one with team A's data.
SHARED_NOUNS = {"workers"}


def _body(response: Any) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode(errors="replace")
    return response.content.decode(errors="replace")


def assert_refused(route: Route, method: str, who: str, response: Any) -> None:
    status = response.status_code
    body = _body(response)
    if status == 302:
        to = response["Location"]
        login = reverse("admin:login") if route.admin else reverse(settings.LOGIN_URL)
        assert to.startswith(login), f"{who}: 302 to {to}, not to the login page {login}"
        assert route.admin or who == "anonymous", f"{who} was sent to log in though signed in"
    elif route.noun in SHARED_NOUNS and who != "anonymous" and status == 200:
        pass  # the fleet is everyone's (SHARED_NOUNS); its body is checked below
    else:
        assert status in REFUSALS, f"{who} got {status}: {body[:300]!r}"
    assert SECRET not in body, f"{who} got {status} with team A's data in it: {body[:300]!r}"


# --- what must not change ---------------------------------------------------------------------

# Rows written by the act of asking, not by what was asked: the login throttle's log.
NOT_STATE = {"axes"}
STATE_APPS = ("portal", "jobs", "results", "roadmap", "auth", "authtoken")


def snapshot() -> dict[str, list[dict[str, Any]]]:
    """Every row of the project's tables, every field: a refused write leaves all of it."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for label in STATE_APPS:
        for model in apps.get_app_config(label).get_models():
            if model._meta.app_label in NOT_STATE or not model._meta.managed:
                continue
            if model.__name__ == "MetricsScrape":
                continue  # a record of /metrics reads, not of any team's state
            rows[model._meta.label] = [
                {k: v for k, v in row.items() if k != "last_login"}
                for row in model._default_manager.order_by("pk").values()
            ]
    return rows


def assert_unchanged(before: dict[str, Any], after: dict[str, Any]) -> None:
    changed = [label for label in before if before[label] != after[label]]
    assert not changed, f"rows changed by a refused write: {changed}"


# A write that would change something if it were let through: the fields the forms and
# serializers of the routes take, with new values.
PAYLOAD: dict[str, Any] = {
    "name": "taken over",
    "note": "taken over",
    "enabled": "false",
    "cron": "* * * * *",
    "kind": "noop",
    "decision": "drop",
    "api": "cudaGraph",
    "status": "blocked",
    "blocked": "on",
    "take": "1",
    "reason": "taken over",
    "criterion": "x",
    "emails": "attacker@example.test",
    "webhook_urls": "https://attacker.test/",
    "events": "regression",
    "vendored": "*",
    "answer": "yes",
    "key": "x",
    "done": "on",
    "benchmark": "gemm",
    "job": "1",
    "git_url": "https://attacker.test/repo.git",
}


# --- the cases ----------------------------------------------------------------------------------


def _id(route: Route, method: str, who: str) -> str:
    return f"{method.upper()} {route.route} as {who}"


READS = [
    pytest.param(route, who, id=_id(route, "get", who)) for route in ROUTES for who in OUTSIDERS
]
WRITES = [
    pytest.param(route, method, who, id=_id(route, method, who))
    for route in ROUTES
    for method in route.writes
    for who in OUTSIDERS
]
VIEWER_WRITES = [
    pytest.param(route, method, id=_id(route, method, "a viewer of team A"))
    for route in ROUTES
    for method in route.writes
]


@pytest.fixture(scope="module")
def shared_world(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[dict[str, Any], Path]]:
    """Team A's world, built once for the module inside a transaction of its own.

    Each test's own transaction (pytest-django's) is then a savepoint inside this one: what a
    test writes is rolled back after it, and the whole world at the module's end. Building the
    world once keeps the two thousand cases of the matrix in the fast tier.
    """
    root = tmp_path_factory.mktemp("matrix-artifacts")
    with django_db_blocker.unblock(), override_settings(ARTIFACT_ROOT=root):
        outer = transaction.atomic()
        outer.__enter__()
        try:
            yield _world(), root
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture
def world(
    shared_world: tuple[dict[str, Any], Path], settings: Any, no_enqueue: list[int]
) -> dict[str, Any]:
    data, root = shared_world
    settings.ARTIFACT_ROOT = root  # where the world's artifact and source files are
    return data


def client_for(route: Route, user: Any) -> Client | APIClient:
    if route.api:
        api = APIClient(raise_request_exception=False)
        if user is not None:
            api.force_authenticate(user)
        return api
    page = Client(raise_request_exception=False)
    if user is not None:
        page.force_login(user)
    return page


def request(route: Route, method: str, user: Any, world: dict[str, Any]) -> Any:
    unknown = _unknown(route.kwargs, route.noun)
    if unknown:
        pytest.fail(f"{route.route}: keywords not in the table {unknown}: add them")
    client = client_for(route, user)
    url = url_of(route, world)
    if method == "get":
        return client.get(url, QUERY_BY_NAME.get(route.pattern.name, {}))
    if route.api:
        return getattr(client, method)(url, PAYLOAD, format="json")
    return getattr(client, method)(url, PAYLOAD)


def test_every_route_keyword_is_in_the_table() -> None:
    unknown = {r.route: _unknown(r.kwargs, r.noun) for r in ROUTES if _unknown(r.kwargs, r.noun)}
    assert not unknown, f"routes with keywords the access matrix does not know: {unknown}"


def test_the_matrix_covers_the_routes_the_red_team_tried() -> None:
    """The walk found the routes: not an empty matrix that passes by testing nothing."""
    found = {r.route for r in ROUTES}
    for expected in (
        "jobs/<int:pk>/",
        "jobs/<int:pk>/artifacts/<int:artifact_pk>/",
        "projects/<int:pk>/sources/<int:source_pk>/file/",
        "schedules/<int:pk>/delete/",
        "baselines/<int:pk>/unpin/",
        "projects/<int:pk>/alerts/",
        "api/v1/jobs/<int:job_pk>/artifacts/<int:pk>/download/",
        "api/v1/^schedules/(?P<pk>[^/.]+)/$",
        "api/v1/^projects/(?P<pk>[^/.]+)/sources/$",
    ):
        assert expected in found
    assert sum(1 for r in ROUTES if not r.admin) >= 69


@pytest.mark.parametrize("route", [pytest.param(r, id=r.route) for r in ROUTES if not r.admin])
def test_team_a_reads_its_own_object_on_the_route(route: Route, world: dict[str, Any]) -> None:
    """The control: the ids the matrix uses are team A's real objects (a viewer of team A reads
    them), so an outsider's 404 means refused, not missing. A viewer, not an admin: the project
    page offers a writer its steps, and checking those runs tools (a subprocess)."""
    response = request(route, "get", world["a_viewer"], world)
    if _shadowed(route):
        # Another pattern answers this URL (see shadowed): it has its own case in the matrix.
        assert response.status_code == 404
        return
    assert response.status_code != 404, f"a viewer of team A got 404 from {route.route}"
    assert response.status_code < 500, f"a viewer of team A got {response.status_code}"


@pytest.mark.parametrize(("route", "who"), READS)
def test_outsider_cannot_read(route: Route, who: str, world: dict[str, Any]) -> None:
    response = request(route, "get", world["identities"][who], world)
    assert_refused(route, "get", who, response)


@pytest.mark.parametrize(("route", "method", "who"), WRITES)
def test_outsider_cannot_write(route: Route, method: str, who: str, world: dict[str, Any]) -> None:
    before = snapshot()
    response = request(route, method, world["identities"][who], world)
    assert_refused(route, method, who, response)
    assert_unchanged(before, snapshot())


# Pages that only read: their views (login_required, nothing else) never look at the method
# or at request.POST, so a POST is answered as the GET a viewer of team A may make: a 200
# there is the page, not a write (read in portal/views.py, portal/roadmap.py,
# portal/schedules.py, portal/fleet.py, portal/kinds/profile.py). The test still checks that
# nothing changed, and that the answer is the GET's.
READ_ONLY_PAGES = {
    "job-detail",
    "job-log",
    "job-measurements",
    "job-summary",
    "artifact-download",
    "profile-diff",
    "project-porting",
    "project-roadmap",
    "roadmap-report",
    "roadmap-report-as",
    "schedule-detail",
    "worker-detail",
}


@pytest.mark.parametrize(("route", "method"), VIEWER_WRITES)
def test_viewer_of_team_a_cannot_write(route: Route, method: str, world: dict[str, Any]) -> None:
    before = snapshot()
    response = request(route, method, world["a_viewer"], world)
    assert_unchanged(before, snapshot())
    if not route.api and route.pattern.name in READ_ONLY_PAGES:
        assert response.status_code == request(route, "get", world["a_viewer"], world).status_code
        return
    assert not 200 <= response.status_code < 300, f"a viewer of team A got {response.status_code}"
