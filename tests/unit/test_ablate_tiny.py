"""Switching parts of the model off (pipeline/inside/ablate.py, viz/inside/ablate.py, the "Switch off" tab) on tiny random models:
every switched-off distribution against an independent computation (the part's weights zeroed, a plain forward pass
with no hook), the batched head map against one switch-off at a time, the range checks, the lock, the command line's
file and exit status, and the tab's compute."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from types import SimpleNamespace

import gradio as gr
import numpy as np
import pytest
import torch

from pipeline.inside import ablate
from pipeline.capture import hooks_installed
from pipeline.errors import SettingsError
from pipeline.generate import start
from pipeline.loading import prepare
from pipeline.trace.records import Settings
from pipeline.trace.ablated import log_softmax
from tests import tiny
from viz.text import decimal

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROMPT = "The quick brown fox jumps over the lazy dog"
LAYERS = 3


@pytest.fixture(scope="module")
def models():
    cache = {}

    def get(family):
        if family not in cache:
            cache[family] = gemma2() if family == "gemma2" else tiny.loaded(family, layers=LAYERS, ctx=128)
        return cache[family]

    return get


def gemma2():
    """Gemma 2: norms after attention and MLP, and a final soft-capping of the logits (the fast path applies it)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    tok = tiny.tokenizer()
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    c = AutoConfig.for_model("gemma2", vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=LAYERS,
                             num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=128,
                             final_logit_softcapping=2.0, eos_token_id=eos, bos_token_id=eos, pad_token_id=0, tie_word_embeddings=False)
    torch.manual_seed(0)
    m = AutoModelForCausalLM.from_config(c, attn_implementation="eager", dtype=torch.float32).eval()
    with torch.no_grad():
        m.get_output_embeddings().weight.mul_(8.0)
    return prepare(m, tok, model_id="tiny-gemma2", source="config")


FAMILIES = (*tiny.FAMILIES, "gemma2")


def ids_of(lm):
    return lm.tokens.plain_ids(PROMPT)


def plain_logits(lm, ids) -> np.ndarray:
    with torch.inference_mode():
        return lm.model(input_ids=torch.tensor([ids])).logits[0, -1, : lm.info.vocab_size].double().numpy()


def _is_conv1d(m) -> bool:
    return type(m).__name__ == "Conv1D"  # GPT-2's projection: weight (in, out)


def _last_linear(mlp):
    for name in ("down_proj", "c_proj", "fc2", "dense_4h_to_h"):
        if hasattr(mlp, name):
            return getattr(mlp, name)
    raise AssertionError(f"no output projection in {type(mlp).__name__}")


@contextmanager
def zeroed_weights(lm, layer, part, head=None):
    """The independent switch-off: the part's weights set to zero (restored after), so a plain forward pass with no hook
    computes the model with that part off. A head: its input columns of the attention output projection; a block: its
    output projection, bias included (a post-norm of zero is zero)."""
    attn = lm.arch.attn[layer]
    proj = next(getattr(attn, n) for n in ("o_proj", "c_proj", "dense", "out_proj") if hasattr(attn, n))
    if part == "mlp":
        proj = _last_linear(lm.arch.mlp[layer])
    saved = {n: p.detach().clone() for n, p in proj.named_parameters()}
    try:
        with torch.no_grad():
            if part == "head":
                hd = lm.info.head_dim
                cols = slice(head * hd, (head + 1) * hd)
                (proj.weight[cols, :] if _is_conv1d(proj) else proj.weight[:, cols]).zero_()
            else:
                for p in proj.parameters():
                    p.zero_()
        yield
    finally:
        with torch.no_grad():
            for n, p in proj.named_parameters():
                p.copy_(saved[n])


def softmax(x):
    return np.exp(log_softmax(x))


# --- what is switched off ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_each_part_switched_off_equals_its_weights_zeroed(models, family):
    lm = models(family)
    ids = ids_of(lm)
    clean = plain_logits(lm, ids)
    tok = int(clean.argmax())
    for layer, part, head in ((1, "head", 2), (0, "head", 0), (2, "attn", None), (1, "mlp", None)):
        rec = ablate.ablate(lm, ids, tok, layer=layer, part=part, head=head)
        with zeroed_weights(lm, layer, part, head):
            want = plain_logits(lm, ids)
        assert np.allclose(softmax(rec.logits_before), softmax(clean), atol=1e-6), (family, part)
        assert np.allclose(softmax(rec.logits_after), softmax(want), atol=1e-5), (family, layer, part, head)
        assert np.abs(softmax(want) - softmax(clean)).max() > 1e-4, "the switch-off must change something to be a test"
        assert rec.path == "upper" and rec.token_id == tok and rec.chosen_before == pytest.approx(softmax(clean)[tok], abs=1e-6)
        assert rec.logprob_change == pytest.approx(log_softmax(want)[tok] - log_softmax(clean)[tok], abs=1e-4)
    assert hooks_installed(lm.arch) == 0


def test_switching_off_block_L_leaves_what_enters_it_and_changes_what_leaves(models):
    from pipeline.capture import run_with_cache

    lm = models("llama")
    ids = ids_of(lm)
    clean = run_with_cache(lm, ids)
    with zeroed_weights(lm, 1, "head", 3):
        off = run_with_cache(lm, ids)
    assert torch.equal(clean["blocks.0.resid_post"], off["blocks.0.resid_post"])  # entering block 1: what the fast path reuses
    assert not torch.allclose(clean["blocks.1.resid_post"], off["blocks.1.resid_post"])


def test_the_fast_path_equals_the_whole_model_run_again(models, monkeypatch):
    lm = models("gpt2")
    ids = ids_of(lm)
    fast = ablate.ablate(lm, ids, 7, layer=1, part="head", head=1)
    hm_fast = ablate.head_map(lm, ids, 7)
    monkeypatch.setattr(ablate, "CHECK_TOL", -1.0)  # row 0 never passes the check: every batch runs the whole model
    full = ablate.ablate(lm, ids, 7, layer=1, part="head", head=1)
    hm_full = ablate.head_map(lm, ids, 7)
    assert (fast.path, full.path, hm_fast.path, hm_full.path) == ("upper", "full", "upper", "full")
    assert np.allclose(fast.logits_after, full.logits_after, atol=1e-5)
    assert np.allclose(hm_fast.delta, hm_full.delta, atol=1e-5)


# --- which heads matter ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("family", ("llama", "gpt2", "phi", "gemma2"))
def test_the_batched_head_map_equals_one_switch_off_at_a_time(models, family):
    lm = models(family)
    ids = ids_of(lm)
    tok = int(plain_logits(lm, ids).argmax())
    seen = []
    hm = ablate.head_map(lm, ids, tok, progress=lambda done, total, rec: seen.append((done, total, rec.layers)))
    one = np.array([[ablate.ablate(lm, ids, tok, layer=l, part="head", head=h).logprob_change for h in range(lm.info.n_heads)]
                    for l in range(LAYERS)])
    assert hm.delta.shape == (LAYERS, lm.info.n_heads) and np.isfinite(hm.delta).all() and hm.done
    assert np.allclose(hm.delta, one, atol=1e-5), np.abs(hm.delta - one).max()
    assert [s[:2] for s in seen] == [(k, LAYERS) for k in range(1, LAYERS + 1)]
    assert seen[0][2] == (LAYERS - 1,) and sorted(seen[-1][2]) == list(range(LAYERS))  # the last block first: the cheapest
    (l, h, d), *_ = hm.largest(3)
    assert abs(d) == pytest.approx(np.abs(one).max(), abs=1e-5) and one[l, h] == pytest.approx(d, abs=1e-5)


def test_one_block_fills_its_row_only(models):
    lm = models("llama")
    hm = ablate.head_map(lm, ids_of(lm), 5, layers=[1])
    assert hm.layers == (1,) and not hm.done
    assert np.isfinite(hm.delta[1]).all() and np.isnan(hm.delta[[0, 2]]).all()
    assert {l for l, _, _ in hm.largest(10)} == {1}


def test_the_lock_is_held_for_a_pass_and_let_go_between_blocks(models):
    lm = models("llama")
    ids = ids_of(lm)
    done = []
    with lm.lock:  # a generation's pass in progress
        th = threading.Thread(target=lambda: done.append(ablate.ablate(lm, ids, 3, layer=0, part="mlp")))
        th.start()
        time.sleep(0.3)
        assert not done  # it waits for the lock
    th.join(30)
    assert done and done[0].part == "mlp"
    it = ablate.iter_head_map(lm, ids, 3)
    next(it)
    assert lm.lock.acquire(blocking=False)  # not held across a yield
    lm.lock.release()
    assert len(list(it)) == LAYERS - 1 and hooks_installed(lm.arch) == 0


# --- range checks ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layer, part, head, says", [
    (-1, "head", 0, "block -1 does not exist: pick a block from 0 to 2"),
    (3, "attn", None, "block 3 does not exist"),
    (1.5, "mlp", None, "block 1.5"),
    (0, "head", 4, "head 4 does not exist: pick a head from 0 to 3"),
    (0, "head", None, "head None"),
    (0, "neurons", None, "one of head, attn, mlp"),
])
def test_a_part_out_of_range_is_one_sentence(models, layer, part, head, says):
    lm = models("llama")
    with pytest.raises(SettingsError, match=says.replace("(", r"\(")):
        ablate.ablate(lm, ids_of(lm), 0, layer=layer, part=part, head=head)
    assert hooks_installed(lm.arch) == 0


def test_a_context_the_model_cannot_read_is_refused(models):
    lm = models("llama")
    with pytest.raises(SettingsError, match="vocabulary"):
        ablate.ablate(lm, [1, 2, 10**6], 0, layer=0, part="mlp")
    with pytest.raises(SettingsError, match="vocabulary"):
        ablate.ablate(lm, [1, 2], -1, layer=0, part="mlp")
    with pytest.raises(SettingsError, match="at least one token"):
        ablate.ablate(lm, [], 0, layer=0, part="mlp")
    with pytest.raises(SettingsError, match="at least one block"):
        next(ablate.iter_head_map(lm, [1, 2], 0, layers=[]))


# --- the command line --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny-llama")
    tiny.model("llama", layers=LAYERS, ctx=128).save_pretrained(d)
    tiny.tokenizer().save_pretrained(d)
    return d


def cli(*args):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ROOT}
    return subprocess.run([sys.executable, "-m", "pipeline", "ablate", *args], capture_output=True, text=True, timeout=180, env=env, cwd=ROOT)


def test_the_cli_writes_the_documented_file(model_dir, tmp_path):
    from pipeline.loading import load_model

    out = tmp_path / "a.json"
    r = cli("--prompt", "Hello world", "--layer", "1", "--head", "2", "--model", str(model_dir), "--out", str(out))
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text(encoding="utf-8"))
    assert d["format"] == "llm-pipeline-ablation/1" and (d["layer"], d["part"], d["head"], d["step"]) == (1, "head", 2, 0)
    lm = load_model(str(model_dir))
    prompt = lm.tokens.encode_prompt("Hello world", chat=True, system_prompt=None).ids
    assert d["prompt"]["token_ids"] == list(prompt) == d["context_ids"]
    clean = plain_logits(lm, prompt)
    assert d["token"]["id"] == int(clean.argmax())  # the next token after the prompt, greedy
    with zeroed_weights(lm, 1, "head", 2):
        after = softmax(plain_logits(lm, prompt))
    for key, probs in (("before", softmax(clean)), ("after", after)):
        ids, p = d[key]["ids"], np.array(d[key]["probs"])
        assert len(ids) == 100 == len(set(ids)) and (np.diff(p) <= 0).all()
        assert np.allclose(p, probs[ids], atol=1e-6) and p[-1] >= np.sort(probs)[-100] - 1e-9  # the top 100, in order
    assert d["token"]["after"] == pytest.approx(after[d["token"]["id"]], abs=1e-6)


def test_the_cli_takes_a_later_step_and_a_whole_block(model_dir, tmp_path):
    out = tmp_path / "b.json"
    r = cli("--prompt", "Hello", "--layer", "0", "--part", "mlp", "--step", "2", "--raw", "--model", str(model_dir), "--out", str(out))
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text(encoding="utf-8"))
    assert (d["part"], d["head"], d["step"]) == ("mlp", None, 2)
    assert len(d["context_ids"]) == len(d["prompt"]["token_ids"]) + 2 and d["context_ids"][: len(d["prompt"]["token_ids"])] == d["prompt"]["token_ids"]


@pytest.mark.parametrize("args, says", [
    (("--layer", "0", "--head", "1", "--part", "attn"), "not both"),
    (("--layer", "0"), "--head H"),
    (("--layer", "-1", "--part", "mlp"), "count from 0"),
    (("--layer", "9", "--part", "mlp"), "block 9 does not exist: pick a block from 0 to 2"),
    (("--layer", "0", "--head", "7"), "head 7 does not exist: pick a head from 0 to 3"),
])
def test_bad_arguments_are_one_sentence_and_exit_2(model_dir, tmp_path, args, says):
    r = cli("--prompt", "Hi", *args, "--model", str(model_dir), "--out", str(tmp_path / "x.json"))
    errors = [line for line in r.stderr.splitlines() if line.startswith("error")]  # (a model's loading may print its progress first)
    assert r.returncode == 2 and len(errors) == 1 and says in errors[0] and errors[0].startswith("error: "), r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "x.json").exists()


# --- the tab -----------------------------------------------------------------------------------------------------------


@pytest.fixture()
def page_model(models, monkeypatch):
    from ui import model

    lm = models("llama")
    monkeypatch.setattr(model, "HOLDER", SimpleNamespace(lm=lm))
    gen = start(lm, "Hello there", Settings(temperature=0.0, max_new_tokens=3))
    list(gen)
    return lm, gen.trace()


def _attrs(html: str, name: str) -> str:
    import re

    return re.search(rf"{name}='([^']*)'", html).group(1)


def test_the_tab_is_in_the_registry_and_its_compute_fills_its_outputs(page_model):
    from ui.inside.tabs import BY_ID, TabView

    lm, trace = page_model
    tab = BY_ID["ablate"]
    assert tab.elem_id == "tab-ablate" and {a.button for a in tab.actions} == {"ablate_run", "ablate_map_run", "ablate_map_all"}
    assert all(a.options.get("concurrency_id") == "heavy" for a in tab.actions if a.button != "ablate_run")  # (ui/api.py HEAVY_GROUP)
    v = TabView(trace, 2, {"ablate_layer": 1, "ablate_part": "head", "ablate_head": 3, "ablate_map_html": ""})
    out = tab.compute(v)
    assert set(out) == set(tab.outputs)
    st = trace.steps[2]
    rec = ablate.ablate_step(lm, st, layer=1, part="head", head=3)
    html = out["ablate_html"]
    assert "id='ablate-result'" in html and _attrs(html, "data-part") == "head" and _attrs(html, "data-head") == "3"
    assert (_attrs(html, "data-layer"), _attrs(html, "data-token")) == ("1", str(st.token_id))
    assert float(_attrs(html, "data-before")) == pytest.approx(rec.chosen_before, abs=1e-7)
    assert float(_attrs(html, "data-after")) == pytest.approx(rec.chosen_after, abs=1e-7)
    assert rec.chosen_before == pytest.approx(st.chosen_prob, abs=1e-5)  # the recomputed step is the step on screen
    assert out["ablate_plot"].layout.meta["step"] == st.index and "ablate-map-result" in out["ablate_map_html"]
    mlp = tab.compute(TabView(trace, 2, {**v.inputs, "ablate_part": "mlp"}))["ablate_html"]
    assert _attrs(mlp, "data-part") == "mlp" and "data-head" not in mlp


def test_the_map_streams_block_by_block_and_stays_for_its_own_step(page_model):
    from ui.inside import ablate as ablate_tab
    from ui.inside.tabs import BY_ID, TabView

    lm, trace = page_model
    frames = list(ablate_tab.map_all_click(trace, 1))
    assert len(frames) == LAYERS
    html, fig = frames[-1]
    assert _attrs(html, "data-done") == _attrs(html, "data-total") == str(LAYERS)
    assert "data-done='1'" in frames[0][0] and fig.data[1].colorscale and fig.data[1].zmid == 0
    hm = ablate.head_map(lm, trace.steps[1].context_ids, trace.steps[1].token_id)
    z = np.array(fig.data[1].z, dtype=float)
    assert np.allclose(z, hm.delta, atol=1e-6)
    inputs = {"ablate_layer": 0, "ablate_part": "attn", "ablate_head": 0, "ablate_map_html": html}
    same = BY_ID["ablate"].compute(TabView(trace, 1, inputs))
    other = BY_ID["ablate"].compute(TabView(trace, 2, inputs))
    assert same["ablate_map"] == gr.skip() and same["ablate_map_html"] == gr.skip()  # its own step: kept
    assert other["ablate_map"] is None and "data-key=''" in other["ablate_map_html"]  # another step: cleared
    (one_html, one_fig), = list(ablate_tab.map_block_click(trace, 1, 2))
    assert _attrs(one_html, "data-layers") == "2" and _attrs(one_html, "data-total") == "1"


def test_without_the_model_the_tab_says_so(page_model, monkeypatch):
    from ui import model
    from ui.inside import ablate as ablate_tab
    from ui.inside.tabs import BY_ID, TabView

    lm, trace = page_model
    inputs = {"ablate_layer": 0, "ablate_part": "head", "ablate_head": 0, "ablate_map_html": ""}
    warned = []
    monkeypatch.setattr(gr, "Warning", lambda m, *a, **k: warned.append(m))
    monkeypatch.setattr(model, "HOLDER", None)  # still loading, or failed
    out = BY_ID["ablate"].compute(TabView(trace, 0, inputs))
    assert "needs the model" in out["ablate_html"] and out["ablate_plot"] is None and out["ablate_map"] is None
    html, fig = ablate_tab.run_click(trace, 0, 0, "head", 0)
    assert "needs the model" in html and fig is None and warned
    monkeypatch.setattr(model, "HOLDER", SimpleNamespace(lm=tiny.loaded("qwen2", layers=2)))  # another model
    out = BY_ID["ablate"].compute(TabView(trace, 0, inputs))
    assert "made by tiny-llama, not by the loaded model (tiny-qwen2)" in out["ablate_html"]
    assert "made by tiny-llama" in list(ablate_tab.map_all_click(trace, 0))[-1][0]


def test_a_field_out_of_range_warns(page_model, monkeypatch):
    from ui.inside import ablate as ablate_tab

    lm, trace = page_model
    warned = []
    monkeypatch.setattr(gr, "Warning", lambda m, *a, **k: warned.append(m))
    assert ablate_tab.run_click(trace, 0, 7, "attn", 0) == (gr.skip(), gr.skip())
    assert ablate_tab.run_click(trace, 0, 0, "head", None) == (gr.skip(), gr.skip())
    assert list(ablate_tab.map_block_click(trace, 0, 99)) == [(gr.skip(), gr.skip())]
    assert warned[0] == "Block 7 does not exist: pick a block from 0 to 2." and "head" in warned[1].lower()


# --- the figures -------------------------------------------------------------------------------------------------------


def test_the_figures_name_what_was_switched_off(models):
    from viz.inside import ablate as ablate_viz

    lm = models("llama")
    ids = ids_of(lm)
    rec = ablate.ablate(lm, ids, 11, layer=2, part="attn")
    pieces = {i: lm.tokens.piece(i) for i in range(lm.info.vocab_size)}
    fig = ablate_viz.ablation_figure(rec, pieces, step=4)
    shown = ablate_viz._shown_ids(rec)
    assert 11 in shown and len(shown) >= ablate_viz.SHOWN
    assert np.allclose(fig.data[0].x, rec.probs("before")[shown]) and np.allclose(fig.data[1].x, rec.probs("after")[shown])
    assert "the attention of block 2" in fig.layout.title.text and fig.layout.yaxis.ticktext[shown.index(11)].startswith("▶")
    html = ablate_viz.ablation_html(rec, pieces, step=4)
    assert "not an explanation of the whole model" in html and "data-head" not in html
    ids_m, b, a = rec.movers(ablate_viz.MOVERS)
    assert np.all(np.diff(np.abs(a - b)) <= 0) and html.count("<tr data-id=") == ablate_viz.MOVERS
    assert np.abs(a - b).max() == pytest.approx(np.abs(rec.probs("after") - rec.probs("before")).max())
    hm = ablate.head_map(lm, ids, 11, layers=[0, 2])
    mfig = ablate_viz.head_map_figure(hm, pieces, step=4)
    assert mfig.data[1].colorscale[0][1] == "rgb(127,59,8)"  # PuOr: orange where switching off hurt the token
    assert mfig.data[1].zmin == -mfig.data[1].zmax and list(mfig.data[1].z[1]) == [None] * lm.info.n_heads
    assert [a.text for a in mfig.layout.annotations] == [str(k) for k in range(1, ablate_viz.NAMED + 1)]
    # each map scales its colours to its own largest change (one block's, every block's): the colour bar says the range
    one = ablate_viz.head_map_figure(hm, pieces, step=4, every_block=False)
    for f in (mfig, one):
        assert f"−{decimal(f.data[1].zmax, 2)} to +{decimal(f.data[1].zmax, 2)}" in f.data[1].colorbar.title.text.replace("<br>", " ")
