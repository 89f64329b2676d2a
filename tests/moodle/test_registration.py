"""Registering the tool with Moodle and placing an activity, through Moodle's own pages."""

from __future__ import annotations

from sqlalchemy import select

from app.extensions import db
from app.models import Activity, Deployment, Platform
from tests.moodle.flows import activate, add_activity, launch, register, tool_type

#: mdl_lti_types.state (mod/lti/locallib.php).
CONFIGURED, PENDING = 1, 2


def test_dynamic_registration_is_pending_until_activated(tool, admin, moodle):
    type_id = register(admin, tool)

    moodle_type = tool_type(moodle, tool)
    assert moodle_type["state"] == PENDING
    config = {
        row["name"]: row["value"]
        for row in moodle.rows("SELECT * FROM mdl_lti_types_config WHERE typeid = %s", type_id)
    }
    assert config["initiatelogin"] == f"{tool.url}/lti/login"
    assert config["redirectionuris"] == f"{tool.url}/lti/launch"
    assert config["contentitem"] == "1"  # deep linking: the "Select content" button
    assert config["ltiservice_gradesynchronization"] == "2"  # scores and columns
    assert config["ltiservice_memberships"] == "1"

    (platform,) = db.session.scalars(select(Platform)).all()
    assert platform.issuer == moodle.url
    assert platform.client_id == moodle_type["clientid"]
    assert [d.deployment_id for d in platform.deployments] == [str(type_id)]

    activate(admin, type_id)
    assert tool_type(moodle, tool)["state"] == CONFIGURED


def test_reregistration_keeps_the_tool_active_and_its_activities_working(
    tool, admin, teacher, student, moodle, type_id
):
    placed = add_activity(teacher, type_id, title="Before re-registration")

    assert register(admin, tool, update=type_id) == type_id

    assert tool_type(moodle, tool)["state"] == CONFIGURED  # Moodle kept it active
    db.session.expire_all()
    assert db.session.scalar(select(db.func.count(Platform.id))) == 1
    assert db.session.scalar(select(db.func.count(Deployment.id))) == 1
    page = launch(student, placed.cmid)
    assert "Before re-registration" in page.text


def test_teacher_places_a_configured_activity_with_the_deep_linking_dialog(
    tool, teacher, student, moodle, type_id
):
    placed = add_activity(
        teacher, type_id, title="Photosynthesis", max_score="25", release_policy="hold_all"
    )

    lti = moodle.row("SELECT * FROM mdl_lti WHERE id = %s", placed.instance)
    assert lti["name"] == "Photosynthesis"
    assert lti["grade"] == 25
    assert lti["instructorchoiceacceptgrades"] == 1
    (activity,) = db.session.scalars(select(Activity)).all()
    assert lti["instructorcustomparameters"] == f"activity={activity.public_id}"
    item = moodle.row(
        "SELECT grademax FROM mdl_grade_items WHERE itemmodule = 'lti' AND iteminstance = %s",
        placed.instance,
    )
    assert item["grademax"] == 25

    page = launch(student, placed.cmid)  # the first launch binds the link to the activity
    assert page.status_code == 200 and "Photosynthesis" in page.text
    db.session.expire_all()
    assert activity.resource_link_id == str(placed.instance)
    assert activity.release_policy == "hold_all"
