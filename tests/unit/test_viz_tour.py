"""The guided tour: one stage per part of the pipeline, in order, told with the step's own numbers."""
import numpy as np

from tests.synthetic import make_trace
from viz import tour
from viz.style import html_piece


def test_stages_follow_the_pipeline_and_point_at_panels():
    t = make_trace(n_steps=3)
    stages = tour.tour_stages(t, 1)
    assert [s.target for s in stages] == ["panel-tokens", "panel-embeddings", "panel-attention", "panel-inside",
                                          "panel-distribution", "panel-distribution", "panel-kv", "output"]
    assert [s.title.split(" · ")[0] for s in stages] == [str(i) for i in range(1, 9)]


def test_numbers_are_the_steps_own():
    t = make_trace(n_steps=3)
    st = t.steps[2]
    stages = tour.tour_stages(t, 2)
    assert f"The context is {st.position + 1} tokens" in stages[0].html
    assert "decode step 2" in stages[0].html
    # the most attended key, averaged over layers and heads, computed independently
    mean = st.attention.mean(axis=(0, 1))
    k = int(np.argmax(mean))
    assert f"position {k}, {mean[k]:.0%}" in stages[2].html
    assert f"{st.top_probs[0]:.1%}" in stages[4].html and f"{st.entropy:.2f} bits" in stages[4].html
    assert f"{st.chosen_final_prob:.1%}" in stages[5].html
    assert f"{st.ms:.1f} ms" in stages[6].html
    assert html_piece(st.piece) in stages[7].html


def test_a_forced_token_is_not_said_to_be_drawn():
    from dataclasses import replace

    t = make_trace(n_steps=3)
    drawn = tour.tour_stages(t, 2)[5].html
    assert "was drawn" in drawn and "forced" not in drawn
    f = replace(t, steps=(*t.steps[:2], replace(t.steps[2], forced=True)))
    forced = tour.tour_stages(f, 2)[5].html
    assert "not drawn" in forced and "forced (a branch, or the real text" in forced and f"{t.steps[2].chosen_prob:.1%}" in forced


def test_greedy_is_told_as_greedy_not_as_a_draw():
    t = make_trace(n_steps=3, temperature=0.0)
    st = t.steps[1]
    assert st.token_id == int(st.top_ids[0])  # greedy took the top token
    html = tour.tour_stages(t, 1)[5].html
    assert "temperature 0 is greedy" in html and "no randomness" in html and "drawn" not in html
    assert "no filter was on" not in html and f"{st.chosen_prob:.1%}" in html
    sampled = tour.tour_stages(make_trace(n_steps=3, temperature=0.8, top_p=0.9), 1)[5].html
    assert "top-p kept" in sampled and "was drawn" in sampled


def test_the_settings_told_are_the_ones_the_step_was_sampled_with():
    from dataclasses import replace

    t = make_trace(n_steps=3, temperature=0.8, top_k=7, top_p=0.9)
    later = replace(t, settings=replace(t.settings, temperature=1.5, top_k=0, top_p=1.0))  # a re-sample kept these steps
    html = tour.tour_stages(later, 1)[5].html
    assert html.startswith("Temperature 0.8, top-k 7, top-p 0.9:") and "1.5" not in html


def test_prefill_stage_says_all_tokens_go_in_at_once():
    t = make_trace(n_steps=2)
    assert f"all {t.steps[0].position + 1} tokens of the context go through the model in one pass" in tour.tour_stages(t, 0)[0].html


def test_pieces_are_escaped_and_stage_is_clamped():
    from dataclasses import replace

    t = make_trace(n_steps=2)
    t = replace(t, steps=(replace(t.steps[0], piece="<script>", text="<script>"), t.steps[1]))  # the chosen token is markup
    box = tour.tour_html(t, 0, 99)
    assert "stage 8 of 8" in box and "&lt;script&gt;" in box
    assert "<script>" not in "".join(s.html for s in tour.tour_stages(t, 0))


def test_attention_on_the_first_token_names_the_runner_up():
    t = make_trace(n_steps=2)
    st = t.steps[1]
    att = np.zeros_like(st.attention)
    att[..., 0], att[..., 3] = 0.7, 0.3
    from dataclasses import replace
    t2 = replace(t, steps=(t.steps[0], replace(st, attention=att)))
    text = tour.tour_stages(t2, 1)[2].html
    assert "position 0, 70%" in text and "position 3, 30%" in text
