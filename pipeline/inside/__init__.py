"""Inside the model, what a step needs the model for again: analyses (the exports) with logit_lens, kv_recompute,
accounting and positions, and ablate (a part switched off).
"""
