"""Speculative decoding: decoding (propose, verify, accept), draft (the drafts) and cost (when it pays off).
"""
