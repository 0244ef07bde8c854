"""The ArgumentParser of ``omnistudio`` and of every subcommand: a usage error is one line."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

EXIT_USER_ERROR = 2


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (no usage dump)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_USER_ERROR)
