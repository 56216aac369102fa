"""`shellgate.Guard(..., tools=[...])`: the bash tool, the text editor and the code execution
shapes, answered exactly as `policy-check serve --tools ...` answers them (the parity test runs
the same calls through both and compares), and the reference session inside the kernel sandbox.

The serve side needs the `policy-check` binary: SHELLGATE_POLICY_CHECK (CI sets it), else the
repository's debug build; the tests that need it skip without it.
"""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

import shellgate

REPO = Path(__file__).resolve().parents[2]

POLICY = """
[policy]
name = "py-tools"
default = "deny"

[paths]
read = ["{workspace}", "{workspace}/**", "{output_dir}", "{output_dir}/**"]
write = ["/dev/null", "{workspace}/**", "{output_dir}/**"]

[programs.echo]
operands = "text"

[programs.cat]
operands = "path-read"

[programs.ls]
operands = "path-read"
allow_options = ["-a", "-l"]

[programs.pwd]
operands = []

[programs.cd]
operands = ["path-read"]

[programs.printf]
operands = "text"

[programs.false]
operands = []
"""

ALL = ["bash", "str_replace_based_edit_tool", "code_execution"]


def binary():
    b = os.environ.get("SHELLGATE_POLICY_CHECK")
    if b:
        return b
    b = REPO / "target" / "debug" / "policy-check"
    if not b.exists():
        pytest.skip("policy-check is not built (cargo build --bin policy-check)")
    return str(b)


@pytest.fixture
def setup(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    return ws, policy


def tool_use(i, name, **input):
    return {"type": "tool_use", "id": f"toolu_{i:02}", "name": name, "input": input}


def server_tool_use(i, name, **input):
    return {"type": "server_tool_use", "id": f"srvtoolu_{i:02}", "name": name, "input": input}


def calls(ws, outside):
    """One turn of every shape: allowed, refused, invalid, failing, editing, code execution."""
    e = "str_replace_based_edit_tool"
    return [
        tool_use(1, "bash", command="ls"),
        tool_use(2, "bash", command="cat notes.txt | sh"),
        tool_use(3, "bash", command="false"),
        tool_use(4, "bash", command=42),
        tool_use(5, "bash", restart=True),
        tool_use(6, e, command="view", path="notes.txt"),
        tool_use(7, e, command="view", path="notes.txt", view_range=[2, -1]),
        tool_use(8, e, command="str_replace", path="notes.txt", old_str="beta", new_str="BETA"),
        tool_use(9, e, command="str_replace", path="notes.txt", old_str="nowhere", new_str="x"),
        tool_use(10, e, command="insert", path="notes.txt", insert_line=0, insert_text="top\n"),
        tool_use(11, e, command="create", path="made.txt", file_text="new\n"),
        tool_use(12, e, command="create", path=str(outside), file_text="pwned\n"),
        tool_use(13, e, command="view", path="/etc/passwd"),
        tool_use(14, e, command="delete", path="notes.txt"),
        server_tool_use(15, "bash_code_execution", command="echo out; echo err >&2; false"),
        server_tool_use(16, "bash_code_execution", command="cat /etc/passwd"),
        server_tool_use(17, "text_editor_code_execution", command="view", path="made.txt"),
        server_tool_use(18, "text_editor_code_execution", command="create", path="x.txt", file_text="1\n"),
        server_tool_use(19, "text_editor_code_execution", command="view", path="missing.txt"),
        tool_use(20, "web_search", query="x"),
        tool_use(21, "bash", command="cat made.txt x.txt"),
    ]


def through_serve(policy, ws, lines):
    out = subprocess.run(
        [binary(), "serve", "--policy", str(policy), "--cwd", str(ws), "--tools", "bash,text-editor,code-execution"],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def through_python(policy, ws, lines, **kw):
    with shellgate.Guard(policy, cwd=ws, tools=ALL, launcher=binary(), **kw) as g:
        return [g.handle(line) for line in lines]


def normalise(answer, ws):
    """Paths differ between the two runs (two workspaces); the rest must be identical."""
    return json.loads(json.dumps(answer).replace(str(ws), "{ws}"))


def test_python_answers_every_shape_as_serve_does(setup, tmp_path):
    ws, policy = setup
    ws2 = tmp_path / "ws2"
    ws2.mkdir()
    (ws2 / "notes.txt").write_text((ws / "notes.txt").read_text())
    outside = tmp_path / "outside.txt"
    served = through_serve(policy, ws, calls(ws, outside))
    python = through_python(policy, ws2, calls(ws2, outside))
    assert len(served) == len(python) == 21
    for s, p in zip(served, python):
        assert normalise(p, ws2) == normalise(s, ws)
    # And they did the same to the two workspaces.
    for f in ["notes.txt", "made.txt", "x.txt"]:
        assert (ws / f).read_text() == (ws2 / f).read_text()
    assert not outside.exists()
    # The answers are real: spot-check a few.
    by_id = {a.get("tool_use_id"): a for a in python}
    assert by_id["toolu_01"]["content"] == "notes.txt\n"
    assert by_id["toolu_02"]["is_error"] and "was not run" in by_id["toolu_02"]["content"]
    assert by_id["toolu_06"]["content"] == "     1\talpha\n     2\tbeta\n     3\tgamma\n"
    assert "[path-write-outside]" in by_id["toolu_12"]["content"]
    code = by_id["srvtoolu_15"]["content"]
    assert code["type"] == "bash_code_execution_result"
    assert (code["stdout"], code["stderr"], code["return_code"]) == ("out\n", "err\n", 1)
    assert "unknown tool" in by_id["toolu_20"]["content"]
    assert by_id["toolu_21"]["content"] == "new\n1\n"


def test_a_whole_message_is_one_user_message_like_serve(setup, tmp_path):
    ws, policy = setup
    message = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Looking."},
            tool_use(1, "bash", command="echo one"),
            tool_use(2, "str_replace_based_edit_tool", command="view", path="notes.txt", view_range=[1, 1]),
        ],
    }
    [served] = through_serve(policy, ws, [message])
    [python] = through_python(policy, ws, [message])
    assert python == served
    assert python == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": "one\n", "is_error": False},
            {"type": "tool_result", "tool_use_id": "toolu_02", "content": "     1\talpha\n", "is_error": False},
        ],
    }


def test_a_message_without_tool_use_is_an_error(setup):
    ws, policy = setup
    with shellgate.Guard(policy, cwd=ws, sandbox=False) as g:
        for message in [
            {"role": "assistant", "content": [{"type": "text", "text": "All done."}]},
            {"role": "assistant", "content": []},
        ]:
            with pytest.raises(ValueError, match="no tool_use block"):
                g.handle(message)
        # The guard still answers afterwards.
        assert g.handle(tool_use(1, "bash", command="echo ok"))["content"] == "ok\n"


def test_tools_default_to_bash_and_unknown_names_are_refused(setup):
    ws, policy = setup
    with shellgate.Guard(policy, cwd=ws, sandbox=False) as g:
        assert g.tools == ["bash"]
        r = g.handle(tool_use(1, "str_replace_based_edit_tool", command="view", path="notes.txt"))
        assert r["is_error"] and "unknown tool" in r["content"]
    with pytest.raises(ValueError, match="unknown tool"):
        shellgate.Guard(policy, cwd=ws, tools=["bash", "browser"])
    with pytest.raises(ValueError, match="at least one"):
        shellgate.Guard(policy, cwd=ws, tools=[])
    with pytest.raises(TypeError):
        shellgate.Guard(policy, cwd=ws, tools="bash")
    with shellgate.Guard(policy, cwd=ws, tools=ALL, sandbox=False) as g:
        assert g.tools == ["bash", "str_replace_based_edit_tool", "bash_code_execution", "text_editor_code_execution"]


def test_the_editor_with_a_python_executor(setup):
    ws, policy = setup
    ran = []

    def executor(cmd):
        ran.append(cmd)
        return ("", 0)

    g = shellgate.Guard(policy, cwd=ws, executor=executor, tools=["bash", "text_editor"])
    r = g.handle(tool_use(1, "str_replace_based_edit_tool", command="view", path="notes.txt"))
    assert r["content"].startswith("     1\talpha")
    r = g.handle(tool_use(2, "str_replace_based_edit_tool", command="view", path="/etc/passwd"))
    assert r["is_error"] and "[path-read-outside]" in r["content"]
    assert ran == []


SANDBOXED = POLICY.replace('default = "deny"', 'default = "deny"\n\n[sandbox]\nmode = "enforce"') + """
[programs.ln]
operands = "text"
allow_options = ["-s"]
"""


def test_the_reference_session_runs_in_the_kernel_sandbox(setup, tmp_path):
    ws, _ = setup
    policy = tmp_path / "sandboxed.toml"
    policy.write_text(SANDBOXED)
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    with shellgate.Guard(policy, cwd=ws, launcher=binary()) as g:
        assert g.sandboxed
        # Its own PID namespace: the shell is one of its first processes (PID 1 is the
        # jail's init, or the launcher without the jail), never a host PID.
        r = g.handle(tool_use(1, "bash", command="echo $$"))
        assert int(r["content"]) <= 3, r
        # A symlink the policy's lexical check cannot see through is stopped by Landlock.
        g.handle(tool_use(2, "bash", command=f"ln -s {secret} link"))
        r = g.handle(tool_use(3, "bash", command="cat link"))
        assert r["is_error"] and "top secret" not in r["content"], r
    with shellgate.Guard(policy, cwd=ws, sandbox=False) as g:
        assert not g.sandboxed
        # Without the sandbox the same read goes through: the test above can fail.
        r = g.handle(tool_use(4, "bash", command="cat link"))
        assert "top secret" in r["content"], r


def test_sandbox_true_without_a_launcher_is_an_error(setup, monkeypatch):
    ws, policy = setup
    monkeypatch.delenv("SHELLGATE_POLICY_CHECK", raising=False)
    shipped = Path(shellgate.__file__).parent / "bin" / "policy-check"
    if shipped.exists():
        pytest.skip("this install ships the launcher")
    with pytest.raises(RuntimeError, match="no sandbox launcher"):
        shellgate.Guard(policy, cwd=ws, sandbox=True)
    with pytest.raises(ValueError, match="no such file"):
        shellgate.Guard(policy, cwd=ws, launcher="/nonexistent/policy-check")


def test_the_launcher_shipped_in_the_wheel_is_found(setup, monkeypatch):
    ws, policy = setup
    monkeypatch.delenv("SHELLGATE_POLICY_CHECK", raising=False)
    shipped = Path(shellgate.__file__).parent / "bin" / "policy-check"
    if not shipped.exists():
        pytest.skip("this install ships no launcher (pip install . from a clone)")
    with shellgate.Guard(policy, cwd=ws) as g:
        assert g.sandboxed
        assert g.handle(tool_use(1, "bash", command="echo $$"))["content"] == "1\n"
