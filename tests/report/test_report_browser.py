"""The rendered report in a real browser (Debian's headless Chromium via Playwright), offline.

Every request that is not ``file:`` or ``data:`` is aborted and recorded; the test asserts that
none was attempted, that no script error or JavaScript dialog happened (the evidence holds
``<script>alert(...)``), and that the timeline really rendered: a vega-embed container with an
SVG holding symbol marks, the refused call's red cross and the pair rules.  Screenshots go to
``test-artifacts/``.

Skipped when ``/usr/bin/chromium`` (or playwright) is missing, unless
``REPLAYBOOK_REQUIRE_BROWSER=1``; then it fails.  Never runs ``playwright install``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def _need_browser():
    why = None
    if not CHROMIUM.exists():
        why = f"{CHROMIUM} not found (apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            why = "playwright is not installed"
    if why:
        if os.environ.get("REPLAYBOOK_REQUIRE_BROWSER") == "1":
            pytest.fail(why + "; REPLAYBOOK_REQUIRE_BROWSER=1 forbids skipping", pytrace=False)
        pytest.skip(why)


@pytest.fixture(scope="module")
def browser():
    _need_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        yield b
        b.close()


def open_offline(browser, html: Path):
    """Open ``html`` with every non-file/data request aborted; return (page, attempted, errors, dialogs)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    attempted: list[str] = []
    errors: list[str] = []
    dialogs: list[str] = []

    def route(r):
        url = r.request.url
        if url.startswith(("file:", "data:")):
            r.continue_()
        else:
            attempted.append(url)
            r.abort()

    page.route("**/*", route)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

    def on_dialog(d):
        dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", on_dialog)
    page.goto(html.resolve().as_uri(), wait_until="load")
    return page, attempted, errors, dialogs


def check_report(browser, html: Path, shot: str) -> dict:
    page, attempted, errors, dialogs = open_offline(browser, html)
    try:
        page.wait_for_selector(".replaybook-chart.vega-embed svg .mark-symbol path", timeout=20_000)
        n_symbols = page.locator(".replaybook-chart svg .mark-symbol path").count()
        n_rules = page.locator(".replaybook-chart svg .mark-rule.role-mark line").count()  # not grid lines
        n_red = page.locator('.replaybook-chart svg .mark-symbol path[fill="#d62728"]').count()
        # hover every mark: tooltips must show the evidence as text, never run it
        tips = []
        for i in range(min(n_symbols, 60)):
            page.locator(".replaybook-chart svg .mark-symbol path").nth(i).hover(force=True)
            el = page.locator("#vg-tooltip-element")
            if el.count():
                tips.append(el.inner_text())
        n_tooltip_scripts = page.locator("#vg-tooltip-element script").count()
        ARTIFACTS.mkdir(exist_ok=True)
        page.mouse.move(0, 0)
        page.screenshot(path=str(ARTIFACTS / shot), full_page=True)
        headings = page.locator("h2").all_inner_texts()
        # tables wider than the page scroll inside it: name each one (the heading above it)
        scrolls = page.evaluate("""() => [...document.querySelectorAll('table.rb-table')]
            .filter(t => t.scrollWidth > t.clientWidth + 1)
            .map(t => { let h = t.previousElementSibling;
                        while (h && !/^H[1-6]$/.test(h.tagName)) h = h.previousElementSibling;
                        return (h ? h.textContent : '?') + ': ' + t.scrollWidth + ' > ' + t.clientWidth; })""")
        return dict(attempted=attempted, errors=errors, dialogs=dialogs, symbols=n_symbols, rules=n_rules,
                    red=n_red, tips=tips, tooltip_scripts=n_tooltip_scripts, headings=headings, scrolls=scrolls)
    finally:
        page.close()


def test_tiny_report_renders_offline(browser, rendered_tiny, hostile):
    r = check_report(browser, Path(rendered_tiny["html"]), "report-tiny.png")
    assert r["attempted"] == [], r["attempted"]
    assert r["errors"] == [] and r["dialogs"] == []
    assert r["symbols"] >= 5  # prompt, model requests, tool calls, the allowed call (+ legend symbols)
    assert r["red"] >= 1  # the refused call's cross
    assert r["rules"] == 2  # one line per agreeing pair
    assert r["tooltip_scripts"] == 0
    assert any(hostile["prompt"].split(" average")[0] in t for t in r["tips"]), r["tips"]
    # a value an event does not have shows as a dash, never as Vega's "undefined" / "NaN"
    assert r["tips"] and not any("undefined" in t or "NaN" in t for t in r["tips"]), r["tips"]
    assert any("—" in t for t in r["tips"]), r["tips"]
    assert "Timeline" in r["headings"] and "What the join cannot prove" in r["headings"]


def test_demo_report_renders_offline(browser, rendered_demo):
    out = rendered_demo
    r = check_report(browser, Path(out["html"]), "report-demo.png")
    assert r["attempted"] == [], r["attempted"]
    assert r["errors"] == [] and r["dialogs"] == []
    assert r["symbols"] >= 9 and r["red"] >= 1 and r["rules"] >= 9
    # at 1280 px every table of the demo fits the page: none needs its own scroll bar
    assert r["scrolls"] == [], r["scrolls"]
    assert r["tips"] and not any("undefined" in t or "NaN" in t for t in r["tips"]), r["tips"]
