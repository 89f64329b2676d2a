"""LTI 1.3 claim names, role URIs and AGS constants: spec strings live here and nowhere else."""

from __future__ import annotations

_LTI = "https://purl.imsglobal.org/spec/lti/claim/"
MESSAGE_TYPE = _LTI + "message_type"
DEPLOYMENT_ID = _LTI + "deployment_id"
VERSION = _LTI + "version"
RESOURCE_LINK = _LTI + "resource_link"
CONTEXT = _LTI + "context"
ROLES = _LTI + "roles"
LAUNCH_PRESENTATION = _LTI + "launch_presentation"
AGS_ENDPOINT = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"

TARGET_LINK_URI = _LTI + "target_link_uri"
TOOL_PLATFORM = _LTI + "tool_platform"
#: Canvas's own claim naming the placement a launch comes from (null outside deep linking).
CANVAS_PLACEMENT = "https://www.instructure.com/placement"

RESOURCE_LINK_REQUEST = "LtiResourceLinkRequest"
DEEP_LINKING_REQUEST = "LtiDeepLinkingRequest"
DEEP_LINKING_RESPONSE = "LtiDeepLinkingResponse"
_DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"
DEEP_LINKING_SETTINGS = _DL + "deep_linking_settings"
DEEP_LINKING_DATA = _DL + "data"
CONTENT_ITEMS = _DL + "content_items"
RESOURCE_LINK_ITEM = "ltiResourceLink"

# LTI Asset Processor and the Platform Notification Service (PNS).
CUSTOM = _LTI + "custom"
#: The LMS's assignment (``{"id", "title"}``) an asset processor is attached to.
ACTIVITY = _LTI + "activity"
PNS = _LTI + "platformnotificationservice"
NOTICE = _LTI + "notice"
FOR_USER = _LTI + "for_user"
SUBMISSION = _LTI + "submission"
ASSET_SERVICE = _LTI + "assetservice"
ASSET_REPORT = _LTI + "assetreport"
#: In a report review launch: the asset whose report is opened, and the report's type.
ASSET = _LTI + "asset"
ASSET_REPORT_TYPE = _LTI + "assetreport_type"
ASSET_PROCESSOR_SETTINGS_REQUEST = "LtiAssetProcessorSettingsRequest"
REPORT_REVIEW_REQUEST = "LtiReportReviewRequest"
SUBMISSION_NOTICE = "LtiAssetProcessorSubmissionNotice"
#: The content item type (deep linking) of an asset processor, and its placement name.
ASSET_PROCESSOR_ITEM = "ltiAssetProcessor"
ASSET_PROCESSOR_PLACEMENT = "ActivityAssetProcessor"
SCOPE_NOTICE_HANDLERS = "https://purl.imsglobal.org/spec/lti/scope/noticehandlers"
SCOPE_ASSET_READONLY = "https://purl.imsglobal.org/spec/lti/scope/asset.readonly"
SCOPE_REPORT = "https://purl.imsglobal.org/spec/lti/scope/report"

_MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
_INSTITUTION = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#"
_SYSTEM = "http://purl.imsglobal.org/vocab/lis/v2/system/person#"

#: Roles that open the teacher page. Short names are accepted too: LTI 1.3 allows them.
STAFF_ROLES = frozenset(
    {
        _MEMBERSHIP + "Instructor",
        _MEMBERSHIP + "Administrator",
        _MEMBERSHIP + "ContentDeveloper",
        _MEMBERSHIP + "Instructor#TeachingAssistant",
        _INSTITUTION + "Administrator",
        _INSTITUTION + "Instructor",
        _SYSTEM + "Administrator",
        "Instructor",
        "Administrator",
        "ContentDeveloper",
    }
)

SCOPE_LINEITEM = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
SCOPE_LINEITEM_READONLY = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
SCOPE_SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
SCOPE_RESULT_READONLY = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"

SCOPE_NRPS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
MEMBERSHIPS_CONTENT_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
#: The NRPS role that makes a member a student of the course.
LEARNER = _MEMBERSHIP + "Learner"
INSTRUCTOR = _MEMBERSHIP + "Instructor"

SCORE_CONTENT_TYPE = "application/vnd.ims.lis.v1.score+json"
LINEITEM_CONTENT_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEM_CONTAINER_CONTENT_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"

CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


def is_staff(roles: list[str]) -> bool:
    return any(role in STAFF_ROLES for role in roles)
