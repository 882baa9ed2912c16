"""What the command lines (`python -m pipeline`, `python -m viz`) share: running one command and
turning the errors a person can fix into one line and exit status 2."""
from __future__ import annotations

import sys
from typing import Callable

EXIT_USAGE = 2


def run_command(command: Callable[[object], int], args, expected: tuple[type[BaseException], ...]) -> int:
    """`command(args)`'s exit status; an `expected` error or an OSError (an output file that cannot
    be written) printed as one line with status 2, Ctrl-C as 130."""
    try:
        return command(args)
    except expected as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        print(f"error: {e.strerror or e}: {e.filename or ''}".rstrip(": "), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
