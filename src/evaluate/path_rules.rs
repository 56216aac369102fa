//! A path word against `[paths]`, in every directory the command may run in, as reasons.

use std::path::PathBuf;

use super::{paths, Eval, Part, Resolved};
use crate::codes::ReasonCode;
use crate::policy::Verdict;
use crate::shell::Word;

/// Whether `p` is a device node or another `/dev` entry (or a descriptor link under
/// `/proc`): lexically, and when the context's files may be read, by its file type.
fn is_device(p: &std::path::Path, filesystem: bool) -> bool {
    use std::os::unix::fs::FileTypeExt;
    if p == std::path::Path::new("/dev") || p.starts_with("/dev/") {
        return true;
    }
    let mut c = p.components().skip(1);
    if c.next().is_some_and(|x| x.as_os_str() == "proc")
        && c.nth(1).is_some_and(|x| x.as_os_str() == "fd")
    {
        return true;
    }
    filesystem
        && std::fs::metadata(p).is_ok_and(|m| {
            let t = m.file_type();
            t.is_char_device() || t.is_block_device() || t.is_fifo() || t.is_socket()
        })
}

/// The rule a `[paths]` list is cited as: where its first pattern is written, extended by the
/// first pattern of each later file that added to it (an including policy's own entries).
fn list_rule(list: &[crate::policy::PathPattern]) -> Option<crate::policy::RuleRef> {
    let first = list.first()?;
    let mut rule = first.rule.clone();
    for p in &list[1..] {
        let file = &p.rule.location.file;
        if *file != rule.location.file && !rule.extended_by.iter().any(|l| l.file == *file) {
            rule.extended_by.push(p.rule.location.clone());
        }
    }
    Some(rule)
}

impl Eval<'_> {
    /// A `path-write` operand or option value that is a device (`rm /dev/null`, `chmod 000
    /// /dev/null`, `mv x /dev/tty`): refused unless the rule only opens it for writing, as a
    /// redirection does (`tee /dev/tty`). `[paths] write` lists `/dev/null` so that
    /// `> /dev/null` works; that never makes the node itself a file to remove or change.
    pub(super) fn device_operand(
        &mut self,
        rule: &crate::policy::ProgramRule,
        resolved: Option<&[Option<PathBuf>]>,
        span: crate::shell::Span,
    ) {
        if rule.opens_for_writing {
            return;
        }
        for p in resolved.unwrap_or_default().iter().flatten() {
            if is_device(p, self.ctx.filesystem) {
                self.reason(
                    ReasonCode::DeviceOperand,
                    Verdict::Deny,
                    Some(&rule.rule),
                    format!(
                        "`{}` is a device or `/dev` entry: `{}` would remove, rename, change or \
                         replace it, not write into it (only redirections such as `> /dev/null` \
                         may open it)",
                        p.display(),
                        rule.name
                    ),
                    span,
                );
                return;
            }
        }
    }

    /// Check a path word for reading or writing, against every working directory it may be
    /// resolved in. Unless a resolution is refused, returns one entry per working directory:
    /// the exact path, or `None` where the word is not one exact path (a glob, or a value
    /// known only at run time that the policy's `unresolved_paths` setting lets through).
    pub(super) fn path(&mut self, w: &Word, write: bool) -> Option<Vec<Option<PathBuf>>> {
        let policy = self.policy;
        let mut all = Vec::with_capacity(self.cwds.len());
        // By index: the checks below report reasons, and nothing here changes `cwds`.
        for i in 0..self.cwds.len() {
            let resolved = paths::resolve(w, self.ctx, &self.cwds[i]);
            self.environ_path(&resolved, w.span);
            let checked = paths::check(&policy.paths, &resolved, write, self.ctx);
            if let Ok(Some(p)) = checked {
                // The rule's name says the list (`paths.read`), the entry the pattern.
                self.allowed_by(Part::Path, w.span, &p.rule, None, &p.text);
            }
            if let Err((msg, pattern)) = checked {
                let mut msg = msg;
                let rules = &policy.paths;
                let protected = pattern.is_some_and(|p| p.rule.name == "paths.protected");
                let own = if protected {
                    &rules.protected_message
                } else if write {
                    &rules.write_message
                } else {
                    &rules.read_message
                };
                if let Some(extra) = own.as_ref().or(rules.message.as_ref()) {
                    msg.push_str(": ");
                    msg.push_str(extra);
                }
                match (&resolved, pattern) {
                    (Resolved::Unknown(_), _) => {
                        // The policy's setting decides; the caller learns the path is unknown
                        // (a `cd` to it leaves the directory unknown, which is refused).
                        let s = &policy.shell.unresolved_paths;
                        self.setting(ReasonCode::PathUnresolved, s, msg, w.span);
                        all.push(None);
                        continue;
                    }
                    (_, Some(p)) => {
                        let r = &p.rule;
                        self.reason(
                            if protected {
                                ReasonCode::PathWriteProtected
                            } else if write {
                                ReasonCode::PathWriteDenied
                            } else {
                                ReasonCode::PathReadDenied
                            },
                            Verdict::Deny,
                            Some(r),
                            msg,
                            w.span,
                        );
                    }
                    (_, None) => {
                        // Outside every allowed path: cite the list that would have to grow.
                        let paths = &policy.paths;
                        let list = if write { &paths.write } else { &paths.read };
                        let rule = list_rule(list);
                        let rule = rule.as_ref();
                        let code = if write {
                            ReasonCode::PathWriteOutside
                        } else {
                            ReasonCode::PathReadOutside
                        };
                        self.reason(code, Verdict::Deny, rule, msg, w.span);
                    }
                }
                return None;
            }
            all.push(match resolved {
                Resolved::Exact(p) => Some(p),
                _ => None,
            });
        }
        Some(all)
    }
}
