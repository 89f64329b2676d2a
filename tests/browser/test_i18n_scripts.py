"""The page scripts in Spanish, in Chromium: the rubric editor's labels, buttons and
announcements, and the student's early file-size check (see templates/_js_messages.html)."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.test_setup_form import PASTED
from tests.fakes.platform import TEACHER, browser_launch
from tests.test_core_loop import open_activity
from tests.test_i18n import in_locale
from tests.test_strategies_loop import configure


def test_the_rubric_editor_speaks_spanish(page, browser, platform, live_tool):
    settings = platform.deep_linking.request()
    settings["extra_claims"] |= in_locale("es-ES")["extra_claims"]
    launch = browser_launch(browser, platform, live_tool, user="1", roles=TEACHER, **settings)
    page.goto(live_tool + launch.headers["Location"])
    expect(page.locator("html")).to_have_attribute("lang", "es")

    page.get_by_label("Pegar una rúbrica (YAML o JSON)").fill(PASTED)
    page.get_by_role("button", name="Importar la rúbrica pegada").click()
    expect(page.locator("#rubric-status")).to_have_text("Rúbrica importada.")
    expect(page.get_by_label("Nombre del criterio 2")).to_have_value("B")
    expect(page.get_by_role("columnheader", name="Requisito")).to_be_visible()

    page.get_by_role("button", name="Bajar: criterio 1").click()
    expect(page.locator("#rubric-status")).to_have_text("Se ha movido A a la posición 2.")
    page.get_by_role("button", name="Eliminar: criterio 2").click()
    expect(page.locator("#rubric-status")).to_have_text("Se ha eliminado el criterio A.")
    expect(page.get_by_role("button", name="Añadir un criterio")).to_be_visible()


def test_the_file_size_check_speaks_spanish(page, browser, platform, live_tool, tmp_path):
    student = open_activity(browser, platform, live_tool, **in_locale("es-ES"))
    configure(max_upload_mb=0.001)  # about 1 kB
    big = tmp_path / "essay.txt"
    big.write_text("word " * 2000)
    page.goto(live_tool + student)

    page.get_by_label("Archivo (", exact=False).set_input_files(str(big))
    page.get_by_role("button", name="Entregar", exact=True).click()
    message = page.locator("#file").evaluate("input => input.validationMessage")
    assert message == "El archivo supera el límite de 0.001 MB."
