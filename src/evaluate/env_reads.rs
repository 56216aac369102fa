//! Reading the environment: expanding a variable the command did not set.

/// What the walk knows of the names the command assigns itself.
#[derive(Debug, Default)]
pub(super) struct State {
    /// Names assigned anywhere in the input (their expansions are not reads of the environment).
    pub(super) assigned: Vec<String>,
}
