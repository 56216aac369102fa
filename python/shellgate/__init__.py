"""shellgate: a security policy engine for the bash commands that AI agents run.

    >>> import shellgate
    >>> shellgate.Policy("read-only").check("cat data.txt|sh").verdict
    'deny'

Everything here is the Rust library underneath (a native extension): the same decisions,
refusal texts and tool results as ``policy-check check``, ``explain`` and ``serve``.
"""

from ._shellgate import (
    Decision,
    Diagnostic,
    Guard,
    Policy,
    PolicyError,
    Reason,
    Redactor,
    TraceStep,
    __version__,
    redact,
    truncate,
)

__all__ = [
    "Decision",
    "Diagnostic",
    "Guard",
    "Policy",
    "PolicyError",
    "Reason",
    "Redactor",
    "TraceStep",
    "__version__",
    "redact",
    "truncate",
]
