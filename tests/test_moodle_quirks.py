"""Two things real Moodle does that the fake Moodle now does too, and the tool must cope with
(issue 14, defect 4): its rescale of a column stamps the grades with the current second, and
it writes why it refused a score in the HTTP status line, with ``[]`` as the body."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from app.extensions import db
from app.lti import passback
from app.lti.ags import AgsError
from app.models import Activity, PushStatus, ScorePush
from tests.conftest import run_jobs
from tests.test_lineitem_sync import last_update, save_settings
from tests.test_review import graded, teacher


def test_a_grade_resent_right_after_a_rescale_is_accepted_the_first_time(
    browser, platform, llm, live_tool
):
    """The resend follows the column update within the second Moodle rescaled in; stamped
    with that second it got 409 (and a retry) every time."""
    graded(browser, platform, llm, live_tool)  # 8 of 10, released
    staff = teacher(browser, platform, live_tool)
    for sent in db.session.query(ScorePush):  # long ago: only the rescale's stamp counts
        sent.sent_timestamp -= timedelta(hours=1)
    db.session.commit()
    time.sleep(1 - time.time() % 1)  # at the start of a second: the rescale and resend share it

    save_settings(browser, staff, max_score="20")
    run_jobs()

    assert last_update().status == PushStatus.SENT
    resent = db.session.query(ScorePush).order_by(ScorePush.id.desc()).first()
    assert (resent.status, resent.attempts, resent.last_error) == (PushStatus.SENT, 1, None)
    assert platform.grade_for("2")["grade"] == 16


def test_moodles_reason_for_a_refused_score_is_kept(browser, platform, llm, live_tool):
    graded(browser, platform, llm, live_tool)  # 8 of 10, held by the platform from now
    activity = db.session.query(Activity).one()
    stale = {
        "userId": "2",
        "timestamp": "2020-01-01T00:00:00+00:00",
        "scoreGiven": 1,
        "scoreMaximum": 10,
        "activityProgress": "Completed",
        "gradingProgress": "FullyGraded",
    }

    with passback.ags_client(activity) as client, pytest.raises(AgsError) as refused:
        client.post_score(activity.lineitem_url, stale)

    assert refused.value.status == 409
    assert "HTTP 409 Refusing score with an earlier timestamp" in str(refused.value)
    assert "[]" not in str(refused.value)
    assert platform.grade_for("2")["scoreGiven"] == 8
