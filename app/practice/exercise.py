"""The practice course's programming activity: graded by the code judge alone, no model.

A newcomer with no language model configured still sees the whole loop (upload, grading in
the worker, a score in the practice gradebook). The exercise is small on purpose: its five
input/output tests are its rubric, each worth the same, so a sample with a classic bug
(``static/samples/largest_buggy.py``) earns part of the grade and the correct sample
(``largest.py``) all of it.

Both sides of the practice setup use it: the platform adds the link (:mod:`state`), and
:func:`ensure_activity` sets up the tool's activity behind that link once, so a teacher's
later changes to it stay.
"""

from __future__ import annotations

from sqlalchemy import select

from app.extensions import db
from app.lms import activities
from app.models import Activity, Deployment, Platform

#: The resource link's id, fixed so both sides name the same link across runs.
LINK_ID = "practice-program"
TITLE = "Practice program: the largest number"
MAX_SCORE = 10.0
#: The samples a newcomer can upload, under the practice platform's /static/.
SAMPLES = ("samples/largest.py", "samples/largest_buggy.py")

INSTRUCTIONS = """\
Write a Python program that reads whole numbers from standard input, separated by spaces or \
new lines, and prints the largest one. If there are no numbers, it prints "no numbers".

Upload one .py file. It runs in a sandbox against five tests, 2 points each; no language \
model is involved. Sample files to try are linked on the practice course's page.
"""

#: The code judge's tests (``app.judge.spec.TestSpec`` fields).
TESTS = (
    {"name": "several numbers", "stdin": "3 17 5\n", "expected_stdout": "17"},
    {"name": "one number", "stdin": "42\n", "expected_stdout": "42"},
    {"name": "numbers on several lines", "stdin": "4\n9\n1\n", "expected_stdout": "9"},
    {"name": "only negative numbers", "stdin": "-8 -3 -12\n", "expected_stdout": "-3"},
    {"name": "no numbers", "stdin": "", "expected_stdout": "no numbers"},
)


def ensure_activity(platform: Platform, deployment: Deployment) -> Activity:
    """The tool's activity behind the exercise link, created and set up on the first call."""
    activity = db.session.scalar(
        select(Activity).where(
            Activity.deployment_id == deployment.id, Activity.resource_link_id == LINK_ID
        )
    )
    if activity is not None:
        return activity
    activity = Activity(
        platform_id=platform.id, deployment_id=deployment.id, resource_link_id=LINK_ID
    )
    db.session.add(activity)
    db.session.flush()
    return activities.configure(
        activity,
        plugin="code_judge",
        params={"language": "python", "tests": list(TESTS)},
        title=TITLE,
        instructions=INSTRUCTIONS,
        max_score=MAX_SCORE,
        accepted_kinds=["code"],
        initial=True,
    )
