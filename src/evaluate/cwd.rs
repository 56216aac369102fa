//! Where each command runs: the working directories `cd` may have moved the shell to, followed
//! through and-or lists, subshells and loops.

use std::path::PathBuf;

use super::{nested, Eval};
use crate::codes::ReasonCode;
use crate::policy::Verdict;
use crate::shell::{self, Command, Join, Script};

impl Eval<'_> {
    /// Checks a script's commands, each against the directories it may run in.
    ///
    /// The directories follow the script's and-or lists: `ok` and `fail` are where the list
    /// so far leaves the shell when its status is success or failure. A command after `&&`
    /// runs from `ok`, after `||` from `fail`, after `;` or a newline from either. A plain
    /// `cd` (in this shell: not in a pipeline, the background or a coprocess) moves `ok` to
    /// its targets and leaves `fail` where it was (`!` swaps them); any other command leaves
    /// both at every directory it may have moved to (its own `cd`s, union semantics). So after
    /// `cd src &&` only `src` is possible, and after `cd src;` both directories are.
    ///
    /// One level of the walk's recursion: see [`nested`].
    pub(super) fn script(&mut self, script: &Script) {
        nested(|| {
            let commands = &script.commands;
            // One and-or element (a command, or one pipeline): where it leaves the shell is
            // `cwds` as its checks leave it, the union of ok and fail. No bookkeeping needed.
            if commands.iter().skip(1).all(|c| c.join() == Join::Pipe) {
                let outer_cd = self.cd_targets.take();
                // The stages of a pipeline run in subshells: what they assign is gone after.
                let mark = self.assigned_mark();
                for cmd in commands {
                    self.command(cmd);
                }
                if commands.len() > 1 {
                    self.forget_assigned(mark);
                }
                self.cd_targets = outer_cd;
                return;
            }
            let outer_cd = self.cd_targets.take();
            let entry = self.cwds.clone();
            let (mut ok, mut fail) = (entry.clone(), entry.clone());
            let mut i = 0;
            while let Some(first) = commands.get(i) {
                // One element of the and-or list: a command and the later stages of its pipeline.
                let end = (i + 1..commands.len())
                    .find(|&j| commands.get(j).map(Command::join) != Some(Join::Pipe))
                    .unwrap_or(commands.len());
                let join = first.join();
                let mut cur = match join {
                    Join::And => ok.clone(),
                    Join::Or => fail.clone(),
                    Join::Seq | Join::Pipe => union(&ok, &fail),
                };
                if cur.is_empty() {
                    cur = entry.clone();
                }
                self.cwds = cur.clone();
                self.cd_targets = None;
                let mark = self.assigned_mark();
                for cmd in commands.get(i..end).unwrap_or_default() {
                    self.command(cmd);
                }
                if end - i > 1 {
                    self.forget_assigned(mark);
                }
                // Set again before anything reads it (the next element, or the end).
                let after = std::mem::take(&mut self.cwds);
                let targets = self.cd_targets.take();
                let (e_ok, e_fail) = match (end - i == 1, plain_cd(first), targets) {
                    (true, Some(false), Some(t)) => (t, cur),
                    (true, Some(true), Some(t)) => (cur, t),
                    _ => (after.clone(), after),
                };
                (ok, fail) = match join {
                    Join::And => (e_ok, union(&fail, &e_fail)),
                    Join::Or => (union(&ok, &e_ok), e_fail),
                    Join::Seq | Join::Pipe => (e_ok, e_fail),
                };
                i = end;
            }
            self.cwds = union(&ok, &fail);
            self.cd_targets = outer_cd;
        })
    }

    /// The body of a compound command, with what its `cd`s do to the directories later
    /// commands may run in.
    ///
    /// A subshell (or a command run in the background or as a coprocess) cannot move the
    /// shell it came from: the directories are restored after it. A loop body runs any number
    /// of times, and a `cd` in it goes further on each pass (`for i in 1 2; do cd ..; done`
    /// climbs out of the workspace while one pass stays inside): a loop body that changes the
    /// directories is refused.
    pub(super) fn compound_body(&mut self, c: &shell::Compound) {
        let before = self.cwds.clone();
        let mark = self.assigned_mark();
        self.script(&c.body);
        let subshell = c.kind == shell::CompoundKind::Subshell
            || c.background
            || c.keywords.contains(&shell::Keyword::Coproc);
        if subshell {
            self.cwds = before;
            self.forget_assigned(mark);
            return;
        }
        let looping = matches!(
            c.kind,
            shell::CompoundKind::For
                | shell::CompoundKind::ArithFor
                | shell::CompoundKind::Select
                | shell::CompoundKind::While
                | shell::CompoundKind::Until
        );
        let moved =
            self.cwds.len() != before.len() || self.cwds.iter().any(|d| !before.contains(d));
        if looping && moved {
            self.reason(
                ReasonCode::CdInLoop,
                Verdict::Deny,
                None,
                "a `cd` in a loop goes further on every pass, so the directory later commands run in depends on how often it runs; put the loop body in a subshell `( ... )`".to_string(),
                c.span,
            );
        }
    }
}

/// `Some(negated)` when `cmd` is a `cd` that runs in this shell: a simple command named `cd`,
/// not in the background or a coprocess. `negated`: an odd number of `!` before it.
pub(super) fn plain_cd(cmd: &Command) -> Option<bool> {
    let Command::Simple(c) = cmd else {
        return None;
    };
    let named_cd = c
        .program()
        .and_then(super::args::static_text)
        .is_some_and(|n| n == "cd");
    if !named_cd || c.background || c.keywords.contains(&shell::Keyword::Coproc) {
        return None;
    }
    let bangs = c
        .keywords
        .iter()
        .filter(|k| **k == shell::Keyword::Bang)
        .count();
    Some(bangs % 2 == 1)
}

/// `a` then the directories of `b` it does not hold.
pub(super) fn union(a: &[PathBuf], b: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = a.to_vec();
    for p in b {
        if !out.contains(p) {
            out.push(p.clone());
        }
    }
    out
}
