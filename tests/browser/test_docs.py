"""API docs in Debian's chromium: chatlog's /docs (the bundled Swagger UI 4) renders the API, which it
cannot from FastAPI's OpenAPI 3.1 ("Unable to render this definition"); it reads /swagger.json, the
same document in the 3.0 dialect, which justlog's web frontend (swagger-ui-react 4) loads too."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.chromium import screenshot
from tests.browser.served import Served

pytestmark = pytest.mark.integration


def test_docs_render_every_route(page: Page, served: Served) -> None:
    paths = served.get("/openapi.json").json()["paths"]
    page.goto(served.base + "/docs")
    expect(page.locator(".opblock").first).to_be_visible()
    assert "Unable to render" not in page.content()
    shown = {" ".join(p.split()) for p in page.locator(".opblock-summary-path").all_inner_texts()}
    assert shown >= {p.replace("\u200b", "") for p in paths}, sorted(set(paths) - shown)[:5]
    screenshot(page, "docs")
    page.locator(".opblock-summary-path", has_text="/channels").first.click()  # an operation opens
    expect(page.locator(".opblock-body").first).to_be_visible()
