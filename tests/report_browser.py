"""Open a Snakemake HTML report in a real headless Chromium and show every result.

Snakemake 9's report is a JavaScript app: a result appears only after clicking
through the menu (a category, then a subcategory if it has several) and the eye
button of the result's row. `show_every_result` does exactly that with Playwright,
driving the system's Chromium (Playwright downloads no browser of its own here),
and reports, for each result shown, whether its image loaded and is displayed.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

# What a browser may be called on PATH (Debian: chromium; Ubuntu: chromium-browser).
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# The figure formats of the config (`figures.format`); other files (CSV) are data.
FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def find_chromium() -> str | None:
    """The path of a Chromium on PATH, or None."""
    for name in CHROMIUM_NAMES:
        if path := shutil.which(name):
            return path
    return None


def ci() -> bool:
    """Whether this runs in CI (`CI` set, as CI services and .ci/run set it)."""
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


@dataclass(frozen=True)
class Shown:
    """One result as the browser showed it."""

    path: str  # the result's key in the report, e.g. results/figures/quiet/loss.png
    element: str  # IMG (png, svg) or IFRAME (pdf)
    loaded: bool  # the image finished loading
    natural_size: tuple[int, int]  # the decoded image's size in pixels (0 if broken)
    box: tuple[float, float]  # its size on the page in CSS pixels
    visible: bool  # displayed (Playwright's visibility: a box, not hidden)
    in_reach: bool  # its top left corner shows when its pane is scrolled to the start
    caption: str  # the caption's text, as the report holds it
    screenshot: Path


# Whether an element's top left corner shows with its scrolling pane scrolled to the
# start: Snakemake centres content in its pane, and what overflows above the pane's
# top can never be scrolled to (snakemake/snakemake#3906).
_IN_REACH = """
(element) => {
    let pane = element.parentElement;
    while (pane && !["auto", "scroll"].includes(getComputedStyle(pane).overflowY)) {
        pane = pane.parentElement;
    }
    if (!pane) return element.getBoundingClientRect().top >= 0;
    pane.scrollTop = 0;
    pane.scrollLeft = 0;
    const box = element.getBoundingClientRect(), frame = pane.getBoundingClientRect();
    return box.top >= frame.top - 0.5 && box.left >= frame.left - 0.5;
}
"""

# The result the content pane shows: the first <img> or <iframe> outside the menu
# whose source is a result's data URI (the report's `results` global).
_SHOWN = (
    """
() => {
    const inReach = """
    + _IN_REACH.strip()
    + """;
    for (const element of document.querySelectorAll("img, iframe")) {
        if (element.closest("nav")) continue;
        const source = element.getAttribute("src");
        const path = Object.keys(results).find((key) => results[key].data_uri === source);
        if (path === undefined) continue;
        const box = element.getBoundingClientRect();
        const image = element.tagName === "IMG";
        return {
            path: path,
            element: element.tagName,
            loaded: image ? element.complete && element.naturalWidth > 0 : true,
            natural: image ? [element.naturalWidth, element.naturalHeight] : [0, 0],
            box: [box.width, box.height],
            inReach: inReach(element),
            caption: new DOMParser().parseFromString(results[path].caption, "text/html")
                .body.textContent,
        };
    }
    return null;
}
"""
)


@dataclass(frozen=True)
class Report:
    """What the browser showed of a report."""

    title: str  # the front page's title (the workflow description's)
    title_in_reach: bool  # the title shows with the page scrolled to the start
    front_page: Path  # a screenshot of the front page
    shown: list[Shown]  # every result it can show (images, PDF, HTML), in menu order


def _screenshot_name(path: str) -> str:
    name = "report-" + path.replace("/", "_")
    return name if name.endswith(".png") else name + ".png"


def show_every_result(
    report: Path, chromium: str, screenshots: Path, *, timeout_ms: int = 15_000
) -> Report:
    """Open `report` in headless `chromium`, click through every category and
    subcategory of its menu and every result's eye button, and record what each shows.

    Screenshots of the front page (``report-front-page.png``) and of each result shown
    go to `screenshots`. A JavaScript error on the page fails.
    """
    from playwright.sync_api import expect, sync_playwright

    screenshots.mkdir(parents=True, exist_ok=True)
    shown: list[Shown] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(timeout_ms)
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(report.resolve().as_uri())
            page.wait_for_function("typeof app !== 'undefined' && document.querySelector('nav ul')")
            title = page.locator("h1.title")
            title_text = title.inner_text() if title.count() else ""
            title_in_reach = bool(title.count()) and title.evaluate(_IN_REACH)
            front_page = screenshots / "report-front-page.png"
            page.screenshot(path=front_page)

            menu = page.locator("nav ul li a")
            trail = page.locator("nav ol")  # the breadcrumbs

            def open_menu_item(label: str, then_in_trail: str) -> None:
                menu.filter(has=page.get_by_text(label, exact=True)).first.click()
                expect(trail).to_contain_text(then_in_trail)

            categories: dict[str, dict[str, list[str]]] = page.evaluate("categories")
            for category, subcategories in categories.items():
                for subcategory in subcategories:
                    page.locator("nav ol li a").first.click()  # the house: the menu
                    # A report with one category lists it as "Results" (and names it
                    # so if it is Snakemake's default, "Other"); a category with one
                    # subcategory opens on its results.
                    if len(categories) == 1:
                        open_menu_item("Results", "Results" if category == "Other" else category)
                    else:
                        open_menu_item(category, category)
                    if len(subcategories) > 1:
                        open_menu_item(subcategory, subcategory)
                    rows = page.locator("nav table tbody tr")
                    rows.first.wait_for()
                    for index in range(rows.count()):
                        eye = rows.nth(index).locator("a").first
                        if eye.get_attribute("download") is not None:
                            continue  # a file the report offers to download, not to show
                        before = page.evaluate(_SHOWN)
                        eye.click()
                        page.wait_for_function(
                            f"(before) => {{ const now = ({_SHOWN})(); "
                            "return now !== null && now.loaded && now.path !== before; }",
                            arg=before and before["path"],
                        )
                        now = page.evaluate(_SHOWN)
                        screenshot = screenshots / _screenshot_name(now["path"])
                        page.screenshot(path=screenshot)
                        shown.append(
                            Shown(
                                path=now["path"],
                                element=now["element"],
                                loaded=now["loaded"],
                                natural_size=tuple(now["natural"]),
                                box=tuple(now["box"]),
                                visible=page.locator("img:not(nav img), iframe").first.is_visible(),
                                in_reach=now["inReach"],
                                caption=now["caption"],
                                screenshot=screenshot,
                            )
                        )
            if errors:
                raise AssertionError(f"the report's JavaScript failed: {errors}")
        finally:
            browser.close()
    return Report(title_text, title_in_reach, front_page, shown)
