import pytest

from .harness import ROOT, app_server, chromium_path

# every test under tests/browser/ is marked `browser` by tests/conftest.py


@pytest.fixture(scope="session")
def download_dir(tmp_path_factory):
    """Where the app writes the trace files people download (a folder per session)."""
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="session")
def app_url(tmp_path_factory, download_dir):
    log = tmp_path_factory.mktemp("app") / "app.log"
    with app_server(log=log, env={"LLM_VIZ_DOWNLOAD_DIR": str(download_dir)}) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    exe = chromium_path()
    if exe is None:
        pytest.fail("Chromium is not installed: run `bash scripts/setup.sh --dev` (it installs Debian's chromium)")
    from playwright.sync_api import sync_playwright

    from .harness import CHROMIUM_FLAGS

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_FLAGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def shots():
    d = ROOT / "artifacts" / "screenshots"
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(autouse=True)
def _close_pages(request):
    """Close every page a test opened: idle Gradio pages still cost CPU, which the model shares."""
    yield
    if "browser" in request.fixturenames:
        b = request.getfixturevalue("browser")
        for ctx in list(b.contexts):
            ctx.close()
