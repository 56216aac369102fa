//! shellgate: a security policy engine for the bash commands that AI agents run.

pub mod redact;
pub mod shell;
pub mod truncate;
