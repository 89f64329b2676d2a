"""LTI 1.3 / Advantage names the fake platform speaks: claims, scopes, roles, media types."""

LTI_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"

SCOPE_LINEITEM = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
SCOPE_LINEITEM_READONLY = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
SCOPE_RESULT_READONLY = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"
SCOPE_SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
SCOPE_NRPS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
AGS_SCOPES = [SCOPE_LINEITEM, SCOPE_LINEITEM_READONLY, SCOPE_RESULT_READONLY, SCOPE_SCORE]
SCOPE_ASSET_READONLY = "https://purl.imsglobal.org/spec/lti/scope/asset.readonly"
SCOPE_REPORT = "https://purl.imsglobal.org/spec/lti/scope/report"
KNOWN_SCOPES = frozenset([*AGS_SCOPES, SCOPE_NRPS, SCOPE_ASSET_READONLY, SCOPE_REPORT])

LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
# Lists (not tuples) so that they compare equal to the decoded `roles` claim.
STUDENT = [LEARNER]
TEACHER = [INSTRUCTOR]
# What Moodle sends for a site administrator who teaches the course.
ADMIN = [
    "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator",
    INSTRUCTOR,
    "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator",
]

LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEMS_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
RESULTS_TYPE = "application/vnd.ims.lis.v2.resultcontainer+json"
MEMBERSHIPS_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"

ACTIVITY_PROGRESS = frozenset({"Initialized", "Started", "InProgress", "Submitted", "Completed"})
GRADING_PROGRESS = frozenset({"FullyGraded", "Pending", "PendingManual", "Failed", "NotReady"})
