//! shellgate: a security policy engine for the bash commands that AI agents run.
//!
//! A command is parsed by shellgate's own bash parser into its IR ([`shell`]), and every
//! program, argument, path, redirection, assignment and nested command in it is checked
//! against a declarative TOML [`Policy`] (default deny).
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
//! # The API
//!
//! The library's API is its seams, each one entry point:
//!
//! | seam | what it is |
//! |---|---|
//! | [`Policy`] ([`Policy::from_name_or_file`], [`Policy::evaluate`]) | a loaded, validated policy; [`PolicyError`] and its [`Diagnostic`]s (each with a stable code and a [`Location`]) when it is not |
//! | [`Context`] → [`Decision`] ([`Verdict`], [`Reason`]s with a stable code, a [`RuleRef`] and a span; a [`Trace`] of the rule that decided each part) | what a command would do, decided |
//! | [`shell`] ([`shell::parse`] → [`shell::Script`]) | the IR: every command, word, redirection and nested script bash would run |
//! | [`middleware`] ([`middleware::Guard`] around an [`middleware::Executor`] and a [`middleware::FileTool`]) | the guard around the agent's `bash`, text editor and code execution tools; the reference bash session ([`middleware::BashSession`]) |
//! | [`redact`] ([`redact::Redactor`]) and [`truncate`] | what the model is shown of a command's output |
//! | [`snapshot`] ([`snapshot::Snapshots`], through [`middleware::Snapshotter`] and [`middleware::Guard::with_snapshots`]) | a snapshot of the workspace before each call that may write; history and undo |
//!
//! The policy loader, the evaluator's internals and the reports are layers the binary and the
//! tests use; they are hidden from these docs and are no part of the API. How the layers
//! depend on each other (one way only) is in `CONTRIBUTING.md`.
//!
//! shellgate is a policy layer first: run the shell in the kernel sandbox the policy derives
//! (`[sandbox]`, `policy-check serve`) or as a low-privilege user in a container or VM as well.

#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![warn(unreachable_pub)]

mod codes;
mod layers;

pub mod middleware;
pub mod oracle;
pub mod policy_cache;
pub mod redact;
pub mod shell;
pub mod snapshot;
pub mod truncate;

// The layers the binary (`policy-check`), the Python package and the tests reach into. They are
// not the library's API: their seams are re-exported below, the rest may change at any time.
#[doc(hidden)]
pub mod evaluate;
#[doc(hidden)]
pub mod load;
#[doc(hidden)]
pub mod policy;
#[doc(hidden)]
pub mod report;
#[doc(hidden)]
pub mod sandbox;

pub use evaluate::{evaluate, Context, Decision, Reason, SandboxState, Trace, TraceStep};
pub use policy::{Diagnostic, Location, Policy, PolicyError, RuleRef, Severity, Verdict};
