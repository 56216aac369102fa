//! `policy-check hook AGENT`: a pre-tool hook for coding agents. Reads the agent's hook
//! payload (JSON) on stdin, decides the call under the policy, and answers in the agent's
//! own format. The shell tool's command is evaluated; the file tools' paths are checked with
//! the same `[paths]` rules (see [`crate::hook_tools`]).
//!
//! | agent | tools decided | allow | sandbox-only command | ask | deny |
//! |---|---|---|---|---|---|
//! | `claude-code` | `Bash`, `Read`, `Write`, `Edit`, `MultiEdit`, `NotebookEdit`, `NotebookRead`, `Glob`, `Grep`, `LS` | `permissionDecision: "allow"` | `"allow"` + `updatedInput` (run in `policy-check sandbox`) | `"ask"` | `"deny"` + reason |
//! | `codex` | `Bash`, `apply_patch` | no output (Codex rejects `allow` without `updatedInput`) | `"allow"` + `updatedInput` | deny (Codex does not support `ask` here) | `"deny"` + reason |
//! | `gemini` | `run_shell_command` and its file tools | `decision: "allow"` | `"allow"` + `hookSpecificOutput.tool_input` | deny (a person may not be there to ask) | `decision: "deny"` + reason |
//!
//! Other tools get no opinion: no output (`{}` for Gemini CLI, which parses stdout) and exit
//! 0. It fails closed: input that cannot be read or understood (a file tool without its
//! path), a policy that does not load, or an event other than the pre-tool one exits 2 with
//! the reason on stderr, which all three agents document as "block the tool call and show
//! stderr to the model".

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use serde_json::{json, Value};
use shellgate::{report, Context, SandboxState, Verdict};

use crate::hook_tools::{self, Call};

/// Largest payload read (a command is at most a policy's `max_bytes`, 64 KiB by default).
const MAX_INPUT: u64 = 8 * 1024 * 1024;

/// The agents whose hook formats are supported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Agent {
    /// Claude Code `PreToolUse` hook (matcher: see [`Agent::matcher`]).
    ClaudeCode,
    /// OpenAI Codex CLI `PreToolUse` hook (`Bash` and `apply_patch`).
    Codex,
    /// Gemini CLI `BeforeTool` hook (`run_shell_command` and the file tools).
    Gemini,
}

impl Agent {
    fn event(self) -> &'static str {
        match self {
            Agent::ClaudeCode | Agent::Codex => "PreToolUse",
            Agent::Gemini => "BeforeTool",
        }
    }
}

impl Agent {
    /// The tools the hook decides, as the agent's hook matcher (a regular expression in all
    /// three): the shell tool and every file tool [`hook_tools::classify`] knows.
    pub fn matcher(self) -> &'static str {
        match self {
            Agent::ClaudeCode => {
                "Bash|Read|Write|Edit|MultiEdit|NotebookEdit|NotebookRead|Glob|Grep|LS"
            }
            Agent::Codex => "^(Bash|apply_patch)$",
            Agent::Gemini => {
                "run_shell_command|read_file|write_file|replace|edit|list_directory|ls|glob|\
                 search_file_content|grep_search|grep|read_many_files"
            }
        }
    }

    /// The agent's name on the command line (`policy-check hook NAME`).
    pub fn cli_name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
        }
    }
}

/// The hook configuration to put in the agent's settings for `policy`: the event, the
/// matcher naming every guarded tool, and the command. Codex gives its hooks no project
/// directory, so its command always pins `--workspace` (the given one, else the current
/// directory, which is where the user runs this from).
pub fn config_snippet(
    agent: Agent,
    policy: &str,
    workspace: Option<&Path>,
) -> Result<String, crate::error::CliError> {
    let mut command = format!(
        "policy-check hook {} --policy {}",
        agent.cli_name(),
        sh_quote(policy)
    );
    let ws = match (agent, workspace) {
        (_, Some(w)) => Some(w.to_path_buf()),
        (Agent::Codex, None) => Some(
            std::env::current_dir()
                .map_err(|e| format!("cannot read the current directory: {e}"))?,
        ),
        _ => None,
    };
    if let Some(ws) = ws {
        let ws = std::path::absolute(&ws).unwrap_or(ws);
        command.push_str(&format!(
            " --workspace {}",
            sh_quote(&ws.display().to_string())
        ));
    }
    let mut hook = json!({ "type": "command", "command": command });
    match agent {
        Agent::ClaudeCode => {}
        Agent::Codex => hook["timeout"] = json!(30),
        Agent::Gemini => hook["timeout"] = json!(30000),
    }
    let config = json!({
        "hooks": { agent.event(): [ { "matcher": agent.matcher(), "hooks": [hook] } ] }
    });
    Ok(serde_json::to_string_pretty(&config).map_err(|e| e.to_string())?)
}

/// Options of `policy-check hook`.
pub struct HookOptions<'a> {
    /// Which agent's format.
    pub agent: Agent,
    /// Policy file or shipped name.
    pub policy: &'a str,
    /// Workspace root; default: the agent's project directory (see [`project_dir`]).
    pub workspace: Option<PathBuf>,
    /// On allow, say nothing so the agent's own permission rules decide.
    pub defer_allow: bool,
}

/// Why the hook refuses to decide: printed on stderr with exit 2 (blocks the tool call).
struct Block(String);

/// Runs the hook; returns the exit code. Output goes to stdout (decision JSON) and stderr
/// (the blocking reason when failing closed).
pub fn hook_cmd(opts: &HookOptions<'_>) -> u8 {
    let mut input = Vec::new();
    let read = std::io::stdin()
        .lock()
        .take(MAX_INPUT + 1)
        .read_to_end(&mut input);
    let result = match read {
        Err(e) => Err(Block(format!("cannot read the hook input: {e}"))),
        Ok(_) if input.len() as u64 > MAX_INPUT => Err(Block(format!(
            "the hook input is larger than {MAX_INPUT} bytes"
        ))),
        // A panic must block the call: an agent lets a hook that dies any other way through
        // (only exit 2 blocks).
        Ok(_) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| decide(opts, &input)))
            .unwrap_or_else(|_| {
                Err(Block(
                    "shellgate failed while deciding this call (an internal error)".into(),
                ))
            }),
    };
    // Gemini CLI parses stdout as JSON on exit 0; its documented "no opinion" is `{}`.
    let result = result.map(|answer| match (answer, opts.agent) {
        (None, Agent::Gemini) => Some(json!({})),
        (answer, _) => answer,
    });
    match result {
        Ok(None) => 0,
        Ok(Some(out)) => {
            let written = answer_channel().and_then(|mut f| {
                writeln!(f, "{out}")?;
                f.flush()
            });
            match written {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("shellgate: cannot write the hook answer: {e}; blocking");
                    2
                }
            }
        }
        Err(Block(why)) => {
            eprintln!("shellgate: {why}; the command was blocked (fail closed)");
            2
        }
    }
}

/// Standard output, where the agent reads the answer; an error when nobody can read it.
///
/// A closed descriptor 1 is reopened on `/dev/null` by Rust's runtime before `main` (and
/// `std::io::stdout()` reports success on EBADF besides): either way the answer would be
/// lost, and the agent would see exit 0 with nothing said, which lets the call through. So
/// `/dev/null` counts as closed; writes go through a duplicate of descriptor 1, which
/// reports every error (a broken pipe too).
fn answer_channel() -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let file = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    let meta = file.metadata()?;
    if meta.file_type().is_char_device() {
        let null = std::fs::metadata("/dev/null")?;
        if meta.rdev() == null.rdev() {
            return Err(std::io::Error::other(
                "standard output is closed (or /dev/null), so the agent cannot read it",
            ));
        }
    }
    Ok(file)
}

fn decide(opts: &HookOptions<'_>, input: &[u8]) -> Result<Option<Value>, Block> {
    let payload: Value = serde_json::from_slice(input)
        .map_err(|e| Block(format!("the hook input is not valid JSON: {e}")))?;
    let obj = payload
        .as_object()
        .ok_or_else(|| Block("the hook input is not a JSON object".into()))?;
    if let Some(event) = obj.get("hook_event_name") {
        if event.as_str() != Some(opts.agent.event()) {
            return Err(Block(format!(
                "this hook handles {} events, not {event}: configure it under {}",
                opts.agent.event(),
                opts.agent.event()
            )));
        }
    }
    let tool = obj
        .get("tool_name")
        .and_then(Value::as_str)
        .ok_or_else(|| Block("the hook input has no \"tool_name\" string".into()))?;
    let tool_input = obj
        .get("tool_input")
        .and_then(Value::as_object)
        .ok_or_else(|| Block("the hook input has no \"tool_input\" object".into()))?;
    let call = hook_tools::classify(opts.agent, tool, tool_input).map_err(Block)?;
    if call == Call::Other {
        // A tool the policy has no rule for: the agent's own permission flow decides.
        return Ok(None);
    }
    let cwd = obj
        .get("cwd")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .ok_or_else(|| {
            Block("the hook input has no absolute \"cwd\": path rules cannot be checked".into())
        })?;
    let (workspace, from) = match &opts.workspace {
        Some(w) => (w.clone(), "--workspace"),
        None => project_dir(opts.agent, &cwd, |k| std::env::var_os(k)),
    };
    let spec = policy_path(opts.policy, &workspace);
    // Never freed: the hook process ends right after answering (see `check`).
    let policy: &'static shellgate::Policy =
        Box::leak(Box::new(crate::load_cached(&spec).map_err(|e| {
            let relative = spec != opts.policy;
            Block(format!(
                "cannot load the policy {spec}{}: {e}",
                if relative {
                    format!(
                        " (`{}` resolved against the project directory, from {from})",
                        opts.policy
                    )
                } else {
                    String::new()
                }
            ))
        })?));
    let mut ctx = Context::new(&workspace).with_cwd(&cwd);
    if opts.agent == Agent::Gemini {
        // run_shell_command runs in `directory` (or `dir_path`), relative to the project root.
        let dir = ["dir_path", "directory"]
            .iter()
            .find_map(|k| tool_input.get(*k).and_then(Value::as_str))
            .filter(|d| !d.is_empty());
        if let Some(dir) = dir {
            ctx = ctx.with_cwd(Path::new(dir));
        }
    }
    let (decision, command) = match &call {
        Call::Shell(command) => (policy.evaluate(&ctx, command), command.as_str()),
        Call::Files(accesses) => (hook_tools::decide_files(policy, &ctx, accesses), tool),
        Call::Other => return Ok(None),
    };
    // A call that may run and may write is snapshotted before the agent runs it (a shell
    // command that may write, any file tool that writes, a patch), so `policy-check undo`
    // reverts it; a snapshot that fails blocks the call.
    let mut jailed = ctx.clone();
    jailed.sandbox = SandboxState::Enforced;
    let may_run = decision.verdict != Verdict::Deny
        || matches!(&call, Call::Shell(c) if policy.evaluate(&jailed, c).verdict == Verdict::Allow);
    let may_write = match &call {
        Call::Shell(c) => shellgate::snapshot::may_write(c),
        Call::Files(a) => a
            .iter()
            .any(|x| x.access == shellgate::evaluate::FileAccess::Write),
        Call::Other => false,
    };
    if may_run && may_write && policy.snapshots.enabled {
        take_snapshot(
            policy,
            &workspace,
            obj,
            tool,
            matches!(&call, Call::Shell(_)).then_some(command),
        )?;
    }
    // A command the policy allows only inside the kernel sandbox runs there: the answer is
    // "allow" with the command wrapped in `policy-check sandbox` under the same policy and
    // workspace.
    if let Call::Shell(command) = &call {
        if decision.verdict != Verdict::Allow {
            let mut jailed = ctx.clone();
            jailed.sandbox = SandboxState::Enforced;
            let sandbox_only = policy.evaluate(&jailed, command).verdict == Verdict::Allow;
            // All three agents run a hook's replacement input in place of the call's: Claude
            // Code (`updatedInput`), Codex with `permissionDecision: "allow"` (codex-rs/hooks,
            // `engine/output_parser.rs`), and Gemini CLI (`hookSpecificOutput.tool_input`,
            // merged into the call's parameters and validated again: `BeforeToolHookOutput`
            // in packages/core). tests/agents/run.py runs each on the real agent.
            if sandbox_only {
                let wrapped = sandboxed_command(&spec, &workspace, command)?;
                let mut input = tool_input.clone();
                input.insert("command".into(), Value::String(wrapped));
                let why = format!(
                    "shellgate: allowed by the policy `{}` inside the kernel sandbox (the \
                     command runs through `policy-check sandbox`)",
                    policy.name
                );
                if opts.agent == Agent::Gemini {
                    return Ok(Some(json!({
                        "decision": "allow",
                        "reason": why,
                        "hookSpecificOutput": {
                            "hookEventName": "BeforeTool",
                            "tool_input": Value::Object(input),
                        }
                    })));
                }
                return Ok(Some(json!({
                    "hookSpecificOutput": {
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "allow",
                        "permissionDecisionReason": why,
                        "updatedInput": Value::Object(input),
                    }
                })));
            }
        }
    }
    let reason = match (decision.verdict, opts.agent) {
        (Verdict::Allow, _) => format!("shellgate: allowed by the policy `{}`", policy.name),
        (v, _) if matches!(call, Call::Files(_)) => file_reason(tool, v, &decision),
        // Claude Code shows an ask's reason in the prompt to the person who is to approve.
        (Verdict::Ask, Agent::ClaudeCode) => {
            format!("shellgate: {}", report::for_approval(command, &decision))
        }
        _ => format!("shellgate: {}", report::for_model(command, &decision)),
    };
    let ask_as_deny = || {
        format!(
            "{reason}\n(The policy asks for a person's approval, which this agent's hooks cannot \
             request; run the command yourself if it is right.)"
        )
    };
    Ok(match (opts.agent, decision.verdict) {
        (_, Verdict::Allow) if opts.defer_allow => None,
        (Agent::ClaudeCode, v) => Some(claude_like(v, &reason)),
        (Agent::Codex, Verdict::Allow) => None,
        (Agent::Codex, Verdict::Ask) => Some(claude_like(Verdict::Deny, &ask_as_deny())),
        (Agent::Codex, Verdict::Deny) => Some(claude_like(Verdict::Deny, &reason)),
        (Agent::Gemini, Verdict::Allow) => Some(json!({ "decision": "allow" })),
        (Agent::Gemini, Verdict::Ask) => {
            Some(json!({ "decision": "deny", "reason": ask_as_deny() }))
        }
        (Agent::Gemini, Verdict::Deny) => Some(json!({ "decision": "deny", "reason": reason })),
    })
}

/// What the model (or the person asked) is told when a file tool's call is refused or needs
/// approval: the tool, then each reason with its rule (the paths are in the messages).
fn file_reason(tool: &str, verdict: Verdict, decision: &shellgate::Decision) -> String {
    let mut out = match verdict {
        Verdict::Ask => format!("shellgate: this `{tool}` call needs approval under the policy."),
        _ => format!("shellgate: this `{tool}` call was refused by the policy and did not run."),
    };
    for r in decision
        .reasons
        .iter()
        .filter(|r| r.verdict == verdict)
        .take(5)
    {
        out.push_str(&format!("\n- [{}] {}", r.code, r.message));
        if let Some(rule) = &r.rule {
            out.push_str(&format!(" (rule `{}`)", rule.name));
        }
    }
    out
}

/// `command` wrapped to run in the kernel sandbox: `policy-check sandbox --policy P
/// --workspace W -- bash -c 'COMMAND'`, with this binary's absolute path, the policy as this
/// hook loaded it, and every word single-quoted, so that bash hands the inner bash exactly
/// the original command text.
fn sandboxed_command(spec: &str, workspace: &Path, command: &str) -> Result<String, Block> {
    let exe = std::env::current_exe().map_err(|e| {
        Block(format!(
            "cannot find policy-check itself to sandbox the command: {e}"
        ))
    })?;
    let exe = exe
        .to_str()
        .ok_or_else(|| Block("policy-check's own path is not UTF-8".into()))?;
    let ws = workspace
        .to_str()
        .ok_or_else(|| Block("the workspace path is not UTF-8".into()))?;
    Ok(format!(
        "{} sandbox --policy {} --workspace {} -- bash -c {}",
        sh_quote(exe),
        sh_quote(spec),
        sh_quote(ws),
        sh_quote(command)
    ))
}

/// One shell word whose value is `s`: single quotes, each `'` written as `'\''`.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// A snapshot of `workspace` named after the payload's `tool_use_id` (when the agent sends
/// one) or the time.
fn take_snapshot(
    policy: &shellgate::Policy,
    workspace: &Path,
    obj: &serde_json::Map<String, Value>,
    tool: &str,
    command: Option<&str>,
) -> Result<(), Block> {
    // A workspace that does not exist holds nothing to lose (any other error fails closed).
    if matches!(std::fs::symlink_metadata(workspace), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
    {
        return Ok(());
    }
    let id = obj
        .get("tool_use_id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or(0);
            format!("hook-{t}")
        });
    let shown = obj
        .get("tool_input")
        .and_then(|i| i.get("file_path").or_else(|| i.get("notebook_path")))
        .and_then(Value::as_str);
    shellgate::snapshot::Snapshots::open(workspace, &policy.snapshots)
        .and_then(|mut s| s.before(&id, &format!("hook:{tool}"), command.or(shown)))
        .map(|_| ())
        .map_err(|e| {
            Block(format!(
                "the workspace snapshot that makes this call undoable failed ({}): {e}",
                e.code()
            ))
        })
}

/// The agent's project directory, the default workspace, and where it was found: the
/// variable the agent sets for its hooks (`$CLAUDE_PROJECT_DIR` for Claude Code;
/// `$GEMINI_PROJECT_DIR`, or its `$CLAUDE_PROJECT_DIR` alias, for Gemini CLI; Codex sets
/// none), else the top of the git work tree holding `cwd`, else `cwd` itself. So the
/// workspace stays the project after the agent's `cd sub`.
fn project_dir(
    agent: Agent,
    cwd: &Path,
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> (PathBuf, &'static str) {
    let vars: &[&'static str] = match agent {
        Agent::ClaudeCode => &["CLAUDE_PROJECT_DIR"],
        Agent::Gemini => &["GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR"],
        Agent::Codex => &[],
    };
    for var in vars {
        if let Some(dir) = env(var).map(PathBuf::from).filter(|d| d.is_absolute()) {
            return (dir, var);
        }
    }
    // A `.git` directory, or the `.git` file of a linked work tree or submodule.
    match cwd.ancestors().find(|d| d.join(".git").exists()) {
        Some(top) => (
            top.to_path_buf(),
            "the git work tree holding the payload's cwd",
        ),
        None => (cwd.to_path_buf(), "the payload's cwd"),
    }
}

/// `--policy`: a shipped name, an absolute path, or a path relative to the project
/// directory (not to wherever the agent runs the hook from, which follows its `cd`).
fn policy_path(spec: &str, project: &Path) -> String {
    if shellgate::policy::SHIPPED.iter().any(|(n, _)| *n == spec) || Path::new(spec).is_absolute() {
        spec.to_string()
    } else {
        project.join(spec).display().to_string()
    }
}

fn claude_like(v: Verdict, reason: &str) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": v.as_str(),
            "permissionDecisionReason": reason,
        }
    })
}
