"""`python -m pipeline trace|bench --speculative`: rounds in the trace, numbers side by side,
one clear sentence for a bad k or draft."""
import json

import pytest

from pipeline.trace.files import loads
from tests import tiny
from tests.unit.test_cli import cli


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny-llama-3")
    tiny.model("llama", layers=3, ctx=128).save_pretrained(d)
    tiny.tokenizer().save_pretrained(d)
    return d


def test_trace_speculative_writes_rounds(model_dir, tmp_path):
    out = tmp_path / "s.json"
    r = cli("trace", "--prompt", "Hello world", "--out", str(out), "--model", str(model_dir), "--max-new-tokens", "9",
            "--temperature", "0.8", "--seed", "3", "--speculative", "--k", "3", "--draft", "layers:1")
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text(encoding="utf-8"))
    assert d["speculative"]["k"] == 3 and d["speculative"]["draft"]["kind"] == "layers"
    assert sum(len(x["token_ids"]) for x in d["rounds"]) == len(d["steps"]) == 9
    assert "tokens per target pass" in r.stderr and r.stdout.startswith(d["text"])
    tr = loads(out.read_text(encoding="utf-8"))
    assert [t for x in tr.rounds for t in x.token_ids] == [s.token_id for s in tr.steps]


def test_draft_alone_turns_speculation_on_and_greedy_text_is_the_plain_text(model_dir, tmp_path):
    plain, spec = tmp_path / "p.json", tmp_path / "s.json"
    common = ["--prompt", "Once upon", "--model", str(model_dir), "--max-new-tokens", "12", "--temperature", "0", "--quiet"]
    assert cli("trace", "--out", str(plain), *common).returncode == 0
    r = cli("trace", "--out", str(spec), *common, "--draft", "layers:2")
    assert r.returncode == 0, r.stderr
    p, s = json.loads(plain.read_text()), json.loads(spec.read_text())
    assert "rounds" not in p and s["rounds"] and s["speculative"]["k"] == 4
    assert [x["token_id"] for x in s["steps"]] == [x["token_id"] for x in p["steps"]]


def test_bench_speculative_prints_both_and_the_acceptance(model_dir, tmp_path):
    js = tmp_path / "b.json"
    r = cli("bench", "--model", str(model_dir), "--new-tokens", "6", "--repeats", "1", "--speculative", "--k", "2", "--json", str(js))
    assert r.returncode == 0, r.stderr
    for words in ("plain traced generator", "speculative generator", "ratio speculative/plain", "acceptance rate", "tokens per target pass", "k = 2"):
        assert words in r.stdout
    d = json.loads(js.read_text())
    assert d["draft_spec"] == "ngram" and d["plain_tokens_per_s"] > 0 and d["speculative_tokens_per_s"] > 0  # the one default draft
    assert 1 <= d["tokens_per_target_pass"] <= 3
    assert "of tested proposals (Leviathan et al.'s alpha)" in r.stdout and "expected from alpha" in r.stdout


@pytest.fixture(scope="module")
def long_model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny-llama-512")
    tiny.model("llama", layers=2, ctx=512).save_pretrained(d)  # the task prompts are long in bytes
    tiny.tokenizer().save_pretrained(d)
    return d


def test_bench_tasks_prints_one_table_of_copy_tasks_and_free_writing(long_model_dir, tmp_path):
    js = tmp_path / "t.json"
    r = cli("bench", "--model", str(long_model_dir), "--speculative", "--tasks", "copy", "--draft", "ngram", "--k", "3",
            "--new-tokens", "8", "--repeats", "1", "--json", str(js))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "draft ngram" in lines[0] and "k = 3" in lines[0]
    for task in ("repeat a list", "fix a typo", "list to JSON", "free writing"):
        assert sum(ln.startswith(task) for ln in lines) == 1
    assert "alpha" in lines[1] and "speed-up" in lines[1] and "expected" in lines[1]
    d = json.loads(js.read_text())
    assert [x["task"] for x in d["rows"]] == ["repeat a list", "fix a typo", "list to JSON", "free writing"]
    assert [x["copy"] for x in d["rows"]] == [True, True, True, False]


def test_bench_cost_curve_prints_both_curves_and_the_break_even_rates(model_dir, tmp_path):
    js = tmp_path / "c.json"
    r = cli("bench", "--model", str(model_dir), "--cost-curve", "--context", "16", "--drafts", "ngram,layers:1", "--repeats", "1",
            "--json", str(js))
    assert r.returncode == 0, r.stderr
    assert "tokens fed" in r.stdout and "ngram" in r.stdout and "layers:1" in r.stdout and "break-even" in r.stdout
    from pipeline.speculative.cost import from_json

    c = from_json(js.read_text())
    assert c.tokens == tuple(range(1, 10)) and [d.spec for d in c.drafts] == ["ngram", "layers:1"] and c.context == 16


@pytest.mark.parametrize(
    "args,words",
    [
        (["--speculative", "--k", "0"], "from 1 to 16"),
        (["--k", "40"], "from 1 to 16"),
        (["--draft", "layers:x"], "layers:N"),
        (["--draft", "ngram:0"], "1 to 16"),
        (["--draft", "ngram:two"], "ngram:N"),
        (["--draft", "layers:3"], "1 to 2 of the target's 3 layers"),
        (["--draft", "no-such-org/no-such-draft"], "could not load the model"),
    ],
)
def test_bad_speculative_input_one_sentence_no_traceback(args, words, tmp_path, model_dir):
    r = cli("trace", "--prompt", "hi", "--model", str(model_dir), "--out", str(tmp_path / "x.json"), *args)
    assert r.returncode == 2
    assert words in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("error: ")
    assert not (tmp_path / "x.json").exists()
