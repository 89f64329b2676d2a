"""Tenant isolation, route by route: tenant A's sessions and tokens never reach tenant B's data.

Two fake Moodles, each registered with its own organization, each with a course, an activity,
a student with a graded submission, and an API evaluation. Every route of the app is
classified in ROUTES by how a caller is identified there; the tests for each class send tenant
A's credentials with tenant B's ids and check that the answer holds none of B's data and that
B's rows are unchanged. A route that is not classified fails ``test_every_route_is_classified``:
add it to ROUTES (and, if it takes a new kind of path parameter, to ``path_values``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import inspect, select
from werkzeug.routing import Rule

from app.api import auth as api_auth
from app.extensions import db
from app.models import (
    Activity,
    ApiToken,
    Appeal,
    AssetReport,
    AuditEvent,
    Course,
    Deployment,
    Evaluation,
    Grade,
    LtiAsset,
    LtiNotice,
    LtiUser,
    ModelUsage,
    Organization,
    Platform,
    PushStatus,
    ScorePush,
    Submission,
)
from tests.conftest import register, registration_path, run_jobs
from tests.documents import ESSAY
from tests.fakes.platform import STUDENT, TEACHER, FakePlatform, browser_launch
from tests.test_core_loop import open_activity, upload

# --- the classification ----------------------------------------------------------------------

#: Serves nothing that belongs to a tenant.
PUBLIC = "public"
#: OIDC login and launch: the platform's signed id_token decides the tenant.
LTI_ENTRY = "lti-entry"
#: Dynamic Registration: the platform's configuration decides the issuer.
REGISTRATION = "registration"
#: /l/<token>/...: the page token fixes platform, activity, user and role.
PAGE_TOKEN = "page-token"
#: /admin: the site administrator sees every tenant by design; nobody else gets in.
ADMIN = "admin-session"
#: REST API with an organization's bearer token.
API_ORGANIZATION = "api-organization-token"
#: REST API endpoints for the admin token only.
API_ADMIN = "api-admin-token"
#: Load balancer and Kubernetes probes: open, "ok" or "failing" per check, 503 when failing.
PROBE = "probe"
#: /metrics: the operator's, with EVALUAITOR_METRICS_TOKEN; organizations by number only.
METRICS = "metrics-token"

ROUTES: dict[str, str] = {
    "health": PUBLIC,
    "monitoring.healthz": PROBE,
    "monitoring.readyz": PROBE,
    "monitoring.scrape": METRICS,
    "static": PUBLIC,
    "lti.jwks": PUBLIC,
    "lti.canvas_json": PUBLIC,
    "lti.login": LTI_ENTRY,
    "lti.launch": LTI_ENTRY,
    # The new window of a launch whose cookie the frame could not read: a single-use handoff
    # token, issued for one launch already checked, decides the tenant.
    "lti.resume": LTI_ENTRY,
    # A notice of the Platform Notification Service: its platform's signed JWT decides the
    # tenant, and the activity it names must be that platform's and deployment's
    # (tests/test_asset_processor.py).
    "lti.notices": LTI_ENTRY,
    "lti.register": REGISTRATION,
    "admin.index": ADMIN,
    "admin.sign_in": ADMIN,
    "admin.sign_out": ADMIN,
    "admin.platform_active": ADMIN,
    "admin.deployment_active": ADMIN,
    "admin.registration_link": ADMIN,
    "admin.model_servers": ADMIN,
    "admin.organization_limits": ADMIN,
    "admin.privacy_request": ADMIN,
    "web.activity": PAGE_TOKEN,
    "web.status": PAGE_TOKEN,
    "web.stats": PAGE_TOKEN,
    "web.submit": PAGE_TOKEN,
    "web.export_csv": PAGE_TOKEN,
    "web.release_all": PAGE_TOKEN,
    "web.submission_detail": PAGE_TOKEN,
    "web.download": PAGE_TOKEN,
    "web.override": PAGE_TOKEN,
    "web.regrade": PAGE_TOKEN,
    "web.release": PAGE_TOKEN,
    "web.reopen": PAGE_TOKEN,
    "web.use_as_example": PAGE_TOKEN,
    "web.regrade_estimate": PAGE_TOKEN,
    "web.regrade_chosen": PAGE_TOKEN,
    "web.ask_appeal": PAGE_TOKEN,
    "web.withdraw_appeal": PAGE_TOKEN,
    "web.appeal_queue": PAGE_TOKEN,
    "web.answer_appeal": PAGE_TOKEN,
    "web.retry_grading": PAGE_TOKEN,
    "web.retry_push": PAGE_TOKEN,
    "web.resend_report": PAGE_TOKEN,
    "setup.setup": PAGE_TOKEN,
    "setup.save_setup": PAGE_TOKEN,
    "setup.settings": PAGE_TOKEN,
    "setup.save_settings": PAGE_TOKEN,
    "setup.parse_rubric": PAGE_TOKEN,
    "setup.export_rubric": PAGE_TOKEN,
    "setup.retry_column_update": PAGE_TOKEN,
    "api.openapi_document": PUBLIC,
    "api.list_plugins": API_ORGANIZATION,
    "api.submit_evaluation": API_ORGANIZATION,
    "api.list_evaluations": API_ORGANIZATION,
    "api.evaluation_status": API_ORGANIZATION,
    "api.evaluation_result": API_ORGANIZATION,
    "api.cancel_evaluation": API_ORGANIZATION,
    "api.get_organization": API_ADMIN,
    "api.put_organization": API_ADMIN,
    "api.database_status": API_ADMIN,
    "api.privacy_erase": API_ADMIN,
    "api.privacy_export": API_ADMIN,
}

#: Path parameters that name one tenant's objects; the probes fill them with B's ids.
OBJECT_PARAMETERS = {"submission_id", "push_id", "report_id", "appeal_id", "code", "external_id"}
#: Page-token routes only a student may use (a teacher's probe is refused by role).
STUDENT_ACTIONS = {"web.ask_appeal", "web.withdraw_appeal"}
#: Form fields sent with every probing POST, so validation is not what stops a request.
PROBE_FORM = {
    "score": "10",
    "feedback": "changed by another tenant",
    "comment": "changed by another tenant",
    "reason": "probe",
    "use": "pinned",
    "plugin_name": "rubric_eval",
    "instructions": "changed by another tenant",
    "title": "changed by another tenant",
    "active": "0",
    "rubric": "Criterion: 1",
    "urls": "https://probe.example/v1",
}
ADMIN_TOKEN = "admin-token-for-tenant-tests-0123"


def test_every_route_is_classified(app):
    endpoints = {rule.endpoint for rule in app.url_map.iter_rules()}
    unclassified = sorted(endpoints - ROUTES.keys())
    assert not unclassified, (
        f"routes without a tenant classification: {unclassified}. Add them to ROUTES in "
        "tests/test_tenants.py so the isolation tests cover them."
    )
    gone = sorted(ROUTES.keys() - endpoints)
    assert not gone, f"ROUTES names routes that no longer exist: {gone}"


def _routes(app, access: str) -> list[tuple[Rule, str]]:
    """(rule, method) pairs of one class, every method of every rule."""
    return [
        (rule, method)
        for rule in sorted(app.url_map.iter_rules(), key=lambda r: r.rule)
        if ROUTES.get(rule.endpoint) == access
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"})
    ]


# --- two tenants -----------------------------------------------------------------------------


@dataclass
class Tenant:
    name: str
    fake: FakePlatform
    platform: Platform
    organization: Organization
    api_token: str
    teacher_token: str
    student_token: str
    submission: Submission
    push: ScorePush
    #: A report on an asset of the submission, as if it had been handed in in the LMS.
    report: AssetReport
    appeal: Appeal
    evaluation: Evaluation
    #: Strings only this tenant's data contains.
    markers: tuple[str, ...]

    def ids(self) -> dict[str, str | int]:
        return {
            "submission_id": self.submission.id,
            "push_id": self.push.id,
            "report_id": self.report.id,
            "appeal_id": self.appeal.id,
            "code": self.evaluation.code,
            "external_id": self.organization.external_id,
            "organization_id": self.organization.id,
            "platform_id": self.platform.id,
            "deployment_id": self.platform.deployments[0].id,
        }


def _page_token(location: str) -> str:
    return location.split("/")[2]


def _make_tenant(name: str, fake: FakePlatform, live_tool: str, student: str) -> Tenant:
    """A platform with a teacher, a student's graded submission and an API evaluation."""
    platform = db.session.scalar(select(Platform).where(Platform.issuer == fake.issuer))
    if platform is None:
        platform = register(fake)
    title = f"{name} essay"
    fake.enrol(student, STUDENT, given_name=name, family_name="Learner")
    with httpx.Client(base_url=live_tool, timeout=10) as browser:
        student_page = open_activity(browser, fake, live_tool, user=student, title=title)
        teacher_page = open_activity(
            browser, fake, live_tool, user="90", roles=TEACHER, title=title
        )
        filename = f"{name.lower()}-essay.txt"
        text = f"{ESSAY}\n{name} wrote this."
        assert upload(browser, student_page, filename, text.encode()).status_code == 303
    run_jobs()
    org = platform.organization
    _, api_token = api_auth.create_token(org, "tests")
    db.session.commit()
    with httpx.Client(
        base_url=live_tool, headers={"Authorization": f"Bearer {api_token}"}, timeout=10
    ) as api:
        answer = api.post(
            "/evaluations",
            files={"file": (f"{name.lower()}-api.txt", text.encode())},
            data={"client_reference": f"{name.lower()}-reference"},
        )
        assert answer.status_code == 202, answer.text
    run_jobs()
    db.session.expire_all()
    submission = db.session.scalar(
        select(Submission)
        .join(Activity, Submission.activity_id == Activity.id)
        .where(Activity.platform_id == platform.id)
    )
    appeal = Appeal(
        activity_id=submission.activity_id,
        submission_id=submission.id,
        user_id=submission.user_id,
        reason=f"{name} asks again.",
    )
    db.session.add(appeal)
    asset = LtiAsset(
        submission=submission,
        asset_id=f"{name.lower()}-asset",
        url=f"{fake.url}/assets/{name.lower()}",
        title=f"{name} essay",
    )
    report = AssetReport(asset=asset, progress="Failed", body={}, status=PushStatus.FAILED)
    db.session.add_all([asset, report])
    db.session.commit()
    return Tenant(
        name=name,
        fake=fake,
        platform=platform,
        organization=org,
        api_token=api_token,
        teacher_token=_page_token(teacher_page),
        student_token=_page_token(student_page),
        submission=submission,
        push=db.session.scalar(select(ScorePush).where(ScorePush.submission_id == submission.id)),
        report=report,
        appeal=appeal,
        evaluation=db.session.scalar(
            select(Evaluation).where(Evaluation.organization_id == org.id)
        ),
        markers=(
            title,
            filename,
            f"{name} Learner",
            f"{name.lower()}-api.txt",
            f"{name.lower()}-reference",
            f"{name} wrote this.",  # the submitted text itself
            f"{name} asks again.",  # a student's appeal
        ),
    )


@pytest.fixture
def tenants_ab(app, platform, llm, live_tool) -> Iterator[tuple[Tenant, Tenant]]:
    llm.set_default("Clear work.\n\nFinal score: 8/10")
    app.config["EVALUAITOR_ADMIN_TOKEN"] = ADMIN_TOKEN
    with FakePlatform(client_id="bravo-client", name="bravo") as other:
        other.tool_jwks_url = f"{live_tool}/lti/jwks"
        other.tool_redirect_uris = [f"{live_tool}/lti/launch"]
        alpha = _make_tenant("Alpha", platform, live_tool, student="2")
        bravo = _make_tenant("Bravo", other, live_tool, student="7")
        yield alpha, bravo


def snapshot(tenant: Tenant) -> list[tuple[str, dict]]:
    """Every row of tenant B, column by column, to prove nothing of it changed."""
    db.session.expire_all()
    platform_id, org_id = tenant.platform.id, tenant.organization.id
    activities = select(Activity.id).where(Activity.platform_id == platform_id)
    submissions = select(Submission.id).where(Submission.activity_id.in_(activities))
    wheres = [
        (Organization, Organization.id == org_id),
        (ApiToken, ApiToken.organization_id == org_id),
        (Evaluation, Evaluation.organization_id == org_id),
        (Platform, Platform.id == platform_id),
        (Deployment, Deployment.platform_id == platform_id),
        (Course, Course.platform_id == platform_id),
        (LtiUser, LtiUser.platform_id == platform_id),
        (Activity, Activity.platform_id == platform_id),
        (Submission, Submission.id.in_(submissions)),
        (Grade, Grade.submission_id.in_(submissions)),
        (ScorePush, ScorePush.activity_id.in_(activities)),
        (LtiAsset, LtiAsset.submission_id.in_(submissions)),
        (
            AssetReport,
            AssetReport.asset_id.in_(
                select(LtiAsset.id).where(LtiAsset.submission_id.in_(submissions))
            ),
        ),
        (LtiNotice, LtiNotice.platform_id == platform_id),
        (AuditEvent, AuditEvent.activity_id.in_(activities)),
        (Appeal, Appeal.activity_id.in_(activities)),
        (ModelUsage, ModelUsage.activity_id.in_(activities)),
    ]
    rows = []
    for model, where in wheres:
        columns = [attr.key for attr in inspect(model).column_attrs]
        for row in db.session.scalars(select(model).where(where).order_by(model.id)):
            rows.append((model.__name__, {key: getattr(row, key) for key in columns}))
    return rows


def path_values(rule: Rule, token: str, ids: dict[str, str | int]) -> dict[str, str | int]:
    """Values for every parameter of ``rule``: the token, the given ids, fixed harmless ones."""
    fixed = {"token": token, "fmt": "json", "filename": "app.css"}
    values = {}
    for name in rule.arguments:
        if name in fixed:
            values[name] = fixed[name]
        elif name in ids:
            values[name] = ids[name]
        else:
            pytest.fail(f"{rule.rule}: no probe value for <{name}>; add one in path_values()")
    return values


def build(app, rule: Rule, method: str, values: dict) -> str:
    return app.url_map.bind("localhost").build(rule.endpoint, values, method=method)


def leaks(response: httpx.Response | str, tenant: Tenant) -> list[str]:
    """The tenant's markers found in an answer (or a page's text)."""
    text = response if isinstance(response, str) else response.text
    return [marker for marker in tenant.markers if marker in text]


def probe(client: httpx.Client, method: str, url: str) -> httpx.Response:
    if method == "GET":
        return client.get(url)
    return client.request(method, url, data=PROBE_FORM)


# --- page tokens -----------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["teacher", "student"])
def test_page_tokens_never_reach_another_tenant(app, tenants_ab, live_tool, role):
    alpha, bravo = tenants_ab
    token = alpha.teacher_token if role == "teacher" else alpha.student_token
    before = snapshot(bravo)
    failures = []
    with httpx.Client(base_url=live_tool, timeout=10) as client:
        for rule, method in _routes(app, PAGE_TOKEN):
            url = build(app, rule, method, path_values(rule, token, bravo.ids()))
            response = probe(client, method, url)
            where = f"{method} {rule.rule} ({role}) -> {response.status_code}"
            if leaks(response, bravo):
                failures.append(f"{where}: shows {leaks(response, bravo)}")
            takes_b_object = bool(set(rule.arguments) & OBJECT_PARAMETERS)
            # A teacher is refused a student's own actions (403) before any id is looked up.
            for_teacher = {403, 404} if rule.endpoint in STUDENT_ACTIONS else {404}
            allowed = for_teacher if role == "teacher" else {403, 404}
            if takes_b_object and response.status_code not in allowed:
                failures.append(f"{where}: expected {sorted(allowed)} for B's id")
            if snapshot(bravo) != before:
                failures.append(f"{where}: changed tenant B's data")
                before = snapshot(bravo)
    assert not failures, "\n".join(failures)


def test_page_token_probes_reach_the_callers_own_objects(app, tenants_ab, live_tool):
    """The control for the test above: with A's own ids the same GET routes are found, so
    B's 404s come from the tenant check and not from malformed URLs."""
    alpha, _ = tenants_ab
    failures = []
    with httpx.Client(base_url=live_tool, timeout=10) as client:
        for rule, method in _routes(app, PAGE_TOKEN):
            if method != "GET" or not set(rule.arguments) & OBJECT_PARAMETERS:
                continue
            url = build(app, rule, method, path_values(rule, alpha.teacher_token, alpha.ids()))
            status = client.get(url).status_code
            if status != 200:
                failures.append(f"GET {rule.rule} with A's own ids -> {status}")
    assert not failures, "\n".join(failures)


# --- REST API --------------------------------------------------------------------------------


def test_api_tokens_never_reach_another_organization(app, tenants_ab, live_tool):
    alpha, bravo = tenants_ab
    before = snapshot(bravo)
    failures = []
    headers = {"Authorization": f"Bearer {alpha.api_token}"}
    with httpx.Client(base_url=live_tool, headers=headers, timeout=10) as client:
        for access in (API_ORGANIZATION, API_ADMIN):
            for rule, method in _routes(app, access):
                url = build(app, rule, method, path_values(rule, "", bravo.ids()))
                response = probe(client, method, url)
                where = f"{method} {rule.rule} -> {response.status_code}"
                if leaks(response, bravo):
                    failures.append(f"{where}: shows {leaks(response, bravo)}")
                if access == API_ADMIN and response.status_code != 403:
                    failures.append(f"{where}: an organization's token is not the admin")
                if set(rule.arguments) & OBJECT_PARAMETERS and response.status_code not in (
                    403,
                    404,
                ):
                    failures.append(f"{where}: expected 403/404 for B's id")
                if snapshot(bravo) != before:
                    failures.append(f"{where}: changed tenant B's data")
                    before = snapshot(bravo)
        # Submitting in B's name is refused, not filed under B.
        claimed = client.post(
            "/evaluations",
            files={"file": ("claim.txt", ESSAY.encode())},
            data={"organization_external_id": bravo.organization.external_id},
        )
        assert claimed.status_code == 403
    assert snapshot(bravo) == before
    assert not failures, "\n".join(failures)


def test_api_probes_reach_the_callers_own_objects(app, tenants_ab, live_tool):
    alpha, _ = tenants_ab
    headers = {"Authorization": f"Bearer {alpha.api_token}"}
    with httpx.Client(base_url=live_tool, headers=headers, timeout=10) as client:
        for rule, method in _routes(app, API_ORGANIZATION):
            if method == "GET" and set(rule.arguments) & OBJECT_PARAMETERS:
                url = build(app, rule, method, path_values(rule, "", alpha.ids()))
                assert client.get(url).status_code == 200, url
        listed = client.get("/evaluations").text
    assert alpha.evaluation.code in listed


# --- admin, public, LTI entry, registration -------------------------------------------------


def test_admin_routes_refuse_tenant_credentials(app, tenants_ab, live_tool):
    """Neither a page token's cookies nor an API token (not even the API admin token as a
    bearer) opens /admin: only the admin session does."""
    alpha, bravo = tenants_ab
    before = snapshot(bravo)
    failures = []
    for headers in (
        {},
        {"Authorization": f"Bearer {alpha.api_token}"},
        {"Authorization": f"Bearer {ADMIN_TOKEN}"},
    ):
        with httpx.Client(base_url=live_tool, headers=headers, timeout=10) as client:
            client.get(f"/l/{alpha.teacher_token}/")
            page = client.get("/admin/").text
            csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
            for rule, method in _routes(app, ADMIN):
                url = build(app, rule, method, path_values(rule, "", bravo.ids()))
                data = {**PROBE_FORM, "csrf_token": csrf.group(1) if csrf else ""}
                if rule.endpoint == "admin.sign_in":
                    data["token"] = alpha.api_token
                response = client.request(method, url, data=None if method == "GET" else data)
                where = f"{method} {rule.rule} {list(headers)} -> {response.status_code}"
                if leaks(response, bravo):
                    failures.append(f"{where}: shows {leaks(response, bravo)}")
                if snapshot(bravo) != before:
                    failures.append(f"{where}: changed tenant B's data")
                    before = snapshot(bravo)
    assert not failures, "\n".join(failures)


def test_the_admin_sees_both_tenants(tenants_ab, live_tool):
    """The admin page is the one place that lists every tenant (the control for the above)."""
    alpha, bravo = tenants_ab
    with httpx.Client(base_url=live_tool, timeout=10) as admin:
        form = admin.get("/admin/").text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
        admin.post("/admin/sign-in", data={"token": ADMIN_TOKEN, "csrf_token": csrf})
        page = admin.get("/admin/").text
    assert alpha.fake.issuer in page and bravo.fake.issuer in page


def test_public_routes_hold_no_tenant_data(app, tenants_ab, live_tool):
    alpha, bravo = tenants_ab
    with httpx.Client(base_url=live_tool, timeout=10) as client:
        for rule, method in _routes(app, PUBLIC):
            url = build(app, rule, method, path_values(rule, "", {}))
            response = client.request(method, url)
            assert response.status_code == 200, url
            assert not leaks(response, alpha) and not leaks(response, bravo), url


def test_probes_and_metrics_name_no_tenant(app, tenants_ab, live_tool):
    """The probes say ok or failing, whatever the tenants hold; /metrics, with its token,
    counts per organization by number, never by a name, a person or an activity."""
    app.config["EVALUAITOR_METRICS_TOKEN"] = "metrics-token-for-tests"
    scrape = {"Authorization": "Bearer metrics-token-for-tests"}
    with httpx.Client(base_url=live_tool, timeout=10) as client:
        answers = [client.get(str(rule)) for rule, _method in _routes(app, PROBE)]
        answers += [client.get(str(rule), headers=scrape) for rule, _ in _routes(app, METRICS)]
    assert [a.status_code in (200, 503) for a in answers] == [True] * len(answers)
    assert "evaluaitor_month_model_calls" in answers[-1].text
    for tenant in tenants_ab:
        assert [leaks(answer, tenant) for answer in answers] == [[]] * len(answers)


def test_a_platform_cannot_launch_as_another(tenants_ab, live_tool):
    """A's signed id_token naming B's issuer and client fails B's signature check; a login
    naming B's issuer with A's client_id finds no registration."""
    alpha, bravo = tenants_ab
    before = snapshot(bravo)
    forged = alpha.fake.make_id_token(
        nonce="n",
        extra_claims={"iss": bravo.fake.issuer, "aud": bravo.fake.client_id},
    )
    with httpx.Client(base_url=live_tool, timeout=10) as client:
        launch = client.post("/lti/launch", data={"id_token": forged, "state": "s"})
        login = client.post(
            "/lti/login",
            data={
                "iss": bravo.fake.issuer,
                "client_id": alpha.fake.client_id,
                "login_hint": "2",
                "target_link_uri": f"{live_tool}/lti/launch",
            },
        )
    assert launch.status_code == 400 and login.status_code == 400
    assert not leaks(launch, bravo) and not leaks(login, bravo)
    assert snapshot(bravo) == before


def test_registration_cannot_take_over_another_platform(tenants_ab, browser, live_tool):
    """Dynamic Registration stores the issuer of the configuration's own origin only."""
    alpha, bravo = tenants_ab
    before = snapshot(bravo)
    alpha.fake.registration.configuration_changes["issuer"] = bravo.fake.issuer
    url = alpha.fake.registration.start_url(
        live_tool + registration_path(alpha.fake.url), token=alpha.fake.registration.token()
    )
    assert browser.get(url).status_code == 400
    assert snapshot(bravo) == before


def test_a_launch_of_b_sees_only_b(tenants_ab, browser, live_tool):
    """The other direction, through a real launch: B's teacher page lists B's work only."""
    alpha, bravo = tenants_ab
    page = browser.get(
        browser_launch(
            browser, bravo.fake, live_tool, user="90", roles=TEACHER, title="Bravo essay"
        ).headers["Location"]
    ).text
    assert leaks(page, bravo)  # the markers do show where they belong
    assert not leaks(page, alpha)


# --- files on disk ---------------------------------------------------------------------------


def test_files_are_stored_per_tenant(app, tenants_ab):
    alpha, bravo = tenants_ab
    data_dir = Path(app.config["EVALUAITOR_DATA_DIR"])
    for tenant in (alpha, bravo):
        upload_path = Path(tenant.submission.storage_path)
        api_path = Path(tenant.evaluation.storage_path)
        assert upload_path.parts[0] == f"p{tenant.platform.id}", upload_path
        assert api_path.parts[0] == f"o{tenant.organization.id}", api_path
        for path in (upload_path, api_path):
            stored = (data_dir / path).read_bytes()
            assert f"{tenant.name} wrote this.".encode() in stored
    # Nothing of one tenant sits in the other's folders.
    for owner, other in ((alpha, bravo), (bravo, alpha)):
        for folder in (f"p{owner.platform.id}", f"o{owner.organization.id}"):
            for path in (data_dir / folder).rglob("*"):
                if path.is_file():
                    assert f"{other.name} wrote this.".encode() not in path.read_bytes()
    digests = {
        hashlib.sha256((data_dir / t.submission.storage_path).read_bytes()).hexdigest()
        for t in (alpha, bravo)
    }
    assert len(digests) == 2
