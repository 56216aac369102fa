//! `bash_code_execution` calls: evaluated with `{output_dir}` known, run with stdout and
//! stderr apart in a fresh `$OUTPUT_DIR`, whose top-level files are captured
//! ([`OutputFiles`]) and answered as a [`CodeExecutionResult`].

use std::time::Instant;

use serde_json::Value;

use super::audit::AuditRecord;
use super::authorize::Asked;
use super::blocks::BashInput;
use super::outputs::{Capture, OutputFiles};
use super::shapes::{
    CodeExecutionContent, CodeExecutionErrorCode as Code, CodeExecutionResult,
    CodeExecutionResultType, OutputFileRef, OutputFileType,
};
use super::{Call, ExecError, Executor, Guard, Outcome, Output};
use crate::policy::Verdict;

/// The largest `$OUTPUT_DIR` file returned by default (larger: `output_file_too_large`).
pub(crate) const DEFAULT_MAX_OUTPUT_FILE_BYTES: u64 = 32 * 1024 * 1024;

impl<E: Executor> Guard<E> {
    /// A `bash_code_execution` call: evaluate with `{output_dir}` known, run with stdout
    /// and stderr apart, capture the files.
    pub(super) fn code_execution(&mut self, id: &str, input: &Value) -> Call {
        let started = Instant::now();
        let mut rec = AuditRecord::new(id);
        rec.action = "code";
        let result = self.code_execution_inner(id, input, &mut rec);
        rec.is_error = result.is_error();
        rec.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.audit(&rec);
        let outcome = match (rec.action, rec.verdict, result.error_code()) {
            ("invalid", _, _) => Outcome::Invalid,
            ("restart", _, _) => Outcome::Restarted,
            (_, Some(verdict), Some(_))
                if verdict != Verdict::Allow && rec.approved != Some(true) =>
            {
                Outcome::Refused { verdict }
            }
            (_, _, Some(code)) => Outcome::Failed {
                code: rec.error.unwrap_or(code.as_str()),
            },
            (_, _, None) => Outcome::Completed {
                status: rec.exit_status,
            },
        };
        Call {
            result: result.into(),
            outcome,
        }
    }

    fn code_execution_inner(
        &mut self,
        id: &str,
        input: &Value,
        rec: &mut AuditRecord,
    ) -> CodeExecutionResult {
        let bash_error = |code, message: &str| {
            CodeExecutionResult::bash_error(id, code, message.trim_start_matches("Error: "))
        };
        let command = match BashInput::from_json(input) {
            Err(e) => {
                rec.action = "invalid";
                return bash_error(Code::InvalidToolInput, &e.to_string());
            }
            Ok(BashInput::Restart) => {
                rec.action = "restart";
                return match self.executor.restart() {
                    Ok(()) => {
                        self.sync_cwd();
                        bash_result(id, String::new(), String::new(), 0, Vec::new())
                    }
                    Err(e) => bash_error(Code::Unavailable, &e.to_string()),
                };
            }
            Ok(BashInput::Command(c)) => c,
        };
        rec.command = Some(self.filter.filter(command.as_bytes()));
        if self.outputs.is_none() {
            match OutputFiles::temporary() {
                Ok(o) => self.outputs = Some(o),
                Err(e) => {
                    return bash_error(
                        Code::Unavailable,
                        &format!("cannot make a directory for $OUTPUT_DIR: {e}"),
                    )
                }
            }
        }
        let Some(outputs) = self.outputs.as_ref() else {
            return bash_error(Code::Unavailable, "no directory for $OUTPUT_DIR");
        };
        let dir = match outputs.new_call_dir() {
            Ok(d) => d,
            Err(e) => {
                return bash_error(
                    Code::Unavailable,
                    &format!("cannot make a directory for $OUTPUT_DIR: {e}"),
                )
            }
        };
        self.sync_cwd();
        self.context.output_dir = Some(dir.clone());
        let call = Asked {
            id,
            command: &command,
        };
        let refusal = self
            .authorize(
                call,
                rec,
                |policy, ctx| policy.evaluate(ctx, &command),
                |decision| crate::report::for_model(&command, decision),
            )
            .err();
        if refusal.is_none() && crate::snapshot::may_write(&command) {
            let shown = rec.command.clone();
            if let Err((code, text)) =
                self.snapshot_before(id, "bash_code_execution", shown.as_deref())
            {
                rec.error = Some(code);
                self.context.output_dir = None;
                let _ = std::fs::remove_dir_all(&dir);
                return bash_error(Code::Unavailable, &text);
            }
        }
        let ran = match refusal {
            Some(refusal) => Err(refusal.text),
            None => Ok(self.executor.run_code(&command, &dir)),
        };
        self.context.output_dir = None;
        self.sync_cwd();
        let run = match ran {
            Err(text) => {
                if let Some(o) = self.outputs.as_ref() {
                    let _ = o.discard(&dir);
                }
                return bash_error(Code::InvalidToolInput, &text);
            }
            Ok(run) => run,
        };
        let out = match run {
            Ok(out) => out,
            Err(e) => {
                if let Some(o) = self.outputs.as_ref() {
                    let _ = o.discard(&dir);
                }
                rec.error = Some(e.code());
                let code = match e {
                    ExecError::Timeout { .. } => Code::ExecutionTimeExceeded,
                    ExecError::InvalidCommand(_) => Code::InvalidToolInput,
                    _ => Code::Unavailable,
                };
                return bash_error(code, &e.to_string());
            }
        };
        rec.exit_status = out.status;
        rec.output_bytes = Some((out.stdout.len() + out.stderr.len()) as u64);
        let stdout = self.filter.filter_output(
            &Output::without_status(out.stdout.clone()).with_gap(out.stdout_gap.clone()),
        );
        let mut stderr = self.filter.filter_output(
            &Output::without_status(out.stderr.clone()).with_gap(out.stderr_gap.clone()),
        );
        let Some(outputs) = self.outputs.as_ref() else {
            return bash_error(Code::Unavailable, "no directory for $OUTPUT_DIR");
        };
        let files = match outputs.capture(&dir, self.max_output_file_bytes) {
            Err(e) => {
                return bash_error(
                    Code::Unavailable,
                    &format!("cannot collect the files of $OUTPUT_DIR: {e}"),
                )
            }
            Ok(Capture::TooLarge { name, size }) => {
                return bash_error(
                    Code::OutputFileTooLarge,
                    &format!(
                        "`{name}` in $OUTPUT_DIR is {size} bytes, more than the {}-byte limit; \
                         no file was returned",
                        self.max_output_file_bytes
                    ),
                )
            }
            Ok(Capture::Files { files, skipped }) => {
                for s in skipped {
                    if !stderr.is_empty() && !stderr.ends_with('\n') {
                        stderr.push('\n');
                    }
                    stderr.push_str(&format!("shellgate: $OUTPUT_DIR/{s}: not returned\n"));
                }
                files
            }
        };
        let refs = files
            .into_iter()
            .map(|f| OutputFileRef {
                kind: OutputFileType::BashCodeExecutionOutput,
                file_id: f.file_id,
            })
            .collect();
        bash_result(id, stdout, stderr, out.status.unwrap_or(-1), refs)
    }
}

fn bash_result(
    id: &str,
    stdout: String,
    stderr: String,
    return_code: i32,
    content: Vec<OutputFileRef>,
) -> CodeExecutionResult {
    CodeExecutionResult {
        kind: CodeExecutionResultType::BashCodeExecutionToolResult,
        tool_use_id: id.to_string(),
        content: CodeExecutionContent::BashCodeExecutionResult {
            stdout,
            stderr,
            return_code,
            content,
        },
    }
}
