//! `[sandbox]`: the kernel sandbox settings and the rules that apply only under it (their raw
//! types are in `policy/sandbox.rs`, beside the compiled ones).

use toml::Spanned;

use super::super::sandbox::{RawSandbox, SandboxMode, SandboxRoot};
use super::{File, Loader};
use crate::codes::DiagnosticCode;

impl Loader {
    /// `[sandbox]`: scalars override an included file's, lists and program rules extend.
    pub(super) fn apply_sandbox(&mut self, file: &File, raw: RawSandbox) {
        let mut sb = std::mem::take(&mut self.policy.sandbox);
        if let Some(mode) = &raw.mode {
            match mode.get_ref().as_str() {
                "enforce" => sb.mode = SandboxMode::Enforce,
                "off" => sb.mode = SandboxMode::Off,
                other => self.diag(
                    DiagnosticCode::PolicySandbox,
                    format!("[sandbox] mode must be \"enforce\" or \"off\", not {other:?}"),
                    file.loc(mode.span()),
                ),
            }
            sb.rule = Some(file.rule("sandbox.mode", mode.span()));
        }
        if let Some(net) = &raw.network {
            match net.get_ref().as_str() {
                "on" => sb.network = true,
                "off" => sb.network = false,
                other => self.diag(
                    DiagnosticCode::PolicySandbox,
                    format!("[sandbox] network must be \"on\" or \"off\", not {other:?}"),
                    file.loc(net.span()),
                ),
            }
        }
        for (list, out) in [(&raw.read, &mut sb.read), (&raw.write, &mut sb.write)] {
            for item in list {
                if let Some(root) = self.sandbox_root(file, item) {
                    out.push(root);
                }
            }
        }
        if let Some(l) = &raw.limits {
            for (value, out) in [
                (&l.cpu_seconds, &mut sb.limits.cpu_seconds),
                (&l.address_space, &mut sb.limits.address_space),
                (&l.processes, &mut sb.limits.processes),
                (&l.file_size, &mut sb.limits.file_size),
                (&l.open_files, &mut sb.limits.open_files),
                (&l.memory, &mut sb.limits.memory),
                (&l.cpu_percent, &mut sb.limits.cpu_percent),
                (&l.tmp_size, &mut sb.limits.tmp_size),
            ] {
                let Some(v) = value else { continue };
                match u64::try_from(*v.get_ref()) {
                    Ok(n) if n > 0 => *out = Some(n),
                    _ => self.diag(
                        DiagnosticCode::PolicySandbox,
                        format!("[sandbox.limits]: {} must be at least 1", v.get_ref()),
                        file.loc(v.span()),
                    ),
                }
            }
        }
        if let Some(c) = raw.limits.as_ref().and_then(|l| l.cgroup.as_ref()) {
            match c.get_ref().as_str() {
                "required" => sb.limits.cgroup_optional = false,
                "optional" => sb.limits.cgroup_optional = true,
                other => self.diag(
                    DiagnosticCode::PolicySandbox,
                    format!(
                        "[sandbox.limits] cgroup must be \"required\" or \"optional\", not {other:?}"
                    ),
                    file.loc(c.span()),
                ),
            }
        }
        for (name, prog) in &raw.programs {
            let path = vec!["sandbox".into(), "programs".into(), name.clone()];
            if let Some(rule) = self.program(file, &path, name, prog) {
                // As in [programs]: written again, an included rule is extended.
                let rule = match sb.programs.remove(name) {
                    Some(old) if prog.replace => super::merge::replaced(old, rule),
                    Some(old) if super::merge::operands_conflict(&old, &rule, prog).is_none() => {
                        super::merge::extend(old, rule, prog)
                    }
                    Some(_) => {
                        self.diag(
                            DiagnosticCode::PolicyContradiction,
                            format!(
                                "`[sandbox.programs.{name}]` extends the included rule and cannot \
                                 change its operand kinds; write `replace = true` to start it over"
                            ),
                            file.loc(file.key(&["sandbox", "programs", name])),
                        );
                        rule
                    }
                    None => rule,
                };
                sb.programs.insert(name.clone(), rule);
            }
        }
        if let Some(prog) = &raw.workspace_binaries {
            let path = vec!["sandbox".into(), "workspace_binaries".into()];
            if let Some(rule) = self.program(file, &path, "workspace binary", prog) {
                sb.workspace_binaries = Some(rule);
            }
        }
        sb.script_arguments
            .extend(raw.script_arguments.iter().map(|n| n.get_ref().clone()));
        self.policy.sandbox = sb;
    }

    /// A literal path with an anchor: no globs, no `.` or `..`.
    fn sandbox_root(&mut self, file: &File, item: &Spanned<String>) -> Option<SandboxRoot> {
        let text = item.get_ref();
        let Some((anchor, rest)) = super::paths::split_anchor(text) else {
            self.diag(
                DiagnosticCode::PolicySandbox,
                format!(
                    "[sandbox] `{text}` must start with {}",
                    super::paths::ANCHORS
                ),
                file.loc(item.span()),
            );
            return None;
        };
        if !rest.is_empty() && !rest.starts_with('/') {
            self.diag(
                DiagnosticCode::PolicySandbox,
                format!("[sandbox] `{text}`: a `/` must follow the anchor"),
                file.loc(item.span()),
            );
            return None;
        }
        let rest = rest.trim_matches('/');
        if rest.split('/').any(|c| c == ".." || c == ".")
            || rest.contains(['*', '?', '[', '{', '\0'])
        {
            self.diag(
                DiagnosticCode::PolicySandbox,
                format!("[sandbox] `{text}` must be a literal path (no globs, `.` or `..`)"),
                file.loc(item.span()),
            );
            return None;
        }
        Some(SandboxRoot {
            text: text.clone(),
            anchor,
            rest: rest.to_string(),
        })
    }
}
