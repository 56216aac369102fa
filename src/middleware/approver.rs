//! The [`Approver`] seam: who decides the commands a policy marks `ask`.

use std::path::Path;

use crate::evaluate::Decision;

/// A command whose verdict is `ask`, waiting for a decision.
#[derive(Debug)]
#[non_exhaustive]
pub struct ApprovalRequest<'a> {
    /// The tool_use id.
    pub tool_use_id: &'a str,
    /// The command.
    pub command: &'a str,
    /// The policy's decision (verdict `ask`) with its reasons.
    pub decision: &'a Decision,
    /// The working directory it would run in.
    pub cwd: &'a Path,
}

/// Decides `ask` verdicts (a person at a prompt, a second policy, ...). Closures
/// `FnMut(&ApprovalRequest) -> bool` are approvers.
pub trait Approver: Send {
    /// Whether the command may run.
    fn approve(&mut self, request: &ApprovalRequest<'_>) -> bool;
}

impl<F> Approver for F
where
    F: FnMut(&ApprovalRequest<'_>) -> bool + Send,
{
    fn approve(&mut self, request: &ApprovalRequest<'_>) -> bool {
        self(request)
    }
}
