"""The class rooms: a small server of their own beside the page, importing no gradio (tests/unit/test_structure.py holds
it), so they can be served and tested without it. rooms (Rooms and ROOMS: a room's state, its guesses, the reveal),
store (the rooms kept across a restart, SQLite), api (the HTTP API, /api/rooms) and asgi (its front: the polls answered
before Gradio's app), scores (a step's score and the class's favourites), profanity (the words a projector must not show),
results (the teacher's summary and CSV), errors (the one-sentence refusals), passages (/api/passages: real text to guess).
The page's side of a class (the teacher's card, its listeners) stays in ui/ (ui/class_room.py). docs/rooms.md has the design.
"""
