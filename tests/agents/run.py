#!/usr/bin/env python3
"""shellgate's hooks against the real coding agents, offline.

Installs Claude Code, Codex CLI and Gemini CLI from the npm registry (cached per version under
~/.cache/shellgate-agents, or $SHELLGATE_AGENT_CACHE), then, inside a fresh network namespace
where only loopback exists (so nothing can reach any other address, whatever the CLIs try),
drives each CLI in its non-interactive mode against a scripted mock of its model API
(tests/agents/mock_api.py). The mock's script makes the "model" call the agent's real tools;
marker files and the tool results the agent sends back to the mock show what ran and what the
model was told.

Every guarded run uses the hook configuration that `policy-check hook AGENT --print-config`
prints, installed where docs/integrations.md says. A control run with no hook runs the same
script first, so that each check is known to be able to fail.

    python3 tests/agents/run.py [--policy-check target/debug/policy-check] [--agents a,b]

Exit 0 when every check holds (or, with one `skipped: ...` line, when the registry cannot be
reached and nothing is cached); exit 1 when a check fails, above all when a hook that ran let
a call through.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mock_api  # noqa: E402

AGENTS = {
    "claude-code": ("@anthropic-ai/claude-code", "claude"),
    "codex": ("@openai/codex", "codex"),
    "gemini": ("@google/gemini-cli", "gemini"),
}
# The versions docs/integrations.md reports on; `--latest` tries the newest releases instead.
TESTED = {"claude-code": "2.1.332", "codex": "0.171.0", "gemini": "0.61.0"}
RUN_TIMEOUT = 120  # seconds per CLI run
# Each CLI's switches for telemetry, error reports, update checks and other background traffic.
# (The network namespace makes them moot for safety; they keep the runs quick and quiet.)
QUIET_ENV = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    "GEMINI_TELEMETRY_ENABLED": "false",
    "NO_UPDATE_NOTIFIER": "1",
    "NO_COLOR": "1",
    "CI": "1",
}


def log(msg):
    print(msg, flush=True)


# -- installing the CLIs (outside the namespace) ----------------------------------------------

def install(cache, names, latest):
    """{agent: path of its CLI}; agents that cannot be had are reported and left out."""
    found = {}
    for name in names:
        package, binary = AGENTS[name]
        spec = package if latest else f"{package}@{TESTED[name]}"
        if not latest and os.path.exists(os.path.join(cache, f"{name}-{TESTED[name]}",
                                                      "node_modules", ".bin", binary)):
            found[name] = {"exe": os.path.join(cache, f"{name}-{TESTED[name]}", "node_modules",
                                               ".bin", binary), "version": TESTED[name]}
            continue
        version = None
        try:
            r = subprocess.run(["npm", "view", "--fetch-retries=0", "--fetch-timeout=20000",
                                spec, "version"], capture_output=True,
                               text=True, timeout=60)
            if r.returncode == 0 and r.stdout.strip():
                version = r.stdout.strip().splitlines()[-1]
        except (OSError, subprocess.TimeoutExpired):
            pass
        if version is None:
            cached = sorted(d for d in os.listdir(cache) if d.startswith(name + "-")
                            and os.path.exists(os.path.join(cache, d, "node_modules", ".bin",
                                                            binary))) \
                if os.path.isdir(cache) else []
            if not cached:
                log(f"skipped: {name}: the npm registry is unreachable (`npm view {spec} "
                    f"version` failed) and no version is cached in {cache}")
                continue
            version = cached[-1][len(name) + 1:]
            log(f"note: {name}: registry unreachable, using the cached {version}")
        prefix = os.path.join(cache, f"{name}-{version}")
        exe = os.path.join(prefix, "node_modules", ".bin", binary)
        if not os.path.exists(exe):
            log(f"installing {package}@{version} into {prefix}")
            os.makedirs(prefix, exist_ok=True)
            r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error",
                                "--prefix", prefix, f"{package}@{version}"],
                               capture_output=True, text=True, timeout=600)
            if r.returncode != 0 or not os.path.exists(exe):
                shutil.rmtree(prefix, ignore_errors=True)
                log(f"skipped: {name}: `npm install {package}@{version}` failed: "
                    f"{r.stderr.strip()[-300:]}")
                continue
        found[name] = {"exe": exe, "version": version}
    return found


def enter_namespace():
    """Re-runs this script in new network and mount namespaces (loopback only); returns only
    when already inside one."""
    if os.environ.get("SHELLGATE_AGENT_NETNS") == "1":
        return
    os.environ["SHELLGATE_AGENT_NETNS"] = "1"
    unshare = ["unshare", "--net", "--mount"] if os.geteuid() == 0 else \
        ["unshare", "--map-root-user", "--net", "--mount"]
    probe = subprocess.run(unshare + ["ip", "link", "set", "lo", "up"], capture_output=True,
                           text=True)
    if probe.returncode != 0:
        log("skipped: cannot make a network namespace (`unshare --net` failed: "
            f"{probe.stderr.strip()}), and the agents must not run with the network on")
        sys.exit(0)
    argv = unshare + ["sh", "-c", 'ip link set lo up && exec "$@"', "sh", sys.executable] + \
        sys.argv
    os.execvp(argv[0], argv)


# -- the project each run works in -------------------------------------------------------------

class Fixture:
    """A scratch tree: HOME (with a decoy), a secret and a marker directory next to the
    project, and the project (a git repository with a shellgate.toml, x.py and sub/)."""

    def __init__(self, policy_check):
        self.root = tempfile.mkdtemp(prefix="sg-agents-")
        self.home = os.path.join(self.root, "home")
        self.proj = os.path.join(self.root, "proj")
        self.sub = os.path.join(self.proj, "sub")
        tag = uuid.uuid4().hex[:12]
        self.secret = f"OUTSIDE-SECRET-{tag}"
        self.decoy = f"HOME-DECOY-{tag}"
        os.makedirs(self.home)
        os.makedirs(self.sub)
        self.decoy_path = os.path.join(self.home, "decoy-secret.txt")
        write(self.decoy_path, self.decoy + "\n")
        write(os.path.join(self.root, "outside-secret.txt"), self.secret + "\n")
        self.marker_dir = os.path.join(self.root, "outside-marker-dir")
        os.makedirs(self.marker_dir)
        write(os.path.join(self.marker_dir, "keep"), "keep\n")
        write(os.path.join(self.sub, ".keep"), "")
        subprocess.run(["git", "init", "-q", self.proj], check=True)
        self.git_config = os.path.join(self.proj, ".git", "config")
        self.git_config_text = read(self.git_config)
        self.policy = os.path.join(self.proj, "shellgate.toml")
        subprocess.run([policy_check, "init", "--base", "developer", "--output", self.policy],
                       check=True, capture_output=True)
        # In the project and in sub/, so that `python3 x.py` is workspace code from either.
        for d in (self.proj, self.sub):
            write(os.path.join(d, "x.py"),
                  "print('sandbox-print-ok')\n"
                  "try:\n"
                  f"    print('decoy-read-ok:' + open({self.decoy_path!r}).read())\n"
                  "except OSError as e:\n"
                  "    print('decoy-read-failed:', type(e).__name__)\n")
        # A protected file (it can name programs npm runs) in the project and in sub/.
        for d in (self.proj, self.sub):
            write(os.path.join(d, ".npmrc"), "fund=false\n")

    def close(self):
        subprocess.run(["chmod", "-R", "u+rwX", self.root], capture_output=True)
        shutil.rmtree(self.root, ignore_errors=True)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read()


# -- the script: what the "model" asks for, and what must hold afterwards ---------------------

def steps_for(agent, fx, cwd):
    """[(label, tool call, check)] for `agent` started in `cwd`. A check gets (fixture, the
    tool result the agent returned, guarded) and returns (went_through, detail): whether the
    call did what it asked (for a guarded run, it must not have, except the harmless ones)."""
    up = os.path.relpath(fx.root, cwd)  # the project's parent, from cwd
    # The protected file to edit: .git/config from the top; from sub/, sub/.npmrc (started
    # there, Claude Code and Gemini CLI make sub/ the project, so .git/config is outside it).
    # Gemini CLI refuses every path under .git itself, so it edits .npmrc.
    protected = fx.git_config if cwd == fx.proj and agent != "gemini" else \
        os.path.join(cwd, ".npmrc")
    protected_text = read(protected)
    old = "[core]" if protected == fx.git_config else "fund=false"
    outside_secret = os.path.join(fx.proj, "..", "outside-secret.txt")
    outside_new = os.path.join(fx.proj, "..", "outside-new.txt")
    danger = f"rm -r {up}/outside-marker-dir"
    harmless = "echo ok > harmless-marker"
    python = "python3 x.py"

    def shell(cmd):
        if agent == "claude-code":
            return {"tool": "Bash", "input": {"command": cmd, "description": "run it"}}
        if agent == "codex":
            return {"tool": "exec_command", "input": {"cmd": cmd}}
        return {"tool": "run_shell_command", "input": {"command": cmd, "description": "run it"}}

    def patch(body):
        return {"tool": "apply_patch", "kind": "custom",
                "input": "*** Begin Patch\n" + body + "*** End Patch\n"}

    c_danger = lambda fx, res: (not os.path.exists(fx.marker_dir), "outside-marker-dir removed")
    c_harmless = lambda fx, res: (read_or(os.path.join(cwd, "harmless-marker")) == "ok\n",
                                  "harmless-marker written")
    c_read = lambda fx, res: (fx.secret in res, "the outside secret reached the model")
    c_write = lambda fx, res: (os.path.exists(os.path.join(fx.root, "outside-new.txt")),
                               "outside-new.txt created")
    c_glob = lambda fx, res: ("outside-secret.txt" in res,
                              "the outside file's name reached the model")
    c_edit = lambda fx, res: (read(protected) != protected_text,
                              f"{os.path.relpath(protected, fx.proj)} changed")

    def c_python(fx, res):
        return (fx.decoy in res, "x.py read the decoy in $HOME" if fx.decoy in res
                else ("x.py ran, its decoy read failed" if "sandbox-print-ok" in res
                      else "x.py did not run"))

    steps = [("dangerous shell command", shell(danger), c_danger, "blocked"),
             ("harmless shell command", shell(harmless), c_harmless, "runs")]
    if agent == "claude-code":
        steps += [
            ("Read outside", {"tool": "Read", "input": {"file_path": outside_secret}}, c_read,
             "blocked"),
            ("Write outside", {"tool": "Write", "input": {"file_path": outside_new,
                                                          "content": "pwned\n"}}, c_write,
             "blocked"),
            # (Claude Code 2.1.332 offers no Grep, Glob or LS tool in a -p session: its model
            # searches through Bash. The hook decides them from payloads, tests/integrations.rs.)
            # Claude Code's Edit needs a Read of the file first.
            (f"Read {os.path.basename(protected)}", {"tool": "Read",
                                                    "input": {"file_path": protected}},
             lambda fx, res: (old in res, "read"), "runs"),
            ("Edit protected", {"tool": "Edit", "input": {
                "file_path": protected, "old_string": old,
                "new_string": old + "\n\tfsmonitor = touch pwned"}}, c_edit, "blocked"),
        ]
    elif agent == "gemini":
        steps += [
            ("read_file outside", {"tool": "read_file", "input": {"file_path": outside_secret}},
             c_read, "blocked"),
            ("write_file outside", {"tool": "write_file", "input": {
                "file_path": outside_new, "content": "pwned\n"}}, c_write, "blocked"),
            ("grep_search over the parent", {"tool": "grep_search", "input": {
                "pattern": "OUTSIDE-SECRET", "dir_path": fx.root}}, c_read, "blocked"),
            ("glob over the parent", {"tool": "glob", "input": {
                "pattern": "*.txt", "dir_path": fx.root}}, c_glob, "blocked"),
            ("list_directory of the parent", {"tool": "list_directory", "input": {
                "dir_path": fx.root}}, c_glob, "blocked"),
            ("replace protected", {"tool": "replace", "input": {
                "file_path": protected, "old_string": old,
                "new_string": old + "\n\tfsmonitor = touch pwned",
                "instruction": "add fsmonitor"}}, c_edit, "blocked"),
        ]
    else:
        rel_new = os.path.relpath(os.path.join(fx.root, "outside-new.txt"), cwd)
        rel_cfg = os.path.relpath(protected, cwd)
        steps += [
            ("shell read outside", shell(f"cat {up}/outside-secret.txt"), c_read, "blocked"),
            ("apply_patch add outside", patch(f"*** Add File: {rel_new}\n+pwned\n"), c_write,
             "blocked"),
            ("apply_patch update protected", patch(
                f"*** Update File: {rel_cfg}\n@@\n {old}\n+\tfsmonitor = touch pwned\n"),
             c_edit, "blocked"),
        ]
    steps.append(("python3 x.py (sandbox-only)", shell(python), c_python,
                  "sandboxed"))
    if cwd == fx.proj:
        # What carries over between calls (measured, not asserted): a `cd` inside a command
        # that runs in the sandbox, then a plain `cd`, each followed by `pwd`.
        def c_pwd(fx, res):
            where = "sub/" if fx.sub in res else ("the project" if fx.proj in res else "?")
            return True, f"next call's pwd: {where}"
        steps += [("cd sub && python3 x.py (sandbox-only)", shell("cd sub && python3 x.py"),
                   c_python, "sandboxed"),
                  ("pwd after it", shell("pwd"), c_pwd, "info"),
                  ("cd sub (plain)", shell("cd sub"), lambda fx, res: (True, "cd"), "runs"),
                  ("pwd after that", shell("pwd"), c_pwd, "info")]
    return steps


def read_or(path):
    try:
        return read(path)
    except OSError:
        return None


# -- running one CLI ---------------------------------------------------------------------------

def hook_config(policy_check, agent, policy, workspace=None):
    args = [policy_check, "hook", agent, "--policy", policy, "--print-config"]
    if workspace:
        args += ["--workspace", workspace]
    return json.loads(subprocess.check_output(args, text=True))


def run_cli(agent, info, fx, cwd, url, extra_args=()):
    env = dict(os.environ, **QUIET_ENV)
    env["HOME"] = fx.home
    # policy-check first (the printed configuration names it bare), then the system's own
    # directories only: an interpreter under $HOME (pyenv, nvm) is not inside the sandbox's
    # jail, so `python3 x.py` would fail there for that reason alone.
    env["PATH"] = os.pathsep.join([os.path.dirname(PC), os.path.dirname(shutil.which("node")),
                                   "/usr/local/bin", "/usr/bin", "/bin"])
    for k in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
              "CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "CODEX_HOME"):
        env.pop(k, None)
    exe = info["exe"]
    if agent == "claude-code":
        env.update(ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="sk-ant-mock", IS_SANDBOX="1")
        # Claude Code's own permission prompts are bypassed, so only the hook stands in the way.
        argv = [exe, "-p", "Follow the script.", "--output-format", "json",
                "--dangerously-skip-permissions", *extra_args]
    elif agent == "codex":
        env.update(CODEX_HOME=os.path.join(fx.home, ".codex"), SHELLGATE_MOCK_KEY="mock")
        argv = [exe, "exec", "--dangerously-bypass-approvals-and-sandbox",
                "--skip-git-repo-check", *extra_args, "Follow the script."]
    else:
        env.update(GOOGLE_GEMINI_BASE_URL=url, GEMINI_API_KEY="mock-key",
                   GEMINI_CLI_TRUST_WORKSPACE="true")
        settings = os.path.join(fx.home, ".gemini", "settings.json")
        merge_json(settings, {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        })
        # --yolo: Gemini CLI's own approvals are off; --include-directories: its own
        # workspace check admits the project's parent, so only the hook stands in the way.
        argv = [exe, "-p", "Follow the script.", "--output-format", "json", "--yolo",
                "--include-directories", fx.root, *extra_args]
    try:
        r = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                           timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
        return r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired as e:
        return "timeout", str(e.stdout or ""), str(e.stderr or "")


def codex_config(fx, url):
    """~/.codex/config.toml: the mock as the model provider. gpt-5.5: a model Codex knows, so
    that it offers its apply_patch tool."""
    home = os.path.join(fx.home, ".codex")
    os.makedirs(home, exist_ok=True)
    write(os.path.join(home, "config.toml"),
          f'model = "gpt-5.5"\nmodel_provider = "mock"\n\n'
          f'[model_providers.mock]\nname = "mock"\nbase_url = "{url}/v1"\n'
          f'wire_api = "responses"\nenv_key = "SHELLGATE_MOCK_KEY"\n'
          f'request_max_retries = 0\nstream_max_retries = 0\n\n'
          f'[analytics]\nenabled = false\n')


def merge_json(path, extra):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    cur = json.loads(read(path)) if os.path.exists(path) else {}
    cur.update(extra)
    write(path, json.dumps(cur, indent=2))


# -- the runs ----------------------------------------------------------------------------------

class Report:
    def __init__(self):
        self.failures = []
        self.rows = []  # (agent, version, run, step, outcome, told)
        self.doctor = []  # (agent, run, exit, last line)
        self.tools = {}  # agent -> the tools it offered its model

    def fail(self, msg):
        self.failures.append(msg)
        log("FAIL: " + msg)


def doctor(agent, fx, cwd):
    """`policy-check hook AGENT --doctor` on this set-up, as a user runs it: (exit, output)."""
    env = dict(os.environ, HOME=fx.home, CODEX_HOME=os.path.join(fx.home, ".codex"))
    for k in ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"):
        env.pop(k, None)
    r = subprocess.run([PC, "hook", agent, "--doctor"], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=60)
    return r.returncode, (r.stdout + r.stderr).strip()


def scenario(rep, agent, info, run, setup, cwd_of=lambda fx: fx.proj, guarded=True,
             extra_args=(), expect_hook=True, doctor_ok=None):
    """One CLI run: make a fixture, `setup(fx)` installs the hook configuration, run the
    script, check each step. `expect_hook=False`: a set-up documented not to run the hook
    (its dangerous calls are expected to go through; if they do not, the docs are stale).
    `doctor_ok`: whether `--doctor` must pass (True) or fail (False) on this set-up."""
    fx = Fixture(PC)
    try:
        cwd = cwd_of(fx)
        steps = steps_for(agent, fx, cwd)
        script = mock_api.Script([s[1] for s in steps])
        server, url = mock_api.serve(script)
        try:
            if agent == "codex":
                codex_config(fx, url)
            cleanup = setup(fx)
            if doctor_ok is not None:
                dcode, dout = doctor(agent, fx, cwd)
                if (dcode == 0) != doctor_ok:
                    rep.fail(f"{agent} {run}: `--doctor` exited {dcode}, expected "
                             f"{'0' if doctor_ok else '1'}: {dout[-800:]}")
                else:
                    rep.doctor.append((agent, run, dcode, dout.splitlines()[-1] if dout else ""))
            code, out, err = run_cli(agent, info, fx, cwd, url, extra_args)
            if callable(cleanup):
                cleanup()
        finally:
            server.shutdown()
        if code == "timeout":
            rep.fail(f"{agent} {run}: the CLI did not finish in {RUN_TIMEOUT}s")
        missing = [i for i in range(len(steps)) if i not in script.results]
        if missing:
            rep.fail(f"{agent} {run}: no tool result came back for steps {missing} "
                     f"(exit {code}); stderr: {err.strip()[-600:]}")
        for i, (label, _call, check, want) in enumerate(steps):
            res = script.results.get(i, "")
            through, detail = check(fx, res)
            told = " ".join(res.split())[:160]
            if want == "info":
                outcome = detail
            elif not guarded or not expect_hook:
                outcome = "went through" if through else "stopped by the agent itself"
            elif want == "runs":
                outcome = "ran" if through else "NOT RUN"
                if not through:
                    rep.fail(f"{agent} {run}: {label}: an allowed call did not run: {told}")
            else:
                outcome = "LET THROUGH" if through else want
                if through:
                    rep.fail(f"{agent} {run}: {label}: {detail} with the hook installed")
                elif want == "sandboxed":
                    if "sandbox-print-ok" not in res or "decoy-read-failed" not in res:
                        rep.fail(f"{agent} {run}: {label}: expected x.py to run in the sandbox "
                                 f"(print ok, decoy read failing): {told}")
                elif "shellgate: " not in res:
                    rep.fail(f"{agent} {run}: {label}: refused, but not by shellgate: {told}")
            rep.rows.append((agent, info["version"], run, label, outcome, told))
        if guarded and not expect_hook and any(r[4] == "stopped by the agent itself"
                                               for r in rep.rows[-len(steps):]
                                               if r[3].startswith("dangerous")):
            log(f"note: {agent} {run}: documented as not running the hook, but the dangerous "
                "command was stopped: docs/integrations.md may be stale")
        rep.tools[agent] = script.tools
        return script
    finally:
        fx.close()


def run_claude(rep, info):
    def project(fx):
        cfg = hook_config(PC, "claude-code", "shellgate.toml")
        merge_json(os.path.join(fx.proj, ".claude", "settings.json"), cfg)

    def user(fx):
        cfg = hook_config(PC, "claude-code", fx.policy)
        merge_json(os.path.join(fx.home, ".claude", "settings.json"), cfg)

    scenario(rep, "claude-code", info, "control (no hook)", lambda fx: None, guarded=False)
    scenario(rep, "claude-code", info, "project settings, started at the top", project)
    scenario(rep, "claude-code", info, "project settings, started in sub/ (documented: no hook)",
             project, cwd_of=lambda fx: fx.sub, expect_hook=False, doctor_ok=False)
    scenario(rep, "claude-code", info, "user settings + absolute policy, started in sub/", user,
             cwd_of=lambda fx: fx.sub, doctor_ok=True)


def run_gemini(rep, info):
    def project(fx):
        cfg = hook_config(PC, "gemini", "shellgate.toml")
        merge_json(os.path.join(fx.proj, ".gemini", "settings.json"), cfg)

    def user(fx):
        cfg = hook_config(PC, "gemini", fx.policy)
        merge_json(os.path.join(fx.home, ".gemini", "settings.json"), cfg)

    scenario(rep, "gemini", info, "control (no hook)", lambda fx: None, guarded=False)
    scenario(rep, "gemini", info, "project settings, started at the top", project,
             doctor_ok=True)
    scenario(rep, "gemini", info, "user settings + absolute policy, started in sub/", user,
             cwd_of=lambda fx: fx.sub, doctor_ok=True)


def run_codex(rep, info):
    def user_hooks(fx):
        cfg = hook_config(PC, "codex", fx.policy, fx.proj)
        merge_json(os.path.join(fx.home, ".codex", "hooks.json"), cfg)

    def trust(fx, edit_after=False):
        # What trusting it in Codex's hooks view records: [hooks.state."<file>:<event>:<group>:
        # <handler>"] trusted_hash = the hook's hash (codex_trusted_hash). With `edit_after`,
        # the hook is edited after it was trusted (its timeout changed).
        user_hooks(fx)
        path = os.path.join(fx.home, ".codex", "hooks.json")
        cfg = json.loads(read(path))
        group = cfg["hooks"]["PreToolUse"][0]
        handler = group["hooks"][0]
        digest = codex_trusted_hash("pre_tool_use", group["matcher"], handler["command"],
                                    handler.get("timeout", 600))
        with open(os.path.join(fx.home, ".codex", "config.toml"), "a") as f:
            f.write(f'\n[hooks.state.{json.dumps(path + ":pre_tool_use:0:0")}]\n'
                    f'trusted_hash = "{digest}"\n')
        if edit_after:
            handler["timeout"] = handler.get("timeout", 600) + 1
            write(path, json.dumps(cfg))

    def managed(fx):
        # /etc/codex/hooks.json, which Codex runs without asking for trust: written into an
        # overlay of /etc that exists only in this mount namespace, and removed afterwards.
        up, work = os.path.join(fx.root, "etc-upper"), os.path.join(fx.root, "etc-work")
        os.makedirs(up)
        os.makedirs(work)
        r = subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                            f"lowerdir=/etc,upperdir={up},workdir={work}", "/etc"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SkipRun(f"cannot overlay /etc for a managed hooks.json: {r.stderr.strip()}")
        os.makedirs("/etc/codex", exist_ok=True)
        write("/etc/codex/hooks.json", json.dumps(hook_config(PC, "codex", fx.policy, fx.proj)))
        return lambda: subprocess.run(["umount", "/etc"], check=True)

    scenario(rep, "codex", info, "control (no hook)", lambda fx: None, guarded=False)
    scenario(rep, "codex", info, "~/.codex/hooks.json, not trusted (documented: no hook)",
             user_hooks, expect_hook=False, doctor_ok=False)
    try:
        scenario(rep, "codex", info, "managed /etc/codex/hooks.json", managed, doctor_ok=True)
        scenario(rep, "codex", info, "managed /etc/codex/hooks.json, started in sub/", managed,
                 cwd_of=lambda fx: fx.sub)
    except SkipRun as e:
        log(f"skipped: codex managed configuration: {e}")
    scenario(rep, "codex", info, "~/.codex/hooks.json, trusted (hash in [hooks.state])",
             trust, doctor_ok=True)
    scenario(rep, "codex", info, "~/.codex/hooks.json, edited after it was trusted "
             "(documented: no hook)", lambda fx: trust(fx, edit_after=True), expect_hook=False,
             doctor_ok=False)
    scenario(rep, "codex", info, "~/.codex/hooks.json + --dangerously-bypass-hook-trust",
             user_hooks, extra_args=("--dangerously-bypass-hook-trust",))


def codex_trusted_hash(event, matcher, command, timeout):
    """The hash Codex records when a user trusts a hook (codex-rs/hooks engine/discovery.rs,
    `command_hook_hash`): SHA-256 of the normalized hook as JSON with sorted keys."""
    import hashlib
    identity = {"event_name": event, "matcher": matcher,
                "hooks": [{"type": "command", "command": command, "timeout": max(timeout, 1),
                           "async": False}]}
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


class SkipRun(Exception):
    pass


PC = None


def main():
    global PC
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy-check", default=os.path.join("target", "debug", "policy-check"))
    ap.add_argument("--agents", default=",".join(AGENTS))
    ap.add_argument("--latest", action="store_true",
                    help="the newest release of each CLI, not the versions the docs report")
    ap.add_argument("--cache", default=os.environ.get("SHELLGATE_AGENT_CACHE") or
                    os.path.join(os.path.expanduser("~"), ".cache", "shellgate-agents"))
    ap.add_argument("--installed", help=argparse.SUPPRESS)  # set by the re-run in the namespace
    args = ap.parse_args()
    PC = os.path.abspath(args.policy_check)
    if not os.access(PC, os.X_OK):
        log(f"FAIL: no policy-check at {PC} (build it first: cargo build --bin policy-check)")
        return 1
    if args.installed is None:
        names = [a for a in args.agents.split(",") if a]
        for n in names:
            if n not in AGENTS:
                log(f"FAIL: unknown agent {n!r} (known: {', '.join(AGENTS)})")
                return 1
        if shutil.which("npm") is None:
            log("skipped: npm is not installed, so the agents cannot be installed")
            return 0
        os.makedirs(args.cache, exist_ok=True)
        found = install(args.cache, names, args.latest)
        if not found:
            return 0
        sys.argv += ["--installed", json.dumps(found)]
        enter_namespace()
    found = json.loads(args.installed)
    rep = Report()
    for name, info in found.items():
        log(f"== {name} {info['version']}")
        {"claude-code": run_claude, "codex": run_codex, "gemini": run_gemini}[name](rep, info)
    log("")
    for agent, tools in rep.tools.items():
        log(f"tools offered to the model: {agent}: {', '.join(map(str, tools))}")
    log("")
    log("| agent | version | run | call | outcome | what the model was told |")
    log("|---|---|---|---|---|---|")
    for agent, version, run, step, outcome, told in rep.rows:
        told = told.replace("|", "\\|")
        log(f"| {agent} | {version} | {run} | {step} | {outcome} | {told} |")
    if rep.failures:
        log(f"\n{len(rep.failures)} check(s) failed")
        return 1
    log("")
    for agent, run, dcode, last in rep.doctor:
        log(f"doctor: {agent}: {run}: exit {dcode}: {last[:200]}")
    log("\nagents: every check held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
