//! Redirections against `[redirects]`, and their targets as paths read or written.

use super::Eval;
use crate::codes::ReasonCode;
use crate::policy::Verdict;
use crate::shell::{Redirect, RedirectOp};

impl Eval<'_> {
    pub(super) fn redirect(&mut self, r: &Redirect) {
        self.word(&r.target);
        if let Some(h) = &r.heredoc {
            self.word(&h.body);
        }
        let red = self.policy.redirects.clone();
        match r.op {
            RedirectOp::HereDoc | RedirectOp::HereString => {
                self.setting(
                    ReasonCode::HereDocument,
                    &red.here_documents,
                    "a here-document".into(),
                    r.span,
                );
            }
            RedirectOp::DupOut | RedirectOp::DupIn => {
                let is_fd = r.target.static_value().is_some_and(|t| {
                    t == "-"
                        || t.trim_end_matches('-').chars().all(|c| c.is_ascii_digit())
                            && !t.is_empty()
                });
                if is_fd {
                    self.setting(
                        ReasonCode::FdDuplication,
                        &red.fd_duplication,
                        "duplicates a file descriptor".into(),
                        r.span,
                    );
                } else if r.op == RedirectOp::DupOut {
                    // `>&word` with a file name is `&>word`.
                    self.setting(
                        ReasonCode::RedirectWrite,
                        &red.write,
                        "redirects output to a file".into(),
                        r.span,
                    );
                    self.path(&r.target, true);
                } else {
                    self.reason(
                        ReasonCode::RedirectUnknown,
                        Verdict::Deny,
                        None,
                        "`<&` needs a file descriptor number".into(),
                        r.span,
                    );
                }
            }
            op => {
                if op.reads() {
                    self.setting(
                        ReasonCode::RedirectRead,
                        &red.read,
                        "redirects input from a file".into(),
                        r.span,
                    );
                    self.path(&r.target, false);
                }
                if op.writes() {
                    self.setting(
                        ReasonCode::RedirectWrite,
                        &red.write,
                        "redirects output to a file".into(),
                        r.span,
                    );
                    self.path(&r.target, true);
                }
            }
        }
    }
}
