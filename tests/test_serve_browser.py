"""The pages in a real browser: Debian's Chromium, headless, driven by Selenium through Debian's chromedriver
(nothing downloaded), against a real ``zan serve`` process on 127.0.0.1 over the real corpus's home (the
bundled sample's when ../shared/corpus is absent).
Screenshots go to ``artifacts/browser/``."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.conftest import ROOT, zan_serve

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
SHOTS = ROOT / "artifacts" / "browser"

pytestmark = pytest.mark.skipif(
    not (CHROMIUM and DRIVER), reason="Debian's chromium and chromium-driver are not installed (make browser-deps)"
)


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not look for a driver on the network
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000",
                 "--lang=ru-RU"):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(DRIVER)))
    driver.implicitly_wait(10)
    try:
        yield driver
    finally:
        driver.quit()


# What the article step checks: on the real corpus, article 15 of the Labour Code (its last change, law 49-VIII,
# and law 321-VI among its changes); without ../shared/corpus (a clean clone), the bundled sample's article 182
# (changed by law 133-VII), so the browser test still runs.
REAL = {"article": "15", "last": "49-VIII", "among": "321-VI"}
BUNDLED = {"article": "182", "last": "133-VII", "among": "133-VII"}


@pytest.fixture(scope="module")
def run_home(richest_run):  # type: ignore[no-untyped-def]
    """(run info, home, the article step's facts)."""
    info, home, which = richest_run
    return info, home, REAL if which == "real" else BUNDLED


@pytest.fixture(scope="module")
def served(run_home):  # type: ignore[no-untyped-def]
    with zan_serve(run_home[1]) as url:
        yield url


def _shot(driver, name: str) -> None:  # type: ignore[no-untyped-def]
    SHOTS.mkdir(parents=True, exist_ok=True)
    assert driver.save_screenshot(str(SHOTS / f"{name}.png"))


def test_a_person_finds_the_order_the_article_and_the_run_history(browser, served, run_home) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get(served + "/")
    box = browser.find_element(By.ID, "q")
    box.send_keys("приказ 211")
    box.send_keys(Keys.ENTER)
    status = browser.find_element(By.ID, "status")
    assert status.get_attribute("data-status") == "ambiguous"
    candidates = browser.find_elements(By.CSS_SELECTOR, "#candidates li.candidate")
    assert len(candidates) == 3
    texts = [c.text for c in candidates]
    assert sum("МТСЗН" in t for t in texts) == 1, texts
    assert "q=%D0%BF%D1%80%D0%B8%D0%BA%D0%B0%D0%B7" in browser.current_url  # a shareable address
    _shot(browser, "1-search-prikaz-211")

    order = next(c for c in candidates if "МТСЗН" in c.text)
    order.find_element(By.TAG_NAME, "a").click()
    doc_status = browser.find_element(By.ID, "doc-status")
    assert doc_status.get_attribute("data-status") in ("in_force", "updated", "repealed", "not_in_force",
                                                        "suspended", "unknown")  # fmt: skip
    assert doc_status.text.strip()
    assert "211" in browser.find_element(By.CSS_SELECTOR, "dl.requisites").text
    assert browser.current_url.endswith("/documents/v2400035612")
    _shot(browser, "2-order-mtszn-211")

    browser.get(served + "/?q=" + "Трудовой кодекс")
    browser.find_element(By.CSS_SELECTOR, "a.candidate[href='/documents/k1500000414']").click()
    facts = run_home[2]
    browser.find_element(By.CSS_SELECTOR, f"#articles a[data-article='{facts['article']}']").click()
    last = browser.find_element(By.ID, "last-change").text
    assert "Последнее изменение" in last and facts["last"] in last, last
    changes = browser.find_element(By.ID, "changes").text
    assert facts["among"] in changes, changes
    assert "Сноска" in browser.find_element(By.CSS_SELECTOR, ".notes").text
    _shot(browser, f"3-labour-code-article-{facts['article']}")

    browser.find_element(By.LINK_TEXT, "Запуски").click()
    charts = browser.find_elements(By.CSS_SELECTOR, "#charts svg.chart")
    assert len(charts) >= 4 and charts[0].size["width"] > 100
    assert browser.find_elements(By.CSS_SELECTOR, "#charts svg.chart rect")
    width = browser.execute_script("return document.documentElement.scrollWidth")
    assert width <= browser.execute_script("return window.innerWidth") + 1  # the page does not overflow
    _shot(browser, "4-run-history")


def test_the_run_report_has_its_charts_and_fits_the_page(browser, run_home) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By

    info, home, _ = run_home
    browser.set_window_size(1024, 900)
    try:
        browser.get((home / "runs" / f"{info.run_id}.html").as_uri())
        assert len(browser.find_elements(By.CSS_SELECTOR, "svg.chart")) == 2
        width = browser.execute_script("return document.documentElement.scrollWidth")
        assert width <= browser.execute_script("return window.innerWidth") + 1  # the coverage table used to overflow
        _shot(browser, "5-run-report")
    finally:
        browser.set_window_size(1280, 1000)


def test_one_runs_page_is_its_report_with_the_sites_header(browser, run_home, served) -> None:  # type: ignore[no-untyped-def]
    """``/runs/{run_id}``, reached from the run history's link, renders the body the report's own file has."""
    from selenium.webdriver.common.by import By

    info, home, _ = run_home
    browser.get(served + "/runs")
    browser.find_element(By.CSS_SELECTOR, f"#runs a[href='/runs/{info.run_id}']").click()
    assert browser.find_element(By.TAG_NAME, "h1").text == f"zan run {info.run_id}"
    stages = [r.text.split()[0] for r in browser.find_elements(By.CSS_SELECTOR, "#stages tr")[1:]]
    assert stages[:3] == ["extract", "registry", "enrich"] and "publish" in stages, stages
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.chart")) == 2
    assert browser.find_element(By.ID, "served-version").text.startswith("версия")  # the site's header
    width = browser.execute_script("return document.documentElement.scrollWidth")
    assert width <= browser.execute_script("return window.innerWidth") + 1
    _shot(browser, "5b-one-run")
    browser.get((home / "runs" / f"{info.run_id}.html").as_uri())  # the same body, in the file the run wrote
    assert [r.text.split()[0] for r in browser.find_elements(By.CSS_SELECTOR, "#stages tr")[1:]] == stages


# --- a home built from hostile sources (issue 42): clicking every link runs nothing ---------------------------


@pytest.fixture(scope="module")
def hostile_served(tmp_path_factory):  # type: ignore[no-untyped-def]
    from runs.pipeline import run
    from tests.hostile_sources import write_hostile_records

    root = tmp_path_factory.mktemp("browser-hostile")
    written = write_hostile_records(root / "src" / "zan")
    run([root / "src"], root / "home")
    with zan_serve(root / "home") as url:
        yield url, written


def test_clicking_every_link_of_a_hostile_home_runs_no_script(browser, hostile_served) -> None:  # type: ignore[no-untyped-def]
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    url, written = hostile_served
    pages = ["/", "/?q=приказ 505", "/documents", "/runs", *(f"/documents/{d}" for d in written)]
    clicked = 0
    for page in pages:
        browser.get(url + page)
        hrefs = [a.get_attribute("href") or "" for a in browser.find_elements(By.TAG_NAME, "a")]
        assert all(h.startswith(url) or h.startswith("https://zan.gov.kz/") for h in hrefs), (page, hrefs)
        for n in range(len(hrefs)):
            browser.get(url + page)
            link = browser.find_elements(By.TAG_NAME, "a")[n]
            if link.get_attribute("href").startswith("https://zan.gov.kz/"):
                continue  # the one good source link leads off this machine (no network here): checked by its href
            link.click()
            clicked += 1
            try:
                WebDriverWait(browser, 0.2).until(expected_conditions.alert_is_present())
                raise AssertionError(f"a script ran after clicking link {n} of {page}: {hrefs[n]}")
            except TimeoutException:
                pass
            pwned = browser.execute_script("return document.querySelector('[data-pwned]') !== null")
            assert not pwned, (page, hrefs[n])  # (find_elements would wait the implicit 10 s for nothing)
    assert clicked > 40
    browser.get(url + "/documents/zan-990002")  # the mixed-case javascript: record: no source link at all
    links = browser.execute_script("return document.querySelectorAll('dl.requisites a').length")
    assert links == 0
    _shot(browser, "6-hostile-source-url-as-text")
