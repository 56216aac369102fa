"""The Python package against real behaviour: the native extension, the reference bash
session, and Python executors. Run with `pytest python/tests` after `pip install .`."""

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import shellgate

REPO = Path(__file__).resolve().parents[2]

POLICY = """
[policy]
name = "py-test"
default = "deny"

[paths]
read = ["{workspace}", "{workspace}/**"]
write = ["/dev/null", "{workspace}/**"]

[programs.echo]
operands = "text"

[programs.cat]
operands = "path-read"

[programs.pwd]
operands = []

[programs.cd]
operands = ["path-read"]

[programs.sleep]
operands = "text"
"""

# A credential the built-in rules redact (random-looking, so the entropy check fires).
TOKEN = "ghp_q7rk2vbn9wlmz4xt8yh3pjc6dfgs1uawQ7Rk"


@pytest.fixture
def ws(tmp_path):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "data.txt").write_text("hello\n")
    return ws


@pytest.fixture
def policy(tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    return shellgate.Policy(path)


def tool_use(id, command):
    return {"type": "tool_use", "id": id, "name": "bash", "input": {"command": command}}


# --- Policy and Decision ---------------------------------------------------------------


def test_the_acceptance_command_is_denied_with_its_reason():
    d = shellgate.Policy("read-only").check("cat data.txt|sh")
    assert d.verdict == "deny"
    assert not d.allowed and not d
    codes = [r.code for r in d.reasons]
    assert "wrapper-denied" in codes or "wrapper-unverifiable" in codes
    r = d.reasons[0]
    assert "cat data.txt|sh".encode()[r.span[0] : r.span[1]] == b"sh"
    assert r.verdict == "deny" and r.message


def test_an_allowed_pipeline_has_no_reasons(tmp_path):
    d = shellgate.Policy("read-only").check("cat data.txt | grep x", cwd=tmp_path)
    assert (d.verdict, d.allowed, d.reasons, bool(d)) == ("allow", True, [], True)
    assert d.explain().startswith("allow: cat data.txt | grep x\ndecided by:\n")
    assert d.for_model() == ""


def test_an_allowed_command_is_traced_to_its_rules(tmp_path):
    d = shellgate.Policy("read-only").check("ls -la src/", cwd=tmp_path)
    assert d.allowed
    steps = [(s.part, s.text, s.rule, s.key, s.entry, s.verdict) for s in d.trace]
    assert steps[0] == ("program", "ls", "programs.ls", None, None, "allow")
    options = [s for s in steps if s[0] == "option"]
    assert [o[4] for o in options] == ["-l", "-a"]
    assert all(o[2] == "programs.ls" and o[3] == "options" for o in options)
    path = next(s for s in d.trace if s.part == "path")
    assert (path.text, path.rule, path.entry) == ("src/", "paths.read", "{workspace}/**")
    assert path.rule_location.startswith("shipped:read-only:")
    assert "programs.ls options" in d.explain()
    assert [s["part"] for s in __import__("json").loads(d.to_json())["trace"]] == [
        s.part for s in d.trace
    ]


def test_every_refusal_names_a_rule_builtin_checks_included(tmp_path):
    d = shellgate.Policy("read-only").check("cat data.txt|sh", cwd=tmp_path)
    r = next(r for r in d.reasons if r.code == "wrapper-denied")
    assert (r.rule, r.rule_location) == ("builtin:wrapper-denied", "<built-in>")
    refused = [s for s in d.trace if s.verdict == "deny"]
    assert [(s.part, s.text, s.rule) for s in refused] == [
        ("wrapper", "sh", "builtin:wrapper-denied")
    ]


def test_reasons_name_their_rule(policy, ws):
    d = policy.check("cat /etc/shadow", cwd=ws)
    assert d.verdict == "deny"
    r = d.reasons[0]
    assert r.rule is not None and r.rule.startswith("paths")
    assert r.rule_location is not None
    assert "cat /etc/shadow"[r.span[0] : r.span[1]] == "/etc/shadow"


def test_cwd_and_workspace_decide_paths(policy, ws, tmp_path):
    assert policy.check("cat data.txt", cwd=ws).verdict == "allow"
    # The workspace is the cwd unless told: from sub/, the parent is outside it.
    sub = ws / "sub"
    assert policy.check("cat ../data.txt", cwd=sub).verdict == "deny"
    assert policy.check("cat ../data.txt", cwd=sub, workspace=ws).verdict == "allow"
    assert policy.check("cat ../data.txt", cwd=str(sub), workspace=[tmp_path / "other", str(ws)]).verdict == "allow"
    assert policy.check("cat /etc/hostname", cwd=sub, workspace=[ws]).verdict == "deny"
    with pytest.raises(ValueError):
        policy.check("cat x", workspace=[])


def test_hostile_commands_are_denials_not_crashes(policy):
    for cmd in ["\x00", "$(" * 5000, "echo 'unterminated", "a" * 100_000, "x=$(rm -rf /)", "echo ok\x00; rm -rf /"]:
        d = policy.check(cmd)
        assert d.verdict == "deny", cmd[:40]
        assert d.reasons and all(r.code for r in d.reasons)


def test_explain_is_the_text_of_policy_check_explain(tmp_path):
    binary = os.environ.get("SHELLGATE_POLICY_CHECK")
    if binary is None:  # CI names it; elsewhere use the repository's debug build if there is one.
        binary = REPO / "target" / "debug" / "policy-check"
        if not binary.exists():
            pytest.skip("policy-check is not built (cargo build --bin policy-check)")
    cmd = "find . -delete; cat data.txt|sh"
    cli = subprocess.run(
        [str(binary), "explain", "--policy", "read-only", "--cwd", str(tmp_path), cmd],
        capture_output=True,
        text=True,
    )
    assert cli.returncode != 0
    d = shellgate.Policy("read-only").check(cmd, cwd=tmp_path)
    assert d.explain() == cli.stdout
    assert "^" in d.explain() and "decision: deny" in d.explain()


def test_to_json_is_the_check_json_line():
    d = shellgate.Policy("read-only").check("rm -rf /")
    import json

    obj = json.loads(d.to_json())
    assert obj["decision"] == "deny" and obj["command"] == "rm -rf /"
    assert [r["code"] for r in obj["reasons"]] == [r.code for r in d.reasons]


def test_a_policy_is_shared_across_threads():
    p = shellgate.Policy("developer")
    cmds = ["git status", "rm -rf /", "cat README.md | sh", "ls -la"]
    expected = [p.check(c).verdict for c in cmds]
    seen = []
    errors = []

    def work():
        try:
            for _ in range(100):
                seen.append([p.check(c).verdict for c in cmds])
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(seen) == 800 and all(s == expected for s in seen)
    assert expected[1] == "deny"


# --- Policy errors -----------------------------------------------------------------------


def test_policy_errors_carry_every_diagnostic_with_its_place(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('[programs.echo]\noperands = 3\n\n[bogus]\nx = 1\n')
    with pytest.raises(shellgate.PolicyError) as info:
        shellgate.Policy(str(path))
    diags = info.value.diagnostics
    got = [(d.code, d.file, d.line, d.column) for d in diags]
    assert ("policy-type", str(path), 2, 12) in got
    assert ("policy-unknown-key", str(path), 4, 2) in got
    assert all(d.message for d in diags)
    assert "policy-unknown-key" in str(info.value)
    assert isinstance(info.value, Exception)


def test_a_syntax_error_and_a_missing_file(tmp_path):
    with pytest.raises(shellgate.PolicyError) as info:
        shellgate.Policy.from_toml("[programs\n", "inline.toml")
    (d,) = info.value.diagnostics
    assert (d.code, d.file, d.line) == ("policy-syntax", "inline.toml", 1)
    with pytest.raises(shellgate.PolicyError) as info:
        shellgate.Policy(tmp_path / "missing.toml")
    (d,) = info.value.diagnostics
    assert d.code == "policy-unreadable" and d.file.endswith("missing.toml")
    # An unknown name that is no file is an error too, never a permissive default.
    with pytest.raises(shellgate.PolicyError):
        shellgate.Policy("no-such-policy")


# --- redact, truncate, Redactor ----------------------------------------------------------


def test_redact_keeps_the_type():
    text = f"token={TOKEN} done"
    out = shellgate.redact(text)
    assert isinstance(out, str) and TOKEN not in out and "[REDACTED:" in out
    assert out.endswith(" done")
    raw = shellgate.redact(b"\xff\xfe " + TOKEN.encode() + b" \x00")
    assert isinstance(raw, bytes) and TOKEN.encode() not in raw and raw.startswith(b"\xff\xfe ")
    assert shellgate.redact("nothing here") == "nothing here"
    with pytest.raises(TypeError):
        shellgate.redact(42)


def test_truncate_keeps_head_and_tail_within_budget():
    text = "\n".join(f"line {i}" for i in range(10_000))
    out = shellgate.truncate(text, max_bytes=2000, max_lines=50)
    assert len(out.encode()) <= 2000 and out.count("\n") + 1 <= 50
    assert out.startswith("line 0\n") and out.endswith("line 9999")
    assert "omitted" in out
    assert shellgate.truncate("short") == "short"
    assert isinstance(shellgate.truncate(b"\xff bytes"), str)


def test_redactor_catches_a_secret_split_across_chunks():
    data = ("x" * 50 + " " + TOKEN + " tail\n").encode()
    for size in (1, 3, 7, len(data)):
        r = shellgate.Redactor()
        out = b"".join(r.feed(data[i : i + size]) for i in range(0, len(data), size))
        out += r.finish()
        assert TOKEN.encode() not in out and b"[REDACTED:" in out, size
        assert out.endswith(b" tail\n")
        with pytest.raises(ValueError):
            r.feed(b"more")


# --- Guard with a Python executor ------------------------------------------------------


class Recorder:
    def __init__(self, answers=None):
        self.ran = []
        self.answers = answers or {}

    def __call__(self, command):
        self.ran.append(command)
        return self.answers.get(command, (f"ran {command}\n", 0))


def test_a_refused_command_never_reaches_the_executor(policy, ws):
    rec = Recorder()
    with shellgate.Guard(policy, cwd=ws, executor=rec) as g:
        for i, cmd in enumerate(["rm -rf /", "cat data.txt|sh", "echo $(curl evil)", "cat /etc/passwd"]):
            res = g.handle(tool_use(f"t{i}", cmd))
            assert res["type"] == "tool_result" and res["tool_use_id"] == f"t{i}"
            assert res["is_error"] is True and "not run" in res["content"], res
        ok = g.handle(tool_use("t9", "echo hi"))
    assert ok == {"type": "tool_result", "tool_use_id": "t9", "content": "ran echo hi\n", "is_error": False}
    assert rec.ran == ["echo hi"]


def test_exit_status_output_and_redaction(policy, ws):
    rec = Recorder(
        {
            "echo fail": (b"partial", 3),
            "echo killed": ("", None),
            "echo quiet": ("", 0),
            "echo secret": (f"key {TOKEN}\n", 0),
        }
    )
    g = shellgate.Guard(policy, cwd=ws, executor=rec)
    assert g.handle(tool_use("a", "echo fail")) == {
        "type": "tool_result",
        "tool_use_id": "a",
        "content": "partial\nexit status 3",
        "is_error": True,
    }
    assert g.handle(tool_use("b", "echo killed"))["content"] == "exit status unknown (killed by a signal)"
    assert g.handle(tool_use("c", "echo quiet"))["content"] == "(no output)"
    secret = g.handle(tool_use("d", "echo secret"))
    assert TOKEN not in secret["content"] and "[REDACTED:" in secret["content"]
    g.close()


def test_executor_failures(policy, ws):
    def boom(command):
        raise ValueError("disk on fire")

    g = shellgate.Guard(policy, cwd=ws, executor=boom)
    res = g.handle(tool_use("x", "echo hi"))
    assert res["is_error"] and "ValueError: disk on fire" in res["content"]

    # A wrong return value is the application's bug: raised, not hidden from it.
    g = shellgate.Guard(policy, cwd=ws, executor=lambda c: "just a string")
    with pytest.raises(TypeError):
        g.handle(tool_use("y", "echo hi"))
    g = shellgate.Guard(policy, cwd=ws, executor=lambda c: ("x", True))
    with pytest.raises(TypeError):
        g.handle(tool_use("y", "echo hi"))

    # KeyboardInterrupt is not swallowed.
    def interrupted(command):
        raise KeyboardInterrupt

    g = shellgate.Guard(policy, cwd=ws, executor=interrupted)
    with pytest.raises(KeyboardInterrupt):
        g.handle(tool_use("z", "echo hi"))

    with pytest.raises(TypeError):
        shellgate.Guard(policy, cwd=ws, executor=42)


def test_an_executor_calling_its_own_guard_does_not_deadlock(policy, ws):
    holder = {}

    def reentrant(command):
        return (str(holder["g"].handle(tool_use("inner", "echo x"))), 0)

    g = holder["g"] = shellgate.Guard(policy, cwd=ws, executor=reentrant)
    res = g.handle(tool_use("outer", "echo hi"))
    assert res["is_error"] and "RuntimeError" in res["content"] and "own executor" in res["content"]


def test_one_guard_shared_by_threads_runs_one_call_at_a_time(policy, ws):
    inside = []
    overlaps = []
    lock = threading.Lock()

    def executor(command):
        with lock:
            if inside:
                overlaps.append(command)
            inside.append(command)
        time.sleep(0.001)  # let other threads try to get in (the GIL is free here)
        with lock:
            inside.remove(command)
        return command.upper(), 0

    g = shellgate.Guard(policy, cwd=ws, executor=executor)
    answers = {}

    def work(n):
        for i in range(20):
            id = f"t{n}-{i}"
            answers[id] = g.handle(tool_use(id, f"echo {id}"))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert overlaps == []
    assert len(answers) == 80
    assert all(a["tool_use_id"] == id and a["content"] == f"ECHO {id.upper()}" for id, a in answers.items())
    g.close()


def test_text_that_is_not_unicode_is_an_error_not_a_crash(policy, ws):
    with pytest.raises(UnicodeEncodeError):
        policy.check("echo \udcff")
    g = shellgate.Guard(policy, cwd=ws, executor=Recorder())
    with pytest.raises(UnicodeEncodeError):
        g.handle(tool_use("s", "echo \udcff"))
    with pytest.raises(ValueError):
        g.handle({"type": "tool_use", "id": "n", "name": "bash", "input": {"command": "echo", "x": float("nan")}})


def test_invalid_calls_are_answered_or_refused(policy, ws):
    rec = Recorder()
    g = shellgate.Guard(policy, cwd=ws, executor=rec)
    res = g.handle({"type": "tool_use", "id": "u", "name": "python", "input": {"code": "1"}})
    assert res["is_error"] and "unknown tool" in res["content"]
    res = g.handle({"type": "tool_use", "id": "v", "name": "bash", "input": {"command": 7}})
    assert res["is_error"] and "`command` must be a string" in res["content"]
    res = g.handle({"type": "tool_use", "id": "w", "name": "bash", "input": {"command": "echo", "restart": True}})
    assert res["is_error"]
    with pytest.raises(ValueError, match="expected a tool_use block"):
        g.handle({"role": "assistant"})
    with pytest.raises(TypeError):
        g.handle(object())
    deep = []
    for _ in range(10_000):
        deep = [deep]
    with pytest.raises(ValueError, match="nested"):
        g.handle({"content": deep})
    assert rec.ran == []


# --- the agent loop ------------------------------------------------------------------------


class FakeBlock:
    """Like the SDK's pydantic content blocks: attributes and .model_dump()."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def model_dump(self):
        return dict(self.__dict__)


class FakeMessage:
    def __init__(self, content, stop_reason):
        self.id = "msg_fake"
        self.role = "assistant"
        self.type = "message"
        self.content = content
        self.stop_reason = stop_reason
        self.dumped_as = None

    def model_dump(self, mode="python"):
        self.dumped_as = mode
        return {
            "id": self.id,
            "type": self.type,
            "role": self.role,
            "content": [b.model_dump() for b in self.content],
            "stop_reason": self.stop_reason,
        }


class FakeClient:
    """Plays a scripted model: each turn asks for some bash calls, then it is done."""

    def __init__(self, turns):
        self.turns = list(turns)
        self.requests = []

    def create(self, messages):
        self.requests.append([m if isinstance(m, dict) else m.model_dump() for m in messages])
        if not self.turns:
            return FakeMessage([FakeBlock(type="text", text="All done.")], "end_turn")
        blocks = [FakeBlock(type="text", text="Let me look.")]
        for id, cmd in self.turns.pop(0):
            blocks.append(FakeBlock(type="tool_use", id=id, name="bash", input={"command": cmd}))
        return FakeMessage(blocks, "tool_use")


def test_a_full_agent_loop_against_a_fake_sdk(policy, ws):
    client = FakeClient(
        [
            [("toolu_1", "pwd"), ("toolu_2", "cat data.txt|sh")],
            [("toolu_3", "cd sub"), ("toolu_4", "pwd")],
            [("toolu_5", "cat ../data.txt"), ("toolu_6", "cat ../../x")],
        ]
    )
    ran = []

    class Shell:
        """An executor that keeps a working directory; its `cwd` tells the guard."""

        def __init__(self, cwd):
            self.cwd = str(cwd)

        def __call__(self, command):
            ran.append(command)
            if command.startswith("cd "):
                self.cwd = os.path.normpath(os.path.join(self.cwd, command[3:]))
                return "", 0
            done = subprocess.run(["bash", "-c", command], cwd=self.cwd, capture_output=True, text=True)
            return done.stdout + done.stderr, done.returncode

    executor = Shell(ws)

    messages = [{"role": "user", "content": "Look around."}]
    with shellgate.Guard(policy, cwd=ws, executor=executor) as guard:
        response = client.create(messages)
        turns = 0
        while response.stop_reason == "tool_use":
            messages.append({"role": "assistant", "content": response.content})
            answer = guard.handle(response)
            assert response.dumped_as == "json"  # pydantic's JSON-safe dump
            messages.append(answer)
            response = client.create(messages)
            turns += 1
    assert turns == 3 and response.stop_reason == "end_turn"
    user_turns = [m for m in messages[1:] if m["role"] == "user"]
    assert all(m["role"] == "user" and len(m["content"]) == 2 for m in user_turns)
    results = {r["tool_use_id"]: r for m in user_turns for r in m["content"]}
    assert list(results) == [f"toolu_{i}" for i in range(1, 7)]
    assert results["toolu_1"] == {"type": "tool_result", "tool_use_id": "toolu_1", "content": f"{ws}\n", "is_error": False}
    for refused in ("toolu_2", "toolu_6"):
        assert results[refused]["is_error"] and "not run" in results[refused]["content"]
    assert results["toolu_3"]["content"] == "(no output)"
    assert results["toolu_4"]["content"] == f"{ws / 'sub'}\n"
    # Checked against the executor's cwd (sub/): the parent is the workspace, its parent is not.
    assert results["toolu_5"]["content"] == "hello\n"
    assert ran == ["pwd", "cd sub", "pwd", "cat ../data.txt"]
    # A plain object with a `content` list of plain objects works too.
    with shellgate.Guard(policy, cwd=ws, executor=Shell(ws)) as guard:
        msg = SimpleNamespace(content=[SimpleNamespace(type="tool_use", id="t", name="bash", input={"command": "echo ok"})])
        assert guard.handle(msg) == {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok\n", "is_error": False}],
        }


# --- Guard with the reference bash session ----------------------------------------------


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_reference_session_keeps_state_and_is_guarded(policy, ws):
    with shellgate.Guard(policy, cwd=ws) as g:
        assert g.cwd == str(ws)
        assert g.handle(tool_use("a", "cd sub"))["is_error"] is False
        assert g.cwd == str(ws / "sub")
        assert g.handle(tool_use("b", "pwd"))["content"] == f"{ws / 'sub'}\n"
        # Paths are checked against the session's real cwd.
        assert g.handle(tool_use("c", "cat ../data.txt"))["content"] == "hello\n"
        res = g.handle(tool_use("d", "cat ../../../etc/passwd"))
        assert res["is_error"] and "not run" in res["content"]
        assert g.handle({"type": "tool_use", "id": "e", "name": "bash", "input": {"restart": True}})["content"] == "tool has been restarted."
        assert g.cwd == str(ws)
    assert g.closed
    with pytest.raises(RuntimeError, match="closed"):
        g.handle(tool_use("f", "pwd"))
    g.close()  # twice is harmless


def test_a_guard_takes_a_policy_name_and_refuses_a_bad_cwd(tmp_path):
    with shellgate.Guard("read-only", cwd=tmp_path) as g:
        assert g.handle(tool_use("a", "cat data.txt|sh"))["is_error"]
    with pytest.raises(RuntimeError, match="not a directory"):
        shellgate.Guard("read-only", cwd=tmp_path / "missing")
    with pytest.raises(shellgate.PolicyError):
        shellgate.Guard("no-such-policy", cwd=tmp_path)
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            shellgate.Guard("read-only", cwd=tmp_path, timeout=bad)


def test_a_timeout_in_the_reference_session(policy, ws):
    with shellgate.Guard(policy, cwd=ws, timeout=1) as g:
        started = time.monotonic()
        res = g.handle(tool_use("t", "echo before; sleep 30"))
        elapsed = time.monotonic() - started
        assert elapsed < 10, elapsed
        assert res["is_error"] and "Error: command timed out after 1 second" in res["content"]
        assert res["content"].startswith("before\n")
        # The session is usable afterwards.
        assert g.handle(tool_use("u", "echo after"))["content"] == "after\n"


def test_a_timeout_from_a_python_executor(policy, ws):
    def slow(command):
        raise subprocess.TimeoutExpired(command, 2, output=b"half done\n")

    with shellgate.Guard(policy, cwd=ws, timeout=2, executor=slow) as g:
        res = g.handle(tool_use("t", "echo hi"))
    assert res["is_error"]
    assert res["content"] == "half done\nError: command timed out after 2 seconds"

    def slow2(command):
        raise TimeoutError

    with shellgate.Guard(policy, cwd=ws, timeout=0.5, executor=slow2) as g:
        assert "timed out after 0.5 seconds" in g.handle(tool_use("t", "echo hi"))["content"]


def test_the_gil_is_released_while_a_command_runs(policy, ws):
    with shellgate.Guard(policy, cwd=ws) as g:
        ticks = []
        done = threading.Event()

        def run():
            g.handle(tool_use("s", "sleep 1"))
            done.set()

        t = threading.Thread(target=run)
        t.start()
        while not done.is_set():
            ticks.append(1)
            time.sleep(0.01)
        t.join()
    # Had the GIL been held for the second the command ran, this thread could not have run.
    assert len(ticks) > 20, len(ticks)


def test_the_package_is_typed():
    pkg = Path(shellgate.__file__).parent
    assert (pkg / "py.typed").exists() and (pkg / "_shellgate.pyi").exists()
    assert shellgate.__version__ and sys.version_info >= (3, 9)


# --- Snapshots and undo ----------------------------------------------------------------


def test_a_guard_with_snapshots_undoes_what_its_calls_destroyed(policy, ws, tmp_path, monkeypatch):
    monkeypatch.setenv("SHELLGATE_STATE_DIR", str(tmp_path / "state"))
    (ws / "notes.txt").write_text("keep me\n")
    with shellgate.Guard(policy, cwd=ws, snapshots=True) as g:
        assert g.handle(tool_use("r", "cat notes.txt"))["is_error"] is False
        assert g.handle(tool_use("w1", "echo one > notes.txt"))["is_error"] is False
        assert g.handle(tool_use("w2", f"echo {TOKEN} > sub/new.txt"))["is_error"] is False
        history = g.history()
        assert [h["id"] for h in history] == ["w1", "w2"]  # the read took none
        assert history[0]["changes"]["changed"] == ["notes.txt"]
        assert history[1]["changes"]["added"] == ["sub/new.txt"]
        assert TOKEN not in str(history)
        report = g.undo()
        assert report["restored"]["id"] == "w2"
        assert report["changes"]["removed"] == ["sub/new.txt"]
        assert (ws / "notes.txt").read_text() == "one\n"
        g.undo(to="w1")
        assert (ws / "notes.txt").read_text() == "keep me\n"
        g.undo(to=report["undo_id"])
        assert (ws / "sub/new.txt").exists()
    with shellgate.Guard(policy, cwd=ws) as plain:
        with pytest.raises(RuntimeError, match="snapshots=True"):
            plain.history()
