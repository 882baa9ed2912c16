"""ui/downloads.py: one folder of downloads per browser session, removed when its page closes."""
from ui.downloads import download_folder, remove_download_folder


def test_a_session_gets_a_folder_of_its_own(tmp_path):
    a, b = download_folder(tmp_path, "abc123xyz"), download_folder(tmp_path, "other_9-z")
    assert a.parent == tmp_path == b.parent and a != b
    assert download_folder(tmp_path, "abc123xyz") == a  # the same session: the same folder
    assert download_folder(tmp_path, None) == download_folder(tmp_path, "") == tmp_path / "shared"


def test_a_hash_the_browser_made_up_never_names_a_folder_outside_or_one_of_ours(tmp_path):
    """The session hash comes from the browser: '..' must not become the parent folder (removed whole
    when that session ends), nor 'shared' the folder of every caller without a session."""
    names = {download_folder(tmp_path, h) for h in ("..", ".", "a/b", "../../etc", "shared", "api", "x" * 500, "ä", "a\0b")}
    assert len(names) == 9
    for p in names:
        assert p.parent == tmp_path and p.name.startswith("session-") and len(p.name) <= 80
        assert ".." not in p.name and "/" not in p.name


def test_closing_a_session_removes_its_folder_and_nothing_else(tmp_path):
    mine, other, shared = download_folder(tmp_path, "mine"), download_folder(tmp_path, "other"), download_folder(tmp_path, None)
    for folder in (mine, other, shared):
        folder.mkdir()
        (folder / "trace-1.json.gz").write_bytes(b"x" * 100)
    assert remove_download_folder(tmp_path, "mine") is True
    assert not mine.exists() and other.exists() and shared.exists()
    assert remove_download_folder(tmp_path, "mine") is False  # twice (a reload, then a close): no error
    assert remove_download_folder(tmp_path, None) is False and shared.exists()  # the shared folder has no session to end
    assert remove_download_folder(tmp_path, "..") is False and tmp_path.exists() and other.exists()
