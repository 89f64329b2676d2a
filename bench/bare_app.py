"""The baseline for bench_core.py: a bare Flask + pylti1p3 launch handler, a bare upload
handler and a bare student page, with nothing of Evaluaitor in them. Configured from
environment variables set by the benchmark; served by gunicorn as ``bare_app:app``.

The page is what pylti1p3's own Flask example does on a page reload: the launch read back
from the cache by its id (in the URL), and a template rendered with the activity's title and
instructions and the student's uploads (a directory listing: this app has no database)."""

from __future__ import annotations

import datetime
import json
import os
import uuid
from pathlib import Path

from flask import Flask, jsonify, redirect, render_template, request
from jinja2 import DictLoader
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
UPLOADS = Path(os.environ["BARE_UPLOAD_DIR"])  # shared by every gunicorn worker
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
    return redirect(f"/page/{message.get_launch_id()}", code=303)


@app.get("/page/<launch_id>")
def page(launch_id: str):
    """The student page: the launch from the cache, the student's uploads, one template."""
    message = FlaskMessageLaunch.from_cache(
        launch_id, FlaskRequest(), TOOL_CONF, launch_data_storage=storage()
    )
    data = message.get_launch_data()
    link = data["https://purl.imsglobal.org/spec/lti/claim/resource_link"]
    folder = UPLOADS / _folder(data["sub"])
    files = sorted(folder.iterdir(), key=lambda p: p.stat().st_mtime) if folder.is_dir() else []
    history = [
        {
            "n": n,
            "name": path.name,
            "when": datetime.datetime.fromtimestamp(path.stat().st_mtime),
        }
        for n, path in enumerate(files, 1)
    ]
    return render_template(
        "page.html",
        title=link.get("title"),
        instructions=link.get("description"),
        history=history[::-1],
        upload_url=f"/upload?user={data['sub']}",
    )


@app.get("/status")
def status():
    """The floor for a status poll: a JSON answer with no lookup at all."""
    return jsonify(submission={"status": "queued", "step": 0, "total": 0})


@app.post("/upload")
def upload():
    """Save the file under the user named in the URL: no check of who sends it, no lookup."""
    folder = UPLOADS / _folder(request.args.get("user", ""))
    folder.mkdir(exist_ok=True)
    request.files["file"].save(folder / uuid.uuid4().hex)
    return redirect("/page", code=303)


def _folder(user: str) -> str:
    return "u" + "".join(c for c in user if c.isalnum())


#: The same structure as Evaluaitor's student page (app/templates/student.html), in English.
PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>{{ title or 'Assignment' }} – Bare</title>
  <link rel="stylesheet" href="/static/app.css">
</head>
<body>
  <a class="skip" href="#main">Skip to content</a>
  <main id="main" tabindex="-1">
  <h1>{{ title or 'Assignment' }}</h1>
  {% if instructions %}
    <details open><summary>Instructions</summary>
      <div class="instructions">{{ instructions }}</div></details>
  {% endif %}
  {% if history %}
  <section class="status" aria-labelledby="status-heading">
    <h2 id="status-heading">Your submission</h2>
    <p>Attempt {{ history[0].n }}: <strong>{{ history[0].name }}</strong>,
       submitted {{ history[0].when.strftime('%Y-%m-%d %H:%M') }} UTC.</p>
    <p id="status-text" role="status" aria-live="polite">Queued for grading</p>
    <progress id="status-progress" aria-labelledby="status-text"></progress>
  </section>
  {% endif %}
  <section aria-labelledby="upload-heading">
    <h2 id="upload-heading">{{ 'Submit a new version' if history else 'Submit your work' }}</h2>
    <form method="post" enctype="multipart/form-data" id="upload-form" action="{{ upload_url }}">
      <p><label for="file">File (PDF; up to 20 MB)</label>
        <input type="file" id="file" name="file" required accept=".pdf"></p>
      <p><label for="comment">Comment for your teacher (optional)</label>
        <textarea id="comment" name="comment" rows="3" maxlength="5000"></textarea></p>
      <p><button type="submit">Submit</button></p>
    </form>
  </section>
  {% if history %}
  <section aria-labelledby="history-heading">
    <h2 id="history-heading">Your submissions</h2>
    <table>
      <thead><tr><th scope="col">Attempt</th><th scope="col">File</th><th scope="col">Submitted</th>
        <th scope="col">Status</th><th scope="col">Score</th></tr></thead>
      <tbody>
      {% for s in history %}
        <tr><td>{{ s.n }}</td><td>{{ s.name }}</td><td>{{ s.when.strftime('%Y-%m-%d %H:%M') }}</td>
            <td>Being graded</td><td>–</td></tr>
      {% endfor %}
      </tbody>
    </table>
  </section>
  {% endif %}
  </main>
</body>
</html>
"""


# A template file, as Evaluaitor's: compiled once per process, not on every request.
app.jinja_loader = DictLoader({"page.html": PAGE})
