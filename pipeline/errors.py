"""The project's error types, in one place.

Every error a person can cause (a setting out of range, a model that cannot load, a file that
is not a trace) is a `PipelineError`, and its message says what to do instead. The UI shows
such errors as warnings; anything else is a bug.
"""
from __future__ import annotations


class PipelineError(Exception):
    """Something a person chose or gave cannot work; the message says what to do instead."""


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


__all__ = ["PipelineError", "SettingsError", "SpeculativeError", "ModelLoadError", "TraceFormatError", "GalleryError", "GuessError",
           "TRACE_HINT"]
