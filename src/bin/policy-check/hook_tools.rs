//! What a coding agent's tool call touches, for the hook: the shell command of its shell
//! tool, or the paths its file tools read and write (Claude Code's `Read`, `Write`, `Edit`,
//! `MultiEdit`, `NotebookEdit`, `Glob`, `Grep`, `LS`; Gemini CLI's `read_file`,
//! `write_file`, `replace`, `list_directory`, `read_many_files`, `glob`,
//! `search_file_content`; Codex's `apply_patch`). File tools are decided with
//! [`check_file_access`], the same `[paths]` rules, codes and messages as the text editor
//! tool and as a shell command reading or writing that path.
//!
//! A file tool whose input lacks the path it acts on, or holds one the hook cannot read (a
//! patch it cannot parse, a glob that climbs out with `..` after a wildcard), is refused:
//! a hook that cannot see what a tool touches does not let it through.

use serde_json::{Map, Value};
use shellgate::evaluate::{check_file_access, unresolved_access, FileAccess};
use shellgate::{Context, Decision, Policy, Reason};

use crate::hooks::Agent;

/// One tool call, as the hook decides it.
#[derive(Debug, PartialEq)]
pub enum Call {
    /// The shell tool: this command.
    Shell(String),
    /// A file tool: each path with what the tool does to it (a glob as its fixed prefix).
    Files(Vec<Access>),
    /// A tool shellgate has no rule for (web search, sub-agents, to-do lists): the agent's
    /// own permission flow decides.
    Other,
}

/// A path a file tool reads or writes, as the agent gave it (relative to the call's cwd).
#[derive(Debug, PartialEq)]
pub struct Access {
    pub path: String,
    pub access: FileAccess,
    /// Set when the hook cannot tell what the tool would touch: the call is refused.
    pub unreadable: Option<String>,
}

impl Access {
    fn new(path: &str, access: FileAccess) -> Access {
        Access {
            path: path.to_string(),
            access,
            unreadable: None,
        }
    }
}

/// What `tool` with `input` does, for `agent`. `Err` is a malformed call of a known tool.
pub fn classify(agent: Agent, tool: &str, input: &Map<String, Value>) -> Result<Call, String> {
    use FileAccess::{Read, Write};
    let path = |keys: &[&str]| -> Result<String, String> {
        keys.iter()
            .find_map(|k| input.get(*k).and_then(Value::as_str))
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .ok_or_else(|| {
                format!(
                    "the `{tool}` call has no {} string: the paths it touches cannot be checked",
                    keys.iter()
                        .map(|k| format!("\"{k}\""))
                        .collect::<Vec<_>>()
                        .join(" or ")
                )
            })
    };
    // A search or listing whose directory is optional runs in the call's cwd.
    let dir_or_cwd = |keys: &[&str]| -> String {
        keys.iter()
            .find_map(|k| input.get(*k).and_then(Value::as_str))
            .filter(|p| !p.is_empty())
            .unwrap_or(".")
            .to_string()
    };
    let one = |p: String, a: FileAccess| Ok(Call::Files(vec![Access::new(&p, a)]));
    match (agent, tool) {
        (Agent::ClaudeCode | Agent::Codex, "Bash") | (Agent::Gemini, "run_shell_command") => {
            let command = input
                .get("command")
                .and_then(Value::as_str)
                .ok_or("\"tool_input\" has no \"command\" string")?;
            Ok(Call::Shell(command.to_string()))
        }
        (Agent::ClaudeCode, "Read" | "NotebookRead") => {
            one(path(&["file_path", "notebook_path"])?, Read)
        }
        (Agent::ClaudeCode, "Write" | "Edit" | "MultiEdit") => one(path(&["file_path"])?, Write),
        (Agent::ClaudeCode, "NotebookEdit") => one(path(&["notebook_path", "file_path"])?, Write),
        (Agent::ClaudeCode, "LS") => one(path(&["path"])?, Read),
        (Agent::ClaudeCode, "Grep") => one(dir_or_cwd(&["path"]), Read),
        (Agent::ClaudeCode, "Glob") => {
            let pattern = path(&["pattern"])?;
            Ok(Call::Files(vec![glob_access(
                &dir_or_cwd(&["path"]),
                &pattern,
            )]))
        }
        (Agent::Gemini, "read_file") => one(path(&["absolute_path", "file_path", "path"])?, Read),
        (Agent::Gemini, "write_file" | "replace" | "edit") => {
            one(path(&["file_path", "absolute_path", "path"])?, Write)
        }
        (Agent::Gemini, "list_directory" | "ls") => one(path(&["dir_path", "path"])?, Read),
        (Agent::Gemini, "search_file_content" | "grep_search" | "grep") => {
            one(dir_or_cwd(&["dir_path", "path"]), Read)
        }
        (Agent::Gemini, "glob") => {
            let pattern = path(&["pattern"])?;
            let base = dir_or_cwd(&["dir_path", "path"]);
            Ok(Call::Files(vec![glob_access(&base, &pattern)]))
        }
        (Agent::Gemini, "read_many_files") => {
            let paths = input
                .get("paths")
                .and_then(Value::as_array)
                .ok_or("the `read_many_files` call has no \"paths\" list")?;
            let base = dir_or_cwd(&["dir_path", "path"]);
            let mut out = Vec::new();
            for p in paths {
                let p = p
                    .as_str()
                    .ok_or("a `read_many_files` path is not a string")?;
                out.push(glob_access(&base, p));
            }
            if out.is_empty() {
                return Err("the `read_many_files` call lists no paths".into());
            }
            Ok(Call::Files(out))
        }
        (Agent::Codex, "apply_patch") => {
            let patch = input
                .get("command")
                .or_else(|| input.get("input"))
                .or_else(|| input.get("patch"))
                .and_then(Value::as_str)
                .ok_or("the `apply_patch` call has no patch text (\"command\")")?;
            Ok(Call::Files(patch_paths(patch)))
        }
        _ => Ok(Call::Other),
    }
}

/// The directory a glob reads: `base` joined with the pattern's fixed leading components
/// (those before the first one with `*`, `?`, `[` or `{`). A `..` after a wildcard may climb
/// anywhere (`**/..` is the parent of `base`), so it is refused.
fn glob_access(base: &str, pattern: &str) -> Access {
    let mut fixed: Vec<&str> = Vec::new();
    let mut wild = false;
    let mut unreadable = None;
    for comp in pattern.split('/') {
        if wild {
            if comp == ".." {
                unreadable = Some(format!(
                    "the glob `{pattern}` has `..` after a wildcard, which may lead anywhere"
                ));
                break;
            }
            continue;
        }
        if comp.contains(['*', '?', '[', '{']) {
            wild = true;
        } else {
            fixed.push(comp);
        }
    }
    let prefix = fixed.join("/");
    let path = if pattern.starts_with('/') {
        if prefix.is_empty() {
            "/".to_string()
        } else {
            prefix
        }
    } else if prefix.is_empty() {
        base.to_string()
    } else {
        format!("{}/{prefix}", base.trim_end_matches('/'))
    };
    Access {
        path,
        access: FileAccess::Read,
        unreadable,
    }
}

/// Every path a Codex patch (`*** Begin Patch` … `*** End Patch`) writes: added, updated
/// and deleted files, and the new name of a moved one. A text that is not such a patch is
/// one unreadable access, so the call is refused.
pub fn patch_paths(patch: &str) -> Vec<Access> {
    let mut lines = patch.lines().map(str::trim_end);
    // The model may wrap it in a here-doc of `apply_patch` (`apply_patch <<'EOF'`): the
    // patch is what lies between the markers.
    let begun = lines.by_ref().any(|l| l.trim() == "*** Begin Patch");
    let mut out = Vec::new();
    let mut ended = false;
    if begun {
        for line in lines.by_ref() {
            if line.trim() == "*** End Patch" {
                ended = true;
                break;
            }
            for marker in [
                "*** Add File: ",
                "*** Update File: ",
                "*** Delete File: ",
                "*** Move to: ",
            ] {
                if let Some(p) = line.strip_prefix(marker) {
                    out.push(Access::new(p.trim(), FileAccess::Write));
                }
            }
        }
    }
    if !begun || !ended || out.is_empty() {
        return vec![Access {
            path: String::new(),
            access: FileAccess::Write,
            unreadable: Some(
                "the patch is not one the hook can read (`*** Begin Patch` … `*** End Patch` \
                 with at least one `*** Add/Update/Delete File:`), so the files it changes \
                 cannot be checked"
                    .to_string(),
            ),
        }];
    }
    out
}

/// The decision over every access: the strictest of each path's, with the path named.
pub fn decide_files(policy: &Policy, ctx: &Context, accesses: &[Access]) -> Decision {
    let mut reasons: Vec<Reason> = Vec::new();
    for a in accesses {
        if let Some(why) = &a.unreadable {
            reasons.push(unresolved_access(
                why.clone(),
                shellgate::shell::Span::new(0, a.path.len()),
            ));
            continue;
        }
        let d = check_file_access(policy, ctx, &a.path, a.access);
        for mut r in d.reasons {
            if !r.message.contains(&a.path) {
                r.message = format!("`{}`: {}", a.path, r.message);
            }
            reasons.push(r);
        }
    }
    Decision::from_reasons(reasons)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn files(agent: Agent, tool: &str, input: Value) -> Vec<(String, FileAccess, bool)> {
        match classify(agent, tool, input.as_object().unwrap()).unwrap() {
            Call::Files(v) => v
                .into_iter()
                .map(|a| (a.path, a.access, a.unreadable.is_some()))
                .collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn globs_read_their_fixed_prefix_and_refuse_dotdot_after_a_wildcard() {
        let g = |base, pat| {
            let a = glob_access(base, pat);
            (a.path, a.unreadable.is_some())
        };
        assert_eq!(g(".", "**/*.rs"), (".".to_string(), false));
        assert_eq!(g("src", "lib/*.rs"), ("src/lib".to_string(), false));
        assert_eq!(g(".", "../../*"), ("./../..".to_string(), false));
        assert_eq!(g(".", "/etc/*"), ("/etc".to_string(), false));
        assert_eq!(g(".", "/*"), ("/".to_string(), false));
        assert!(g(".", "**/../../x").1);
        assert!(g(".", "src/*/..").1);
    }

    #[test]
    fn a_codex_patch_names_every_path_it_writes() {
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+x\n*** Update File: src/b.rs\n*** Move to: ../c.rs\n@@\n-x\n+y\n*** Delete File: d.txt\n*** End Patch\n";
        let got: Vec<String> = patch_paths(patch).into_iter().map(|a| a.path).collect();
        assert_eq!(got, ["a.txt", "src/b.rs", "../c.rs", "d.txt"]);
        // Wrapped in apply_patch's here-doc, as models write it.
        let wrapped = format!("apply_patch <<'EOF'\n{patch}EOF\n");
        assert_eq!(patch_paths(&wrapped).len(), 4);
        for bad in [
            "",
            "*** Begin Patch\n*** Add File: a\n",
            "*** Begin Patch\n*** End Patch\n",
        ] {
            let a = patch_paths(bad);
            assert!(a[0].unreadable.is_some(), "{bad:?}");
        }
    }

    #[test]
    fn every_file_tool_of_each_agent_names_its_paths() {
        use FileAccess::{Read, Write};
        let c = Agent::ClaudeCode;
        assert_eq!(
            files(c, "Read", json!({"file_path": "/x/a"})),
            [("/x/a".into(), Read, false)]
        );
        for t in ["Write", "Edit", "MultiEdit"] {
            assert_eq!(files(c, t, json!({"file_path": "f"}))[0].1, Write, "{t}");
        }
        assert_eq!(
            files(c, "NotebookEdit", json!({"notebook_path": "n.ipynb"}))[0],
            ("n.ipynb".into(), Write, false)
        );
        assert_eq!(files(c, "Grep", json!({"pattern": "x"}))[0].0, ".");
        assert_eq!(
            files(c, "Grep", json!({"pattern": "x", "path": ".."}))[0].0,
            ".."
        );
        assert_eq!(files(c, "LS", json!({"path": "/etc"}))[0].0, "/etc");
        let g = Agent::Gemini;
        assert_eq!(
            files(g, "read_file", json!({"absolute_path": "/a"}))[0].1,
            Read
        );
        assert_eq!(files(g, "replace", json!({"file_path": "/a"}))[0].1, Write);
        assert_eq!(
            files(
                g,
                "read_many_files",
                json!({"paths": ["src/**/*.rs", "../x"]})
            )
            .len(),
            2
        );
        // A known file tool without its path is refused, an unknown tool is left alone.
        assert!(classify(c, "Write", json!({"content": "x"}).as_object().unwrap()).is_err());
        assert_eq!(
            classify(c, "WebSearch", json!({"query": "x"}).as_object().unwrap()).unwrap(),
            Call::Other
        );
    }
}
