"""Tests against a real Moodle 4.5 (the judge of protocol details; tests/fakes/platform stays
for fast tests and failure injection).

Running them: ``bash scripts/moodle.sh test`` (starts Moodle, runs this folder, stops it);
``scripts/test.sh`` starts Moodle once in the background during its SQLite pass and runs this
folder once after it. Without ``EVALUAITOR_MOODLE`` (the JSON file of a started site) every
test here is skipped and says so; in CI (``CI`` set) that is an error instead.

The harness, for tests of other areas:

- Fixtures (conftest.py): ``moodle`` (the :class:`~tests.moodle.site.Moodle` site),
  ``admin``/``teacher``/``student``/``student2`` (signed-in :class:`~tests.moodle.site.Person`,
  one per test process), ``tool`` (the app over HTTP as ``http://localhost:<port>`` with a
  worker process, its own Redis and the fake model; a :class:`~tests.moodle.flows.Tool`),
  ``same_site_tool`` (the same as ``http://127.0.0.1:<port>``, Moodle's own site, for a
  browser that keeps the tool's cookies in Moodle's frame) and ``type_id`` (the tool
  registered by Dynamic Registration and activated in Moodle).
- Steps (flows.py): ``register``, ``activate``, ``add_activity`` (the deep-linking dialog,
  with the tool's setup form values), ``launch`` (a person opens the activity; returns the
  tool's page), ``upload``, ``gradebook``/``wait_for_gradebook`` (Moodle's own grade rows).
- ``Person.get``/``submit`` follow redirects and the forms pages submit by themselves;
  ``Person.ajax`` makes Moodle's AJAX calls; ``Moodle.rows``/``row`` query its database and
  ``Moodle.execute`` changes it where no page does (test_resend revokes the tool's grade
  service that way).
- Headless Chromium through Moodle's pages (test_in_chromium): the ``chromium`` and
  ``page`` fixtures of tests/browser, imported by the test module (only it needs Chromium).

Each test registers its own tool type (its own port, so its own domain in Moodle) and adds
its own activities, so tests share the site but nothing else and can run in parallel.
"""
