"""The branches list: labels, fork points, the forced token marked, text escaped."""
from dataclasses import replace

from tests.synthetic import make_trace
from viz.branches import Branch, branch_label, branches_html


def test_labels_run_a_to_z_then_aa():
    assert [branch_label(i) for i in (0, 1, 25, 26, 27)] == ["A", "B", "Z", "AA", "AB"]


def test_each_branch_shows_its_fork_and_marks_the_forced_token():
    a = make_trace(n_steps=4, seed=1)
    forced = replace(a.steps[2], text="<b>X</b>", piece="<b>X</b>", forced=True)
    b = replace(a, steps=a.steps[:2] + (forced,) + a.steps[3:])
    out = branches_html([Branch("A", a, None), Branch("B", b, 2, "<b>X</b>", a.steps[2].piece)], current=b)
    assert out.count("class='branch-row") == 2
    assert "step 2: forced" in out and "<mark class='forced'>&lt;b&gt;X&lt;/b&gt;</mark>" in out
    assert "<b>X</b>" not in out.replace("<b>A</b>", "").replace("<b>B</b>", "")
    assert out.index("branch-current") > out.index("<b>A</b>")  # B is the one on screen, not A


def test_no_branches_says_how_to_make_one():
    assert "Click a candidate bar" in branches_html([], None)


def test_a_branch_of_a_branch_marks_both_forced_tokens():
    a = make_trace(n_steps=5, seed=1)
    steps = list(a.steps)
    steps[1] = replace(steps[1], text="one", forced=True)  # the first branch's fork
    steps[3] = replace(steps[3], text="two", forced=True)  # forked again from that branch
    c = replace(a, steps=tuple(steps))
    out = branches_html([Branch("A", a, None), Branch("C", c, 3, "two", a.steps[3].piece)], current=c)
    assert out.count("<mark class='forced'>") == 2 and "<mark class='forced'>one</mark>" in out
    assert "step 3: forced" in out
