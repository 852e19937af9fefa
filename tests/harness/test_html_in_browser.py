"""The HTML report in a real headless browser: it renders with no script error and fetches nothing, and the
scenario in error, the failing check and their evidence are on screen (not only somewhere in the source).

The browser is Debian's ``chromium``, driven by Playwright pointed at it (``executable_path``: Playwright's
own browser download is never used). ``.ci/run`` and tox install it when it is missing
(``.ci/ensure-chromium``); without it the test skips, with the install command, except in CI (``CI`` set),
where a missing browser fails the run instead of hiding it.
"""

from __future__ import annotations

import os
import shutil

import pytest

from harness.report import render_html
from tests.harness.test_reports import CASSETTE_ERROR, PLANTED, make_report

# Left out of `tox -e fast` (end to end through other processes, or a long property run): tox.ini.
pytestmark = pytest.mark.slow

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
INSTALL = "bash .ci/ensure-chromium (as root: apt-get install chromium)"


def _browser() -> str:
    found = os.environ.get("RLM_CHROMIUM") or next(filter(None, map(shutil.which, BROWSERS)), None)
    if found:
        return found
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(f"no headless browser ({', '.join(BROWSERS)}) on PATH in CI: the HTML report cannot be "
                    f"checked. .ci/run installs Debian's chromium; run: {INSTALL}", pytrace=False)
    pytest.skip(f"no headless browser ({', '.join(BROWSERS)}) on PATH; install one with: {INSTALL}")


@pytest.fixture(scope="module")
def page_of_report(tmp_path_factory: pytest.TempPathFactory):
    """The report of one passing, one failing and one errored scenario, loaded in chromium; what the page did."""
    from playwright.sync_api import sync_playwright

    executable = _browser()
    path = tmp_path_factory.mktemp("html") / "conformance.html"
    path.write_text(render_html(make_report(), titles={"no_pruning_plugin": "No pruning plugin wired"}),
                    encoding="utf-8")
    seen: dict[str, list[str]] = {"requests": [], "page_errors": [], "console_errors": [], "dialogs": []}

    def route(route) -> None:  # nothing but the file itself may load, and nothing reaches the network
        seen["requests"].append(route.request.url)
        route.continue_() if route.request.url == path.as_uri() else route.abort()

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable)
        try:
            page = browser.new_page()
            page.route("**/*", route)
            page.on("pageerror", lambda error: seen["page_errors"].append(str(error)))
            page.on("console", lambda message: message.type == "error" and seen["console_errors"].append(message.text))
            page.on("dialog", lambda dialog: (seen["dialogs"].append(dialog.message), dialog.dismiss()))
            page.goto(path.as_uri(), wait_until="load")
            yield page, path, seen
        finally:
            browser.close()


def _on_screen(page, text: str) -> bool:
    """Whether some element showing ``text`` is rendered and visible (not in a closed <details>, not hidden)."""
    return any(match.is_visible() for match in page.get_by_text(text, exact=False).all())


def test_the_report_renders_without_script_errors_or_fetches(page_of_report) -> None:
    page, path, seen = page_of_report
    assert seen["requests"] == [path.as_uri()], f"the report fetched more than itself: {seen['requests']}"
    assert seen["page_errors"] == [] and seen["console_errors"] == [], seen
    assert seen["dialogs"] == [], "planted markup ran as script"
    assert page.title().startswith("rlm-conformance report")


def test_the_errored_and_failing_scenarios_and_their_evidence_are_visible(page_of_report) -> None:
    page, _, _ = page_of_report
    for name in ("good", "bad", "broken"):
        assert _on_screen(page, f"The {name} scenario."), f"scenario {name} is not on screen"
    # the scenario in error: its verdict and the whole message, with the command that fixes it
    assert page.get_by_text("error", exact=True).first.is_visible()
    assert _on_screen(page, CASSETTE_ERROR)
    # the failing check: its name, its explanation and every evidence line, as text (the planted tag escaped)
    assert _on_screen(page, "no_pruning_plugin")
    assert _on_screen(page, f"1 pruning plugin wired {PLANTED}")
    assert _on_screen(page, f"plugin #1 {PLANTED} is in App.plugins")
    assert _on_screen(page, "a `backtick` and | pipe")
