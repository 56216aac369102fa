//! shellgate: a security policy engine for the bash commands that AI agents run.

pub mod shell;
