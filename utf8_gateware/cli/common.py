"""What every command of ``utf8-gateware`` shares: the one error convention and file handling.

Errors: a handler raises :class:`CommandError` (or lets a
:class:`~utf8_gateware.toolchain.ToolError` through);
:func:`utf8_gateware.cli.main` prints it as one line, ``utf8-gateware: error: ...``, and exits
with its status: 2 for bad usage or input that could not be processed (a bad argument, an
unreadable file, a missing tool, board or port), 1 for a finding (an encoding error with
``strict``, a mismatch, a missed timing target). Never a traceback. A command whose result *is*
a finding (``validate``: invalid input) prints it as its normal output and returns 1.

Files: :class:`InputFile` reads its input in blocks and :class:`OutputFile` writes as it goes, so
the commands that stream (``decode``, ``encode``, ``validate``) run in constant memory.
"""

import argparse
import io
import json
import os
import stat
import sys

from utf8_gateware.hdl.cores import parameter_choices
from utf8_gateware.toolchain import ToolError


__all__ = ["PROG", "CommandError", "ONE_LINE_ERRORS", "one_line", "note", "at_least",
           "read_input", "write_output", "write_json", "progress", "InputFile", "OutputFile",
           "parameter_help"]


PROG = "utf8-gateware"
#: Inputs larger than this show a progress bar when standard error is a terminal.
PROGRESS_THRESHOLD = 4 << 20


class CommandError(Exception):
    """A problem to report in one line; ``status`` is the exit status (2 unless a finding: 1)."""
    def __init__(self, message, status=2):
        super().__init__(message)
        self.status = status


#: Exceptions that are reported as one-line errors with exit status 2 wherever they come from: a
#: tool that is missing, timed out or failed.
ONE_LINE_ERRORS = (ToolError,)


def one_line(error):
    """The message of ``error`` as one line (the lines of a multi-line message joined by
    ``"; "``)."""
    return "; ".join(line.strip() for line in str(error).splitlines() if line.strip())


def note(message):
    """Print ``utf8-gateware: note: message`` on standard error (not an error)."""
    print(f"{PROG}: note: {message}", file=sys.stderr)


def at_least(minimum, kind=int):
    """An argparse ``type``: a number of ``kind`` (``int`` or ``float``) that is at least
    ``minimum`` (for ``float``, more than ``minimum`` if it is 0)."""
    def convert(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value < minimum or (kind is float and minimum == 0 and value == 0):
            raise argparse.ArgumentTypeError(
                "must be positive" if kind is float and minimum == 0 else
                f"must be at least {minimum}")
        return value
    convert.__name__ = kind.__name__   # argparse names the type in its messages
    return convert


def _describe(error):
    return error.strerror or str(error)


def read_input(path):
    """The bytes of ``path`` (``None`` or ``"-"``: standard input)."""
    try:
        if path in (None, "-"):
            return sys.stdin.buffer.read()
        with open(path, "rb") as file:
            return file.read()
    except OSError as error:
        raise CommandError(f"cannot read {str(path)!r}: {_describe(error)}") from None


def write_output(path, data):
    """Write ``data`` to ``path`` (``None`` or ``"-"``: standard output)."""
    try:
        if path in (None, "-"):
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        else:
            with open(path, "wb") as file:
                file.write(data)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error of ours; keep Python quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError as error:
        raise CommandError(f"cannot write {str(path)!r}: {_describe(error)}") from None


class InputFile:
    """The input ``path`` (``None`` or ``"-"``: standard input), opened at once (an unreadable
    file is a :class:`CommandError` here) and read in blocks of ``block`` bytes by iterating;
    ``size`` is its size in bytes if it is a regular file, else ``None``; ``consumed`` counts the
    bytes read so far. A context manager."""
    def __init__(self, path, block=1 << 20):
        self.path, self.block, self.size, self.consumed = path, block, None, 0
        try:
            self.file = sys.stdin.buffer if path in (None, "-") else open(path, "rb")
        except OSError as error:
            raise CommandError(f"cannot read {str(path)!r}: {_describe(error)}") from None
        try:
            status = os.fstat(self.file.fileno())
            if stat.S_ISREG(status.st_mode):
                self.size = status.st_size
        except (OSError, ValueError, io.UnsupportedOperation):
            pass

    def __iter__(self):
        try:
            while True:
                block = self.file.read(self.block)
                if not block:
                    return
                self.consumed += len(block)
                yield block
        except OSError as error:
            raise CommandError(f"cannot read {str(self.path)!r}: {_describe(error)}") from None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.file is not sys.stdin.buffer:
            self.file.close()


class OutputFile:
    """The output ``path`` (``None`` or ``"-"``: standard output), opened at once; :meth:`write`
    writes a block (a reader that went away, e.g. ``| head``, is not an error: the rest is
    dropped). A context manager."""
    def __init__(self, path):
        self.path = path
        try:
            self.file = sys.stdout.buffer if path in (None, "-") else open(path, "wb")
        except OSError as error:
            raise CommandError(f"cannot write {str(path)!r}: {_describe(error)}") from None

    def write(self, data):
        if self.file is None or not data:
            return
        try:
            self.file.write(data)
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            self.file = None
        except OSError as error:
            raise CommandError(f"cannot write {str(self.path)!r}: {_describe(error)}") from None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.file is None:
            return
        try:
            if self.file is sys.stdout.buffer:
                self.file.flush()
            else:
                self.file.close()
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except OSError as error:
            if exc[0] is None:
                raise CommandError(
                    f"cannot write {str(self.path)!r}: {_describe(error)}") from None


def write_json(path, data):
    """Write ``data`` as indented JSON to ``path`` (nothing if ``path`` is ``None``)."""
    if path is None:
        return
    try:
        with open(path, "w") as file:
            json.dump(data, file, indent=2)
            file.write("\n")
    except OSError as error:
        raise CommandError(f"cannot write {str(path)!r}: {_describe(error)}") from None


def progress(total, unit, description, *, threshold=PROGRESS_THRESHOLD):
    """A progress callback ``advance(n)`` and its closer: a tqdm bar on standard error when it is
    a terminal and ``total`` is at least ``threshold``; otherwise callbacks that do nothing."""
    if total < max(1, threshold) or not sys.stderr.isatty():
        return (lambda n: None), (lambda: None)
    from tqdm import tqdm
    bar = tqdm(total=total, unit=unit, unit_scale=True, desc=description, leave=False)
    return bar.update, bar.close


def parameter_help(name, defaults):
    """The help of a core parameter's option: what each core in ``defaults`` (``{core:
    default}``) accepts for parameter ``name`` (from the cores' own constants), and its default."""
    what = "error policy" if name == "errors" else name.replace("_", " ")
    cores = "; ".join(
        f"{core}: " + (", ".join(map(str, choices)) if (choices := parameter_choices(core, name))
                       else "any") + f" (default {defaults[core]})"
        for core in defaults)
    return f"{what} ({cores})"
