//! `policy-check hook AGENT`: a pre-tool hook for coding agents. Reads the agent's hook
//! payload (JSON) on stdin, evaluates the shell command in it, and answers in the agent's
//! own format.
//!
//! | agent | tool checked | allow | ask | deny |
//! |---|---|---|---|---|
//! | `claude-code` | `Bash` | `permissionDecision: "allow"` | `"ask"` | `"deny"` + reason |
//! | `codex` | `Bash` | no output (Codex rejects `allow` without `updatedInput`) | deny (Codex does not support `ask` here) | `"deny"` + reason |
//! | `gemini` | `run_shell_command` | `decision: "allow"` | deny (BeforeTool has no ask) | `decision: "deny"` + reason |
//!
//! Other tools get no opinion: no output (`{}` for Gemini CLI, which parses stdout) and exit 0. It fails closed: input that cannot be
//! read or understood, a policy that does not load, or an event other than the pre-tool one
//! exits 2 with the reason on stderr, which all three agents document as "block the tool
//! call and show stderr to the model".

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use serde_json::{json, Value};
use shellgate::{report, Context, Policy, Verdict};

/// Largest payload read (a command is at most a policy's `max_bytes`, 64 KiB by default).
const MAX_INPUT: u64 = 8 * 1024 * 1024;

/// The agents whose hook formats are supported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Agent {
    /// Claude Code `PreToolUse` hook (matcher `Bash`).
    ClaudeCode,
    /// OpenAI Codex CLI `PreToolUse` hook (matcher `Bash`).
    Codex,
    /// Gemini CLI `BeforeTool` hook (matcher `run_shell_command`).
    Gemini,
}

impl Agent {
    fn shell_tool(self) -> &'static str {
        match self {
            Agent::ClaudeCode | Agent::Codex => "Bash",
            Agent::Gemini => "run_shell_command",
        }
    }

    fn event(self) -> &'static str {
        match self {
            Agent::ClaudeCode | Agent::Codex => "PreToolUse",
            Agent::Gemini => "BeforeTool",
        }
    }
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
        Ok(_) => decide(opts, &input),
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
    if tool != opts.agent.shell_tool() {
        // Not a shell command: no opinion, but a snapshot first when it edits files.
        if FILE_WRITE_TOOLS.contains(&tool) {
            snapshot_for_hook(opts, obj, tool, None)?;
        }
        return Ok(None);
    }
    let tool_input = obj
        .get("tool_input")
        .and_then(Value::as_object)
        .ok_or_else(|| Block("the hook input has no \"tool_input\" object".into()))?;
    let command = tool_input
        .get("command")
        .and_then(Value::as_str)
        .ok_or_else(|| Block("\"tool_input\" has no \"command\" string".into()))?;
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
    let policy = Policy::from_name_or_file(&spec).map_err(|e| {
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
    })?;
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
    let decision = policy.evaluate(&ctx, command);
    // A call that may run (allowed, or asked and then approved by the person) and may write
    // is snapshotted before the agent runs it; a snapshot that fails blocks it.
    if decision.verdict != Verdict::Deny
        && policy.snapshots.enabled
        && shellgate::snapshot::may_write(command)
    {
        take_snapshot(&policy, &workspace, obj, tool, Some(command))?;
    }
    let reason = match (decision.verdict, opts.agent) {
        (Verdict::Allow, _) => format!("shellgate: allowed by the policy `{}`", policy.name),
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

/// The file tools of the agents that write (Claude Code's, Gemini CLI's): snapshotted before
/// they run, so `policy-check undo` reverts them too.
const FILE_WRITE_TOOLS: &[&str] = &[
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    "write_file",
    "replace",
];

/// The snapshot before a file tool's call: the policy and workspace as for a shell call.
fn snapshot_for_hook(
    opts: &HookOptions<'_>,
    obj: &serde_json::Map<String, Value>,
    tool: &str,
    command: Option<&str>,
) -> Result<(), Block> {
    let Some(cwd) = obj
        .get("cwd")
        .and_then(Value::as_str)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    else {
        return Err(Block(
            "the hook input has no absolute \"cwd\": the workspace to snapshot is unknown".into(),
        ));
    };
    let workspace = match &opts.workspace {
        Some(w) => w.clone(),
        None => project_dir(opts.agent, &cwd, |k| std::env::var_os(k)).0,
    };
    let policy = Policy::from_name_or_file(&policy_path(opts.policy, &workspace))
        .map_err(|e| Block(format!("cannot load the policy: {e}")))?;
    if !policy.snapshots.enabled {
        return Ok(());
    }
    take_snapshot(&policy, &workspace, obj, tool, command)
}

/// A snapshot of `workspace` named after the payload's `tool_use_id` (when the agent sends
/// one) or the time.
fn take_snapshot(
    policy: &Policy,
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
