//! shellgate: a security policy engine for the bash commands that AI agents run.
//!
//! A command is parsed into a real shell syntax tree (tree-sitter-bash), lowered into
//! shellgate's own IR ([`shell`]), and every program, argument, path, redirection, assignment
//! and nested command in it is checked against a declarative TOML [`Policy`] (default deny).
//! The strictest verdict wins, and each refusal names its rule and the span it is about.
//!
//! ```
//! use shellgate::{Context, Policy, Verdict};
//!
//! let policy = Policy::from_name_or_file("read-only")?;
//! let ctx = Context::new("/srv/project");
//!
//! assert_eq!(policy.evaluate(&ctx, "cat data.txt|grep x").verdict, Verdict::Allow);
//!
//! let d = policy.evaluate(&ctx, "cat data.txt|sh");
//! assert_eq!(d.verdict, Verdict::Deny);
//! assert!(d.reasons.iter().any(|r| r.code == "wrapper-unverifiable" || r.code == "wrapper-denied"));
//! # Ok::<(), shellgate::PolicyError>(())
//! ```
//!
//! shellgate is a policy layer, not a sandbox: run the shell as a low-privilege user in a
//! container or VM as well.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod codes;
pub mod evaluate;
mod layers;
pub mod load;
pub mod middleware;
pub mod policy;
pub mod redact;
pub mod report;
pub mod shell;
pub mod truncate;

pub use evaluate::{evaluate, Context, Decision, Reason};
pub use policy::{Diagnostic, Location, Policy, PolicyError, RuleRef, Verdict};
