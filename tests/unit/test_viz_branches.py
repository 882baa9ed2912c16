"""The branches list: labels, fork points, the forced token marked, text escaped."""
from dataclasses import replace

from tests.synthetic import make_trace
from viz.branches import Branch, branch_label, branches_html


def test_labels_run_a_to_z_then_aa():
    assert [branch_label(i) for i in (0, 1, 25, 26, 27)] == ["A", "B", "Z", "AA", "AB"]


def test_each_branch_shows_its_fork_and_marks_the_forced_token():
    a = make_trace(n_steps=4, seed=1)
    forced = replace(a.steps[2], text="<b>X</b>", piece="<b>X</b>")
    b = replace(a, steps=a.steps[:2] + (forced,) + a.steps[3:])
    out = branches_html([Branch("A", a, None), Branch("B", b, 2, "<b>X</b>", a.steps[2].piece)], current=b)
    assert out.count("class='branch-row") == 2
    assert "step 2: forced" in out and "<mark class='forced'>&lt;b&gt;X&lt;/b&gt;</mark>" in out
    assert "<b>X</b>" not in out.replace("<b>A</b>", "").replace("<b>B</b>", "")
    assert out.index("branch-current") > out.index("<b>A</b>")  # B is the one on screen, not A


def test_no_branches_says_how_to_make_one():
    assert "Click a candidate bar" in branches_html([], None)
