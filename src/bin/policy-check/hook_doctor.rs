//! `policy-check hook AGENT --doctor`: checks that the installed hook configuration cannot
//! silently do nothing. For each agent it finds the settings files the agent reads, the hook
//! entries that run `policy-check hook AGENT`, and says for each: whether its matcher names
//! every tool the hook guards, whether the policy it names loads, whether the workspace is
//! pinned where the agent gives no project directory, and whether the agent will run it at all
//! (Codex skips an untrusted, non-managed hook without a word; Claude Code started in a
//! subdirectory reads no project settings).
//!
//! Exit 0 when every check passes, 1 when one fails (each failure says what to do).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::hooks::Agent;

/// One finding of the doctor.
struct Finding {
    ok: bool,
    text: String,
}

/// A hook entry found in a settings file.
struct Entry {
    file: PathBuf,
    /// Managed (system) configuration, which the agent trusts without asking.
    managed: bool,
    /// Read from the user's own settings, which apply in every directory.
    user_level: bool,
    matcher: String,
    command: String,
    /// (group, handler) index, for Codex's trust key.
    index: (usize, usize),
}

/// The tools each agent's hook must see, by the names the agent gives them.
fn guarded_tools(agent: Agent) -> &'static [&'static str] {
    match agent {
        Agent::ClaudeCode => &[
            "Bash",
            "Read",
            "Write",
            "Edit",
            "MultiEdit",
            "NotebookEdit",
            "Glob",
            "Grep",
            "LS",
        ],
        Agent::Codex => &["Bash", "apply_patch"],
        Agent::Gemini => &[
            "run_shell_command",
            "read_file",
            "write_file",
            "replace",
            "list_directory",
            "glob",
            "search_file_content",
            "read_many_files",
        ],
    }
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"))
}

/// The settings files `agent` reads for `workspace`: (path, managed, user-level).
fn settings_files(agent: Agent, workspace: &Path) -> Vec<(PathBuf, bool, bool)> {
    match agent {
        Agent::ClaudeCode => {
            let user = std::env::var_os("CLAUDE_CONFIG_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| home().join(".claude"));
            vec![
                (
                    PathBuf::from("/etc/claude-code/managed-settings.json"),
                    true,
                    true,
                ),
                (user.join("settings.json"), false, true),
                (workspace.join(".claude/settings.json"), false, false),
                (workspace.join(".claude/settings.local.json"), false, false),
            ]
        }
        Agent::Codex => {
            let user = std::env::var_os("CODEX_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| home().join(".codex"));
            vec![
                (PathBuf::from("/etc/codex/hooks.json"), true, true),
                (PathBuf::from("/etc/codex/config.toml"), true, true),
                (user.join("hooks.json"), false, true),
                (user.join("config.toml"), false, true),
                (workspace.join(".codex/hooks.json"), false, false),
                (workspace.join(".codex/config.toml"), false, false),
            ]
        }
        Agent::Gemini => vec![
            (home().join(".gemini/settings.json"), false, true),
            (workspace.join(".gemini/settings.json"), false, false),
        ],
    }
}

/// Reads a settings file (JSON, or TOML for Codex's config.toml) as JSON.
fn read_settings(path: &Path) -> Option<Result<Value, String>> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(if path.extension().is_some_and(|e| e == "toml") {
        toml::from_str::<toml::Value>(&text)
            .map_err(|e| e.to_string())
            .and_then(|v| serde_json::to_value(v).map_err(|e| e.to_string()))
    } else {
        serde_json::from_str(&text).map_err(|e| e.to_string())
    })
}

/// The hook entries of one settings value that run `policy-check hook AGENT`.
fn entries(agent: Agent, file: &Path, managed: bool, user_level: bool, v: &Value) -> Vec<Entry> {
    let mut out = Vec::new();
    let event = match agent {
        Agent::Gemini => "BeforeTool",
        _ => "PreToolUse",
    };
    let Some(groups) = v
        .get("hooks")
        .and_then(|h| h.get(event))
        .and_then(Value::as_array)
    else {
        return out;
    };
    let needle = format!("hook {}", agent.cli_name());
    for (g, group) in groups.iter().enumerate() {
        let matcher = group
            .get("matcher")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let handlers = group.get("hooks").and_then(Value::as_array);
        for (h, handler) in handlers.into_iter().flatten().enumerate() {
            let Some(command) = handler.get("command").and_then(Value::as_str) else {
                continue;
            };
            if command.contains("policy-check") && command.contains(&needle) {
                out.push(Entry {
                    file: file.to_path_buf(),
                    managed,
                    user_level,
                    matcher: matcher.clone(),
                    command: command.to_string(),
                    index: (g, h),
                });
            }
        }
    }
    out
}

/// The words of a hook command, as a shell would split it (quotes removed; `$VAR` and
/// `"$VAR"` replaced from `vars`).
fn words(command: &str, vars: &[(&str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut started = false;
    let mut chars = command.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (Some(q), c) if c == q => quote = None,
            (Some('\''), c) => cur.push(c),
            (_, '$') => {
                let braced = chars.peek() == Some(&'{');
                if braced {
                    chars.next();
                }
                let mut name = String::new();
                while let Some(&n) = chars.peek() {
                    if n.is_ascii_alphanumeric() || n == '_' {
                        name.push(n);
                        chars.next();
                    } else {
                        break;
                    }
                }
                if braced && chars.peek() == Some(&'}') {
                    chars.next();
                }
                match vars.iter().find(|(k, _)| *k == name) {
                    Some((_, v)) => cur.push_str(v),
                    None => {
                        cur.push('$');
                        cur.push_str(&name);
                    }
                }
                started = true;
            }
            (_, '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
                started = true;
            }
            (_, c) => {
                cur.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(cur);
    }
    out
}

/// The value of `--name VALUE` or `--name=VALUE` among `words`.
fn option<'a>(words: &'a [String], name: &str) -> Option<&'a str> {
    let eq = format!("{name}=");
    words.iter().enumerate().find_map(|(i, w)| {
        if w == name {
            words.get(i + 1).map(String::as_str)
        } else {
            w.strip_prefix(&eq)
        }
    })
}

/// Whether Codex's user configuration records a trusted hash for this entry (Codex keys
/// hook state by `<file>:pre_tool_use:<group>:<handler>` under `[hooks.state]`).
fn codex_trusted(entry: &Entry) -> bool {
    let user = std::env::var_os("CODEX_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".codex"));
    let Some(Ok(config)) = read_settings(&user.join("config.toml")) else {
        return false;
    };
    let suffix = format!(
        "{}:pre_tool_use:{}:{}",
        entry.file.display(),
        entry.index.0,
        entry.index.1
    );
    config
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(Value::as_object)
        .is_some_and(|states| {
            states.iter().any(|(k, v)| {
                k.trim().ends_with(&suffix)
                    && v.get("trusted_hash").and_then(Value::as_str).is_some()
                    && v.get("enabled").and_then(Value::as_bool) != Some(false)
            })
        })
}

/// Runs the doctor for `agent` in `workspace`; prints every finding; returns the exit code.
pub fn doctor(agent: Agent, workspace: &Path) -> u8 {
    let mut findings: Vec<Finding> = Vec::new();
    let mut push = |ok: bool, text: String| findings.push(Finding { ok, text });
    let mut found = Vec::new();
    for (file, managed, user_level) in settings_files(agent, workspace) {
        match read_settings(&file) {
            None => {}
            Some(Err(e)) => push(
                false,
                format!("{}: cannot be read as settings: {e}", file.display()),
            ),
            Some(Ok(v)) => found.extend(entries(agent, &file, managed, user_level, &v)),
        }
    }
    let name = agent.cli_name();
    if found.is_empty() {
        push(
            false,
            format!(
                "no hook runs `policy-check hook {name}`: nothing guards this agent's tools. \
                 Print the configuration with `policy-check hook {name} --policy P \
                 --print-config` and add it to the agent's settings (docs/integrations.md)"
            ),
        );
    }
    let ws = workspace.display().to_string();
    for e in &found {
        let at = format!("{} (`{}`)", e.file.display(), e.command);
        // The matcher: a regular expression in all three agents; empty or `*` is every tool.
        let missing: Vec<&str> = match e.matcher.as_str() {
            "" | "*" => Vec::new(),
            m => match regex::Regex::new(&format!("^(?:{m})$")) {
                Ok(re) => guarded_tools(agent)
                    .iter()
                    .copied()
                    .filter(|t| !re.is_match(t))
                    .collect(),
                Err(err) => {
                    push(
                        false,
                        format!("{at}: the matcher `{m}` is not a valid pattern: {err}"),
                    );
                    continue;
                }
            },
        };
        if missing.is_empty() {
            push(true, format!("{at}: the matcher covers every guarded tool"));
        } else {
            push(
                false,
                format!(
                    "{at}: the matcher `{}` leaves {} unguarded; use `{}`",
                    e.matcher,
                    missing.join(", "),
                    agent.matcher()
                ),
            );
        }
        let vars = [
            ("CLAUDE_PROJECT_DIR", ws.as_str()),
            ("GEMINI_PROJECT_DIR", ws.as_str()),
        ];
        let words = words(&e.command, &vars);
        let pinned = option(&words, "--workspace");
        let base = pinned
            .map(PathBuf::from)
            .unwrap_or_else(|| workspace.to_path_buf());
        match option(&words, "--policy") {
            None => push(
                false,
                format!("{at}: no --policy: the hook falls back to read-only; name the policy"),
            ),
            Some(spec) => {
                let path = if shellgate::policy::SHIPPED.iter().any(|(n, _)| *n == spec)
                    || Path::new(spec).is_absolute()
                {
                    spec.to_string()
                } else {
                    base.join(spec).display().to_string()
                };
                match shellgate::Policy::from_name_or_file(&path) {
                    Ok(p) => push(
                        true,
                        format!("{at}: the policy `{}` loads ({path})", p.name),
                    ),
                    Err(err) => push(false, format!("{at}: the policy does not load: {err}")),
                }
            }
        }
        match agent {
            Agent::Codex => {
                if pinned.is_none() {
                    push(
                        false,
                        format!(
                            "{at}: no --workspace: Codex gives hooks no project directory, so a \
                             call's workdir in another repository would pick that repository's \
                             policy; add --workspace {}",
                            crate::hooks::sh_quote(&ws)
                        ),
                    );
                }
                if e.managed {
                    push(
                        true,
                        format!("{at}: managed configuration: Codex runs it without trust"),
                    );
                } else if codex_trusted(e) {
                    push(
                        true,
                        format!("{at}: Codex has a trusted hash for it (re-trust after any edit)"),
                    );
                } else {
                    push(
                        false,
                        format!(
                            "{at}: not trusted: Codex skips untrusted hooks without a word (in \
                             `codex exec` too), so nothing is guarded. Trust it in Codex's \
                             hooks view, or install it as managed configuration in \
                             /etc/codex/hooks.json, which Codex always runs"
                        ),
                    );
                }
            }
            Agent::ClaudeCode if !e.user_level => {
                let absolute = option(&words, "--policy").is_some_and(|p| {
                    Path::new(p).is_absolute()
                        || shellgate::policy::SHIPPED.iter().any(|(n, _)| *n == p)
                });
                if found.iter().any(|o| o.user_level) {
                    push(
                        true,
                        format!(
                            "{at}: project-level; a user-level hook also guards other directories"
                        ),
                    );
                } else {
                    push(
                        false,
                        format!(
                            "{at}: project settings only: Claude Code started in a subdirectory \
                             of the project reads no project settings, and then no hook runs. Put \
                             the hook in ~/.claude/settings.json with an absolute --policy{}",
                            if absolute {
                                ""
                            } else {
                                " (this one is relative)"
                            }
                        ),
                    );
                }
            }
            _ => {}
        }
    }
    let failed = findings.iter().filter(|f| !f.ok).count();
    for f in &findings {
        println!("{} {}", if f.ok { "ok:   " } else { "FAIL: " }, f.text);
    }
    println!(
        "{name} hook doctor: {} check(s), {failed} failed",
        findings.len()
    );
    u8::from(failed > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_commands_split_as_a_shell_would() {
        let w = words(
            r#"policy-check hook claude-code --policy "$CLAUDE_PROJECT_DIR"/shellgate.toml --workspace='/a b'"#,
            &[("CLAUDE_PROJECT_DIR", "/p")],
        );
        assert_eq!(option(&w, "--policy"), Some("/p/shellgate.toml"));
        assert_eq!(option(&w, "--workspace"), Some("/a b"));
        assert_eq!(words("a 'b c' d\\ e", &[]), ["a", "b c", "d e"]);
    }
}
