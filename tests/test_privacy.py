"""Erasure, export and retention (app.privacy), checked the way a data-protection officer
would: a unique marker is planted in everything of one person (their LMS id, name and
e-mail, the file, the extracted text, the prompts, the model's replies and the cached ones,
the teacher's override, the audit trail, an appeal, the launch data in Redis), and after an
erasure every column of every table, every file of the data and cache folders and every
Redis key and value is searched for it. The others' markers must still be everywhere.

Real parts: the app over HTTP, an LMS (FakePlatform) launching real students, a model server
(FakeLLM) whose replies quote the work they grade, RQ jobs, Redis, the files, and the database
(SQLite, or PostgreSQL with EVALUAITOR_TEST_DATABASE_URL).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import zipfile
import zlib
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from flask.cli import ScriptInfo
from sqlalchemy import MetaData, Text, cast, func, select, update

from app import privacy
from app.cli import cli
from app.evaluation import sweeper
from app.extensions import db, redis_connection
from app.lti import nrps
from app.models import (
    Activity,
    Appeal,
    AuditEvent,
    Course,
    Grade,
    GradingJob,
    LtiUser,
    ModelUsage,
    Platform,
    PrivacyEvent,
    Submission,
)
from app.models.base import utcnow
from tests.api.conftest import ADMIN_TOKEN, make_tenant, submit
from tests.conftest import run_jobs
from tests.documents import ESSAY, pdf_bytes
from tests.test_admin import TOKEN, csrf_token, sign_in
from tests.test_asset_processor import attach_processor
from tests.test_core_loop import open_activity, upload

#: One marker per person; each is in nothing else.
ANN, BEN, CAL, DOT = "qzxa", "wbtb", "kfpc", "ydrd"
MARKS = (ANN, BEN, CAL, DOT)
_MARKED = re.compile(r"\w*(?:" + "|".join(MARKS) + r")\w*")
_EXAMPLE = re.compile(r"<<<BEGIN EXAMPLE.*?<<<END EXAMPLE[^>]*>>>", re.S)


def quoting_model(body: dict) -> str:
    """A model that grades and quotes the marked words of the work it grades (not of the
    calibration examples it was shown)."""
    text = _EXAMPLE.sub("", json.dumps(body.get("messages")))
    quoted = " ".join(sorted(set(_MARKED.findall(text))))
    return f"Final score: 8/10\nGood work. You wrote: {quoted}"


# --- where a marker can be ---------------------------------------------------------------------


def in_database(mark: str) -> set[str]:
    """Every ``table.column`` holding ``mark``, found by reading the live schema (not a list)."""
    schema = MetaData()
    schema.reflect(bind=db.engine)
    found = set()
    for table in schema.sorted_tables:
        for column in table.columns:
            query = select(func.count()).where(func.lower(cast(column, Text)).contains(mark))
            if db.session.scalar(query.select_from(table)):
                found.add(f"{table.name}.{column.name}")
    return found


def in_folder(root: Path, mark: str) -> set[str]:
    if not root.exists():
        return set()
    return {
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.is_file() and mark.encode() in path.read_bytes().lower()
    }


def in_redis(mark: str) -> set[str]:
    redis = redis_connection()
    found = set()
    for key in redis.scan_iter(count=1000):
        kind = redis.type(key).decode()
        values = {
            "string": lambda k: [redis.get(k)],
            "hash": lambda k: [*redis.hkeys(k), *redis.hvals(k)],
            "list": lambda k: redis.lrange(k, 0, -1),
            "set": lambda k: list(redis.smembers(k)),
            "zset": lambda k: redis.zrange(k, 0, -1),
        }.get(kind, lambda k: [])(key)
        for value in [key, *values]:
            if value is None:
                continue
            texts = [value]
            with contextlib.suppress(zlib.error):
                texts.append(zlib.decompress(value))  # RQ compresses its job data
            if any(mark.encode() in t.lower() for t in texts):
                found.add(key.decode())
    return found


def everywhere(app, mark: str) -> dict[str, set[str]]:
    return {
        "database": in_database(mark),
        "data": in_folder(Path(app.config["EVALUAITOR_DATA_DIR"]), mark),
        "cache": in_folder(Path(app.config["EVALUAITOR_LLM_CACHE_DIR"]), mark),
        "redis": in_redis(mark),
    }


def nowhere(app, mark: str) -> None:
    assert everywhere(app, mark) == {
        "database": set(),
        "data": set(),
        "cache": set(),
        "redis": set(),
    }


# --- a school with four people -----------------------------------------------------------------


@dataclass
class School:
    platform_id: int
    #: LMS user ids.
    ann: str
    ben: str
    cal: str
    api_org: str


def upload_again(fake, live_tool, user: str) -> None:
    """Cal uploads anew to course-2; not graded yet."""
    with httpx.Client(base_url=live_tool, timeout=10) as browser:
        page = open_activity(
            browser, fake, live_tool, user=user, context_id="course-2", resource_link_id="rl-2"
        )
        assert upload(browser, page, "again.txt", marked_essay(CAL)).status_code == 303


def launch_and_upload(fake, live_tool, mark: str, *, course: str, link: str, name: str, data):
    """A student whose LMS id, name and e-mail carry ``mark`` opens an activity and uploads
    ``(filename, bytes)``; graded at once."""
    user = f"stu-{mark}"
    fake.enrol(user, given_name=f"Ann{mark}", family_name="Lee", email=f"{mark}@school.example")
    with httpx.Client(base_url=live_tool, timeout=10) as browser:
        page = open_activity(browser, fake, live_tool, user=user, context_id=course,
                             resource_link_id=link, title=name)  # fmt: skip
        for filename, body in data:
            assert upload(browser, page, filename, body).status_code == 303
            run_jobs()
    return user


def marked_essay(mark: str) -> bytes:
    return f"My essay, by Essay{mark}word.\n\n{ESSAY}\nIn closing, Closing{mark}word.".encode()


def teacher_acts_on(user: str, mark: str) -> None:
    """The teacher grades the work themself (so it becomes a calibration example), the
    student appeals, the teacher answers: all with the student's marker."""
    submission = db.session.scalars(
        select(Submission).join(LtiUser).where(LtiUser.sub == user).order_by(Submission.id.desc())
    ).first()
    grade = submission.grade or Grade(submission=submission)
    grade.override_score, grade.override_feedback = 9.0, f"Well argued, Teach{mark}word."
    grade.overridden_at = grade.released_at = utcnow()
    db.session.add(grade)
    db.session.add(
        AuditEvent(
            activity_id=submission.activity_id,
            submission_id=submission.id,
            action="override",
            details={"after": {"feedback": grade.override_feedback}},
        )
    )
    db.session.add(
        Appeal(
            activity_id=submission.activity_id,
            submission_id=submission.id,
            user_id=submission.user_id,
            reason=f"Please look again, Appeal{mark}word.",
            status="answered",
            answer=f"Looked again, Answer{mark}word.",
        )
    )
    db.session.commit()


@pytest.fixture
def school(app, platform, llm, live_tool) -> School:
    """Ann and Ben in one activity of course-1 (Ann's teacher-graded work is an example in
    Ben's grading), Cal in course-2, and an API client whose evaluation carries Dot's mark."""
    llm.set_default(quoting_model)
    first = {"course": "course-1", "link": "rl-1", "name": "Essay 1"}
    ann_files = [("essay.txt", marked_essay(ANN)), ("essay.pdf", pdf_bytes(f"Essay{ANN}word"))]
    ann = launch_and_upload(platform, live_tool, ANN, data=ann_files, **first)
    teacher_acts_on(ann, ANN)
    ben = launch_and_upload(
        platform, live_tool, BEN, data=[("essay.txt", marked_essay(BEN))], **first
    )
    second = {"course": "course-2", "link": "rl-2", "name": "Essay 2"}
    cal = launch_and_upload(
        platform, live_tool, CAL, data=[("essay.txt", marked_essay(CAL))], **second
    )
    tenant = make_tenant(live_tool, "school-api")
    with tenant.client:
        assert submit(tenant.client, "essay.txt", marked_essay(DOT)).status_code == 202
    run_jobs()
    platform_id = db.session.scalar(select(Platform.id).where(Platform.issuer == platform.issuer))
    return School(platform_id, ann, ben, cal, "school-api")


def spend_total() -> tuple[int, int]:
    return db.session.execute(
        select(func.count(ModelUsage.id), func.coalesce(func.sum(ModelUsage.calls), 0))
    ).one()


def test_the_markers_are_found_everywhere_before(app, school):
    """The search finds what it looks for: each place holds the marker before an erasure."""
    ann = everywhere(app, ANN)
    for column in (
        "lti_user.sub", "lti_user.name", "lti_user.email", "grading_job.extracted_text",
        "grading_job.prompts", "grading_job.raw_replies", "grading_job.feedback",
        "grade.override_feedback", "audit_event.details", "appeal.reason", "appeal.answer",
    ):  # fmt: skip
        assert column in ann["database"], column
    assert ann["data"] and ann["cache"] and ann["redis"]
    # Ben's grading was shown Ann's work as an example: his prompt quotes her.
    ben_job = db.session.scalar(
        select(GradingJob).join(Submission).join(LtiUser).where(LtiUser.sub == school.ben)
    )
    assert ANN in json.dumps(ben_job.prompts)
    assert everywhere(app, DOT)["data"] and everywhere(app, DOT)["cache"]


def test_erasing_a_student_leaves_nothing_of_them_and_all_of_the_others(app, school):
    data_dir = Path(app.config["EVALUAITOR_DATA_DIR"])
    ann_files = [
        data_dir / path
        for path in db.session.scalars(
            select(GradingJob.storage_path).join(Submission).join(LtiUser)
            .where(LtiUser.sub == school.ann)
        )
    ]  # fmt: skip
    assert len(ann_files) == 2 and all(p.is_file() for p in ann_files)  # the .txt and the .pdf
    spend_before = spend_total()
    # The class list cached course-1's roster from the LMS, names and e-mails with it.
    course = db.session.scalar(select(Course).where(Course.context_id == "course-1"))
    roster = nrps.Roster(
        tuple(nrps.Member(sub, f"Name{mark}word", f"{mark}@example.org", ("Learner",))
              for sub, mark in ((school.ann, ANN), (school.ben, BEN)))
    )  # fmt: skip
    nrps._cache_set(f"{privacy.ROSTER_PREFIX}{school.platform_id}:{course.id}", roster, 300)

    erased = privacy.erase_scope(
        privacy.Scope("student", school.ann, school.platform_id), actor="test"
    )

    nowhere(app, ANN)
    assert not any(p.exists() for p in ann_files)
    for mark in (BEN, CAL, DOT):
        found = everywhere(app, mark)
        assert found["database"] and found["data"], mark
    # Ben's cached replies were made with Ann's work as an example: they went with her.
    assert everywhere(app, CAL)["cache"] and everywhere(app, DOT)["cache"]
    for mark in (BEN, CAL):
        assert everywhere(app, mark)["redis"], mark  # their launch data
    assert erased.counts["submissions"] == 2 and erased.counts["students"] == 1
    assert erased.counts["appeals"] == 1 and erased.counts["prompts_scrubbed"] == 1
    assert erased.counts["files"] >= 2 and erased.counts["cache_entries"] >= 1
    assert erased.counts["redis_keys"] >= 1
    # Spend still adds up; the audit entry stays as a tombstone; the erasure is logged.
    assert spend_total() == spend_before
    tombstone = db.session.scalar(select(AuditEvent).where(AuditEvent.action == "override"))
    assert tombstone.details == {"erased": True} and tombstone.submission_id is None
    event = db.session.scalar(select(PrivacyEvent).where(PrivacyEvent.action == "erase"))
    assert event.actor == "test" and event.counts == erased.counts
    assert ANN not in event.scope and "student #" in event.scope


def test_erasing_a_course_from_the_cli_keeps_the_other_course(app, school):
    runner = CliRunner()
    result = runner.invoke(
        cli,
        ["privacy", "erase", "course", "course-1", "--platform", str(school.platform_id), "--yes"],
        obj=ScriptInfo(create_app=lambda: app),
    )
    assert result.exit_code == 0, result.output
    assert "Erased course #" in result.output
    db.session.expire_all()
    nowhere(app, ANN)
    nowhere(app, BEN)
    found = everywhere(app, CAL)
    assert all(found.values()), found
    assert everywhere(app, DOT)["database"]
    assert [a.title for a in db.session.scalars(select(Activity))] == ["Essay 2"]
    # The erased activity's spend now counts for its organization, not lost.
    kept = ModelUsage.activity_id.is_(None) & ModelUsage.organization_id.is_not(None)
    assert db.session.scalar(select(func.count()).where(kept))


def test_erasing_an_activity_from_the_admin_page(app, school, browser):
    app.config["EVALUAITOR_ADMIN_TOKEN"] = TOKEN
    assert sign_in(browser).status_code == 303
    activity = db.session.scalar(select(Activity).where(Activity.title == "Essay 1"))
    form = {"scope": "activity", "key": str(activity.id), "action": "erase"}
    page = browser.get("/admin/").text
    # No CSRF token, or no confirmation: nothing happens.
    assert browser.post("/admin/privacy", data=form).status_code == 400
    refused = browser.post("/admin/privacy", data={**form, "csrf_token": csrf_token(page)})
    assert refused.status_code == 400 and "Tick the box" in refused.text
    assert everywhere(app, ANN)["database"]
    done = browser.post(
        "/admin/privacy", data={**form, "confirm": "1", "csrf_token": csrf_token(page)}
    )
    assert done.status_code == 303
    assert "Erased activity #" in browser.get("/admin/").text
    db.session.expire_all()
    nowhere(app, ANN)
    nowhere(app, BEN)
    assert all(everywhere(app, CAL).values())


def test_the_admin_page_needs_a_signed_in_admin(app, school, browser):
    app.config["EVALUAITOR_ADMIN_TOKEN"] = TOKEN
    page = browser.get("/admin/").text
    form = {"scope": "student", "key": school.ann, "platform_id": str(school.platform_id)}
    answer = browser.post(
        "/admin/privacy", data={**form, "action": "export", "csrf_token": csrf_token(page)}
    )
    assert answer.status_code == 403
    assert everywhere(app, ANN)["database"]


def test_erasing_an_organization_through_the_api(app, school, live_tool):
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    app.config["EVALUAITOR_ADMIN_TOKEN"] = ADMIN_TOKEN
    body = {"scope": "organization", "key": school.api_org}
    with httpx.Client(base_url=live_tool, timeout=10) as client:
        tenant = make_tenant(live_tool, "someone-else")
        assert client.post("/privacy/erasures", json=body, headers={
            "Authorization": f"Bearer {tenant.token}"}).status_code == 403  # fmt: skip
        assert client.post("/privacy/erasures", json={**body, "key": "nobody"},
                           headers=admin).status_code == 404  # fmt: skip
        answer = client.post("/privacy/erasures", json=body, headers=admin)
    assert answer.status_code == 200, answer.text
    assert answer.json()["counts"]["evaluations"] == 1
    assert answer.json()["scope"].startswith("organization #")
    db.session.expire_all()
    nowhere(app, DOT)
    for mark in (ANN, BEN, CAL):
        assert all(everywhere(app, mark).values()), mark


def test_work_in_progress_is_not_erased(app, school, platform, live_tool):
    """An upload still waiting to be graded stops the erasure; nothing goes."""
    upload_again(platform, live_tool, school.cal)
    scope = privacy.Scope("student", school.cal, school.platform_id)
    with pytest.raises(privacy.InProgress):
        privacy.erase_scope(scope, actor="test")
    assert all(everywhere(app, CAL).values())
    run_jobs()
    privacy.erase_scope(scope, actor="test")
    nowhere(app, CAL)


def test_a_submission_made_in_the_lms_goes_with_its_student(app, school, platform, live_tool):
    """LTI Asset Processor: the notice (its claims name the student until processed), the
    assets' titles and file names, and the reports (the feedback as their comment)."""
    service = platform.asset_processor
    asset = service.add_asset(
        marked_essay(ANN), title=f"Title{ANN}word", filename=f"File{ANN}word.txt"
    )
    claims = service.notice_claims(
        activity=attach_processor().public_id, assets=[asset], user=school.ann
    )
    assert service.send(live_tool + "/lti/notices", service.sign(claims)).status_code == 204
    scope = privacy.Scope("student", school.ann, school.platform_id)
    with pytest.raises(privacy.InProgress):  # the notice is not processed yet
        privacy.erase_scope(scope, actor="test")
    exported, _files = read_zip(privacy.export_scope(scope, actor="test"))
    assert ANN in json.dumps(exported["tables"]["lti_notice"]).lower()
    run_jobs()
    assert service.reports_for(asset["asset_id"])[-1]["processingProgress"] == "Processed"
    found = everywhere(app, ANN)["database"]
    assert {"lti_asset.title", "lti_asset.filename", "asset_report.body"} <= found
    assert "lti_notice.claims" not in found  # emptied once processed
    exported, _files = read_zip(privacy.export_scope(scope, actor="test"))
    assert {"lti_asset", "asset_report"} <= set(exported["tables"])
    erased = privacy.erase_scope(scope, actor="test")
    nowhere(app, ANN)
    assert erased.counts["lms_assets"] == 1
    assert everywhere(app, BEN)["database"]


def read_zip(archive: bytes) -> tuple[dict, dict[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(archive)) as opened:
        data = json.loads(opened.read("data.json"))
        files = {n: opened.read(n) for n in opened.namelist() if n.startswith("files/")}
    return data, files


def test_a_students_export_holds_all_of_theirs_and_nothing_of_anyone_else(app, school, live_tool):
    app.config["EVALUAITOR_ADMIN_TOKEN"] = ADMIN_TOKEN
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    exports = {}
    with httpx.Client(base_url=live_tool, timeout=10) as client:
        for user in (school.ann, school.ben):
            body = {"scope": "student", "key": user, "platform_id": school.platform_id}
            answer = client.post("/privacy/exports", json=body, headers=admin)
            assert answer.status_code == 200
            assert answer.headers["Content-Type"] == "application/zip"
            exports[user] = answer.content
    data, files = read_zip(exports[school.ann])
    text = json.dumps(data).lower()
    for place in ("Teach", "Appeal", "Answer", "Essay"):
        assert f"{place}{ANN}word".lower() in text
    assert {"lti_user", "submission", "grading_job", "grade", "appeal", "audit_event"} <= set(
        data["tables"]
    )
    assert len(files) == 2 and any(ANN.encode() in body for body in files.values())
    for other in (BEN, CAL, DOT):
        assert other not in text and not any(other.encode() in b for b in files.values())
    # Ben's grading quoted Ann's work as an example: his export leaves those prompts out.
    ben, ben_files = read_zip(exports[school.ben])
    ben_text = json.dumps(ben).lower()
    assert BEN in ben_text and ANN not in ben_text
    assert not any(ANN.encode() in body for body in ben_files.values())
    assert db.session.scalar(select(func.count()).where(PrivacyEvent.action == "export")) == 2


def test_a_course_export_from_the_cli(app, school, tmp_path):
    target = tmp_path / "course.zip"
    result = CliRunner().invoke(
        cli,
        ["privacy", "export", "course", "course-2", "--platform", str(school.platform_id),
         "-o", str(target)],
        obj=ScriptInfo(create_app=lambda: app),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data, files = read_zip(target.read_bytes())
    assert CAL in json.dumps(data).lower() and len(files) == 1
    assert ANN not in json.dumps(data).lower() and BEN not in json.dumps(data).lower()


def age(app, days: float) -> None:
    """Everything happened ``days`` ago: the rows, the files and the cached replies."""
    then = utcnow() - timedelta(days=days)
    for folder in ("EVALUAITOR_DATA_DIR", "EVALUAITOR_LLM_CACHE_DIR"):
        for path in Path(app.config[folder]).rglob("*"):
            os.utime(path, (then.timestamp(), then.timestamp()))
    for model in (Submission, Grade, Appeal):
        db.session.execute(update(model).values(updated_at=then))
    db.session.execute(update(GradingJob).values(updated_at=then, finished_at=then))
    db.session.commit()


def test_retention_removes_old_courses_work_with_a_dry_run_first(app, school, platform, live_tool):
    age(app, 40)
    # Course-2 is busy again: Cal uploads anew (still waiting to be graded).
    upload_again(platform, live_tool, school.cal)
    app.config["EVALUAITOR_RETAIN_SUBMISSIONS_DAYS"] = 30
    runner = CliRunner()
    invoke = lambda *args: runner.invoke(cli, list(args), obj=ScriptInfo(create_app=lambda: app))  # noqa: E731
    dry = invoke("privacy", "retention", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "3 submission(s)" in dry.output and "1 API evaluation(s)" in dry.output
    assert all(everywhere(app, ANN).values())  # a dry run removes nothing

    applied = invoke("privacy", "retention")
    assert applied.exit_code == 0, applied.output
    db.session.expire_all()
    # Course-1's work went (Ann's, Ben's), and the old API evaluation; course-2 was active.
    for mark in (ANN, BEN, DOT):
        found = everywhere(app, mark)
        assert not (found["data"] or found["cache"]), mark
        tables = {column.split(".")[0] for column in found["database"]}
        assert not tables & {"submission", "grading_job", "grade", "appeal", "audit_event"}
    assert everywhere(app, CAL)["data"]
    assert db.session.scalar(select(func.count()).select_from(Submission)) == 2
    assert (
        db.session.scalar(select(PrivacyEvent.actor).where(PrivacyEvent.action == "retain"))
        == "cli"
    )


def test_retention_of_prompts_keeps_the_grades(app, school):
    age(app, 10)
    app.config["EVALUAITOR_RETAIN_PROMPTS_DAYS"] = 7
    before = db.session.scalar(select(func.count()).where(GradingJob.score.is_not(None)))
    counts = privacy.apply_retention(actor="test")
    assert counts["prompts_cleared"] == 5
    db.session.expire_all()
    for job in db.session.scalars(select(GradingJob)):
        assert job.prompts == [] and job.raw_replies == []
    assert db.session.scalar(select(func.count()).where(GradingJob.score.is_not(None))) == before
    assert privacy.apply_retention(actor="test") == {}  # nothing left to do


def test_the_sweeper_applies_retention_at_most_once_per_interval(app, school):
    app.config["EVALUAITOR_RETAIN_PROMPTS_DAYS"] = 7
    assert sweeper.retain() is not None
    age(app, 10)
    assert sweeper.retain() is None  # the next round, within the hour: not due
    redis_connection().delete("evaluaitor:privacy:retention")
    assert sweeper.retain()["prompts_cleared"] == 5


def test_without_windows_the_sweeper_does_nothing(app):
    assert sweeper.retain() is None


def test_retention_never_removes_work_in_progress(app, school, platform, live_tool):
    """A grading still waiting, however old, stays with its file; the rest of its course goes."""
    upload_again(platform, live_tool, school.cal)
    age(app, 40)
    app.config["EVALUAITOR_RETAIN_SUBMISSIONS_DAYS"] = 30
    waiting = db.session.scalar(
        select(Submission).join(GradingJob).where(GradingJob.status == "pending")
    )
    path = Path(app.config["EVALUAITOR_DATA_DIR"]) / waiting.storage_path
    assert waiting.id not in privacy.retention_plan().work.submission_ids

    privacy.apply_retention(actor="test")

    db.session.expire_all()
    assert [s.id for s in db.session.scalars(select(Submission))] == [waiting.id]
    assert path.is_file()


def test_ids_that_name_nothing_are_refused_before_the_database(app, live_tool):
    """Found by the OpenAPI fuzzing on PostgreSQL: a NUL in an id, or a platform id past 32
    bits, made the database fail (500) instead of answering that there is no such thing."""
    for scope in (("student", "a\x00b", 1), ("course", "c", 2**40), ("activity", "9" * 30, None)):
        with pytest.raises((ValueError, privacy.NotFound)):
            privacy.select_scope(privacy.Scope(*scope))
    app.config["EVALUAITOR_ADMIN_TOKEN"] = ADMIN_TOKEN
    admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with httpx.Client(base_url=live_tool, timeout=10) as client:
        for body in (
            {"scope": "student", "key": "a\x00b", "platform_id": 1},
            {"scope": "course", "key": "c", "platform_id": 2**40},
        ):
            assert client.post("/privacy/erasures", json=body, headers=admin).status_code == 422
        body = {"scope": "activity", "key": "9" * 30}
        assert client.post("/privacy/exports", json=body, headers=admin).status_code == 404
