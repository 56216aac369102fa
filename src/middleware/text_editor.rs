//! The text editor tools (`str_replace_based_edit_tool`, `text_editor_code_execution`):
//! each path checked against the policy, then the operation done through the [`FileTool`].
//!
//! How policy rules map to file operations: `view` is a read of the path (a directory
//! listing too), `create`, `str_replace` and `insert` are writes; each is decided by
//! [`check_file_access`] with the `[paths]` rules shell reads and writes get (`read`,
//! `deny_read`, `write`, `deny_write`, `protected`), with their reason codes and messages,
//! for the path as given and for its real path (symlinks resolved). A refusal names the
//! rule, and the file tool is not called: nothing is read or written. The decision goes the
//! way a command's does (`Guard::authorize`): a failure inside the check is a denial, an
//! `ask` goes to the approver with the path as its command.

use std::path::Path;
use std::time::Instant;

use serde_json::Value;

use super::audit::AuditRecord;
use super::authorize::Asked;
use super::blocks::ToolResult;
use super::files::{FileError, FileKind, FileTool, WriteMode};
use super::shapes::{
    CodeExecutionContent, CodeExecutionErrorCode as Code, CodeExecutionResult,
    CodeExecutionResultType, EditorCommand, ResultBlock,
};
use super::{Call, Executor, Guard, Outcome};
use crate::evaluate::{check_file_access, normalize, real_path, Context, Decision, FileAccess};
use crate::policy::{Policy, Verdict};

/// Limits of the text editor tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EditorLimits {
    /// Largest file viewed or edited, and largest text written, in bytes.
    pub max_file_bytes: u64,
    /// Most entries of a directory listing.
    pub max_listing: usize,
}

impl Default for EditorLimits {
    fn default() -> EditorLimits {
        EditorLimits {
            max_file_bytes: 4 * 1024 * 1024,
            max_listing: 1000,
        }
    }
}

/// A failed file operation: the code for code execution, the text for the model.
struct EditError {
    code: Code,
    message: String,
}

impl EditError {
    fn invalid(message: impl Into<String>) -> EditError {
        EditError {
            code: Code::InvalidToolInput,
            message: message.into(),
        }
    }
}

impl From<FileError> for EditError {
    fn from(e: FileError) -> EditError {
        let code = match e {
            FileError::NotFound(_) => Code::FileNotFound,
            FileError::Unavailable(_) | FileError::Io { .. } => Code::Unavailable,
            _ => Code::InvalidToolInput,
        };
        EditError {
            code,
            message: e.to_string(),
        }
    }
}

/// What a successful file operation gives, in both shapes.
enum Edited {
    /// `view`: the client tool's text (numbered lines or a listing) and the code execution
    /// tool's (the lines themselves), each still to be filtered (file text is redacted
    /// already, before its lines were numbered).
    View {
        text: String,
        raw: String,
        num_lines: u64,
        start_line: u64,
        total_lines: u64,
    },
    Created {
        update: bool,
    },
    Replaced {
        hunk: Hunk,
    },
    Inserted {
        line: u64,
    },
}

/// The lines a replacement changed.
struct Hunk {
    old_start: u64,
    old: Vec<String>,
    new_start: u64,
    new: Vec<String>,
}

impl<E: Executor> Guard<E> {
    pub(super) fn text_editor(&mut self, id: &str, input: &Value, code: bool) -> Call {
        let started = Instant::now();
        let mut rec = AuditRecord::new(id);
        let result = match EditorCommand::from_json(input) {
            Err(e) => {
                rec.action = "invalid";
                Err(EditError::invalid(
                    e.to_string().trim_start_matches("Error: "),
                ))
            }
            Ok(cmd) => {
                rec.action = cmd.name();
                rec.command = Some(self.filter.filter(cmd.path().as_bytes()));
                if code && matches!(cmd, EditorCommand::Insert { .. }) {
                    Err(EditError::invalid(
                        "text_editor_code_execution has no `insert` command; use \
                         str_replace (or create)",
                    ))
                } else {
                    self.edit(&cmd, &mut rec, code)
                }
            }
        };
        let outcome = match (&result, rec.verdict) {
            _ if rec.action == "invalid" => Outcome::Invalid,
            (Ok(_), _) => Outcome::Completed { status: Some(0) },
            (Err(_), Some(verdict)) if verdict != Verdict::Allow && rec.approved != Some(true) => {
                Outcome::Refused { verdict }
            }
            (Err(e), _) => Outcome::Failed {
                code: e.code.as_str(),
            },
        };
        let block: ResultBlock = match (code, result) {
            (false, Ok(Edited::View { text, .. })) => {
                ToolResult::ok(id, self.filter.filter(text.as_bytes())).into()
            }
            (false, Ok(done)) => ToolResult::ok(id, editor_text(done)).into(),
            (false, Err(e)) => ToolResult::error(id, format!("Error: {}", e.message)).into(),
            (true, Ok(done)) => CodeExecutionResult {
                kind: CodeExecutionResultType::TextEditorCodeExecutionToolResult,
                tool_use_id: id.to_string(),
                content: self.editor_content(done),
            }
            .into(),
            (true, Err(e)) => CodeExecutionResult::editor_error(id, e.code, e.message).into(),
        };
        rec.is_error = block.is_error();
        rec.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.audit(&rec);
        Call {
            result: block,
            outcome,
        }
    }

    fn editor_content(&self, done: Edited) -> CodeExecutionContent {
        match done {
            Edited::View {
                raw,
                num_lines,
                start_line,
                total_lines,
                ..
            } => CodeExecutionContent::TextEditorCodeExecutionViewResult {
                file_type: "text".to_string(),
                content: self.filter.filter(raw.as_bytes()),
                num_lines: Some(num_lines),
                start_line: Some(start_line),
                total_lines: Some(total_lines),
            },
            Edited::Created { update } => {
                CodeExecutionContent::TextEditorCodeExecutionCreateResult {
                    is_file_update: update,
                }
            }
            Edited::Replaced { hunk } => {
                let lines = hunk
                    .old
                    .iter()
                    .map(|l| format!("-{l}"))
                    .chain(hunk.new.iter().map(|l| format!("+{l}")))
                    .map(|l| self.filter.filter(l.as_bytes()))
                    .collect();
                CodeExecutionContent::TextEditorCodeExecutionStrReplaceResult {
                    old_start: hunk.old_start,
                    old_lines: hunk.old.len() as u64,
                    new_start: hunk.new_start,
                    new_lines: hunk.new.len() as u64,
                    lines,
                }
            }
            // Refused before it gets here (no insert in code execution).
            Edited::Inserted { .. } => CodeExecutionContent::TextEditorCodeExecutionCreateResult {
                is_file_update: true,
            },
        }
    }

    /// Check the path, then do the operation through the file tool.
    fn edit(
        &mut self,
        cmd: &EditorCommand,
        rec: &mut AuditRecord,
        code: bool,
    ) -> Result<Edited, EditError> {
        self.sync_cwd();
        let access = match cmd {
            EditorCommand::View { .. } => FileAccess::Read,
            _ => FileAccess::Write,
        };
        let path = cmd.path();
        let mut ctx = self.context.clone();
        ctx.output_dir = None;
        let id = rec.tool_use_id.clone();
        let call = Asked {
            id: &id,
            command: path,
        };
        let decide = |policy: &Policy, _: &Context| {
            let mut decision = check_file_access(policy, &ctx, path, access);
            // An edit reads the file too (and says what it matched): a path that may be
            // written but not read is not edited.
            if matches!(
                cmd,
                EditorCommand::StrReplace { .. } | EditorCommand::Insert { .. }
            ) {
                let read = check_file_access(policy, &ctx, path, FileAccess::Read);
                decision.verdict = decision.verdict.max(read.verdict);
                decision.reasons.extend(read.reasons);
            }
            decision
        };
        let explain = |decision: &Decision| file_refusal(cmd, path, decision);
        if let Err(refusal) = self.authorize(call, rec, decide, explain) {
            return Err(EditError::invalid(refusal.text));
        }
        if !matches!(cmd, EditorCommand::View { .. }) {
            let shown = rec.command.clone();
            let tool = if code {
                "text_editor_code_execution"
            } else {
                "str_replace_based_edit_tool"
            };
            if let Err((c, text)) = self.snapshot_before(&id, tool, shown.as_deref()) {
                rec.error = Some(c);
                return Err(EditError {
                    code: Code::Unavailable,
                    message: text.trim_start_matches("Error: ").to_string(),
                });
            }
        }
        let real = real_path(&normalize(&ctx.cwd.join(path)));
        let max = self.editor_limits.max_file_bytes;
        match cmd {
            EditorCommand::View { view_range, .. } => match self.files.stat(&real)? {
                FileKind::Directory => self.list(path, &real),
                FileKind::Other => Err(FileError::NotAFile(real).into()),
                FileKind::File { .. } => {
                    let text = self.read_text(&real, max)?;
                    self.view(&text, *view_range)
                }
            },
            EditorCommand::Create { file_text, .. } => {
                if file_text.len() as u64 > max {
                    return Err(EditError::invalid(format!(
                        "file_text is {} bytes, more than the {max}-byte limit; nothing was written",
                        file_text.len()
                    )));
                }
                let mode = match self.files.stat(&real) {
                    Ok(FileKind::File { .. }) => WriteMode::Replace,
                    Ok(FileKind::Directory) => {
                        return Err(EditError::invalid(format!(
                            "`{}` is a directory; nothing was written",
                            real.display()
                        )))
                    }
                    Ok(FileKind::Other) => return Err(FileError::NotAFile(real).into()),
                    Err(FileError::NotFound(_)) => WriteMode::CreateNew,
                    Err(e) => return Err(e.into()),
                };
                self.files.write(&real, file_text.as_bytes(), mode)?;
                Ok(Edited::Created {
                    update: mode == WriteMode::Replace,
                })
            }
            EditorCommand::StrReplace {
                old_str, new_str, ..
            } => {
                let text = self.read_text(&real, max)?;
                let (new_text, hunk) = str_replace(&text, old_str, new_str, &real)?;
                self.write_edit(&real, &new_text, max)?;
                Ok(Edited::Replaced { hunk })
            }
            EditorCommand::Insert {
                insert_line,
                text: inserted,
                ..
            } => {
                let text = self.read_text(&real, max)?;
                let new_text = insert(&text, *insert_line, inserted, &real)?;
                self.write_edit(&real, &new_text, max)?;
                Ok(Edited::Inserted { line: *insert_line })
            }
        }
    }

    fn read_text(&mut self, real: &Path, max: u64) -> Result<String, EditError> {
        if let FileKind::Other | FileKind::Directory = self.files.stat(real)? {
            return Err(FileError::NotAFile(real.to_path_buf()).into());
        }
        let bytes = self.files.read(real, max)?;
        String::from_utf8(bytes).map_err(|e| {
            EditError::invalid(format!(
                "`{}` is not UTF-8 text (invalid byte at offset {}); the text editor reads \
                 and edits only UTF-8 text files",
                real.display(),
                e.utf8_error().valid_up_to()
            ))
        })
    }

    fn write_edit(&mut self, real: &Path, text: &str, max: u64) -> Result<(), EditError> {
        if text.len() as u64 > max {
            return Err(EditError::invalid(format!(
                "the edited file would be {} bytes, more than the {max}-byte limit; nothing \
                 was written",
                text.len()
            )));
        }
        Ok(self
            .files
            .write(real, text.as_bytes(), WriteMode::Replace)?)
    }

    fn view(&self, text: &str, range: Option<(i64, i64)>) -> Result<Edited, EditError> {
        // Redacted before lines are numbered, so that rules anchored at a line's start see it.
        let redacted = self.filter.redact(text.as_bytes());
        let redacted = String::from_utf8_lossy(&redacted).into_owned();
        let lines: Vec<&str> = redacted.split_inclusive('\n').collect();
        let total = lines.len() as u64;
        let (start, end) = match range {
            None => (1, total),
            Some((s, e)) => {
                let bad = |why: &str| {
                    EditError::invalid(format!(
                        "invalid view_range [{s}, {e}]: {why} (the file has {total} lines)"
                    ))
                };
                if s < 1 || (s as u64 > total && !(s == 1 && total == 0)) {
                    return Err(bad("the first line must be between 1 and the last line"));
                }
                let end = match e {
                    -1 => total,
                    e if e >= s && e as u64 <= total => e as u64,
                    _ => return Err(bad(
                        "the last line must be -1 or between the first line and the file's last",
                    )),
                };
                (s as u64, end)
            }
        };
        let shown = lines
            .get((start.saturating_sub(1)) as usize..end as usize)
            .unwrap_or(&[]);
        let raw: String = shown.concat();
        let mut numbered = String::new();
        for (i, l) in shown.iter().enumerate() {
            numbered.push_str(&format!(
                "{:>6}\t{}\n",
                start + i as u64,
                l.strip_suffix('\n').unwrap_or(l)
            ));
        }
        Ok(Edited::View {
            text: numbered,
            raw,
            num_lines: shown.len() as u64,
            start_line: start,
            total_lines: total,
        })
    }

    fn list(&mut self, shown: &str, real: &Path) -> Result<Edited, EditError> {
        let max = self.editor_limits.max_listing;
        let entries = self.files.list(real, 2, max)?;
        let mut raw = String::new();
        for e in entries.iter().take(max) {
            raw.push_str(&e.path);
            if e.is_dir {
                raw.push('/');
            }
            raw.push('\n');
        }
        if entries.len() > max {
            raw.push_str(&format!(
                "[... more than {max} entries; view a subdirectory ...]\n"
            ));
        }
        let text = format!(
            "Files and directories up to 2 levels deep in {shown}, hidden ones left out:\n{raw}"
        );
        let n = raw.lines().count() as u64;
        Ok(Edited::View {
            text,
            raw,
            num_lines: n,
            start_line: 1,
            total_lines: n,
        })
    }
}

/// The client text editor's text for a successful operation.
fn editor_text(done: Edited) -> String {
    match done {
        Edited::View { text, .. } => text,
        Edited::Created { update: false } => "File created successfully.".to_string(),
        Edited::Created { update: true } => "File overwritten successfully.".to_string(),
        Edited::Replaced { hunk } => format!(
            "Successfully replaced text at exactly one location (lines {}-{} now).",
            hunk.new_start,
            hunk.new_start + (hunk.new.len() as u64).max(1) - 1
        ),
        Edited::Inserted { line } => format!("Text inserted successfully after line {line}."),
    }
}

/// What the model is told when the policy refuses a file operation: the operation, the path,
/// and each reason with its code and rule.
fn file_refusal(cmd: &EditorCommand, path: &str, decision: &Decision) -> String {
    let (what, nothing) = match cmd {
        EditorCommand::View { .. } => ("reads", "nothing was read"),
        EditorCommand::Create { .. } => ("writes", "nothing was written"),
        _ => ("reads and writes", "nothing was read or written"),
    };
    let mut out = format!(
        "`{}` of `{path}` was refused by the shellgate policy ({what} of this path must be \
         allowed); {nothing}.",
        cmd.name()
    );
    for r in decision
        .reasons
        .iter()
        .filter(|r| r.verdict != Verdict::Allow)
        .take(5)
    {
        out.push_str(&format!("\n- [{}] {}", r.code, r.message));
        if let Some(rule) = &r.rule {
            out.push_str(&format!(" (rule `{}`)", rule.name));
        }
    }
    out
}

/// Replace the only occurrence of `old` in `text` with `new`; the changed lines.
fn str_replace(text: &str, old: &str, new: &str, path: &Path) -> Result<(String, Hunk), EditError> {
    // Overlapping occurrences count: "aa" occurs twice in "aaa", which is ambiguous.
    let mut at = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(old) {
        at.push(from + i);
        // On to the next character: matches may overlap.
        let step = text[from + i..].chars().next().map_or(1, char::len_utf8);
        from += i + step;
    }
    match at.len() {
        0 => {
            return Err(EditError::invalid(format!(
                "old_str was not found in `{}` (it must match exactly, whitespace and line \
                 breaks included); nothing was changed",
                path.display()
            )))
        }
        1 => {}
        n => {
            return Err(EditError::invalid(format!(
                "old_str matches {n} times in `{}`; it must match exactly once (include more \
                 of the surrounding lines); nothing was changed",
                path.display()
            )))
        }
    }
    let i = at[0];
    let result = format!("{}{new}{}", &text[..i], &text[i + old.len()..]);
    Ok((result.clone(), hunk(text, &result)))
}

/// The lines that differ between `before` and `after` (one hunk: common prefix and suffix
/// lines left out).
fn hunk(before: &str, after: &str) -> Hunk {
    let a: Vec<&str> = before.split_inclusive('\n').collect();
    let b: Vec<&str> = after.split_inclusive('\n').collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let max_suffix = a.len().min(b.len()) - prefix;
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(max_suffix)
        .take_while(|(x, y)| x == y)
        .count();
    let strip = |l: &&str| l.strip_suffix('\n').unwrap_or(l).to_string();
    Hunk {
        old_start: prefix as u64 + 1,
        old: a[prefix..a.len() - suffix].iter().map(strip).collect(),
        new_start: prefix as u64 + 1,
        new: b[prefix..b.len() - suffix].iter().map(strip).collect(),
    }
}

/// `text` with `inserted` after line `after` (0: at the top).
fn insert(text: &str, after: u64, inserted: &str, path: &Path) -> Result<String, EditError> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    if after > lines.len() as u64 {
        return Err(EditError::invalid(format!(
            "insert_line {after} is past the end of `{}`, which has {} lines; nothing was \
             changed",
            path.display(),
            lines.len()
        )));
    }
    let k = after as usize;
    let mut out = lines[..k].concat();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(inserted);
    if k < lines.len() && !inserted.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&lines[k..].concat());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn str_replace_counts_overlapping_matches() {
        let p = PathBuf::from("/f");
        let e = str_replace("aaa", "aa", "b", &p).err().expect("ambiguous");
        assert!(e.message.contains("matches 2 times"), "{}", e.message);
        let (t, h) = str_replace("one\ntwo\nthree\n", "two", "2\n2b", &p)
            .ok()
            .unwrap();
        assert_eq!(t, "one\n2\n2b\nthree\n");
        assert_eq!(
            (h.old_start, h.old, h.new),
            (
                2,
                vec!["two".to_string()],
                vec!["2".to_string(), "2b".to_string()]
            )
        );
        // A multi-byte character after the match start does not break the scan.
        assert!(str_replace("é é", "é", "e", &p).is_err());
    }

    #[test]
    fn insert_goes_after_the_line() {
        let p = PathBuf::from("/f");
        assert_eq!(insert("a\nb\n", 0, "x", &p).ok().unwrap(), "x\na\nb\n");
        assert_eq!(insert("a\nb\n", 1, "x\n", &p).ok().unwrap(), "a\nx\nb\n");
        assert_eq!(insert("a\nb", 2, "x", &p).ok().unwrap(), "a\nb\nx");
        assert!(insert("a\n", 2, "x", &p).is_err());
    }
}
