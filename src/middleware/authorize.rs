//! The one path from a call to "run it" or "refuse it", for every tool shape (`bash`, code
//! execution, the text editor): the policy's decision (a panic while deciding is a denial),
//! the audit record's verdict and reasons, `ask` put to the [`Approver`](super::Approver),
//! and the refusal's text. Each shape only says how to decide, what the model is told of a
//! refusal, and how its result block carries it.

use super::approver::ApprovalRequest;
use super::audit::AuditRecord;
use super::{Executor, Guard};
use crate::evaluate::{fail_closed, Context, Decision};
use crate::policy::{Policy, Verdict};

/// Added to the refusal of an `ask` that the approver declined.
const DECLINED: &str = "Approval was declined.";

/// Added to the refusal of an `ask` when the guard has no approver.
const NO_APPROVER: &str = "No one can approve commands here, so commands that need approval are \
                           refused; use a command the policy allows.";

/// A call the policy (or the approver) refused: nothing may run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refusal {
    /// The policy's verdict (`deny`, or `ask` that was not approved).
    pub(super) verdict: Verdict,
    /// What the model is told: the shape's explanation of the decision, then, for an `ask`,
    /// why it was not approved.
    pub(super) text: String,
}

/// What a call is, for the approver and the audit log.
pub(super) struct Asked<'a> {
    /// The tool_use id.
    pub(super) id: &'a str,
    /// What the approver is shown as the command (a file operation: its path), and the
    /// length the reason of a failed check spans.
    pub(super) command: &'a str,
}

impl<E: Executor> Guard<E> {
    /// Decide a call with `decide` (given the policy and the guard's context; a panic in it
    /// is a denial, `internal-error`), record the verdict and reason codes in `rec`, put an
    /// `ask` to the approver (recording its answer), and answer `Ok` when the call may go
    /// ahead or the [`Refusal`] whose text `explain` writes from the decision.
    pub(super) fn authorize(
        &mut self,
        call: Asked<'_>,
        rec: &mut AuditRecord,
        decide: impl FnOnce(&Policy, &Context) -> Decision,
        explain: impl FnOnce(&Decision) -> String,
    ) -> Result<(), Refusal> {
        let decision = fail_closed(call.command.len(), || decide(&self.policy, &self.context));
        rec.verdict = Some(decision.verdict);
        rec.reasons = decision.reasons.iter().map(|r| r.code).collect();
        let note = match decision.verdict {
            Verdict::Allow => return Ok(()),
            Verdict::Deny => None,
            Verdict::Ask => {
                let approved = self.approver.as_mut().map(|a| {
                    a.approve(&ApprovalRequest {
                        tool_use_id: call.id,
                        command: call.command,
                        decision: &decision,
                        cwd: &self.context.cwd,
                    })
                });
                rec.approved = approved;
                match approved {
                    Some(true) => return Ok(()),
                    Some(false) => Some(DECLINED),
                    None => Some(NO_APPROVER),
                }
            }
        };
        let mut text = explain(&decision);
        if let Some(note) = note {
            text.push('\n');
            text.push_str(note);
        }
        Err(Refusal {
            verdict: decision.verdict,
            text,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::codes::ReasonCode;
    use crate::middleware::{from_fn, ExecError, Output};

    fn guard() -> Guard<impl Executor> {
        let policy = Policy::from_toml(
            "[programs.ls]\n[programs.whoami]\nverdict = \"ask\"\n[programs.id]\nverdict = \"ask\"\n",
            "p.toml",
        )
        .expect("loads");
        let never = from_fn(|_: &str| -> Result<Output, ExecError> { panic!("never runs") });
        Guard::new(policy, Context::new("/w"), never)
    }

    fn ask(g: &mut Guard<impl Executor>, cmd: &str) -> (Result<(), Refusal>, AuditRecord) {
        let mut rec = AuditRecord::new("t1");
        let call = Asked {
            id: "t1",
            command: cmd,
        };
        let r = g.authorize(
            call,
            &mut rec,
            |p, ctx| p.evaluate(ctx, cmd),
            |d| format!("refused: {:?}", d.verdict),
        );
        (r, rec)
    }

    /// A panic while deciding (in `check_file_access`, in a shape's own check) is a denial
    /// the shape answers as a refusal: nothing runs.
    #[test]
    fn a_decision_that_panics_is_a_refusal() {
        let mut g = guard();
        let mut rec = AuditRecord::new("t1");
        let call = Asked {
            id: "t1",
            command: "notes.txt",
        };
        let r = g.authorize(
            call,
            &mut rec,
            |_, _| panic!("a bug in a check"),
            |d| format!("refused: {}", d.reasons[0].code),
        );
        assert_eq!(
            r,
            Err(Refusal {
                verdict: Verdict::Deny,
                text: "refused: internal-error".to_string(),
            })
        );
        assert_eq!(rec.verdict, Some(Verdict::Deny));
        assert_eq!(rec.reasons, [ReasonCode::InternalError.as_str()]);
    }

    #[test]
    fn allow_runs_deny_refuses_ask_goes_to_the_approver() {
        let mut g = guard();
        let (r, rec) = ask(&mut g, "ls");
        assert_eq!(r, Ok(()));
        assert_eq!((rec.verdict, rec.approved), (Some(Verdict::Allow), None));

        let (r, rec) = ask(&mut g, "cat x");
        assert_eq!(r.map_err(|e| e.text), Err("refused: Deny".to_string()));
        assert_eq!(rec.approved, None);

        let (r, rec) = ask(&mut g, "whoami");
        let r = r.expect_err("no approver: refused");
        assert_eq!(r.verdict, Verdict::Ask);
        assert_eq!(r.text, format!("refused: Ask\n{NO_APPROVER}"));
        assert_eq!(rec.approved, None);

        let asked = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&asked);
        let mut yes = true;
        let mut g = guard().with_approver(move |req: &ApprovalRequest<'_>| {
            seen.lock().unwrap().push(req.command.to_string());
            std::mem::replace(&mut yes, false)
        });
        let (r, rec) = ask(&mut g, "whoami");
        assert_eq!((r, rec.approved), (Ok(()), Some(true)));
        let (r, rec) = ask(&mut g, "id");
        assert_eq!(
            r.map_err(|e| e.text),
            Err(format!("refused: Ask\n{DECLINED}"))
        );
        assert_eq!(rec.approved, Some(false));
        assert_eq!(*asked.lock().unwrap(), ["whoami", "id"]);
    }
}
