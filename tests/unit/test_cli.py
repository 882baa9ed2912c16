"""`python -m pipeline`: a trace from a local model directory, and one clear sentence for bad input."""
import gzip
import json
import os
import subprocess
import sys

import pytest

from pipeline.trace.records import SCHEMA
from pipeline.trace.files import load, loads
from tests import tiny

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny-qwen2")
    tiny.model("qwen2", ctx=128).save_pretrained(d)
    tiny.tokenizer().save_pretrained(d)
    return d


def cli(*args, timeout=120):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


def test_trace_writes_the_documented_format(model_dir, tmp_path):
    out = tmp_path / "t.json"
    r = cli("trace", "--prompt", "Hello <b>world</b> 😀", "--out", str(out), "--model", str(model_dir),
            "--max-new-tokens", "5", "--temperature", "0.8", "--top-k", "20", "--top-p", "0.9", "--seed", "3")
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text(encoding="utf-8"))
    assert d["schema"] == SCHEMA
    assert set(d["model"]) >= {"id", "n_layers", "n_heads", "n_kv_heads", "head_dim", "d_model", "vocab_size", "context_length", "dtype"}
    assert d["settings"]["top_k"] == 20 and d["settings"]["chat"] is True
    assert set(d["prompt"]) >= {"text", "rendered", "token_ids", "pieces"}
    assert "<|im_start|>" in d["prompt"]["rendered"] and d["prompt"]["text"] == "Hello <b>world</b> 😀"
    step = d["steps"][0]
    assert set(step) >= {"index", "phase", "position", "token_id", "piece", "text", "top_ids", "top_pieces", "top_logits", "top_probs",
                         "top_final_probs", "chosen_final_prob", "entropy", "attention", "kv_cache_bytes", "ms"}
    assert step["phase"] == "prefill" and step["top_ids"]["shape"][0] >= 20 and len(step["top_pieces"]) == step["top_ids"]["shape"][0]
    assert step["top_logits"]["dtype"] == "float32" and step["top_ids"]["dtype"] == "int64"
    assert step["attention"]["dtype"] == "float16" and step["attention"]["shape"] == [2, d["model"]["n_heads"], step["position"] + 1]
    assert "context_ids" not in step and "logits" not in step  # rebuilt on reading; only with --full
    assert d["stop_reason"] in ("eos", "max_new_tokens", "context_limit")
    assert d["text"] == "".join(s["text"] for s in d["steps"]) and r.stdout.startswith(d["text"])
    loads(out.read_text(encoding="utf-8"))  # and it reads back


def test_a_gz_name_writes_gzip_that_reads_back(model_dir, tmp_path):
    out = tmp_path / "t.json.gz"
    r = cli("trace", "--prompt", "Hello", "--out", str(out), "--model", str(model_dir), "--max-new-tokens", "3", "--quiet")
    assert r.returncode == 0, r.stderr
    raw = out.read_bytes()
    assert raw[:2] == b"\x1f\x8b" and json.loads(gzip.decompress(raw))["schema"] == SCHEMA
    tr = load(out)
    assert 1 <= len(tr.steps) <= 3 and tr.prompt.text == "Hello" and not list(tmp_path.glob("*.part"))


def test_min_p_and_the_repetition_penalty_are_stages_of_every_step(model_dir, tmp_path):
    out = tmp_path / "mp.json"
    r = cli("trace", "--prompt", "Hello", "--out", str(out), "--model", str(model_dir), "--max-new-tokens", "4", "--quiet",
            "--temperature", "1.2", "--min-p", "0.05", "--repetition-penalty", "1.3")
    assert r.returncode == 0, r.stderr
    tr = load(out)
    assert (tr.settings.min_p, tr.settings.repetition_penalty) == (0.05, 1.3)
    for st in tr.steps:
        assert [g.name for g in st.stages] == ["repetition_penalty", "temperature", "min_p"]
        top = float(st.top_final_probs.max())  # the largest kept probability: every kept candidate holds 5 % of it
        kept = st.top_final_probs[st.top_final_probs > 0]
        assert (kept >= 0.05 * top * (1 - 1e-5)).all() and st.chosen_final_prob >= 0.05 * top * (1 - 1e-5)


def test_raw_mode_has_no_template(model_dir, tmp_path):
    out = tmp_path / "raw.json"
    r = cli("trace", "--prompt", "Once upon", "--raw", "--out", str(out), "--model", str(model_dir), "--max-new-tokens", "2", "--quiet")
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text())["prompt"]["rendered"] == "Once upon"


@pytest.mark.parametrize(
    "args,words",
    [
        (["--prompt", ""], "prompt is empty"),
        (["--prompt", "hi", "--temperature", "-1"], "temperature"),
        (["--prompt", "hi", "--top-p", "0"], "top-p"),
        (["--prompt", "hi", "--top-p", "1.5"], "top-p"),
        (["--prompt", "hi", "--top-k", "-1"], "top-k"),
        (["--prompt", "hi", "--min-p", "2"], "min-p"),
        (["--prompt", "hi", "--max-new-tokens", "0"], "max new tokens"),
        (["--prompt", "hi", "--model", "no-such-org/no-such-model"], "could not load the model"),
        (["--prompt", "hi", "--model", "TMP"], "holds no model"),
        (["--prompt", "word " * 300, "--model", "MODEL"], "context window"),
    ],
)
def test_bad_input_one_sentence_no_traceback(args, words, tmp_path, model_dir):
    args = [str(tmp_path) if a == "TMP" else str(model_dir) if a == "MODEL" else a for a in args]
    r = cli("trace", "--out", str(tmp_path / "x.json"), *args)
    assert r.returncode == 2
    assert words in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("error: ")
    assert not (tmp_path / "x.json").exists()


def test_the_html_command_moved_to_viz(tmp_path):
    """pipeline never draws: its old html command names the new one in one line, whatever it was given."""
    for args in (["html"], ["html", "t.json", "--out", str(tmp_path / "t.html"), "--layer", "3"]):
        r = cli(*args)
        assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "python -m viz html" in r.stderr, r.stderr
    assert not (tmp_path / "t.html").exists()
    assert "python -m viz html" in cli("--help").stdout
