"""The baseline for bench_core.py: a bare Flask + pylti1p3 launch handler and a bare upload
handler, with nothing of Evaluaitor in them. Configured from environment variables set by
the benchmark; served by gunicorn as ``bare_app:app``."""

from __future__ import annotations

import json
import os
import tempfile
import uuid

from flask import Flask, jsonify, redirect, request
from pylti1p3.contrib.flask import (
    FlaskCacheDataStorage,
    FlaskMessageLaunch,
    FlaskOIDCLogin,
    FlaskRequest,
)
from pylti1p3.tool_config import ToolConfDict
from redis import Redis

app = Flask(__name__)
app.secret_key = os.environ["BARE_SECRET"]  # shared by every gunicorn worker
UPLOADS = tempfile.mkdtemp(prefix="bare-uploads-")
ISSUER = os.environ["BARE_ISSUER"]
CLIENT_ID = os.environ["BARE_CLIENT_ID"]
TOOL_CONF = ToolConfDict(
    {
        ISSUER: [
            {
                "default": True,
                "client_id": CLIENT_ID,
                "auth_login_url": os.environ["BARE_AUTH_LOGIN_URL"],
                "auth_token_url": os.environ["BARE_AUTH_TOKEN_URL"],
                "key_set_url": os.environ["BARE_KEY_SET_URL"],
                "key_set": None,
                "deployment_ids": [os.environ["BARE_DEPLOYMENT_ID"]],
            }
        ]
    }
)
with open(os.environ["BARE_PRIVATE_KEY_FILE"]) as handle:
    TOOL_CONF.set_private_key(ISSUER, handle.read(), client_id=CLIENT_ID)


class RedisCache:
    """pylti1p3 keeps launch state in a cache shared by the gunicorn workers (here Redis):
    its default, the Flask session cookie, outgrows a request header."""

    def __init__(self) -> None:
        self.redis = Redis.from_url(os.environ["BARE_REDIS_URL"])

    def get(self, key):
        raw = self.redis.get(key)
        return None if raw is None else json.loads(raw)

    def set(self, key, value, exp=None):
        self.redis.set(key, json.dumps(value), ex=exp or None)


CACHE = RedisCache()


def storage() -> FlaskCacheDataStorage:
    return FlaskCacheDataStorage(CACHE)


@app.route("/lti/login", methods=["GET", "POST"])
def login():
    login = FlaskOIDCLogin(FlaskRequest(), TOOL_CONF, launch_data_storage=storage())
    return login.redirect(request.host_url + "lti/launch")


@app.post("/lti/launch")
def launch():
    message = FlaskMessageLaunch(FlaskRequest(), TOOL_CONF, launch_data_storage=storage())
    message.get_launch_data()
    return redirect("/page", code=303)


@app.get("/status")
def status():
    """The floor for a status poll: a JSON answer with no lookup at all."""
    return jsonify(submission={"status": "queued", "step": 0, "total": 0})


@app.post("/upload")
def upload():
    request.files["file"].save(os.path.join(UPLOADS, uuid.uuid4().hex))
    return redirect("/page", code=303)
