"""``render -`` and ``say -``: standard input read as it arrives (``llm ... | omnistudio say - --play``), each
sentence spoken once text follows it, the file finished when the input ends (:mod:`omnistudio.take.incoming`).

The input is read in whatever pieces the pipe gives (not line by line: a model writing tokens sends no line
breaks), decoded as UTF-8 incrementally; what is not UTF-8, and text over the script limit, is one line and
the take ends with what was complete."""

from __future__ import annotations

import codecs
import os
import sys
import threading

from omnistudio.errors import UserError
from omnistudio.take.incoming import IncomingScript

STDIN = "-"
READ_BYTES = 4096


def is_stdin(path: object) -> bool:
    return str(path) == STDIN


def check_stdin() -> None:
    """Refuse, in one line, standard input that is a terminal (nothing is piped in)."""
    if sys.stdin is None or sys.stdin.isatty():
        raise UserError("- reads the text from standard input: pipe it in (e.g. echo 'Good evening.' | "
                        "omnistudio say - --voice ruby --play)")


def feed_stdin(script: IncomingScript, fd: int | None = None) -> threading.Thread:
    """A daemon thread that feeds standard input (``fd``) into ``script`` as it arrives and closes it at the end."""
    source = sys.stdin.fileno() if fd is None else fd

    def pump() -> None:
        decoder = codecs.getincrementaldecoder("utf-8-sig")()  # a byte-order mark is no text
        try:
            while True:
                data = os.read(source, READ_BYTES)
                text = decoder.decode(data, final=not data)
                if text:
                    script.append(text)
                if not data:
                    script.close()
                    return
        except UnicodeDecodeError:
            script.fail(UserError("standard input is not UTF-8 text"))
        except UserError:
            return  # over the limit: the script said so and closed itself
        except OSError as exc:
            script.fail(UserError(f"reading standard input failed: {exc.strerror}"))

    thread = threading.Thread(target=pump, name="omnistudio-stdin", daemon=True)
    thread.start()
    return thread
