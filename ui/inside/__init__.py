""""Inside the model" on the page: its tabs' registry (tabs), their listeners, the "Switch off" tab (ablate), the data
the views need (data) and the shared logit lens (lens_cache).
"""
