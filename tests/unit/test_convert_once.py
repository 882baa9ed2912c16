"""The embedded model's conversion when two processes make it at once (two apps started together): the one that
finishes second keeps the first one's folder instead of failing, and leaves no half-made folder behind."""
from __future__ import annotations

from types import SimpleNamespace

import transformers

from pipeline import loading


class _Saves:
    """Stands in for the tokenizer and the model: save_pretrained writes the files a converted folder holds."""

    def __init__(self, files, before_save=None):
        self.files, self.before_save = files, before_save
        self.config = SimpleNamespace(quantization_config=None, _name_or_path="")
        self.hf_quantizer = None

    def save_pretrained(self, folder):
        if self.before_save:
            self.before_save()
        folder.mkdir(parents=True, exist_ok=True)
        for f in self.files:
            (folder / f).write_text("mine")


def _convert(monkeypatch, tmp_path, meanwhile):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"")
    monkeypatch.setenv("LLM_VIZ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(loading, "embedded_gguf_path", lambda: gguf)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: _Saves(["tokenizer.json"]))
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained",
                        lambda *a, **k: _Saves(["config.json", "model.safetensors"], meanwhile))
    return loading.convert_embedded()


def _theirs(out):
    out.mkdir(parents=True)
    for f in ("config.json", "model.safetensors"):
        (out / f).write_text("theirs")


def test_a_conversion_finished_meanwhile_by_another_process_is_kept(monkeypatch, tmp_path):
    out = tmp_path / "cache" / f"{loading.EMBEDDED_NAME}-f32"
    got = _convert(monkeypatch, tmp_path, meanwhile=lambda: _theirs(out))
    assert got == out and (out / "model.safetensors").read_text() == "theirs"
    assert [p.name for p in out.parent.iterdir()] == [out.name]  # our own half is gone


def test_a_half_made_folder_is_replaced(monkeypatch, tmp_path):
    out = tmp_path / "cache" / f"{loading.EMBEDDED_NAME}-f32"
    out.mkdir(parents=True)
    (out / "config.json").write_text("left by a run that was killed")
    got = _convert(monkeypatch, tmp_path, meanwhile=None)
    assert (got / "model.safetensors").read_text() == "mine" and (got / "tokenizer.json").is_file()
    assert [p.name for p in out.parent.iterdir()] == [out.name]
