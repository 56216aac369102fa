//! The seam for undo: a [`Snapshotter`] the [`Guard`](super::Guard) calls before each
//! allowed call that may write (a bash command [`may_write`](crate::snapshot::may_write)
//! does not clear, a text editor `create` / `str_replace` / `insert`, a code execution
//! command). An error refuses the call: it never runs unprotected.

use crate::snapshot::{SnapshotError, Snapshots};

/// A call about to run that may change the workspace.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct WriteCall<'a> {
    /// The call's tool_use id.
    pub tool_use_id: &'a str,
    /// Its tool: `bash`, `str_replace_based_edit_tool`, `bash_code_execution`, ...
    pub tool: &'a str,
    /// The command (or the edited path), filtered like the audit log's.
    pub command: Option<&'a str>,
}

/// Takes a snapshot before a call that may write; [`Snapshots`] is the reference one.
pub trait Snapshotter: Send {
    /// Snapshot the workspace before `call`; an error refuses the call.
    fn before_write(&mut self, call: &WriteCall<'_>) -> Result<(), SnapshotError>;
}

impl Snapshotter for Snapshots {
    fn before_write(&mut self, call: &WriteCall<'_>) -> Result<(), SnapshotError> {
        self.before(call.tool_use_id, call.tool, call.command)
            .map(|_| ())
    }
}

impl<F: FnMut(&WriteCall<'_>) -> Result<(), SnapshotError> + Send> Snapshotter for F {
    fn before_write(&mut self, call: &WriteCall<'_>) -> Result<(), SnapshotError> {
        self(call)
    }
}
