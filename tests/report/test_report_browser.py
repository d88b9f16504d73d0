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


#: The tables wider than the page, which scroll inside it: each named by the heading above it.
SCROLLING_TABLES = """() => [...document.querySelectorAll('table.rb-table')]
    .filter(t => t.scrollWidth > t.clientWidth + 1)
    .map(t => { let h = t.previousElementSibling;
                while (h && !/^H[1-6]$/.test(h.tagName)) h = h.previousElementSibling;
                return (h ? h.textContent : '?') + ': ' + t.scrollWidth + ' > ' + t.clientWidth; })"""


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
        scrolls = page.evaluate(SCROLLING_TABLES)
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


def test_cloud_access_tables_fit_the_page_at_1280_and_1400_px(browser, cloud_case, tmp_path):
    """The requests no door call explains, with what cites each (request id, eventID, file and
    record, the other log holding it) and a long why, in the report's own page width (the
    offline template's body rule): at 1280 and 1400 px no table scrolls, so the why column is
    on the page, not cut off behind a scroll bar."""
    import re

    from replaybook.report import sections as S
    from replaybook.report.render import TEMPLATE_DIR, TEMPLATE_NAME

    import pandas as pd

    from replaybook.access_join import join_access
    from replaybook.frames import ACCESS

    body_css = re.search(r"body\.jp-Notebook \{[^}]*\}", (TEMPLATE_DIR / TEMPLATE_NAME / "index.html.j2").read_text()).group(0)
    # with a GCS read by the agent's service account and a read by a person while the agent read the same
    # object (its why names the person's ARN: a long word), as an incident has
    more = ACCESS.build([
        dict(ts=pd.Timestamp("2026-11-20T14:30:05.5Z"), time_kind="event", source="gcp.audit",
             principal="support-agent@acme-prod.iam.gserviceaccount.com", action="read",
             action_raw="storage.objects.get", resource_uri="gs://acme-exports/customers-full.csv",
             outcome="allowed", request_id="hu118", user_agent="cloud-files-mcp/1.2 gcloud-python",
             raw={"protoPayload": {"requestMetadata": {"callerIp": "203.0.113.66"}}},
             source_file="/home/investigator/cases/hu1/cloud/gcp/data_access.jsonl", line_no=3),
        dict(ts=pd.Timestamp("2026-11-20T14:00:10Z"), time_kind="completed", source="aws.cloudtrail",
             principal="arn:aws:iam::123456789012:user/jdoe", action="read", action_raw="GetObject",
             resource_uri="s3://acme-support-data/tickets/2026-11/ACME-4411.json", outcome="allowed", bytes=512,
             request_id="HU1S3JDOEEXAMPLE", user_agent="aws-cli/2.15", raw={"sourceIPAddress": "192.0.2.10"},
             source_file=cloud_case["access"]["source_file"].iloc[0], line_no=4)])
    access = pd.concat([cloud_case["access"], more], ignore_index=True)
    res = join_access(cloud_case["calls"], access, storage_map={**cloud_case["storage_map"], "exports/": "gs://acme-exports/"},
                      principals={"support": ["arn:aws:sts::123456789012:assumed-role/support-agent-reader/*",
                                              "support-agent@acme-prod.iam.gserviceaccount.com"]})
    page_html = (f"<!doctype html><html><head><meta charset='utf-8'><style>{body_css}</style></head>"
                 "<body class='jp-Notebook'>"
                 + S.header("Cloud access", tmp_path / "incident.yaml", quarantine=cloud_case["quarantine"],
                            inputs=cloud_case["inputs"], unexplained=res.unexplained,
                            unmapped_calls=res.unmapped_calls)
                 + S.access_section(res, access, quarantine=cloud_case["quarantine"],
                                    inputs=cloud_case["inputs"])
                 + "</body></html>")
    f = tmp_path / "cloud.html"
    f.write_text(page_html, encoding="utf-8")
    for width in (1280, 1400):
        page = browser.new_page(viewport={"width": width, "height": 900})
        try:
            page.goto(f.resolve().as_uri(), wait_until="load")
            assert page.evaluate(SCROLLING_TABLES) == [], width
            why = page.locator("table.rb-table").nth(0).locator("td:last-child").first
            assert "storage_map may miss this object" in why.inner_text()
            box = why.bounding_box()
            assert box["x"] + box["width"] <= width, (width, box)
        finally:
            page.close()
