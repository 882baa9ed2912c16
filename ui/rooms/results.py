"""A class room's results for the teacher, as CSV (GET /api/rooms/{code}/results.csv, the teacher's key in X-Room-Key;
the card's "Download results": assets/room_tools.js).

One row per student and step that has guesses, of every text the room has had (its earlier texts' rows kept when the
teacher gave the class a new one: Room.past), by text, step and then student:

    text      1, 2, ...: the room's texts in the order the class had them
    student   "S1", "S2", ... in the order they first guessed (ui/rooms/rooms.py Room.names): never the browser's id
    step      the trace's step (a passage's: its token N, read after tokens 0..N-1)
    guess     as typed (the profanity filter is the projector's, not the teacher's)
    right     yes or no: the real next token is the first token of one of the guess's spellings (Guess.ids)
    token     the guess's first token as the model writes it, as the chart writes a token ("·Paris")
    probability, rank   the model's, of that token at the step (temperature 1, whole vocabulary; rank 1 = its most
              likely); empty when not known
    next token   what came next: the passage's real token, or the token the model wrote for a generated trace

The headers and yes/no are the catalogue's (room.csv_*), and the numbers and separators the teacher's language's: where
it writes a decimal comma (German, French, Spanish, Portuguese), the probability has one and the cells are separated by
semicolons, as a spreadsheet set to that language reads a CSV file. A cell that a spreadsheet would read as a formula (it begins
with = + - @, or a tab or a line break) is written with a leading apostrophe, so that opening the file runs nothing;
the file begins with a UTF-8 byte order mark, so that a spreadsheet reads its accents and emoji as such.
"""
from __future__ import annotations

import csv
import io

from ui.rooms import scores as room_scores
from ui.rooms.scores import is_right
from viz.style import visible
from viz.text import number_marks, t

FORMULA = tuple("=+-@")
BOM = "\ufeff"


def safe(cell) -> str:
    """A cell as text a spreadsheet will not run: a formula-like start behind an apostrophe."""
    text = "" if cell is None else str(cell)
    if text[:1] in ("\t", "\r", "\n") or text.lstrip().startswith(FORMULA):
        return "'" + text
    return text


def snapshot(room) -> dict:
    """What the CSV needs of a room, copied (taken under the rooms' lock; the file is written outside it)."""
    return {"code": room.code, "trace": room.trace, "names": dict(getattr(room, "names", {}) or {}),
            "guesses": {int(s): dict(g) for s, g in room.guesses.items()}, "past": list(getattr(room, "past", []) or [])}


def _names(snap: dict) -> dict:
    """Every student who guessed, named: Room.names, and for anyone not in it (there should be none) the next
    numbers, in the order they first guessed."""
    names = dict(snap["names"])
    n = len(names)
    for s in sorted(snap["guesses"]):
        for sid in snap["guesses"][s]:
            if sid not in names:
                n += 1
                names[sid] = f"S{n}"
    return names


def _order(name: str):
    return (0, int(name[1:])) if name[:1] == "S" and name[1:].isdigit() else (1, name)


def raw_rows(snap: dict) -> list[list]:
    """The current text's rows, in no language (kept as they are when the room moves on: Room.past): [student, step,
    guess, right, its first token as the chart writes it, probability, rank, the next token]."""
    trace, names, out = snap["trace"], _names(snap), []
    for s in sorted(snap["guesses"]):
        if not 0 <= s < len(trace.steps):
            continue
        step = trace.steps[s]
        for sid, g in sorted(snap["guesses"][s].items(), key=lambda kv: _order(names[kv[0]])):
            out.append([names[sid], s, g.text, bool(is_right(g, step.token_id)), visible(g.piece) if g.token_id is not None else "",
                        None if g.prob is None else float(g.prob), None if g.rank is None else int(g.rank), visible(step.piece)])
    return out


def rows(snap: dict) -> list[list[str]]:
    """The CSV's rows, its header first: every earlier text's, then the current one's."""
    yes, no, point = t("room.csv_yes"), t("room.csv_no"), number_marks()[1]
    out = [[t("room.csv_text"), t("room.csv_student"), t("room.csv_step"), t("room.csv_guess"), t("room.csv_right"), t("room.csv_token"),
            t("room.csv_prob"), t("room.csv_rank"), t("room.csv_real")]]
    texts = [(p["text"], p["rows"]) for p in snap.get("past", [])] + [(len(snap.get("past", [])) + 1, raw_rows(snap))]
    for n, raw in texts:
        for name, s, guess, right, token, prob, rank, real in raw:
            out.append([str(n), name, str(s), guess, yes if right else no, token,
                        "" if prob is None else f"{float(prob):.6g}".replace(".", point), "" if rank is None else str(int(rank)), real])
    return out


def past_text(room) -> dict:
    """The room's current text's results as kept when it moves on to another (JSON: the store writes it): its number,
    the summary of its revealed steps and its CSV rows in no language."""
    sm = room_scores.summary(room)
    return {"text": len(room.past) + 1, "example": room.example, "passage": room.passage, "model": sm["model"],
            "real_text": sm["real_text"], "steps": sm["steps"], "totals": sm["totals"],
            "rows": raw_rows(snapshot(room))}


def csv_text(snap: dict) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n", delimiter=";" if number_marks()[1] == "," else ",")
    for r in rows(snap):
        w.writerow([safe(c) for c in r])
    return BOM + buf.getvalue()


def filename(code: str) -> str:
    return f"class-{code}-results.csv"


__all__ = ["csv_text", "snapshot", "rows", "raw_rows", "past_text", "safe", "filename"]
