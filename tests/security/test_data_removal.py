"""Data that should go, goes (issue item 8): removing a platform with the CLI deletes its
uploaded files and the model replies cached while grading them, and nothing of another
tenant; the reply cache keeps each tenant apart and is bounded in age and size."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from flask.cli import ScriptInfo
from sqlalchemy import text

from app.cli import cli
from app.extensions import db
from app.llm.cache import CacheLimits, ReplyCache, prune
from app.llm.client import Completion, Usage
from app.models import Evaluation, Platform, Submission
from tests.api.conftest import make_tenant, submit
from tests.conftest import POSTGRES_URL, register, run_jobs
from tests.documents import ESSAY
from tests.fakes.platform import FakePlatform
from tests.test_core_loop import open_activity, status, upload

DAY = 86400


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()} if root.exists() else set()


def folders(app) -> tuple[Path, Path]:
    return Path(app.config["EVALUAITOR_DATA_DIR"]), Path(app.config["EVALUAITOR_LLM_CACHE_DIR"])


@pytest.fixture
def evaluaitor(app):
    """The ``evaluaitor`` command as an admin runs it (``--yes`` answers the confirmation)."""
    runner = CliRunner()
    return lambda *args: runner.invoke(cli, list(args), obj=ScriptInfo(create_app=lambda: app))


@pytest.fixture
def other_platform(app, live_tool):
    """A second LMS, registered with the tool: another tenant."""
    with FakePlatform(client_id="other-client", name="other") as fake:
        fake.tool_jwks_url = f"{live_tool}/lti/jwks"
        fake.tool_redirect_uris = [f"{live_tool}/lti/launch"]
        register(fake)
        yield fake


def graded_upload(browser, fake: FakePlatform, live_tool: str) -> None:
    page = open_activity(browser, fake, live_tool)
    assert upload(browser, page, "essay.txt", ESSAY.encode()).status_code == 303
    run_jobs()
    assert status(browser, page)["status"] == "completed"


def platform_id(fake: FakePlatform) -> int:
    return db.session.query(Platform).filter_by(issuer=fake.issuer).one().id


def test_removing_a_platform_removes_its_files_and_cached_replies_only(
    app, evaluaitor, browser, platform, other_platform, llm, live_tool
):
    llm.set_default("Final score: 8/10")
    graded_upload(browser, platform, live_tool)
    graded_upload(browser, other_platform, live_tool)
    tenant = make_tenant(live_tool, "school-a")  # an API client grading the same essay
    with tenant.client:
        assert submit(tenant.client, "essay.txt", ESSAY.encode()).status_code == 202
    run_jobs()
    # The same essay, three tenants: three calls, none served another tenant's reply.
    assert len(llm.requests) == 3
    data_dir, cache_dir = folders(app)
    removed, kept = platform_id(platform), platform_id(other_platform)
    doomed = files_under(data_dir / f"p{removed}") | files_under(cache_dir / f"p{removed}")
    assert len(doomed) == 2  # the upload and its cached reply
    others = files_under(data_dir) | files_under(cache_dir)
    others -= doomed | {cache_dir / ".pruned"}
    assert {p.relative_to(data_dir).parts[0] for p in others if data_dir in p.parents} == {
        f"p{kept}",
        f"o{tenant.org.id}",
    }
    assert {p.relative_to(cache_dir).parts[0] for p in others if cache_dir in p.parents} == {
        f"p{kept}",
        f"o{tenant.org.id}",
    }

    result = evaluaitor("platform", "remove", str(removed), "--yes")
    assert result.exit_code == 0, result.output

    assert not (data_dir / f"p{removed}").exists() and not (cache_dir / f"p{removed}").exists()
    assert all(p.exists() for p in others)
    db.session.expire_all()
    assert [s.activity.platform_id for s in db.session.query(Submission)] == [kept]
    assert db.session.query(Evaluation).count() == 1


def test_already_missing_files_do_not_stop_a_removal(app, evaluaitor, browser, platform, live_tool):
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    data_dir, _ = folders(app)
    stored = data_dir / db.session.query(Submission).one().storage_path
    stored.unlink()  # e.g. removed by hand
    removed = platform_id(platform)
    result = evaluaitor("platform", "remove", str(removed), "--yes")
    assert result.exit_code == 0, result.output
    assert db.session.query(Platform).count() == 0
    assert not (data_dir / f"p{removed}").exists()


def test_files_stay_when_the_database_refuses_the_removal(
    app, evaluaitor, browser, platform, live_tool
):
    page = open_activity(browser, platform, live_tool)
    upload(browser, page, "essay.txt", ESSAY.encode())
    data_dir, _ = folders(app)
    files = files_under(data_dir)
    assert files
    if POSTGRES_URL:
        db.session.execute(
            text(
                "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN "
                "RAISE EXCEPTION 'platform removal refused'; END $$ LANGUAGE plpgsql"
            )
        )
        db.session.execute(
            text(
                "CREATE TRIGGER keep_platforms BEFORE DELETE ON platform "
                "FOR EACH ROW EXECUTE FUNCTION refuse()"
            )
        )
    else:
        db.session.execute(
            text(
                "CREATE TRIGGER keep_platforms BEFORE DELETE ON platform "
                "BEGIN SELECT RAISE(ABORT, 'platform removal refused'); END"
            )
        )
    db.session.commit()

    result = evaluaitor("platform", "remove", str(platform_id(platform)), "--yes")
    assert result.exit_code == 1
    assert "was not removed" in result.output and "platform removal refused" in result.output
    assert db.session.query(Submission).count() == 1
    assert files_under(data_dir) == files  # no row points to a deleted file


def completion(content: str) -> Completion:
    return Completion(content, "m", Usage(1, 1, 2), attempts=1, elapsed_ms=1, finish_reason="stop")


def test_the_cache_evicts_entries_past_its_age_then_the_oldest_past_its_size(tmp_path):
    now = time.time()
    writer = ReplyCache(tmp_path, scope="p1")
    for key, age_days in (("aa01", 40), ("aa02", 10), ("aa03", 5), ("aa04", 1)):
        writer.put(key, completion(key))
        entry = tmp_path / "p1" / "aa" / f"{key}.json"
        os.utime(entry, (now - age_days * DAY, now - age_days * DAY))
    size = (tmp_path / "p1" / "aa" / "aa04.json").stat().st_size
    old_layout = tmp_path / "bb" / "bb01.json"  # before tenant folders: no longer read
    old_layout.parent.mkdir()
    old_layout.write_text((tmp_path / "p1" / "aa" / "aa04.json").read_text())
    os.utime(old_layout, (now - 31 * DAY, now - 31 * DAY))

    limits = CacheLimits(max_bytes=3 * size, max_age_seconds=30 * DAY, prune_every=0)
    bounded = ReplyCache(tmp_path, scope="p1", limits=limits)
    bounded.put("aa05", completion("aa05"))  # a write runs the clean-up

    left = sorted(p.name for p in tmp_path.rglob("*.json"))
    assert left == ["aa03.json", "aa04.json", "aa05.json"]  # 40 and 31 days: too old; then 10
    assert bounded.get("aa05").content == "aa05" and bounded.get("aa01") is None
    assert ReplyCache(tmp_path, scope="o1").get("aa05") is None  # another tenant's folder


def test_writers_check_the_bounds_at_most_every_so_often(tmp_path):
    limits = CacheLimits(max_bytes=1, max_age_seconds=0, prune_every=3600)
    cache = ReplyCache(tmp_path, scope="o7", limits=limits)
    cache.put("cc01", completion("first"))  # the first write checks (and evicts everything)
    cache.put("cc02", completion("second"))  # within the hour: no second walk
    assert [p.name for p in tmp_path.rglob("*.json")] == ["cc02.json"]
    assert prune(tmp_path, limits) == 1


def test_grading_applies_the_configured_age_bound(app, browser, platform, llm, live_tool):
    llm.set_default("Final score: 8/10")
    _, cache_dir = folders(app)
    stale = cache_dir / "p999" / "dd" / "dd01.json"  # a tenant's reply from 60 days ago
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    os.utime(stale, (time.time() - 60 * DAY, time.time() - 60 * DAY))
    app.config["EVALUAITOR_LLM_CACHE_MAX_DAYS"] = 30
    graded_upload(browser, platform, live_tool)
    assert not stale.exists()
    assert len(list(cache_dir.rglob("*.json"))) == 1  # the reply just stored
