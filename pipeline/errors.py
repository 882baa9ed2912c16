"""The project's error types, in one place.

Every error a person can cause (a setting out of range, a model that cannot load, a file that
is not a trace) is a `PipelineError`, and its message says what to do instead. The UI shows
such errors as warnings; anything else is a bug.

The message is English (the command line's, a log's). An error the page shows names its sentence in the page's
catalogue too (`key`, with the values it fills in: `SettingsError("the seed must be ...", key="error.seed", value=-1)`),
so that the page says it in the visitor's language (ui/messages.py; pipeline never imports viz); `Said` is the same
for a line that is no error (a loading step the page shows).
"""
from __future__ import annotations


class PipelineError(Exception):
    """Something a person chose or gave cannot work; the message says what to do instead. `key` and `values`: the same
    sentence in the page's catalogue (locales/en.json) and what it is filled with, as plain values (ui/messages.py writes
    the numbers the language's way)."""

    def __init__(self, *args, key: str | None = None, **values):
        super().__init__(*args)
        self.key, self.values = key, values


class Said(str):
    """An English line (a loading step) that names its sentence in the page's catalogue too, as PipelineError does."""

    key: str | None
    values: dict

    def __new__(cls, text: str, key: str | None = None, **values):
        said = super().__new__(cls, text)
        said.key, said.values = key, values
        return said


class SettingsError(PipelineError, ValueError):
    """A sampling or generation setting (or a prompt) is out of range."""


class SpeculativeError(SettingsError):
    """A speculative-decoding setting (k, the draft) cannot work."""


class ModelLoadError(PipelineError, RuntimeError):
    """The model a person asked for cannot be loaded."""


class TraceFormatError(PipelineError, ValueError):
    """The file is not a trace this program can read."""


# what every TraceFormatError ends with: what to pick instead
TRACE_HINT = "pick a .json or .json.gz trace exported by this app or by `python -m pipeline trace`"


class GalleryError(PipelineError, LookupError):
    """No saved trace of that name in the gallery, or the gallery's manifest is damaged."""


class PassageError(GalleryError):
    """No real-text passage of that name (pipeline/passages.py), or the passages' file is damaged."""


class GuessError(PipelineError, ValueError):
    """A guess that cannot be rated (pipeline/guess.py): one sentence for the person who typed it."""


__all__ = ["PipelineError", "Said", "SettingsError", "SpeculativeError", "ModelLoadError", "TraceFormatError", "GalleryError", "GuessError",
           "TRACE_HINT"]
