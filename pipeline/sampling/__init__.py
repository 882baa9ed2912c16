"""The sampling stages (stages: temperature, top-k, top-p, min-p, the repetition penalty), the sliders' grids (grid), and
the rest of the vocabulary outside a step's top candidates (rest, rest_bounds).
"""
