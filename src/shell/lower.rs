//! Parsing a range of the command text with tree-sitter-bash and lowering the tree to the IR.
//!
//! Only the *structure* (commands, lists, pipelines, compound commands, where each word and
//! redirection is) comes from tree-sitter. Words are lowered from the original text by our
//! own lexer ([`super::words`]), substitutions are re-parsed by [`Ctx::parse_range`] with
//! the whole pipeline, and redirections come from the pre-pass ([`super::scan`]).
//! Any node kind or layout we do not know is an error.

use std::collections::{BTreeMap, HashSet};

use tree_sitter::{Node, Parser, Tree};

use super::ctx::{
    arithmetic_compound, bare_assignment, compound, cover_commands, cover_parts, dup_or_write_all,
    is_name, prepend_keywords, set_background, simple, unsupported, Ctx,
};
use super::scan::{err, working_copy, Site};
use super::words::{WordOpts, ARG, ASSIGN, DECL, PATTERN, TEST_OPERAND};
use super::*;

/// Keywords tree-sitter reads as program names (`time`, `coproc`), removed from the text
/// before the final parse and attached to the command that starts at the marker.
#[derive(Debug, Default)]
struct Marker {
    keywords: Vec<Keyword>,
    coproc_name: Option<(String, Span)>,
}

/// One parsed range being lowered.
struct Unit<'t> {
    base: usize,
    sites: BTreeMap<usize, Site>,
    claimed: HashSet<usize>,
    markers: BTreeMap<usize, Marker>,
    /// Assignments the working copy disguised as program names (word start -> `=`), and
    /// those lowered.
    disguised: BTreeMap<usize, usize>,
    disguised_claimed: HashSet<usize>,
    /// Escaped characters outside every tree node (start -> end), and by end.
    loose: BTreeMap<usize, usize>,
    loose_by_end: BTreeMap<usize, usize>,
    loose_claimed: HashSet<usize>,
    /// Operands of `[[ -v ]]` / `[[ -R ]]` of the `[[ ]]` being lowered (`Compound::names`).
    test_names: Vec<Word>,
    _tree: &'t Tree,
}

fn children_of<'t>(node: Node<'t>) -> Vec<(Option<&'static str>, Node<'t>)> {
    let mut out = Vec::new();
    let mut c = node.walk();
    if c.goto_first_child() {
        loop {
            out.push((c.field_name(), c.node()));
            if !c.goto_next_sibling() {
                break;
            }
        }
    }
    out
}

/// Tokens that only separate or delimit statements.
fn is_separator_token(kind: &str) -> bool {
    matches!(
        kind,
        ";" | "\n"
            | "&"
            | ";;"
            | ";&"
            | ";;&"
            | "if"
            | "then"
            | "fi"
            | "elif"
            | "else"
            | "do"
            | "done"
            | "while"
            | "until"
            | "for"
            | "select"
            | "in"
            | "case"
            | "esac"
            | "("
            | ")"
            | "{"
            | "}"
            | "function"
            | "(("
            | "))"
            | "|"
            | "|&"
            | "&&"
            | "||"
    )
}

impl Ctx<'_> {
    /// The tree-sitter parser, created once per top-level parse and reused for nested ones.
    fn parser(&mut self, start: usize, end: usize) -> Result<&mut Parser, ParseError> {
        if self.ts.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .map_err(|e| {
                    err(
                        ParseErrorKind::Syntax,
                        start,
                        end,
                        format!("parser setup: {e}"),
                    )
                })?;
            self.ts = Some(parser);
        }
        self.ts
            .as_mut()
            .ok_or_else(|| err(ParseErrorKind::Syntax, start, end, "no parser"))
    }

    pub(crate) fn parse_range_inner(
        &mut self,
        start: usize,
        end: usize,
        log_mark: usize,
    ) -> Result<Script, ParseError> {
        let mut sc = self.scanner(end);
        sc.scan_script(start)?;
        if let Some(p) = sc.all_bodies_found() {
            return Err(err(
                ParseErrorKind::Missing,
                p,
                p + 2,
                "a here-document body was not found",
            ));
        }
        let mut work = working_copy(self.src, start, end, &sc);
        let separators = std::mem::take(&mut sc.separators);
        let disguised: BTreeMap<usize, usize> = sc.assignments.iter().copied().collect();
        let sites: BTreeMap<usize, Site> = sc.sites.into_iter().map(|s| (s.pos, s)).collect();

        let mut markers: BTreeMap<usize, Marker> = BTreeMap::new();
        let mut rounds = 0;
        let tree = loop {
            // tree-sitter-bash is ~15x slower on a pipeline of three or more stages that runs to
            // the end of the input without a terminator (58 µs vs 4 µs for `a | b | c`); a
            // trailing newline is a no-op for bash, so give it one (not after a backslash,
            // where it would become a line continuation).
            let terminated;
            let input: &[u8] = if work.last().is_some_and(|&b| b != b'\n' && b != b'\\') {
                terminated = [work.as_slice(), b"\n"].concat();
                &terminated
            } else {
                &work
            };
            let tree = self
                .parser(start, end)?
                .parse(input, None)
                .ok_or_else(|| err(ParseErrorKind::Syntax, start, end, "the parser gave up"))?;
            let orig = self.src.as_bytes().get(start..end).unwrap_or_default();
            let found = find_keywords(tree.root_node(), &work, orig);
            if found.is_empty() {
                break tree;
            }
            rounds += 1;
            if rounds > 32 {
                return Err(err(
                    ParseErrorKind::TooDeep,
                    start,
                    end,
                    "too many `time`, `!` or `coproc` keywords in a row",
                ));
            }
            for kw in found {
                for b in work.iter_mut().take(kw.blank_end).skip(kw.blank_start) {
                    if *b != b'\n' {
                        *b = b' ';
                    }
                }
                let mut m = markers
                    .remove(&(start + kw.blank_start))
                    .unwrap_or_default();
                if kw.keywords.len() > self.limits.max_depth {
                    return Err(err(
                        ParseErrorKind::TooDeep,
                        start + kw.blank_start,
                        start + kw.blank_end,
                        "too many `time` or `!` keywords in a row",
                    ));
                }
                m.keywords.extend(kw.keywords);
                if let Some((name, a, b)) = kw.name {
                    m.coproc_name = Some((name, Span::new(start + a, start + b)));
                }
                markers.insert(start + kw.next, m);
            }
        };
        let loose = self.check_tree(&tree, start, &work)?;
        check_separators(&tree, start, &separators)?;

        let mut unit = Unit {
            base: start,
            sites,
            claimed: HashSet::new(),
            disguised,
            disguised_claimed: HashSet::new(),
            markers,
            loose_by_end: loose.iter().map(|&(a, b)| (b, a)).collect(),
            loose: loose.into_iter().collect(),
            loose_claimed: HashSet::new(),
            test_names: Vec::new(),
            _tree: &tree,
        };
        let root = tree.root_node();
        if root.kind() != "program" {
            return Err(unsupported(
                Span::new(start, end),
                "the parse has no program node",
            ));
        }
        let commands = self.seq(&mut unit, root)?;

        // Every redirection and keyword found must have been placed, unless it sits inside a
        // nested script that was parsed on its own.
        let nested: Vec<(usize, usize)> =
            self.nested_log.get(log_mark..).unwrap_or_default().to_vec();
        let inside = |p: usize| nested.iter().any(|&(a, b)| a <= p && p < b);
        for (&pos, site) in &unit.sites {
            if !unit.claimed.contains(&pos) && !inside(pos) {
                return Err(unsupported(
                    Span::new(pos, pos + site.len),
                    "a redirection the parser did not place on a command",
                ));
            }
        }
        if let Some((&a, &b)) = unit
            .loose
            .iter()
            .find(|(a, _)| !unit.loose_claimed.contains(a) && !inside(**a))
        {
            return Err(unsupported(
                Span::new(a, b),
                "text the parser did not account for",
            ));
        }
        if let Some((&pos, &eq)) = unit
            .disguised
            .iter()
            .find(|(p, _)| !unit.disguised_claimed.contains(p) && !inside(**p))
        {
            return Err(unsupported(
                Span::new(pos, eq + 1),
                "an assignment the parser did not read as one",
            ));
        }
        if let Some((&pos, _)) = unit.markers.iter().find(|(&p, _)| !inside(p)) {
            return Err(unsupported(
                Span::new(pos, pos),
                "`time` or `coproc` without a command to apply to",
            ));
        }
        let mut commands = commands;
        cover_commands(&mut commands);
        Ok(Script {
            commands,
            span: Span::new(start, end),
        })
    }

    /// Refuses ERROR and MISSING nodes, too deep trees and too many nodes (iteratively).
    ///
    /// It also checks that the tree covers the text: every byte outside the leaves (and
    /// outside the word nodes, which our lexer reads whole) must be a blank or a line
    /// continuation, so that no text the parser skipped can hold a command.
    fn check_tree(
        &mut self,
        tree: &Tree,
        base: usize,
        work: &[u8],
    ) -> Result<Vec<(usize, usize)>, ParseError> {
        let mut loose = Vec::new();
        let mut c = tree.walk();
        let mut depth = 0usize;
        let mut covered = 0usize;
        loop {
            let n = c.node();
            self.nodes += 1;
            if n.start_byte() >= covered && (n.child_count() == 0 || is_word_kind(n.kind())) {
                check_gap_blank(work, covered, n.start_byte(), base, &mut loose)?;
                covered = n.end_byte();
            }
            let span = Span::new(base + n.start_byte(), base + n.end_byte());
            if self.nodes > self.limits.max_nodes {
                return Err(err(
                    ParseErrorKind::TooManyNodes,
                    span.start,
                    span.end,
                    format!(
                        "the command has more than {} syntax nodes",
                        self.limits.max_nodes
                    ),
                ));
            }
            if self.depth + depth > self.limits.max_depth {
                return Err(err(
                    ParseErrorKind::TooDeep,
                    span.start,
                    span.end,
                    format!(
                        "the command nests deeper than {} levels",
                        self.limits.max_depth
                    ),
                ));
            }
            if n.is_missing() {
                return Err(ParseError {
                    kind: ParseErrorKind::Missing,
                    span,
                    message: format!("the command is incomplete: `{}` is missing", n.kind()),
                });
            }
            if n.is_error() {
                return Err(ParseError {
                    kind: ParseErrorKind::Syntax,
                    span,
                    message: "the command has a syntax error (or a construct the parser does not understand)"
                        .into(),
                });
            }
            if n.kind() == "comment" {
                let before = (base + n.start_byte())
                    .checked_sub(1)
                    .and_then(|p| self.src.as_bytes().get(p));
                if before.is_some_and(|&b| !super::guards::is_meta(b)) {
                    return Err(unsupported(span, "a comment that does not start a word"));
                }
            }
            if c.goto_first_child() {
                depth += 1;
                continue;
            }
            loop {
                if c.goto_next_sibling() {
                    break;
                }
                if !c.goto_parent() {
                    check_gap_blank(work, covered, work.len(), base, &mut loose)?;
                    return Ok(loose);
                }
                depth -= 1;
            }
        }
    }

    fn span(&self, u: &Unit<'_>, n: Node<'_>) -> Span {
        Span::new(u.base + n.start_byte(), u.base + n.end_byte())
    }

    fn node_word(&mut self, u: &Unit<'_>, n: Node<'_>, opts: WordOpts) -> Result<Word, ParseError> {
        let s = self.span(u, n);
        self.word(s.start, s.end, opts)
    }

    /// Lowers a sequence of statements (program, body, branch), handling `&` and comments.
    fn seq(&mut self, u: &mut Unit<'_>, node: Node<'_>) -> Result<Vec<Command>, ParseError> {
        let mut out = Vec::new();
        let mut last_start = None;
        for (_, child) in children_of(node) {
            self.stmt_or_token(u, child, &mut out, &mut last_start)?;
        }
        Ok(out)
    }

    fn stmt_or_token(
        &mut self,
        u: &mut Unit<'_>,
        child: Node<'_>,
        out: &mut Vec<Command>,
        last_start: &mut Option<usize>,
    ) -> Result<(), ParseError> {
        if child.is_named() {
            match child.kind() {
                "comment" => {}
                "elif_clause" | "else_clause" | "do_group" => {
                    for (_, c) in children_of(child) {
                        self.stmt_or_token(u, c, out, last_start)?;
                    }
                }
                _ => {
                    *last_start = Some(out.len());
                    let cmds = self.statement(u, child)?;
                    out.extend(cmds);
                }
            }
        } else if child.kind() == "&" {
            if let Some(s) = *last_start {
                for c in out.iter_mut().skip(s) {
                    set_background(c);
                }
            }
        } else if !is_separator_token(child.kind()) {
            return Err(unsupported(
                self.span(u, child),
                format!("unexpected token `{}`", child.kind()),
            ));
        }
        Ok(())
    }

    fn statement(&mut self, u: &mut Unit<'_>, node: Node<'_>) -> Result<Vec<Command>, ParseError> {
        let span = self.span(u, node);
        self.enter(span.start)?;
        let marker = if node.kind() == "list" {
            None
        } else {
            u.markers.remove(&span.start)
        };
        let r = super::with_stack(|| self.statement_inner(u, node, span));
        self.leave();
        let mut cmds = r?;
        if let Some(m) = marker {
            if cmds.is_empty() {
                return Err(unsupported(span, "`time` or `coproc` without a command"));
            }
            for c in cmds.iter_mut() {
                prepend_keywords(c, &m.keywords, span)?;
            }
            if let Some((name, name_span)) = m.coproc_name {
                match cmds.first_mut() {
                    Some(Command::Compound(c)) => {
                        c.assignments.push(bare_assignment(name, name_span))
                    }
                    _ => return Err(unsupported(span, "`coproc NAME` needs a compound command")),
                }
            }
        }
        Ok(cmds)
    }

    fn statement_inner(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
        span: Span,
    ) -> Result<Vec<Command>, ParseError> {
        match node.kind() {
            "command" => Ok(vec![Command::Simple(self.command(u, node)?)]),
            "variable_assignment" => self.st_variable_assignment(u, node, span),
            "variable_assignments" => self.st_variable_assignments(u, node, span),
            "declaration_command" | "unset_command" => {
                Ok(vec![Command::Simple(self.declaration(u, node)?)])
            }
            "list" => self.st_list(u, node, span),
            "pipeline" => self.st_pipeline(u, node, span),
            "negated_command" => self.st_negated_command(u, node, span),
            "redirected_statement" => self.st_redirected_statement(u, node, span),
            "subshell" => self.st_subshell(u, node, span),
            "compound_statement" => self.st_compound_statement(u, node, span),
            "if_statement" => self.st_if_statement(u, node, span),
            "while_statement" => self.st_while_statement(u, node, span),
            "for_statement" => self.for_loop(u, node, span),
            "c_style_for_statement" => {
                let (a, b) = self.between(u, node, "((", "))")?;
                let ar = self.arith(a, b)?;
                let mut cmds = Vec::new();
                for (field, c) in children_of(node) {
                    if field == Some("body") {
                        cmds.extend(self.body_commands(u, c)?);
                    }
                }
                let mut c = compound(
                    CompoundKind::ArithFor,
                    span,
                    Script {
                        commands: cmds,
                        span,
                    },
                );
                c.arithmetic.push(ar);
                Ok(vec![Command::Compound(c)])
            }
            "case_statement" => self.case(u, node, span),
            "function_definition" => self.function(u, node, span),
            "test_command" => self.test(u, node, span),
            other => Err(unsupported(
                span,
                format!("unsupported syntax node `{other}`"),
            )),
        }
    }

    #[inline(never)]
    fn st_variable_assignment(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
        span: Span,
    ) -> Result<Vec<Command>, ParseError> {
        let _ = span;
        let a = self.assignment(u, node)?;
        Ok(vec![Command::Simple(simple(span, vec![a], vec![], vec![]))])
    }

    #[inline(never)]
    fn st_variable_assignments(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
        span: Span,
    ) -> Result<Vec<Command>, ParseError> {
        let _ = span;
        let mut assigns = Vec::new();
        for (_, c) in children_of(node) {
            if c.kind() != "variable_assignment" {
                return Err(unsupported(
                    self.span(u, c),
                    format!("unexpected `{}`", c.kind()),
                ));
            }
            if let Some(prev) = assigns.last().map(|a: &Assignment| a.span.end) {
                self.check_gap(prev, self.span(u, c).start)?;
            }
            assigns.push(self.assignment(u, c)?);
        }
        Ok(vec![Command::Simple(simple(span, assigns, vec![], vec![]))])
    }

    /// The statements of `node`'s named children, one group per child, refusing any unnamed
    /// child that is not one of `separators` (`what` names the construct in the error).
    fn child_statements(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
        separators: &[&str],
        what: &str,
    ) -> Result<Vec<Vec<Command>>, ParseError> {
        let mut out = Vec::new();
        for (_, c) in children_of(node) {
            if c.is_named() {
                out.push(self.statement(u, c)?);
            } else if !separators.contains(&c.kind()) {
                return Err(unsupported(
                    self.span(u, c),
                    format!("unexpected `{}` in {what}", c.kind()),
                ));
            }
        }
        Ok(out)
    }

    #[inline(never)]
    fn st_list(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
        _span: Span,
    ) -> Result<Vec<Command>, ParseError> {
        // The operator before each named child is that child's join (bash's `&&`/`||` group
        // to the left, so the flattened commands keep the list's meaning).
        let mut out: Vec<Command> = Vec::new();
        let mut op = None;
        for (_, c) in children_of(node) {
            if c.is_named() {
                let mut cmds = self.statement(u, c)?;
                if let (Some(join), Some(first)) = (op.take(), cmds.first_mut()) {
                    first.set_join(join);
                }
                out.extend(cmds);
            } else {
                op = Some(match c.kind() {
                    "&&" => Join::And,
                    "||" => Join::Or,
                    k => {
                        return Err(unsupported(
                            self.span(u, c),
                            format!("unexpected `{k}` in a list"),
                        ))
                    }
                });
            }
        }
        Ok(out)
    }

    #[inline(never)]
    fn st_pipeline(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
        _span: Span,
    ) -> Result<Vec<Command>, ParseError> {
        let groups = self.child_statements(u, node, &["|", "|&"], "a pipeline")?;
        let mut out = Vec::new();
        for (stage, mut cmds) in groups.into_iter().enumerate() {
            if stage > 0 {
                for cmd in cmds.iter_mut() {
                    if let Command::Simple(s) = cmd {
                        s.piped_input = true;
                    }
                }
                if let Some(first) = cmds.first_mut() {
                    first.set_join(Join::Pipe);
                }
            }
            out.extend(cmds);
        }
        Ok(out)
    }

    #[inline(never)]
    fn st_negated_command(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
        span: Span,
    ) -> Result<Vec<Command>, ParseError> {
        let groups = self.child_statements(u, node, &["!"], "a negated command")?;
        let mut out: Vec<Command> = groups.into_iter().flatten().collect();
        for c in out.iter_mut() {
            prepend_keywords(c, &[Keyword::Bang], span)?;
        }
        Ok(out)
    }

    #[inline(never)]
    fn st_redirected_statement(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
        span: Span,
    ) -> Result<Vec<Command>, ParseError> {
        let _ = span;
        let mut body = None;
        let mut redirects = Vec::new();
        let mut extra = Vec::new();
        for (field, c) in children_of(node) {
            match (field, c.kind()) {
                (Some("body"), _) => body = Some(c),
                (_, "file_redirect") => {
                    let (r, words) = self.redirect(u, c)?;
                    redirects.push(r);
                    extra.extend(words);
                }
                _ => {
                    return Err(unsupported(
                        self.span(u, c),
                        format!("unexpected `{}` in a redirected statement", c.kind()),
                    ))
                }
            }
        }
        let Some(body) = body else {
            // Only redirections (`<file`, `>file`, `$(<file)`): bash opens each file (so
            // `>f` truncates f) and runs nothing; `$(<file)` expands to the file's text. A
            // simple command without words, so that each redirection is checked.
            let mut c = simple(span, vec![], extra, redirects);
            cover_parts(&mut c);
            return Ok(vec![Command::Simple(c)]);
        };
        let mut cmds = self.statement(u, body)?;
        let last = cmds
            .last_mut()
            .ok_or_else(|| unsupported(span, "a redirection without a command"))?;
        if !extra.is_empty() && !matches!(last, Command::Simple(_)) {
            return Err(unsupported(
                span,
                "words after a redirection of a compound command",
            ));
        }
        match last {
            Command::Simple(s) => {
                s.redirects.extend(redirects);
                self.push_words(u, s, extra)?;
                s.span = s.span.join(span);
                self.check_assignment_prefix(u, s)?;
            }
            Command::Compound(c) => {
                c.redirects.extend(redirects);
                c.span = c.span.join(span);
            }
            Command::Function(f) => {
                f.redirects.extend(redirects);
                f.span = f.span.join(span);
            }
        }
        Ok(cmds)
    }

    #[inline(never)]
    fn st_subshell(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
        span: Span,
    ) -> Result<Vec<Command>, ParseError> {
        let _ = span;
        let body = self.body_of(u, node)?;
        Ok(vec![Command::Compound(compound(
            CompoundKind::Subshell,
            span,
            body,
        ))])
    }

    #[inline(never)]
    fn st_compound_statement(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
        span: Span,
    ) -> Result<Vec<Command>, ParseError> {
        let _ = span;
        let first = node.child(0).map(|c| c.kind());
        if first == Some("((") {
            let (a, b) = self.between(u, node, "((", "))")?;
            let ar = self.arith(a, b)?;
            Ok(vec![Command::Compound(arithmetic_compound(span, ar))])
        } else {
            let body = self.body_of(u, node)?;
            Ok(vec![Command::Compound(compound(
                CompoundKind::Group,
                span,
                body,
            ))])
        }
    }

    #[inline(never)]
    fn st_if_statement(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
        span: Span,
    ) -> Result<Vec<Command>, ParseError> {
        let _ = span;
        let body = self.body_of(u, node)?;
        Ok(vec![Command::Compound(compound(
            CompoundKind::If,
            span,
            body,
        ))])
    }

    #[inline(never)]
    fn st_while_statement(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
        span: Span,
    ) -> Result<Vec<Command>, ParseError> {
        let _ = span;
        let kind = match node.child(0).map(|c| c.kind()) {
            Some("while") => CompoundKind::While,
            Some("until") => CompoundKind::Until,
            _ => return Err(unsupported(span, "a loop that is neither while nor until")),
        };
        let body = self.body_of(u, node)?;
        Ok(vec![Command::Compound(compound(kind, span, body))])
    }

    /// The statements of a body-like node (`do_group`, `compound_statement`, ...).
    fn body_commands(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
    ) -> Result<Vec<Command>, ParseError> {
        match node.kind() {
            "do_group" | "compound_statement" | "subshell" => self.seq(u, node),
            _ => self.statement(u, node),
        }
    }

    /// All statements among the children of `node` (conditions and bodies), as a Script.
    fn body_of(&mut self, u: &mut Unit<'_>, node: Node<'_>) -> Result<Script, ParseError> {
        let span = self.span(u, node);
        let commands = self.seq(u, node)?;
        Ok(Script { commands, span })
    }

    /// The text between the end of token `open` and the start of token `close`.
    fn between(
        &self,
        u: &Unit<'_>,
        node: Node<'_>,
        open: &str,
        close: &str,
    ) -> Result<(usize, usize), ParseError> {
        let kids = children_of(node);
        let a = kids
            .iter()
            .find(|(_, c)| c.kind() == open)
            .map(|(_, c)| c.end_byte());
        let b = kids
            .iter()
            .rev()
            .find(|(_, c)| c.kind() == close)
            .map(|(_, c)| c.start_byte());
        match (a, b) {
            (Some(a), Some(b)) if a <= b => Ok((u.base + a, u.base + b)),
            _ => Err(unsupported(
                self.span(u, node),
                format!("`{open}` without `{close}`"),
            )),
        }
    }

    fn for_loop(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
        span: Span,
    ) -> Result<Vec<Command>, ParseError> {
        let kind = match node.child(0).map(|c| c.kind()) {
            Some("for") => CompoundKind::For,
            Some("select") => CompoundKind::Select,
            _ => return Err(unsupported(span, "a for loop without `for` or `select`")),
        };
        let mut c = compound(
            kind,
            span,
            Script {
                commands: vec![],
                span,
            },
        );
        for (field, child) in children_of(node) {
            match field {
                Some("variable") => {
                    let s = self.span(u, child);
                    let name = self.text(s.start, s.end)?.to_string();
                    if !is_name(&name) {
                        return Err(ParseError {
                            kind: ParseErrorKind::DynamicName,
                            span: s,
                            message: "a loop variable must be a plain name".into(),
                        });
                    }
                    c.assignments.push(bare_assignment(name, s));
                }
                Some("value") => {
                    let w = self.node_word(u, child, ARG)?;
                    if let Some(prev) = c.words.last() {
                        self.check_gap(prev.span.end, w.span.start)?;
                    }
                    c.words.push(w);
                }
                Some("body") => c.body.commands.extend(self.body_commands(u, child)?),
                _ if child.is_named() && child.kind() != "comment" => {
                    return Err(unsupported(
                        self.span(u, child),
                        format!("unexpected `{}` in a loop", child.kind()),
                    ))
                }
                _ => {}
            }
        }
        Ok(vec![Command::Compound(c)])
    }

    fn case(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
        span: Span,
    ) -> Result<Vec<Command>, ParseError> {
        let mut c = compound(
            CompoundKind::Case,
            span,
            Script {
                commands: vec![],
                span,
            },
        );
        for (field, child) in children_of(node) {
            match (field, child.kind()) {
                (Some("value"), _) => c.words.push(self.node_word(u, child, TEST_OPERAND)?),
                (_, "case_item") => {
                    let mut last = None;
                    for (f, item) in children_of(child) {
                        if f == Some("value") {
                            c.words.push(self.node_word(u, item, PATTERN)?);
                        } else {
                            self.stmt_or_token(u, item, &mut c.body.commands, &mut last)?;
                        }
                    }
                }
                (_, "comment") => {}
                _ if child.is_named() => {
                    return Err(unsupported(
                        self.span(u, child),
                        format!("unexpected `{}` in case", child.kind()),
                    ))
                }
                _ => {}
            }
        }
        Ok(vec![Command::Compound(c)])
    }

    fn function(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
        span: Span,
    ) -> Result<Vec<Command>, ParseError> {
        let mut name = None;
        let mut body = None;
        let mut redirects = Vec::new();
        for (field, child) in children_of(node) {
            match (field, child.kind()) {
                (Some("name"), _) => name = Some(child),
                (Some("body"), _) => body = Some(child),
                (_, "file_redirect") => {
                    let (r, extra) = self.redirect(u, child)?;
                    if !extra.is_empty() {
                        return Err(unsupported(
                            self.span(u, child),
                            "words after a redirection of a function",
                        ));
                    }
                    redirects.push(r);
                }
                _ if child.is_named() => {
                    return Err(unsupported(
                        self.span(u, child),
                        format!("unexpected `{}` in a function", child.kind()),
                    ))
                }
                _ => {}
            }
        }
        let (Some(name), Some(body)) = (name, body) else {
            return Err(unsupported(span, "a function without a name or body"));
        };
        let name_word = self.node_word(u, name, ARG)?;
        let name_span = name_word.span;
        let name = name_word.static_value().ok_or_else(|| ParseError {
            kind: ParseErrorKind::DynamicName,
            span: name_span,
            message: "a function name must be static".into(),
        })?;
        let body_span = self.span(u, body);
        let commands = self.statement(u, body)?;
        Ok(vec![Command::Function(FunctionDef {
            name,
            name_span,
            span,
            body: Script {
                commands,
                span: body_span,
            },
            redirects,
            join: Join::Seq,
        })])
    }

    fn test(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
        span: Span,
    ) -> Result<Vec<Command>, ParseError> {
        let kids = children_of(node);
        let open = kids.first().map(|(_, c)| c.kind());
        match open {
            Some("[[") => {
                let mut c = compound(
                    CompoundKind::Test,
                    span,
                    Script {
                        commands: vec![],
                        span,
                    },
                );
                for (_, child) in &kids {
                    if child.is_named() {
                        self.test_expr(u, *child, &mut c.words, &mut c.arithmetic)?;
                        c.names.append(&mut u.test_names);
                    } else if !matches!(child.kind(), "[[" | "]]") {
                        return Err(unsupported(
                            self.span(u, *child),
                            format!("unexpected `{}`", child.kind()),
                        ));
                    }
                }
                Ok(vec![Command::Compound(c)])
            }
            Some("[") => {
                let mut words = Vec::new();
                for (_, child) in &kids {
                    self.flat_words(u, *child, &mut words)?;
                }
                for pair in words.windows(2) {
                    if let [a, b] = pair {
                        self.check_gap(a.span.end, b.span.start)?;
                    }
                }
                Ok(vec![Command::Simple(simple(span, vec![], words, vec![]))])
            }
            _ => Err(unsupported(span, "a test command without `[[` or `[`")),
        }
    }

    /// The words of `[ ... ]` in order: operands and operators alike.
    fn flat_words(
        &mut self,
        u: &mut Unit<'_>,
        n: Node<'_>,
        out: &mut Vec<Word>,
    ) -> Result<(), ParseError> {
        self.enter(u.base + n.start_byte())?;
        let r = super::with_stack(|| {
            match n.kind() {
                "binary_expression" | "unary_expression" | "parenthesized_expression" => {
                    for (_, c) in children_of(n) {
                        self.flat_words(u, c, out)?;
                    }
                }
                k if !n.is_named() || is_word_kind(k) || k == "test_operator" => {
                    out.push(self.node_word(u, n, TEST_OPERAND)?)
                }
                k => {
                    return Err(unsupported(
                        self.span(u, n),
                        format!("unsupported `{k}` in [ ]"),
                    ))
                }
            }
            Ok(())
        });
        self.leave();
        r
    }

    fn test_expr(
        &mut self,
        u: &mut Unit<'_>,
        n: Node<'_>,
        words: &mut Vec<Word>,
        arith: &mut Vec<Arithmetic>,
    ) -> Result<(), ParseError> {
        self.enter(u.base + n.start_byte())?;
        let r = super::with_stack(|| self.test_expr_inner(u, n, words, arith));
        self.leave();
        r
    }

    fn test_expr_inner(
        &mut self,
        u: &mut Unit<'_>,
        n: Node<'_>,
        words: &mut Vec<Word>,
        arith: &mut Vec<Arithmetic>,
    ) -> Result<(), ParseError> {
        let kids = children_of(n);
        match n.kind() {
            "binary_expression" => {
                let op = kids
                    .iter()
                    .find(|(f, _)| *f == Some("operator"))
                    .map(|(_, c)| self.span(u, *c))
                    .ok_or_else(|| unsupported(self.span(u, n), "a test without an operator"))?;
                let op = self.text(op.start, op.end)?.to_string();
                let side = |name: &str| -> Option<(usize, usize)> {
                    let sel: Vec<_> = kids.iter().filter(|(f, _)| *f == Some(name)).collect();
                    let first = sel.first()?.1;
                    let last = sel.last()?.1;
                    Some((u.base + first.start_byte(), u.base + last.end_byte()))
                };
                let (Some(left), Some(right)) = (side("left"), side("right")) else {
                    return Err(unsupported(self.span(u, n), "a test without two operands"));
                };
                // tree-sitter-bash gives `=~` and `==` a lower precedence than `&&`, so
                // `[[ a && $y =~ b ]]` comes as `(a && $y) =~ b`: a side that is itself an
                // expression is walked as one (every operand is still found). Arithmetic
                // operators are refused in that case, so no operand loses its arithmetic
                // reading.
                let is_expr = |name: &str| {
                    kids.iter().any(|(f, c)| {
                        *f == Some(name)
                            && matches!(
                                c.kind(),
                                "binary_expression"
                                    | "unary_expression"
                                    | "parenthesized_expression"
                            )
                    })
                };
                let arith_op = matches!(op.as_str(), "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge");
                if op != "&&" && op != "||" && (is_expr("left") || is_expr("right")) {
                    if arith_op {
                        return Err(unsupported(
                            self.span(u, n),
                            "an arithmetic test the parser grouped wrongly",
                        ));
                    }
                    for (f, c) in &kids {
                        if matches!(*f, Some("left") | Some("right")) {
                            if matches!(
                                c.kind(),
                                "binary_expression"
                                    | "unary_expression"
                                    | "parenthesized_expression"
                            ) {
                                self.test_expr(u, *c, words, arith)?;
                            } else {
                                let sp = self.span(u, *c);
                                let opts = if *f == Some("right") && op == "=~" {
                                    super::words::REGEX
                                } else {
                                    PATTERN
                                };
                                words.push(self.word(sp.start, sp.end, opts)?);
                            }
                        }
                    }
                    return Ok(());
                }
                match op.as_str() {
                    "&&" | "||" => {
                        for (f, c) in &kids {
                            if matches!(*f, Some("left") | Some("right")) {
                                self.test_expr(u, *c, words, arith)?;
                            }
                        }
                    }
                    "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge" => {
                        arith.push(self.arith(left.0, left.1)?);
                        arith.push(self.arith(right.0, right.1)?);
                    }
                    "=~" => {
                        words.push(self.word(left.0, left.1, TEST_OPERAND)?);
                        words.push(self.word(right.0, right.1, super::words::REGEX)?);
                    }
                    "==" | "=" | "!=" => {
                        words.push(self.word(left.0, left.1, TEST_OPERAND)?);
                        words.push(self.word(right.0, right.1, PATTERN)?);
                    }
                    "<" | ">" | "-nt" | "-ot" | "-ef" => {
                        words.push(self.word(left.0, left.1, TEST_OPERAND)?);
                        words.push(self.word(right.0, right.1, TEST_OPERAND)?);
                    }
                    other => {
                        return Err(unsupported(
                            self.span(u, n),
                            format!("unsupported test operator `{other}`"),
                        ))
                    }
                }
            }
            "unary_expression" => {
                let op = kids.first().map(|(_, c)| self.span(u, *c));
                let operand: Vec<_> = kids.iter().skip(1).map(|(_, c)| *c).collect();
                let (Some(op), Some(first), Some(last)) = (op, operand.first(), operand.last())
                else {
                    return Err(unsupported(
                        self.span(u, n),
                        "a unary test without an operand",
                    ));
                };
                let op = self.text(op.start, op.end)?.to_string();
                let (a, b) = (u.base + first.start_byte(), u.base + last.end_byte());
                if op == "!" {
                    for c in operand {
                        self.test_expr(u, c, words, arith)?;
                    }
                } else if op.starts_with('-') && op.len() == 2 {
                    let w = self.word(a, b, TEST_OPERAND)?;
                    if op == "-v" || op == "-R" {
                        // A name bash resolves when it runs: its subscript is arithmetic.
                        u.test_names.push(w.clone());
                    }
                    words.push(w);
                } else {
                    return Err(unsupported(
                        self.span(u, n),
                        format!("unsupported test operator `{op}`"),
                    ));
                }
            }
            "parenthesized_expression" => {
                for (_, c) in kids {
                    if c.is_named() {
                        self.test_expr(u, c, words, arith)?;
                    }
                }
            }
            k if is_word_kind(k) => words.push(self.node_word(u, n, TEST_OPERAND)?),
            k => {
                return Err(unsupported(
                    self.span(u, n),
                    format!("unsupported `{k}` in [[ ]]"),
                ))
            }
        }
        Ok(())
    }

    /// Words between two items of one command must be separated by blanks only.
    fn check_gap(&self, a: usize, b: usize) -> Result<(), ParseError> {
        let gap = self.src.as_bytes().get(a..b).unwrap_or_default();
        let ok = !gap.is_empty()
            && gap.iter().enumerate().all(|(i, &c)| {
                matches!(c, b' ' | b'\t')
                    || (c == b'\\' && gap.get(i + 1) == Some(&b'\n'))
                    || (c == b'\n' && i > 0 && gap.get(i - 1) == Some(&b'\\'))
            });
        if ok {
            Ok(())
        } else {
            Err(unsupported(
                Span::new(a, b.max(a)),
                "the parser split or joined words differently from bash",
            ))
        }
    }

    fn command(&mut self, u: &mut Unit<'_>, node: Node<'_>) -> Result<SimpleCommand, ParseError> {
        let span = self.span(u, node);
        let mut cmd = simple(span, vec![], vec![], vec![]);
        let mut pending: Vec<Span> = Vec::new();
        // After an assignment or a redirection target, the next word must be separated by
        // a blank: tree-sitter splits `X=''\e\c\h\o rm` into `X=''` and a program
        // `echo`, where bash assigns `echo` and runs `rm`.
        let mut needs_blank_after: Option<usize> = None;
        // Where the previous child ended: escaped characters tree-sitter left out between
        // two children are words of their own (`tr \  x`).
        let mut prev_end = span.start;
        for (field, child) in children_of(node) {
            let cs = self.span(u, child);
            if cs.start > prev_end {
                pending.extend(self.loose_words(u, prev_end, cs.start));
            }
            prev_end = prev_end.max(cs.end);
            match (field, child.kind()) {
                (_, "variable_assignment") if cmd.words.is_empty() && pending.is_empty() => {
                    if let Some(end) = needs_blank_after {
                        self.check_gap(end, cs.start)?;
                    }
                    cmd.assignments.push(self.assignment(u, child)?);
                    needs_blank_after = Some(cs.end);
                }
                (Some("redirect"), "file_redirect") => {
                    self.flush_words(u, &mut pending, &mut cmd)?;
                    let (r, extra) = self.redirect(u, child)?;
                    needs_blank_after = Some(extra.last().map_or(r.span.end, |w| w.span.end));
                    cmd.redirects.push(r);
                    self.push_words(u, &mut cmd, extra)?;
                }
                (Some("name"), "command_name") | (Some("argument"), _) => {
                    let s = self.span(u, child);
                    if field == Some("name") && matches!(self.src.get(s.range()), Some("{" | "}")) {
                        return Err(unsupported(
                            s,
                            "a `{` or `}` the parser read as a program name",
                        ));
                    }
                    // tree-sitter reads the `0` of `0<file` as an argument.
                    if field == Some("argument") && is_fd_of_site(u, s) {
                        self.flush_words(u, &mut pending, &mut cmd)?;
                        continue;
                    }
                    if let Some(end) = needs_blank_after.take() {
                        self.check_gap(end, s.start)?;
                    }
                    pending.push(s);
                }
                (_, k) => {
                    return Err(unsupported(
                        self.span(u, child),
                        format!("unexpected `{k}` in a command"),
                    ))
                }
            }
        }
        // Escaped characters right after the command's last node still belong to it.
        let tail = self.trailing_loose(u, prev_end);
        if tail > prev_end {
            pending.extend(self.loose_words(u, prev_end, tail));
        }
        self.flush_words(u, &mut pending, &mut cmd)?;
        self.check_assignment_prefix(u, &cmd)?;
        Ok(cmd)
    }

    /// After an assignment read back from its disguise (`x=1 >f`), a first word that is
    /// itself an assignment is one to bash too (`x=1 >f y=2` runs nothing and assigns y),
    /// not a program: refused.
    fn check_assignment_prefix(&self, u: &Unit<'_>, cmd: &SimpleCommand) -> Result<(), ParseError> {
        let disguised = cmd
            .assignments
            .iter()
            .any(|a| u.disguised.contains_key(&a.span.start));
        match cmd.words.first() {
            Some(w)
                if disguised
                    && self
                        .scanner(w.span.end)
                        .assignment_eq(w.span.start)
                        .is_some() =>
            {
                Err(unsupported(
                    w.span,
                    "an assignment after a redirection is not supported; put assignments before redirections",
                ))
            }
            _ => Ok(()),
        }
    }

    /// Unclaimed escaped characters tree-sitter left out in `a..b`, as word spans (touching
    /// ones are joined later by [`join_word_spans`]).
    fn loose_words(&self, u: &mut Unit<'_>, a: usize, b: usize) -> Vec<Span> {
        let found: Vec<Span> = u
            .loose
            .range(a..b)
            .filter(|(s, &e)| e <= b && !u.loose_claimed.contains(*s))
            .map(|(&s, &e)| Span::new(s, e))
            .collect();
        for s in &found {
            u.loose_claimed.insert(s.start);
        }
        found
    }

    /// From `from`: the end of the run of blanks and unclaimed escaped characters that
    /// follows (where the last escaped character ends), or `from` when there is none.
    fn trailing_loose(&self, u: &Unit<'_>, from: usize) -> usize {
        let mut i = from;
        let mut end = from;
        loop {
            match self.src_byte(i) {
                Some(b' ' | b'\t') => i += 1,
                Some(b'\\') => match u.loose.get(&i) {
                    Some(&e) if !u.loose_claimed.contains(&i) => {
                        i = e;
                        end = e;
                    }
                    _ => return end,
                },
                _ => return end,
            }
        }
    }

    fn src_byte(&self, i: usize) -> Option<u8> {
        self.src.as_bytes().get(i).copied()
    }

    /// Lowers consecutive word nodes of a command. tree-sitter sometimes splits one bash
    /// word (`$"x"`, `'a'\b`, `"a"\ b`) into several nodes and drops escaped characters
    /// between them; nodes with nothing but such escapes between them are one word. It
    /// also joins words bash splits (`` `a` `b` ``, `{ }`): a node is split at its unquoted
    /// blanks. A word the scanner disguised as a program name (see
    /// [`Scanner::assignments`]) is an assignment.
    fn flush_words(
        &mut self,
        u: &mut Unit<'_>,
        pending: &mut Vec<Span>,
        cmd: &mut SimpleCommand,
    ) -> Result<(), ParseError> {
        pending.sort_by_key(|s| s.start);
        let spans = join_word_spans(u, pending);
        pending.clear();
        let mut prev_end = cmd.words.last().map(|w| w.span.end);
        for joined in spans {
            for s in self.split_blanks(joined.start, joined.end)? {
                if let Some(end) = prev_end {
                    if end <= s.start {
                        self.check_gap(end, s.start)?;
                    }
                }
                prev_end = Some(s.end);
                if let Some(&eq) = u.disguised.get(&s.start) {
                    if !cmd.words.is_empty() {
                        return Err(unsupported(
                            s,
                            "an assignment the parser read as an argument",
                        ));
                    }
                    u.disguised_claimed.insert(s.start);
                    cmd.assignments.push(self.disguised_assignment(s, eq)?);
                    continue;
                }
                cmd.words.push(self.word(s.start, s.end, ARG)?);
            }
        }
        Ok(())
    }

    /// Appends words tree-sitter put after a redirection target (`x=1 >f y=2` has `y-2` as
    /// a second target in its working copy); a disguised assignment among them is read back
    /// as one while the command has no words.
    fn push_words(
        &mut self,
        u: &mut Unit<'_>,
        cmd: &mut SimpleCommand,
        words: Vec<Word>,
    ) -> Result<(), ParseError> {
        for w in words {
            match u.disguised.get(&w.span.start) {
                Some(&eq) if cmd.words.is_empty() => {
                    u.disguised_claimed.insert(w.span.start);
                    cmd.assignments.push(self.disguised_assignment(w.span, eq)?);
                }
                _ => cmd.words.push(w),
            }
        }
        Ok(())
    }

    /// `NAME=value` or `NAME+=value` in `s` with its `=` at `eq`, read from the input.
    fn disguised_assignment(&mut self, s: Span, eq: usize) -> Result<Assignment, ParseError> {
        let append = eq > s.start && self.src_byte(eq - 1) == Some(b'+');
        let name_end = if append { eq - 1 } else { eq };
        let name = self.text(s.start, name_end)?.to_string();
        if !is_name(&name) {
            return Err(ParseError {
                kind: ParseErrorKind::DynamicName,
                span: Span::new(s.start, name_end),
                message: "an assigned variable name must be a plain name".into(),
            });
        }
        Ok(Assignment {
            name,
            name_span: Span::new(s.start, name_end),
            span: s,
            subscript: None,
            value: Some(self.word(eq + 1, s.end, ASSIGN)?),
            array: vec![],
            append,
        })
    }

    fn declaration(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
    ) -> Result<SimpleCommand, ParseError> {
        let span = self.span(u, node);
        let mut words: Vec<Word> = Vec::new();
        // Whether the last word is a plain argument (not an assignment).
        let mut last_plain = false;
        for (i, (_, child)) in children_of(node).into_iter().enumerate() {
            let s = self.span(u, child);
            let plain = child.kind() != "variable_assignment";
            // tree-sitter splits `unset arr[2]` into `arr` and `[2]`: one word to bash.
            if i > 1 && plain && last_plain && words.last().is_some_and(|w| w.span.end == s.start) {
                if let Some(last) = words.pop() {
                    words.push(self.word(last.span.start, s.end, ARG)?);
                }
                continue;
            }
            last_plain = plain;
            if i == 0 {
                if child.is_named() {
                    return Err(unsupported(s, "a declaration without its builtin name"));
                }
                words.push(Word {
                    span: s,
                    parts: vec![WordPart::Literal(self.text(s.start, s.end)?.to_string())],
                });
                continue;
            }
            let opts = if child.kind() == "variable_assignment" {
                DECL
            } else {
                ARG
            };
            if !child.is_named() && child.kind() != "=" {
                return Err(unsupported(
                    s,
                    format!("unexpected `{}` in a declaration", child.kind()),
                ));
            }
            let subscript = if child.kind() == "variable_assignment" {
                children_of(child)
                    .into_iter()
                    .find(|(f, c)| *f == Some("name") && c.kind() == "subscript")
                    .map(|(_, c)| self.between(u, c, "[", "]"))
                    .transpose()?
            } else {
                None
            };
            let w = match subscript {
                // `declare a[i]=v`: the subscript is expanded as if double-quoted.
                Some((lb, rb)) => self.word_with_subscript(s, lb, rb)?,
                None => self.word(s.start, s.end, opts)?,
            };
            if let Some(prev) = words.last() {
                self.check_gap(prev.span.end, w.span.start)?;
            }
            words.push(w);
        }
        Ok(simple(span, vec![], words, vec![]))
    }

    fn assignment(&mut self, u: &mut Unit<'_>, node: Node<'_>) -> Result<Assignment, ParseError> {
        let span = self.span(u, node);
        let mut a = Assignment {
            name: String::new(),
            name_span: span,
            span,
            subscript: None,
            value: None,
            array: vec![],
            append: false,
        };
        let mut op_end = None;
        let mut value = None;
        for (field, child) in children_of(node) {
            match (field, child.kind()) {
                (Some("name"), "variable_name") => {
                    let s = self.span(u, child);
                    a.name = self.text(s.start, s.end)?.to_string();
                    a.name_span = s;
                }
                (Some("name"), "subscript") => {
                    for (f, c) in children_of(child) {
                        match (f, c.kind()) {
                            (Some("name"), _) => {
                                let s = self.span(u, c);
                                a.name = self.text(s.start, s.end)?.to_string();
                                a.name_span = s;
                            }
                            (Some("index"), _) | (None, "[") | (None, "]") => {}
                            (_, k) => {
                                return Err(unsupported(
                                    self.span(u, c),
                                    format!("unexpected `{k}` in a subscript"),
                                ))
                            }
                        }
                    }
                    let (ia, ib) = self.between(u, child, "[", "]")?;
                    a.subscript = Some(self.word(ia, ib, super::words::SUBSCRIPT)?);
                }
                (None, "=") => op_end = Some(u.base + child.end_byte()),
                (None, "+=") => {
                    op_end = Some(u.base + child.end_byte());
                    a.append = true;
                }
                (Some("value"), _) => value = Some(child),
                (_, k) => {
                    return Err(unsupported(
                        self.span(u, child),
                        format!("unexpected `{k}` in an assignment"),
                    ))
                }
            }
        }
        if !is_name(&a.name) {
            return Err(ParseError {
                kind: ParseErrorKind::DynamicName,
                span: a.name_span,
                message: "an assigned variable name must be a plain name".into(),
            });
        }
        let op_end = op_end.ok_or_else(|| unsupported(span, "an assignment without `=`"))?;
        match value {
            Some(v) if v.kind() == "array" => {
                for (_, el) in children_of(v) {
                    if el.is_named() {
                        if el.kind() == "comment" {
                            continue;
                        }
                        let w = self.node_word(u, el, ARG)?;
                        a.array.push(w);
                    } else if !matches!(el.kind(), "(" | ")") {
                        return Err(unsupported(
                            self.span(u, el),
                            "unexpected token in an array",
                        ));
                    }
                }
            }
            _ => {
                if span.end < op_end {
                    return Err(unsupported(
                        span,
                        "an assignment value outside the assignment",
                    ));
                }
                a.value = Some(self.word(op_end, span.end, ASSIGN)?);
            }
        }
        Ok(a)
    }

    /// A redirection, and the words tree-sitter wrongly put after its target (`cmd <f x`
    /// has `x` as a second destination; bash passes it to `cmd`).
    fn redirect(
        &mut self,
        u: &mut Unit<'_>,
        node: Node<'_>,
    ) -> Result<(Redirect, Vec<Word>), ParseError> {
        let span = self.span(u, node);
        let mut op_pos = None;
        let mut descriptor = None;
        let mut dest: Vec<Node<'_>> = Vec::new();
        for (field, child) in children_of(node) {
            match (field, child.kind()) {
                (Some("descriptor"), _) => descriptor = Some(self.span(u, child)),
                (Some("destination"), _) => dest.push(child),
                (None, "<") => op_pos = Some(u.base + child.start_byte()),
                (_, k) => {
                    return Err(unsupported(
                        self.span(u, child),
                        format!("unexpected `{k}` in a redirection"),
                    ))
                }
            }
        }
        let site = op_pos
            .and_then(|p| u.sites.get(&p))
            .cloned()
            .ok_or_else(|| unsupported(span, "a redirection the pre-pass did not find"))?;
        u.claimed.insert(site.pos);
        let mut leading_word = None;
        match (descriptor, site.fd) {
            (None, None) => {}
            // tree-sitter takes the 2 of `echo 2&>f` and the -200 of `head -200>f` as a
            // descriptor; bash passes the word to the command (`&>` takes no descriptor, and
            // digits after a `-` do not start a word). Only a whole word: `a-2>f` has `a-2`.
            (Some(d), None)
                if d.end == site.pos
                    && (d.start == 0
                        || self
                            .src
                            .as_bytes()
                            .get(d.start - 1)
                            .is_some_and(|&b| super::guards::is_meta(b))) =>
            {
                leading_word = Some(self.word(d.start, d.end, ARG)?);
            }
            (Some(d), Some((_, start))) if d.start == start && d.end == site.pos => {}
            // The digits were read as an argument of the command and skipped there.
            (None, Some((_, start))) if start < site.pos => {}
            _ => {
                return Err(unsupported(
                    span,
                    "the parser and pre-pass disagree on a file descriptor",
                ))
            }
        }
        let (Some(first), Some(last)) = (dest.first(), dest.last()) else {
            return Err(ParseError {
                kind: ParseErrorKind::Missing,
                span,
                message: "a redirection without a target".into(),
            });
        };
        let _ = (first, last);
        let dest_spans: Vec<Span> = dest.iter().map(|d| self.span(u, *d)).collect();
        let joined = join_word_spans(u, &dest_spans);
        let Some(first) = joined.first().copied() else {
            return Err(unsupported(span, "a redirection without a target"));
        };
        let (ta, tb) = (first.start, first.end);
        // A here-string is neither globbed nor brace-expanded.
        let opts = if site.op == RedirectOp::HereString {
            TEST_OPERAND
        } else {
            ARG
        };
        let target = self.word(ta, tb, opts)?;
        let mut extra: Vec<Word> = leading_word.into_iter().collect();
        let mut prev_end = tb;
        for ds in joined.iter().skip(1).copied() {
            // The `0` of a following `0<>f`, which tree-sitter lumps in here.
            if is_fd_of_site(u, ds) {
                continue;
            }
            self.check_gap(prev_end, ds.start)?;
            extra.push(self.word(ds.start, ds.end, ARG)?);
            prev_end = ds.end;
        }
        let mut op = site.op;
        op = dup_or_write_all(op, &target);
        let heredoc = match &site.heredoc {
            Some(h) => Some(self.heredoc_body(h)?),
            None => None,
        };
        let start = site.fd.map_or(site.pos, |(_, s)| s);
        Ok((
            Redirect {
                span: Span::new(start, tb),
                fd: site.fd.map(|(n, _)| n),
                op,
                target,
                heredoc,
            },
            extra,
        ))
    }
}

/// Each `;` the working copy has after a closing reserved word (`fi done`, see
/// [`Scanner::separators`]) must be a `;` token of the tree right after that reserved word's
/// token: anything else means the two readings of the text disagree.
fn check_separators(
    tree: &Tree,
    base: usize,
    separators: &[(usize, usize, usize)],
) -> Result<(), ParseError> {
    let root = tree.root_node();
    for &(a, b, semi) in separators {
        let (ra, rb, rs) = (a - base, b - base, semi - base);
        let closer = root.descendant_for_byte_range(ra, rb);
        let token = root.descendant_for_byte_range(rs, rs + 1);
        let closer_ok = closer.is_some_and(|n| {
            !n.is_named() && n.start_byte() == ra && n.end_byte() == rb && n.child_count() == 0
        });
        let token_ok = token
            .is_some_and(|n| n.kind() == ";" && n.start_byte() == rs && n.end_byte() == rs + 1);
        if !(closer_ok && token_ok) {
            return Err(unsupported(
                Span::new(a, b),
                "a reserved word right after the end of a compound command that the parser read differently",
            ));
        }
    }
    Ok(())
}

/// Text between tree leaves must be blanks or line continuations.
fn check_gap_blank(
    work: &[u8],
    from: usize,
    to: usize,
    base: usize,
    loose: &mut Vec<(usize, usize)>,
) -> Result<(), ParseError> {
    let gap = work.get(from..to).unwrap_or_default();
    let mut i = 0;
    while i < gap.len() {
        match gap.get(i) {
            Some(b' ' | b'\t' | b'\n') => i += 1,
            Some(b'\\') if gap.get(i + 1) == Some(&b'\n') => i += 2,
            Some(b'\\') if i + 1 < gap.len() => {
                // An escaped character tree-sitter left out: it must be claimed by a
                // word next to it (see `join_word_spans`), or the parse is refused.
                let mut j = i + 2;
                while gap.get(j).is_some_and(|b| (0x80..0xc0).contains(b)) {
                    j += 1;
                }
                loose.push((base + from + i, base + from + j));
                i = j;
            }
            _ => {
                return Err(unsupported(
                    Span::new(base + from + i, base + to),
                    "text the parser did not account for",
                ))
            }
        }
    }
    Ok(())
}

/// Extends word spans over the escaped characters tree-sitter left out next to them, and
/// joins spans that then touch (one bash word). Claims the escapes it uses.
fn join_word_spans(u: &mut Unit<'_>, spans: &[Span]) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    for &s in spans {
        let mut s = s;
        while let Some((&a, _)) = u.loose_by_end.get_key_value(&s.start).map(|(_, a)| (a, ())) {
            if !u.loose_claimed.insert(a) {
                break;
            }
            s.start = a;
        }
        while let Some(&e) = u.loose.get(&s.end) {
            if !u.loose_claimed.insert(s.end) {
                break;
            }
            s.end = e;
        }
        match out.last_mut() {
            Some(last) if last.end == s.start => last.end = s.end,
            _ => out.push(s),
        }
    }
    out
}

/// Whether `s` is exactly the fd digits of a redirection site.
fn is_fd_of_site(u: &Unit<'_>, s: Span) -> bool {
    u.sites
        .get(&s.end)
        .is_some_and(|site| site.fd.is_some_and(|(_, start)| start == s.start))
}

fn is_word_kind(k: &str) -> bool {
    matches!(
        k,
        "word"
            | "string"
            | "raw_string"
            | "ansi_c_string"
            | "translated_string"
            | "concatenation"
            | "simple_expansion"
            | "expansion"
            | "command_substitution"
            | "process_substitution"
            | "arithmetic_expansion"
            | "number"
            | "extglob_pattern"
            | "regex"
            | "brace_expression"
            | "variable_name"
    )
}

/// A `time`/`coproc` keyword found as a program name, to blank out of the working text.
struct FoundKeyword {
    keywords: Vec<Keyword>,
    blank_start: usize,
    blank_end: usize,
    /// Where the command it applies to starts (relative to the working text).
    next: usize,
    /// `coproc NAME`: the name and its span (relative).
    name: Option<(String, usize, usize)>,
}

/// Reserved words tree-sitter misreads as a program name right after `!`.
const BANG_COMPOUNDS: &[&str] = &["{", "if", "for", "while", "until", "select", "case"];

const COMPOUND_STARTERS: &[&str] = &[
    "{", "(", "((", "[[", "while", "until", "if", "for", "case", "select",
];

/// Finds commands named by an unquoted `time` or `!` (at the start of a pipeline, with no
/// assignment before it) or `coproc`, which bash treats as keywords.
fn find_keywords(root: Node<'_>, work: &[u8], orig: &[u8]) -> Vec<FoundKeyword> {
    let mut out = Vec::new();
    let mut c = root.walk();
    // The kind of each ancestor and the index of the path's child in it (tree-sitter's
    // `Node::parent` is not constant-time).
    let mut stack: Vec<(&'static str, usize)> = Vec::new();
    loop {
        let n = c.node();
        if n.kind() == "command" {
            let later_stage = stack.last().is_some_and(|&(k, i)| k == "pipeline" && i > 0);
            if let Some(found) = keyword_of(n, work, orig, later_stage) {
                out.push(found);
            }
        }
        if n.kind() == "negated_command" {
            // `! { ls; }`, `! if ...; fi`, `! for ...`: tree-sitter reads the reserved word after
            // `!` as a program name (and the rest of the compound as more commands). Blank the
            // `!` and parse again, as for `time`.
            if let (Some(bang), Some(cmd)) = (n.child(0), n.named_child(0)) {
                let name = cmd.child(0).filter(|c| c.kind() == "command_name");
                let reserved = name
                    .and_then(|c| work.get(c.byte_range()))
                    .is_some_and(|t| BANG_COMPOUNDS.iter().any(|r| r.as_bytes() == t));
                if bang.kind() == "!" && cmd.kind() == "command" && reserved {
                    let mut next = bang.end_byte();
                    while work.get(next).is_some_and(|&b| b == b' ' || b == b'\t') {
                        next += 1;
                    }
                    out.push(FoundKeyword {
                        keywords: vec![Keyword::Bang],
                        blank_start: bang.start_byte(),
                        blank_end: bang.end_byte(),
                        next,
                        name: None,
                    });
                }
            }
        }
        let kind = n.kind();
        if c.goto_first_child() {
            stack.push((kind, 0));
            continue;
        }
        loop {
            if c.goto_next_sibling() {
                if let Some(top) = stack.last_mut() {
                    top.1 += 1;
                }
                break;
            }
            if !c.goto_parent() {
                return out;
            }
            stack.pop();
        }
    }
}

/// `later_stage`: the command is a pipeline stage after the first.
/// `work` is the working copy (token boundaries); `orig` the same range of the input, which a
/// name is taken from (the working copy has `a` for every byte of a non-ASCII character).
fn keyword_of(n: Node<'_>, work: &[u8], orig: &[u8], later_stage: bool) -> Option<FoundKeyword> {
    let first = n.child(0)?;
    if first.kind() != "command_name" || first.named_child_count() != 1 {
        return None;
    }
    let word = first.named_child(0)?;
    if word.kind() != "word" {
        return None;
    }
    let text = work.get(word.byte_range())?;
    let skip_blanks = |mut p: usize| {
        while work.get(p).is_some_and(|&b| b == b' ' || b == b'\t') {
            p += 1;
        }
        p
    };
    let token_at = |p: usize| -> &[u8] {
        let e = (p..work.len())
            .find(|&j| work.get(j).is_none_or(|&b| super::guards::is_meta(b)))
            .unwrap_or(work.len());
        work.get(p..e).unwrap_or_default()
    };
    match text {
        b"time" | b"!" => {
            // Only at the start of a pipeline: after `|` bash runs a `time` program (and
            // `!` is a syntax error). `time -p -- ! ! cmd` is read as one chain.
            if later_stage {
                return None;
            }
            let mut keywords = Vec::new();
            let mut end = word.start_byte();
            let mut p = end;
            loop {
                match token_at(p) {
                    b"time" if !keywords.contains(&Keyword::Time) => {
                        keywords.push(Keyword::Time);
                        end = p + 4;
                        p = skip_blanks(end);
                        if token_at(p) == b"-p" {
                            end = p + 2;
                            p = skip_blanks(end);
                        }
                        if token_at(p) == b"--" {
                            end = p + 2;
                            p = skip_blanks(end);
                        }
                    }
                    b"!" => {
                        keywords.push(Keyword::Bang);
                        end = p + 1;
                        p = skip_blanks(end);
                    }
                    _ => break,
                }
            }
            Some(FoundKeyword {
                keywords,
                blank_start: word.start_byte(),
                blank_end: end,
                next: p,
                name: None,
            })
        }
        b"coproc" => {
            let end = word.end_byte();
            let p = skip_blanks(end);
            let tok = token_at(p);
            let after = skip_blanks(p + tok.len());
            let next_tok = token_at(after);
            let starts_compound = |t: &[u8]| COMPOUND_STARTERS.iter().any(|s| s.as_bytes() == t);
            let next_is_paren = work.get(after) == Some(&b'(');
            let name_text = orig.get(p..p + tok.len()).unwrap_or_default();
            let is_ident = std::str::from_utf8(name_text).is_ok_and(is_name);
            if is_ident && !starts_compound(tok) && (starts_compound(next_tok) || next_is_paren) {
                let name = String::from_utf8_lossy(name_text).into_owned();
                return Some(FoundKeyword {
                    keywords: vec![Keyword::Coproc],
                    blank_start: word.start_byte(),
                    blank_end: p + tok.len(),
                    next: after,
                    name: Some((name, p, p + tok.len())),
                });
            }
            Some(FoundKeyword {
                keywords: vec![Keyword::Coproc],
                blank_start: word.start_byte(),
                blank_end: end,
                next: p,
                name: None,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lower(src: &str) -> Result<Script, ParseError> {
        Ctx::new(src, Limits::default()).parse_range(0, src.len())
    }

    fn keywords_found(src: &str) -> Vec<(usize, usize, usize, Vec<Keyword>)> {
        let mut p = Parser::new();
        p.set_language(&tree_sitter_bash::LANGUAGE.into()).unwrap();
        let t = p.parse(src, None).unwrap();
        find_keywords(t.root_node(), src.as_bytes(), src.as_bytes())
            .into_iter()
            .map(|k| (k.blank_start, k.blank_end, k.next, k.keywords))
            .collect()
    }

    #[test]
    fn keyword_detection() {
        assert_eq!(
            keywords_found("time -p -- ls"),
            vec![(0, 10, 11, vec![Keyword::Time])]
        );
        assert_eq!(
            keywords_found("! ! ls"),
            vec![(2, 3, 4, vec![Keyword::Bang])]
        );
        assert_eq!(keywords_found("a | time ls"), vec![]);
        assert_eq!(keywords_found("X=1 time ls"), vec![]);
        assert_eq!(keywords_found("'time' ls"), vec![]);
        let c = keywords_found("coproc NAME { ls; }");
        assert_eq!(c, vec![(0, 11, 12, vec![Keyword::Coproc])]);
        assert_eq!(
            keywords_found("coproc ls"),
            vec![(0, 6, 7, vec![Keyword::Coproc])]
        );
        assert_eq!(
            keywords_found("! { ls; }"),
            vec![(0, 1, 2, vec![Keyword::Bang])]
        );
    }

    #[test]
    fn names() {
        assert!(is_name("_a1"));
        assert!(!is_name("1a"));
        assert!(!is_name(""));
        assert!(!is_name("a-b"));
    }

    #[test]
    fn gaps_must_be_blank() {
        let mut loose = Vec::new();
        assert!(check_gap_blank(b"a \t\\\n b", 1, 6, 0, &mut loose).is_ok());
        assert!(check_gap_blank(b"a\\ b", 1, 3, 0, &mut loose).is_ok());
        assert_eq!(loose, [(1, 3)]);
        assert_eq!(
            check_gap_blank(b"a x b", 1, 4, 10, &mut loose)
                .unwrap_err()
                .span,
            Span::new(12, 14)
        );
    }

    #[test]
    fn every_redirection_and_keyword_is_placed() {
        let s = lower("cat <a >b 2>&1").unwrap();
        match &s.commands[0] {
            Command::Simple(c) => assert_eq!(c.redirects.len(), 3),
            other => panic!("{other:?}"),
        }
        // A `time` with nothing after it has no command to attach to.
        assert_eq!(lower("time").unwrap_err().kind, ParseErrorKind::Unsupported);
    }

    #[test]
    fn unknown_tokens_and_programs_named_braces_are_refused() {
        assert_eq!(lower("} x").unwrap_err().kind, ParseErrorKind::Unsupported);
        assert_eq!(
            lower("echo \"abc").unwrap_err().kind,
            ParseErrorKind::Missing
        );
        // Missing `fi` (the parser sees a terminated input, see `parse`).
        assert!(matches!(
            lower("if true; then ls").unwrap_err().kind,
            ParseErrorKind::Syntax | ParseErrorKind::Missing
        ));
    }

    #[test]
    fn function_names_must_be_static() {
        match &lower("f() { :; }").unwrap().commands[0] {
            Command::Function(f) => {
                assert_eq!((f.name.as_str(), f.name_span), ("f", Span::new(0, 1)))
            }
            other => panic!("{other:?}"),
        }
        assert!(lower("function $x { :; }").is_err());
    }
}
