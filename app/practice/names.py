"""The practice platform's fixed names: who it is to the tool, and the frames of its page.

Its views, services and messages use them as well as the package's setup code, so they live
below all of them.
"""

from __future__ import annotations

CLIENT_ID = "evaluaitor-practice"
DEPLOYMENT_ID = "practice-deployment"
#: The frame on the platform page that answers the tool's lti.put_data / lti.get_data.
STORAGE_FRAME = "lti-storage"
#: The iframe the tool opens in.
TOOL_FRAME = "tool-frame"
