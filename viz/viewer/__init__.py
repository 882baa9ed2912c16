"""The step viewer's Python side: the bundle the browser draws a trace's steps from (bundle, with attention and sampling),
a panel's frames (frames), the sliders' grids (grid), Guess first's rating in the offline page (guess), and the
one-file HTML page (page).
"""
