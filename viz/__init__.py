"""Pure drawing functions: records in, plotly figures / HTML strings out (no torch, no gradio).

tokens, embeddings, attention, distribution, kv, output: one module per panel;
captions: the panels' plain-language text; page: every panel for one step of a trace.
"""
