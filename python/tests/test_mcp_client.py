"""`policy-check mcp` driven by the official MCP Python SDK's client (`pip install mcp`).

Opt-in for local runs: SHELLGATE_MCP_TEST=1 and SHELLGATE_POLICY_CHECK=path/to/policy-check
(.ci/run sets both). Each test starts its own server in a fresh workspace with the shipped
`developer` policy and runs twice: through the SDK's stdio transport, and through its
Streamable HTTP transport against `policy-check mcp --http 127.0.0.1:0`; both with the SDK's
default connect mode (`server/discover`, then the `initialize` fallback the server answers).
"""

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

if os.environ.get("SHELLGATE_MCP_TEST") != "1":
    pytest.skip("set SHELLGATE_MCP_TEST=1 to run the MCP client tests", allow_module_level=True)

anyio = pytest.importorskip("anyio")
mcp = pytest.importorskip("mcp")
mcp_types = pytest.importorskip("mcp_types")

from mcp.client import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

BINARY = os.environ.get("SHELLGATE_POLICY_CHECK", "policy-check")
LISTENING = "policy-check mcp: listening on "


def start_http(args: list[str]) -> tuple[subprocess.Popen, str]:
    """`policy-check mcp ... --http 127.0.0.1:0`: the process and the URL it prints."""
    proc = subprocess.Popen(
        [BINARY, *args, "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    line = proc.stderr.readline().decode()
    assert line.startswith(LISTENING), line
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    return proc, line[len(LISTENING) :].strip()


@pytest.fixture(params=["stdio", "http"])
def server(request):
    """`server(workspace, *extra)`: what `Client` connects to, over stdio or HTTP."""
    started = []

    def make(workspace: Path, *extra: str):
        args = ["mcp", "--policy", "developer", "--cwd", str(workspace), *extra]
        if request.param == "stdio":
            return StdioServerParameters(command=BINARY, args=args)
        proc, url = start_http(args)
        started.append(proc)
        return url

    yield make
    for proc in started:
        proc.terminate()
        proc.wait(10)


def text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def run(coro_fn):
    return anyio.run(coro_fn)


def processes_with(argv: list[str]) -> list[int]:
    """Pids whose command line is exactly `argv` (read from /proc, not by name)."""
    want = ("\0".join(argv) + "\0").encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if f.read() == want:
                    found.append(int(entry))
        except OSError:
            continue
    return found


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    return ws


def test_tools_listed_with_schemas(server, workspace):
    async def main():
        async with Client(server(workspace)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == {"bash", "str_replace_based_edit_tool"}
            bash = tools["bash"]
            assert "persistent bash session" in bash.description
            assert set(bash.input_schema["properties"]) == {"command", "restart"}
            editor = tools["str_replace_based_edit_tool"]
            assert editor.input_schema["properties"]["command"]["enum"] == [
                "view",
                "create",
                "str_replace",
                "insert",
            ]

    run(main)


def test_ls_runs_and_refusal_names_the_rule(server, workspace):
    async def main():
        async with Client(server(workspace)) as client:
            ran = await client.call_tool("bash", {"command": "ls"})
            assert not ran.is_error
            assert text(ran) == "notes.txt\n"
            refused = await client.call_tool("bash", {"command": "curl https://example.com"})
            assert refused.is_error
            assert "was not run" in text(refused)
            assert "[program-not-allowed]" in text(refused)
            failed = await client.call_tool("bash", {"command": "ls missing"})
            assert failed.is_error and text(failed).endswith("exit status 2")

    run(main)


def test_editor_inside_and_outside_the_workspace(server, workspace, tmp_path):
    outside = tmp_path / "outside.txt"

    async def main():
        async with Client(server(workspace)) as client:
            edit = "str_replace_based_edit_tool"
            viewed = await client.call_tool(edit, {"command": "view", "path": "notes.txt"})
            assert not viewed.is_error
            assert text(viewed) == "     1\talpha\n     2\tbeta\n"
            made = await client.call_tool(
                edit, {"command": "create", "path": "new.txt", "file_text": "x\n"}
            )
            assert not made.is_error, text(made)
            refused = await client.call_tool(
                edit, {"command": "create", "path": str(outside), "file_text": "pwned\n"}
            )
            assert refused.is_error
            assert "[path-write-outside]" in text(refused)

    run(main)
    assert (workspace / "new.txt").read_text() == "x\n"
    assert not outside.exists()


def test_restart_gives_a_fresh_session(server, workspace):
    (workspace / "sub").mkdir()

    async def main():
        async with Client(server(workspace)) as client:
            cd = await client.call_tool("bash", {"command": "cd sub"})
            assert not cd.is_error, text(cd)
            moved = await client.call_tool("bash", {"command": "pwd"})
            assert text(moved) == f"{workspace}/sub\n"
            restarted = await client.call_tool("bash", {"restart": True})
            assert not restarted.is_error
            assert text(restarted) == "tool has been restarted."
            back = await client.call_tool("bash", {"command": "pwd"})
            assert text(back) == f"{workspace}\n"

    run(main)


def test_cancelled_sleep_leaves_no_process(server, workspace):
    argv = ["sleep", "100.25"]

    async def main():
        async with Client(server(workspace)) as client:
            seen_running = False

            async def watch(scope):
                nonlocal seen_running
                for _ in range(100):
                    if processes_with(argv):
                        seen_running = True
                        scope.cancel()
                        return
                    await anyio.sleep(0.05)

            async with anyio.create_task_group() as tg:
                with anyio.CancelScope() as scope:
                    tg.start_soon(watch, scope)
                    await client.call_tool("bash", {"command": " ".join(argv)})
                    pytest.fail("the call returned instead of being cancelled")
            assert seen_running, "the sleep never started"
            # The server killed it on notifications/cancelled, while the client is still connected.
            deadline = time.monotonic() + 5
            while processes_with(argv) and time.monotonic() < deadline:
                await anyio.sleep(0.05)
            assert processes_with(argv) == []
            # The session serves the next call.
            after = await client.call_tool("bash", {"command": "echo still here"})
            assert text(after) == "still here\n"

    run(main)


def test_progress_for_a_long_command(server, workspace):
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    async def main():
        async with Client(server(workspace)) as client:
            done = await client.call_tool(
                "bash", {"command": "sleep 2.5; echo done"}, progress_callback=on_progress
            )
            assert text(done) == "done\n"

    run(main)
    assert seen and seen[0][1] == 30.0 and seen[0][2].startswith("running for")


def test_ask_goes_through_elicitation(server, workspace):
    asked = []

    def elicit(answer):
        async def callback(context, params):
            asked.append(params.message)
            return mcp_types.ElicitResult(action="accept", content={"approve": answer})

        return callback

    async def main(answer):
        async with Client(server(workspace), elicitation_callback=elicit(answer)) as client:
            return await client.call_tool("bash", {"command": "git reset --hard"})

    declined = anyio.run(main, False)
    assert declined.is_error and "Approval was declined." in text(declined)
    assert "git reset --hard" in asked[0]
    approved = anyio.run(main, True)
    # It ran: git itself answers (this workspace is not a repository).
    assert "not a git repository" in text(approved)


def test_ask_without_elicitation_is_refused_saying_so(server, workspace):
    async def main():
        async with Client(server(workspace)) as client:
            return await client.call_tool("bash", {"command": "git reset --hard"})

    refused = run(main)
    assert refused.is_error and "No one can approve commands here" in text(refused)


def test_roots_narrow_the_workspace(server, workspace):
    sub = workspace / "sub"
    sub.mkdir()

    async def roots(context):
        return mcp_types.ListRootsResult(roots=[mcp_types.Root(uri=sub.as_uri())])

    async def main():
        async with Client(server(workspace), list_roots_callback=roots) as client:
            where = await client.call_tool("bash", {"command": "pwd"})
            assert text(where) == f"{sub}\n"
            inside = await client.call_tool("bash", {"command": "touch ok.txt"})
            assert not inside.is_error, text(inside)
            outside = await client.call_tool("bash", {"command": "touch ../no.txt"})
            assert outside.is_error and "[path-write-outside]" in text(outside)

    run(main)
    assert (sub / "ok.txt").exists() and not (workspace / "no.txt").exists()


def leaf_messages(exc: BaseException) -> list[str]:
    """The messages of an exception, or of every exception inside a (nested) group."""
    inner = getattr(exc, "exceptions", None)
    if inner is None:
        return [str(exc)]
    return [m for e in inner for m in leaf_messages(e)]


def test_http_token(workspace, tmp_path):
    token = "0123456789abcdef0123456789abcdef"
    (tmp_path / "token").write_text(token + "\n")
    proc, url = start_http(
        ["mcp", "--policy", "developer", "--cwd", str(workspace), "--token-file", str(tmp_path / "token")]
    )

    async def connect(headers):
        transport = streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))
        async with Client(transport) as client:
            return text(await client.call_tool("bash", {"command": "ls"}))

    try:
        assert run(lambda: connect({"Authorization": f"Bearer {token}"})) == "notes.txt\n"
        for headers in ({}, {"Authorization": f"Bearer {token[:-1]}"}):
            # The SDK reports a 401 as "Server returned an error response", in task groups.
            with pytest.raises(Exception) as refused:
                run(lambda: connect(headers))
            assert any("error response" in m for m in leaf_messages(refused.value)), refused.value
    finally:
        proc.terminate()
        proc.wait(10)
