"""`policy-check`: the command-line tool, when the wheel ships its binary (the released
wheels do; `pip install .` from a clone does not: build it with `cargo install --path .`)."""

import os
import sys
from pathlib import Path


def binary() -> "Path | None":
    """The `policy-check` binary shipped in this package, if any."""
    b = Path(__file__).resolve().parent / "bin" / "policy-check"
    return b if b.is_file() else None


def main() -> None:
    b = binary()
    if b is None:
        sys.stderr.write(
            "policy-check: this shellgate install ships no policy-check binary "
            "(an install from a clone builds only the Python module): "
            "`cargo install --path .` in the repository, or `pip install shellgate` from PyPI\n"
        )
        sys.exit(2)
    os.execv(str(b), [str(b), *sys.argv[1:]])


if __name__ == "__main__":
    main()
