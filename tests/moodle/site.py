"""A running Moodle and the people who use it, driven over HTTP as their browsers would.

:class:`Moodle` is the site ``scripts/moodle.sh start`` left running (its address, accounts
and database); :class:`Person` is one signed-in browser: an httpx client with a cookie jar
that follows redirects and the forms Moodle and the tool submit by script on load
(:data:`AUTO_SUBMIT`), and sends the ``Origin`` a browser sends with a form. JavaScript-only
steps of Moodle's pages (the deep-linking dialog filling the activity form, the tool type's
activation button) are done with the same requests that JavaScript makes. Forms are read
with lxml (a dependency of python-docx), which knows the value a browser submits for every
control.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx
import lxml.etree
import lxml.html
import psycopg

#: Set by scripts/test.sh (and scripts/moodle.sh test): the JSON file start.sh's line went to.
ENVIRONMENT = "EVALUAITOR_MOODLE"
#: Forms that Moodle and the tool submit by script as soon as their page loads.
AUTO_SUBMIT = ("ltiInitiateLoginForm", "ltiAuthForm", "ltiLaunchForm", "deep-link-return")
_SESSKEY = re.compile(r'"sesskey":"([^"]+)"')
_MAX_HOPS = 12


@dataclass(frozen=True)
class Account:
    username: str
    password: str
    id: int | None = None


@dataclass(frozen=True)
class Moodle:
    """The site: its address, course, accounts, and its database for reading what it stored."""

    url: str
    db: str
    course_id: int
    admin: Account
    teacher: Account
    student: Account
    student2: Account

    @classmethod
    def from_environment(cls) -> Moodle | None:
        """The site scripts/moodle.sh started, or None when none was."""
        path = os.environ.get(ENVIRONMENT)
        if not path:
            return None
        info = json.loads(Path(path).read_text())
        return cls(
            url=info["url"],
            db=info["db"],
            course_id=info["course_id"],
            **{
                role: Account(info[role]["username"], info[role]["password"], info[role].get("id"))
                for role in ("admin", "teacher", "student", "student2")
            },
        )

    def warm_up(self) -> None:
        """Open the course once as the teacher, before tests run in parallel: a new site's first
        course page stores the accessibility toolkit's settings, and two first views at once
        collide on their unique key (Moodle answers 500, "Error writing to database")."""
        person = self.sign_in(self.teacher)
        try:
            page = person.get("/course/view.php", id=self.course_id)
            assert page.status_code == 200, said(page)
        finally:
            person.close()

    def rows(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        """Rows of a query on Moodle's own database (what its gradebook really holds)."""
        with psycopg.connect(self.db, autocommit=True) as connection, connection.cursor() as cur:
            cur.execute(sql, params)
            names = [column.name for column in cur.description or ()]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def execute(self, sql: str, *params: Any) -> int:
        """Change Moodle's database where no page does (an admin's change behind the scenes);
        the number of rows changed."""
        with psycopg.connect(self.db, autocommit=True) as connection, connection.cursor() as cur:
            cur.execute(sql, params)
            return cur.rowcount

    def row(self, sql: str, *params: Any) -> dict[str, Any]:
        (found,) = self.rows(sql, *params)
        return found

    def sign_in(self, account: Account) -> Person:
        person = Person(self, account)
        person.log_in()
        return person


class Person:
    """One person's browser on the site (and on the tool, through the site's launches)."""

    def __init__(self, moodle: Moodle, account: Account) -> None:
        self.moodle, self.account = moodle, account
        self.http = httpx.Client(timeout=60, follow_redirects=False)
        self.sesskey = ""

    def close(self) -> None:
        self.http.close()

    def log_in(self) -> None:
        page = self.get("/login/index.php")
        account = {"username": self.account.username, "password": self.account.password}
        fields = form_fields(find_form(page, "login")) | account
        page = self.submit(urljoin(self.moodle.url, "/login/index.php"), fields, page)
        assert self.sesskey, f"{self.account.username} could not log in: {said(page)}"

    # -- requests ---------------------------------------------------------------------------

    def get(self, path: str, **params: Any) -> httpx.Response:
        """GET a page (a path is on the site), following redirects and auto-submitted forms."""
        return self.follow(self.http.get(urljoin(self.moodle.url, path), params=params))

    def submit(
        self, action: str, fields: dict[str, Any], page: httpx.Response | None = None, **kw: Any
    ) -> httpx.Response:
        """POST a form as a browser does, with the Origin of the page it is on; follow on."""
        origin = _origin(str(page.url) if page is not None else self.moodle.url)
        response = self.http.post(action, data=fields, headers={"Origin": origin}, **kw)
        return self.follow(response)

    def follow(self, response: httpx.Response) -> httpx.Response:
        """Follow redirects and forms a page submits by itself, to the page a person sees."""
        for _ in range(_MAX_HOPS):
            self._remember_sesskey(response)
            if response.is_redirect:
                target = urljoin(str(response.url), response.headers["Location"])
                response = self.http.get(target)
                continue
            form = auto_form(response)
            if form is None:
                return response
            action, fields = form
            response = self.http.post(
                action, data=fields, headers={"Origin": _origin(str(response.url))}
            )
        raise AssertionError(f"more than {_MAX_HOPS} hops from {response.url}")

    def ajax(self, method: str, **args: Any) -> Any:
        """One of Moodle's AJAX web service calls, as its pages' JavaScript makes them."""
        response = self.http.post(
            urljoin(self.moodle.url, "/lib/ajax/service.php"),
            params={"sesskey": self.sesskey, "info": method},
            json=[{"index": 0, "methodname": method, "args": args}],
        )
        (answer,) = response.json()
        assert not answer["error"], answer
        return answer["data"]

    def _remember_sesskey(self, response: httpx.Response) -> None:
        if response.headers.get("content-type", "").startswith("text/html"):
            found = _SESSKEY.search(response.text)
            if found:
                self.sesskey = found.group(1)


# -- pages --------------------------------------------------------------------------------


def forms(page: httpx.Response) -> list[lxml.html.FormElement]:
    if not page.text.strip():
        return []
    document = lxml.html.fromstring(page.text, base_url=str(page.url))
    document.make_links_absolute(str(page.url))
    return list(document.forms)


def form_fields(form: lxml.html.FormElement) -> dict[str, Any]:
    """What a browser submits for ``form`` unchanged; a repeated name (checkboxes of one
    group, or Moodle's hidden "0" before a checkbox, of which PHP keeps the last) as a list."""
    fields: dict[str, Any] = {}
    for name, value in form.form_values():
        if name in fields:
            held = fields[name]
            fields[name] = [*held, value] if isinstance(held, list) else [held, value]
        else:
            fields[name] = value
    return fields


def find_form(page: httpx.Response, form_id: str) -> lxml.html.FormElement:
    """The form whose id is ``form_id`` or starts with it and "_" (Moodle's forms' ids end
    with a random suffix); with ``""``, the page's only form."""
    found = forms(page)
    for form in found:
        if (form.get("id") or "").split("_")[0] == form_id:
            return form
    if form_id == "" and len(found) == 1:  # a page's only form
        return found[0]
    raise AssertionError(
        f"no form #{form_id} on {page.url} (HTTP {page.status_code}): {said(page)}"
    )


def said(page: httpx.Response) -> str:
    """What a page says in words (Moodle's error pages name the error in their text, after a
    long head of styles), for assertion messages."""
    try:
        body = lxml.html.fromstring(page.text).find("body")
    except (ValueError, lxml.etree.ParserError):
        body = None
    words = body.text_content() if body is not None else page.text
    return " ".join(words.split())[:800]


def fill_by_id(form: lxml.html.FormElement, values: dict[str, Any]) -> dict[str, Any]:
    """The form's fields with ``values`` set on the controls whose id is ``id_<key>``, as
    Moodle's scripts set them (a checkbox is ticked by a true value)."""
    fields = form_fields(form)
    for key, value in values.items():
        found = form.xpath(f".//*[@id='id_{key}'][@name]")
        if not found or value is None or isinstance(value, dict | list):
            continue
        (control,) = found
        if control.get("type") == "checkbox":
            fields[control.get("name")] = control.get("value") if value else "0"
        else:
            fields[control.get("name")] = str(value)
    return fields


def auto_form(page: httpx.Response) -> tuple[str, dict[str, Any]] | None:
    """The form this page submits by itself on load, if any."""
    for form in forms(page):
        if form.get("id") in AUTO_SUBMIT or form.get("name") in AUTO_SUBMIT:
            return form.action, form_fields(form)
    return None


def amd_arguments(page: httpx.Response, module: str) -> Any:
    """The data a Moodle page hands to one of its JavaScript modules' ``init``."""
    start = page.text.index(f"require(['{module}']")
    call = page.text.index(".init(", start) + len(".init(")
    value, _end = json.JSONDecoder().raw_decode(page.text, call)
    return value


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
