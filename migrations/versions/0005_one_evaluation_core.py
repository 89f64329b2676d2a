"""one evaluation core

An LMS submission and an API evaluation each own one grading job: the file, status, progress,
timing, error and result move from ``submission``/``grade`` and ``evaluation`` into
``grading_job``; an evaluation's callback state moves into ``callback``; deliveries keep when
their next attempt is due. Statuses take the core's words: received and queued become
pending, graded becomes completed (an API evaluation's queued also becomes pending).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24 10:00:00

"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

#: The file, state and progress both owners had; moved to the job.
SHARED = (
    ("status", sa.String(length=20), False),
    ("progress_step", sa.Integer(), False),
    ("progress_total", sa.Integer(), False),
    ("progress_message", sa.String(length=300), False),
    ("original_filename", sa.String(length=255), False),
    ("kind", sa.String(length=20), False),
    ("size_bytes", sa.Integer(), False),
    ("sha256", sa.String(length=64), False),
    ("storage_path", sa.String(length=1000), False),
    ("extracted_text", sa.Text(), True),
    ("error_message", sa.Text(), True),
    ("job_id", sa.String(length=100), True),
    ("enqueued_at", sa.DateTime(timezone=True), True),
    ("started_at", sa.DateTime(timezone=True), True),
    ("finished_at", sa.DateTime(timezone=True), True),
)
#: The grader's result a grade held; moved to the job.
GRADE_RESULT = (
    ("score", sa.Float(), True),
    ("scale", sa.Float(), True),
    ("normalized", sa.Float(), True),
    ("feedback", sa.Text(), False),
    ("criteria", sa.JSON(), False),
    ("flags", sa.JSON(), False),
    ("provenance", sa.JSON(), False),
    ("raw_replies", sa.JSON(), False),
    ("error", sa.Text(), True),
)
EVALUATION_ONLY = (
    ("result", sa.JSON(), True),
    ("callback_status", sa.String(length=20), True),
    ("callback_attempts", sa.Integer(), False),
    ("callback_error", sa.Text(), True),
)
SUBMISSION_STATUS = {"received": "pending", "queued": "pending", "graded": "completed"}
EVALUATION_STATUS = {"queued": "pending"}
EVALUATION_FORMER = {"pending": "queued", "waiting": "queued"}
RESULT_STATES = ("completed", "needs_review")


def _table(name, columns, *extra):
    return sa.table(name, *extra, *(sa.column(c, t) for c, t, _ in columns))


def _delivery_columns():
    return [
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("job_id", sa.String(length=100), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("http_status", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    ]


JOB = sa.table(
    "grading_job",
    *(sa.column(c, t) for c, t, _ in SHARED),
    *(sa.column(c, t) for c, t, _ in GRADE_RESULT if c != "error"),
    sa.column("id", sa.Integer()),
    sa.column("submission_id", sa.Integer()),
    sa.column("evaluation_id", sa.Integer()),
    sa.column("review_reason", sa.Text()),
    sa.column("tries", sa.Integer()),
    sa.column("handbacks", sa.Integer()),
    sa.column("fresh", sa.Boolean()),
    sa.column("error_details", sa.JSON()),
    sa.column("retry_at", sa.DateTime(timezone=True)),
    sa.column("created_at", sa.DateTime(timezone=True)),
    sa.column("updated_at", sa.DateTime(timezone=True)),
)
SUBMISSION = _table(
    "submission",
    SHARED,
    sa.column("id", sa.Integer()),
    sa.column("created_at", sa.DateTime(timezone=True)),
    sa.column("updated_at", sa.DateTime(timezone=True)),
)
GRADE = _table("grade", GRADE_RESULT, sa.column("submission_id", sa.Integer()))
EVALUATION = _table(
    "evaluation",
    SHARED + EVALUATION_ONLY,
    sa.column("id", sa.Integer()),
    sa.column("callback_url", sa.String()),
    sa.column("created_at", sa.DateTime(timezone=True)),
    sa.column("updated_at", sa.DateTime(timezone=True)),
)
CALLBACK = sa.table(
    "callback",
    sa.column("evaluation_id", sa.Integer()),
    *(sa.column(c.name, c.type) for c in _delivery_columns()),
)


def upgrade():
    op.create_table(
        "grading_job",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=True),
        sa.Column("evaluation_id", sa.Integer(), nullable=True),
        *(sa.Column(c, t, nullable=n) for c, t, n in SHARED),
        sa.Column("tries", sa.Integer(), nullable=False),
        sa.Column("retry_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("handbacks", sa.Integer(), nullable=False),
        sa.Column("fresh", sa.Boolean(), nullable=False),
        sa.Column("error_details", sa.JSON(), nullable=True),
        *(sa.Column(c, t, nullable=n) for c, t, n in GRADE_RESULT if c != "error"),
        sa.Column("review_reason", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "(submission_id IS NULL) <> (evaluation_id IS NULL)",
            name=op.f("ck_grading_job_one_owner"),
        ),
        sa.ForeignKeyConstraint(
            ["evaluation_id"],
            ["evaluation.id"],
            name=op.f("fk_grading_job_evaluation_id_evaluation"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submission.id"],
            name=op.f("fk_grading_job_submission_id_submission"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_grading_job")),
        sa.UniqueConstraint("evaluation_id", name=op.f("uq_grading_job_evaluation_id")),
        sa.UniqueConstraint("submission_id", name=op.f("uq_grading_job_submission_id")),
    )
    with op.batch_alter_table("grading_job", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_grading_job_status"), ["status"], unique=False)
    op.create_table(
        "callback",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("evaluation_id", sa.Integer(), nullable=False),
        *_delivery_columns(),
        sa.ForeignKeyConstraint(
            ["evaluation_id"],
            ["evaluation.id"],
            name=op.f("fk_callback_evaluation_id_evaluation"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_callback")),
        sa.UniqueConstraint("evaluation_id", name=op.f("uq_callback_evaluation_id")),
    )
    for table in ("score_push", "lineitem_update"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(
                sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True)
            )

    _copy_submissions()
    _copy_evaluations()

    with op.batch_alter_table("submission", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_submission_status"))
        for name, _type, _nullable in SHARED:
            batch_op.drop_column(name)
    with op.batch_alter_table("grade", schema=None) as batch_op:
        for name, _type, _nullable in GRADE_RESULT:
            batch_op.drop_column(name)
    with op.batch_alter_table("evaluation", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_evaluation_status"))
        for name, _type, _nullable in SHARED + EVALUATION_ONLY:
            batch_op.drop_column(name)


def _job_values(row, status, **values):
    """Every column of the job (one insert takes its columns from the first row)."""
    shared = {name: getattr(row, name) for name, _t, _n in SHARED}
    return shared | {
        "submission_id": None,
        "evaluation_id": None,
        "score": None,
        "scale": None,
        "normalized": None,
        "review_reason": None,
        "error_details": None,
        "retry_at": None,
        "status": status,
        "tries": 0,
        "handbacks": 0,
        "fresh": False,
        "feedback": "",
        "criteria": [],
        "flags": [],
        "provenance": {},
        "raw_replies": [],
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        **values,
    }


def _copy_submissions():
    connection = op.get_bind()
    rows = connection.execute(
        sa.select(SUBMISSION, *GRADE.c).outerjoin(GRADE, GRADE.c.submission_id == SUBMISSION.c.id)
    ).all()
    jobs = []
    for row in rows:
        status = SUBMISSION_STATUS.get(row.status, row.status)
        values = {"submission_id": row.id}
        if row.submission_id is not None:  # it has a grade: the grader's result
            values |= {name: getattr(row, name) for name, _t, _n in GRADE_RESULT if name != "error"}
        if status == "needs_review":
            values |= {"review_reason": row.error or row.error_message, "error_message": None}
        jobs.append(_job_values(row, status, **values))
    if jobs:
        connection.execute(JOB.insert(), jobs)


def _copy_evaluations():
    connection = op.get_bind()
    jobs, callbacks = [], []
    for row in connection.execute(sa.select(EVALUATION)).all():
        status = EVALUATION_STATUS.get(row.status, row.status)
        values = {"evaluation_id": row.id}
        result = row.result or {}
        if status in RESULT_STATES:
            values |= {
                "score": result.get("score"),
                "scale": result.get("max_score"),
                "normalized": result.get("score_normalized"),
                "feedback": result.get("feedback") or "",
                "criteria": result.get("criteria") or [],
                "flags": result.get("flags") or [],
                "provenance": result.get("provenance") or {},
            }
        if status == "needs_review":
            values |= {"review_reason": row.error_message, "error_message": None}
        jobs.append(_job_values(row, status, **values))
        if row.callback_url:
            callbacks.append(
                {
                    "evaluation_id": row.id,
                    "status": row.callback_status or "pending",
                    "job_id": None,
                    "attempts": row.callback_attempts or 0,
                    "next_attempt_at": None,
                    "http_status": None,
                    "last_error": row.callback_error,
                    "created_at": row.finished_at or row.updated_at,
                    "updated_at": row.updated_at,
                }
            )
    if jobs:
        connection.execute(JOB.insert(), jobs)
    if callbacks:
        connection.execute(CALLBACK.insert(), callbacks)


def downgrade():
    """Back to the owners' own columns, with the data (statuses in their former words)."""
    with op.batch_alter_table("submission", schema=None) as batch_op:
        for name, column_type, _nullable in SHARED:
            batch_op.add_column(sa.Column(name, column_type, nullable=True))
    with op.batch_alter_table("grade", schema=None) as batch_op:
        for name, column_type, _nullable in GRADE_RESULT:
            batch_op.add_column(sa.Column(name, column_type, nullable=True))
    with op.batch_alter_table("evaluation", schema=None) as batch_op:
        for name, column_type, _nullable in SHARED + EVALUATION_ONLY:
            batch_op.add_column(sa.Column(name, column_type, nullable=True))

    connection = op.get_bind()
    former = {"pending": "queued", "completed": "graded", "waiting": "queued"}
    for job in connection.execute(sa.select(JOB)).all():
        shared = {name: getattr(job, name) for name, _t, _n in SHARED}
        if job.submission_id is not None:
            shared["status"] = former.get(job.status, job.status)
            if job.status == "needs_review":
                shared["error_message"] = job.review_reason
            connection.execute(
                SUBMISSION.update().where(SUBMISSION.c.id == job.submission_id).values(shared)
            )
            result = {name: getattr(job, name) for name, _t, _n in GRADE_RESULT if name != "error"}
            connection.execute(
                GRADE.update()
                .where(GRADE.c.submission_id == job.submission_id)
                .values(result | {"error": job.review_reason})
            )
        else:
            shared["status"] = {"pending": "queued", "waiting": "queued"}.get(
                job.status, job.status
            )
            if job.status == "needs_review":
                shared["error_message"] = job.review_reason
            if job.status in RESULT_STATES:
                shared["result"] = {
                    "score": job.score,
                    "max_score": job.scale,
                    "score_normalized": job.normalized,
                    "feedback": job.feedback,
                    "criteria": job.criteria,
                    "flags": job.flags,
                    "provenance": job.provenance,
                }
            connection.execute(
                EVALUATION.update().where(EVALUATION.c.id == job.evaluation_id).values(shared)
            )
    for callback in connection.execute(sa.select(CALLBACK)).all():
        connection.execute(
            EVALUATION.update()
            .where(EVALUATION.c.id == callback.evaluation_id)
            .values(
                callback_status=callback.status,
                callback_attempts=callback.attempts,
                callback_error=callback.last_error,
            )
        )
    connection.execute(
        EVALUATION.update()
        .where(EVALUATION.c.callback_attempts.is_(None))
        .values(callback_attempts=0)
    )
    connection.execute(
        GRADE.update()
        .where(GRADE.c.feedback.is_(None))
        .values(feedback="", criteria=[], flags=[], provenance={}, raw_replies=[])
    )

    for table, columns in (
        ("submission", SHARED),
        ("grade", GRADE_RESULT),
        ("evaluation", SHARED + EVALUATION_ONLY),
    ):
        with op.batch_alter_table(table, schema=None) as batch_op:
            for name, column_type, nullable in columns:
                if not nullable:
                    batch_op.alter_column(name, existing_type=column_type, nullable=False)
    for table in ("submission", "evaluation"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.create_index(batch_op.f(f"ix_{table}_status"), ["status"], unique=False)
    for table in ("score_push", "lineitem_update"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("next_attempt_at")
    op.drop_table("callback")
    with op.batch_alter_table("grading_job", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_grading_job_status"))
    op.drop_table("grading_job")
