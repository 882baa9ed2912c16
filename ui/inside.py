"""The listeners of panel 6, "Inside the model": the open tab for the step on screen, and the two
buttons that run the model again (the KV-cache comparison, the position swap)."""
from __future__ import annotations

import html

import gradio as gr

from ui import session
from pipeline.errors import SettingsError
from pipeline.indices import clamp_index
from pipeline.records import Trace
from ui import model
from ui.layout import Page

# tab id -> the components its drawing fills (none: the tab draws on a button, or is drawn elsewhere)
INSIDE = {"lens": ("lens_html", "lens_plot"), "residual": ("resid_plot", "contrib_plot"), "position": ("pos_plot",), "kvc": (),
          "accounting": ("acc_html", "acc_plot"), "sampling": ("cmp_plot",), "branches": (), "bytes": ("bytes_html",),
          "context": ("ctx_html", "ctx_plot")}


def _note(text: str) -> str:
    return f"<p class='inside-note'>{html.escape(text)}</p>"


def _no_lens(trace: Trace) -> str:
    """Why the logit lens of a step cannot be shown, and what to do."""
    lm = model.loaded()
    if lm is not None and model.same_model(trace) is None:
        return (f"This trace was made by {trace.model.id}, not by the loaded model ({lm.info.id}), and was saved without its "
                "logit lens: the lens needs the final norm and LM head of the model that made it. Start the app with that "
                "model (--model) to see it, or generate with this one.")
    if lm is None and not trace.lens:
        return "The logit lens runs the model's final norm and LM head: it appears here once the model has loaded."
    return ("The logit lens needs this step's hidden states. They are captured while the model generates, and a trace "
            "downloaded from this page carries the lens of every step: generate with the model, or load such a trace.")


class Inside:
    def __init__(self, p: Page):
        self.C = p.C

    def inside_view(self, tab, trace, step, price_in, price_out, seed, **cmp) -> dict:
        """The open tab of "Inside the model" for the step on screen, as {component: value}. `cmp`: the
        side-by-side sampler's rows (cmp_t0, cmp_k0, cmp_p0, … cmp_p2: temperature, top-k, top-p)."""
        from viz import bytes_view, compute, context, lens as lens_viz, position as pos_viz, residual, sampling_compare

        C = self.C
        if trace is None or not trace.steps or tab not in INSIDE or not INSIDE[tab]:
            return {C.lens_html: gr.skip()}  # (an empty dict would read as one missing value)
        s = clamp_index(step or 0, len(trace.steps))
        st = trace.steps[s]
        out = {}
        try:
            if tab == "lens":
                rec = session.LENS.get(model.loaded(), trace, st)
                out = {C.lens_html: lens_viz.lens_summary_html(rec, forced=st.forced),
                       C.lens_plot: lens_viz.logit_lens_figure(rec, trace.model.n_layers, forced=st.forced)} \
                    if rec is not None else {C.lens_html: _note(_no_lens(trace)), C.lens_plot: None}
            elif tab == "residual":
                label = f"step {st.index}"
                out = {C.resid_plot: residual.residual_path_figure(st.resid_2d, st.resid_norm, st.update_norm, piece=st.context_pieces[-1], step=st.index)
                       if st.resid_2d is not None else None,
                       C.contrib_plot: residual.contributions_figure(st.attn_out_norm, st.mlp_out_norm, st.resid_norm, st.update_norm,
                                                                     piece=st.context_pieces[-1], step=st.index)}
                if st.resid_2d is None:
                    gr.Info(f"This trace has no residual path for {label} (it was saved before the path was recorded): generate again to see it.")
            elif tab == "position":
                pos = session.position_for(model.loaded(), trace)
                out = {C.pos_plot: pos_viz.position_figure(pos, list(st.context_pieces)) if pos is not None else None}
            elif tab == "accounting":
                acc = None if trace.speculative else session.accounting_for(model.loaded(), trace)
                if trace.speculative:  # its steps came k + 1 at a time from rounds of draft and verify passes
                    out = {C.acc_html: _note("This generation was speculative: its tokens came from rounds of draft passes and one "
                                                "verify pass each (section 7), not one pass per token, so a per-step account of one "
                                                "pass would not be true of it. Generate without speculative decoding to see it."),
                           C.acc_plot: None}
                elif acc is None:
                    out = {C.acc_html: _note("This trace holds no parameter counts and was made by another model: load that model "
                                                "to see its compute and memory accounting."), C.acc_plot: None}
                else:
                    recs, machine, params = acc
                    out = {C.acc_html: compute.accounting_html(recs[s], machine, params, trace.model), C.acc_plot: compute.accounting_figure(recs, s)}
            elif tab == "sampling":
                if any(v in (None, "") for v in cmp.values()):
                    raise SettingsError("each of the three columns needs a temperature, a top-k and a top-p")
                rows = [dict(temperature=float(cmp[f"cmp_t{n}"]), top_k=int(cmp[f"cmp_k{n}"]), top_p=float(cmp[f"cmp_p{n}"])) for n in range(3)]
                out = {C.cmp_plot: sampling_compare.sampling_compare_figure(st, rows, vocab_size=trace.model.vocab_size,
                                                                            repetition_penalty=trace.settings.repetition_penalty, seed=int(seed or 0))}
            elif tab == "bytes":
                out = {C.bytes_html: bytes_view.bytes_html(trace.prompt, trace.steps, s)}
            elif tab == "context":
                pin = float(price_in) if price_in not in (None, "") else None
                pout = float(price_out) if price_out not in (None, "") else None
                out = {C.ctx_html: context.context_html(trace, s, price_in_per_m=pin, price_out_per_m=pout), C.ctx_plot: context.context_figure(trace, s)}
        except (SettingsError, ValueError, TypeError) as e:
            gr.Warning(session.sentence(e))
            return {C.lens_html: gr.skip()}  # (an empty dict would read as one missing value)
        return out or {C.lens_html: gr.skip()}


def kv_compare_click(trace, step):
    from pipeline import inside
    from viz import compute

    lm = model.same_model(trace)
    if trace is None or not trace.steps:
        return gr.skip(), gr.skip()
    if lm is None:
        gr.Warning("Recomputing a step needs the model that made this trace; it is not the one loaded (or it is still loading).")
        return gr.skip(), gr.skip()
    s = clamp_index(step or 0, len(trace.steps))
    kvc = inside.kv_compare(lm, trace, trace.steps[s].index)
    pieces = [lm.tokens.piece(int(i)) for i in kvc.top_ids]
    return compute.kv_compare_html(kvc, pieces), compute.kv_compare_figure(kvc, pieces)


def swap_click(trace, i, j):
    from pipeline import inside
    from viz import position as pos_viz

    lm = model.same_model(trace)
    if trace is None or lm is None:
        gr.Warning("Swapping tokens runs the model: it must be the model that made this trace, and loaded.")
        return gr.skip(), gr.skip(), gr.skip()
    try:
        if i in (None, "") or j in (None, "") or int(i) == int(j):  # two words of what the person typed
            i, j = session.default_swap(trace)
        swap = inside.swap_demo(lm, list(trace.prompt.token_ids), int(i), int(j))
    except (SettingsError, ValueError) as e:
        gr.Warning(session.sentence(e))
        return gr.skip(), gr.skip(), gr.skip()
    return pos_viz.swap_figure(swap), int(i), int(j)
