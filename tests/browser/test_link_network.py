"""A page served to the school's network (`--host 0.0.0.0`) but opened on the laptop as 127.0.0.1: Copy link writes
the laptop's network address, as the class card's join link does, so the link opens on a student's phone."""
from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from ui import network

from .harness import app_server, new_page

pytestmark = pytest.mark.browser


def test_copy_link_from_127_0_0_1_points_at_the_network_address(browser, tmp_path):
    ip = network.lan_address()
    if ip is None:
        pytest.skip("this machine has no network address to write into a link")
    with app_server("--host", "0.0.0.0", log=tmp_path / "app.log") as url:
        assert urlsplit(url).hostname == "127.0.0.1"
        page = new_page(browser)
        page.goto(url + "/?example=loop&step=3")
        page.wait_for_function("() => window.LLMApp && LLMApp.mounted() && LLMApp.state.step === 3", timeout=120_000)
        page.click("#copy-link")
        page.wait_for_function("() => (document.querySelector('#link-box input, #link-box textarea')?.value || '').includes('step=')",
                               timeout=30_000)
        link = page.input_value("#link-box input, #link-box textarea")
        u = urlsplit(link)
        assert u.hostname == ip and u.port == urlsplit(url).port, link
        assert "example=loop" in link and "step=3" in link, link
