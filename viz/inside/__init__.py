"""The panels of "Inside the model": the logit lens (lens), the residual stream, positions, compute, bytes, the context
window and a part switched off (ablate).
"""
