"""Type stubs for the native extension (shellgate._shellgate)."""

import os
from typing import Any, Callable, Iterable, Literal, Optional, Tuple, Union, overload

__version__: str

StrPath = Union[str, "os.PathLike[str]"]
Verdict = Literal["allow", "ask", "deny"]
ToolResult = dict[str, Any]
"""``{"type": "tool_result", "tool_use_id": str, "content": str, "is_error": bool}``"""
UserMessage = dict[str, Any]
"""``{"role": "user", "content": [ToolResult, ...]}``"""
Executor = Callable[[str], Tuple[Union[str, bytes], Optional[int]]]
"""Runs one command: returns (output, exit_status); exit_status None means killed by a signal.
Raising TimeoutError or subprocess.TimeoutExpired answers the timeout result (with its
``output``, if any); any other Exception is an is_error result naming it; a BaseException that is
not an Exception (KeyboardInterrupt) and a malformed return value are raised from Guard.handle.
An executor object with a ``cwd`` attribute (an absolute path) tells the guard where the next
command runs, so that relative paths are checked against it."""

class Diagnostic:
    """One problem in a policy file."""

    @property
    def code(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def file(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def column(self) -> int: ...

class PolicyError(Exception):
    """A policy could not be loaded; ``diagnostics`` lists every problem found."""

    diagnostics: list[Diagnostic]

class Reason:
    """One finding: why (part of) a command is not simply allowed."""

    @property
    def code(self) -> str: ...
    @property
    def verdict(self) -> Verdict: ...
    @property
    def message(self) -> str: ...
    @property
    def rule(self) -> Optional[str]:
        """The dotted name of the rule responsible, such as ``programs.find``, or
        ``builtin:<code>`` when no rule of the policy decided it (never None from ``check``)."""
    @property
    def rule_location(self) -> Optional[str]:
        """Where that rule is written: ``file:line:col``."""
    @property
    def span(self) -> Tuple[int, int]:
        """(start, end) UTF-8 byte offsets into the command."""

class TraceStep:
    """One step of a decision's trace: a part of the command and the rule that decided it."""

    @property
    def part(self) -> str:
        """``program``, ``subcommand``, ``wrapper``, ``option``, ``operand``, ``path``,
        ``redirect``, ``assignment``, ``expansion``, ``command`` or ``syntax``."""
    @property
    def text(self) -> str:
        """The text of the part in the command."""
    @property
    def span(self) -> Tuple[int, int]:
        """(start, end) UTF-8 byte offsets into the command."""
    @property
    def rule(self) -> str:
        """The rule that decided it: ``programs.ls``, ``paths.read``, or ``builtin:<code>``."""
    @property
    def rule_location(self) -> str:
        """Where that rule is written: ``file:line:col``, or ``<built-in>``."""
    @property
    def key(self) -> Optional[str]:
        """The key of the rule that applied (``allow_options``, ``operands``), if one did."""
    @property
    def entry(self) -> Optional[str]:
        """The entry that matched (the option ``-l``, the pattern ``{workspace}/**``)."""
    @property
    def verdict(self) -> Verdict: ...

class Decision:
    """The outcome of checking one command."""

    @property
    def verdict(self) -> Verdict: ...
    @property
    def allowed(self) -> bool: ...
    @property
    def command(self) -> str: ...
    @property
    def reasons(self) -> list[Reason]: ...
    @property
    def trace(self) -> list[TraceStep]:
        """Which rule decided each part of the command (allowed parts too), in source order."""
    def explain(self) -> str:
        """The text of ``policy-check explain``."""
    def for_model(self) -> str:
        """What the model is told when the command is refused (empty when allowed)."""
    def to_json(self) -> str:
        """The decision as ``policy-check check --format json`` prints it."""
    def __bool__(self) -> bool: ...

class Policy:
    """A compiled policy: a shipped name (``"read-only"``, ``"developer"``) or a TOML file.
    Immutable and safe to share across threads."""

    def __init__(self, name_or_path: StrPath) -> None: ...
    @staticmethod
    def from_toml(text: str, origin: str = "<string>") -> Policy: ...
    @property
    def name(self) -> str: ...
    def check(
        self,
        command: str,
        cwd: StrPath = ".",
        workspace: Union[StrPath, Iterable[StrPath], None] = None,
    ) -> Decision: ...

@overload
def redact(text: str) -> str: ...
@overload
def redact(text: bytes) -> bytes: ...
def truncate(text: Union[str, bytes], max_bytes: int = 30000, max_lines: int = 400) -> str: ...

class Redactor:
    """Streaming redaction of chunks (a secret split across chunks is still redacted)."""

    def __init__(self) -> None: ...
    def feed(self, chunk: Union[str, bytes]) -> bytes: ...
    def finish(self) -> bytes: ...

ToolName = Literal[
    "bash",
    "str_replace_based_edit_tool",
    "text_editor",
    "code_execution",
    "bash_code_execution",
    "text_editor_code_execution",
]
"""A tool shape ``Guard`` answers: the bash tool, the text editor tool, the code execution tool's
sub-tools (``code_execution`` names both)."""

class Guard:
    """Checks each ``tool_use`` of the enabled tools against a policy, runs what is allowed, and
    answers exactly as ``policy-check serve --tools ...`` does: ``tool_result`` blocks for
    ``bash`` and ``str_replace_based_edit_tool``, the typed ``*_code_execution_*_result`` blocks for
    code execution. Without ``executor``, commands run in the reference bash session (one
    persistent bash process in ``cwd``, killed with everything it started on close), inside the
    kernel sandbox when a launcher is found: ``launcher``, else ``$SHELLGATE_POLICY_CHECK``, else
    the ``policy-check`` binary shipped in the wheel. ``sandbox=True`` requires it, ``False`` never
    uses it, ``None`` (the default) uses it when found (see ``sandboxed``)."""

    def __init__(
        self,
        policy: Union[Policy, StrPath],
        cwd: StrPath = ".",
        timeout: float = 30.0,
        executor: Optional[Executor] = None,
        *,
        tools: Optional[Iterable[ToolName]] = None,
        sandbox: Optional[bool] = None,
        launcher: Optional[StrPath] = None,
        snapshots: bool = False,
    ) -> None: ...
    def handle(self, obj: Any) -> dict[str, Any]:
        """A ``tool_use`` (or ``server_tool_use``) block gives its result block; an assistant
        message or API response (a dict with a ``content`` list, an object with
        ``.model_dump()`` or a ``content`` attribute) gives the user message dict answering each
        call in it, in order. A message with no call to answer raises ValueError (append no
        user message for it), as does anything else that is not a call."""
    @property
    def tools(self) -> list[str]:
        """The tool names answered (``code_execution`` shows as its two sub-tools)."""
    @property
    def sandboxed(self) -> bool:
        """Whether the reference session runs inside the kernel sandbox."""
    def history(self) -> list[dict[str, Any]]:
        """With ``snapshots=True``: every snapshot of the workspace, oldest first (``seq``,
        ``id``, ``kind``, ``time``, ``tool``, ``command`` redacted, and ``changes`` with the
        ``added``, ``changed`` and ``removed`` paths of that call)."""
    def undo(self, to: Optional[str] = None) -> dict[str, Any]:
        """With ``snapshots=True``: restore the workspace to before the latest call that
        changed it (repeat to walk back), or to before the call with tool_use id ``to``.
        Returns what was restored; ``to=report["undo_id"]`` undoes the undo."""
    @property
    def cwd(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self) -> Guard: ...
    def __exit__(self, *args: object) -> bool: ...
