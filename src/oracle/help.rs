//! A program's options from its `--help` text (or its man page rendered as text): GNU and
//! util-linux style option lines.
//!
//! An option line starts (after at most ten spaces of indentation) with `-`; its names and
//! value placeholders run up to the first two spaces or tab (the description), or up to a
//! word that is not a placeholder. Each line is one entry: its names are aliases.
//!
//! ```text
//!   -e, --echo                treat each ARG as an input line      flag
//!   -n, --head-count=COUNT    output at most COUNT lines           value
//!       --color[=WHEN]        colorize the output                  optional, glued
//!  -o, --output-separator <string>                                 value (util-linux)
//!   -s ARG, -b                                                     value (both names)
//!   -1                        suppress column 1                    flag
//! ```
//! Continuation lines (deeper, not starting with `-`) and prose are skipped. GNU's rule that
//! "mandatory arguments to long options are mandatory for short options too" holds because
//! the names of a line share their value.

/// Whether and how an option takes a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arity {
    /// A flag.
    None,
    /// A value (the next word, or glued: `--x=V`, `-xV`).
    Required,
    /// A value only when glued (`--color=always`, `-i.bak`).
    Optional,
}

/// One option as the help text lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HelpOption {
    /// Its spellings, short ones first, in the order written.
    pub names: Vec<String>,
    /// Whether it takes a value.
    pub arity: Arity,
    /// The value's placeholder as written (`FILE`, `<num>`), if any.
    pub placeholder: Option<String>,
    /// Its lines in the text (names and description, continuation lines joined).
    pub help: String,
}

impl HelpOption {
    /// The spelling tried first: the first long name, else the first one.
    pub fn primary(&self) -> &str {
        self.names
            .iter()
            .find(|n| n.starts_with("--"))
            .unwrap_or(&self.names[0])
    }
}

/// Whether `word` is an option name: `-x` (a letter, digit or `?`), `--long-name`, or a
/// single-dash long name (`-name`).
fn is_name(word: &str) -> bool {
    let body = word
        .strip_prefix("--")
        .or_else(|| word.strip_prefix('-'))
        .unwrap_or("");
    !body.is_empty()
        && body
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '?')
        // `-NUM` (grep, head) is a number's placeholder, not a name.
        && !(!word.starts_with("--") && body.len() > 1 && body.chars().all(|c| c.is_ascii_uppercase()))
        && body
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '?' | '.'))
}

/// Whether `word` is a value placeholder: `FILE`, `LO-HI`, `<name>`, `[FILE]`, `{a,b}`,
/// `[-]NUM`, `N`.
fn is_placeholder(word: &str) -> bool {
    let w = word.trim_end_matches([',', '.', ';']);
    if w.is_empty() {
        return false;
    }
    if (w.starts_with('<') && w.ends_with('>'))
        || (w.starts_with('[') && w.ends_with(']'))
        || (w.starts_with('{') && w.ends_with('}'))
    {
        return true;
    }
    let letters: Vec<char> = w.chars().filter(|c| c.is_alphabetic()).collect();
    !letters.is_empty()
        && letters.iter().all(|c| c.is_uppercase())
        && w.chars()
            .all(|c| c.is_alphanumeric() || "-_[]=:,.+|".contains(c))
}

/// Split one name token into the name and what is glued to it (`--x=FILE`, `--x[=WHEN]`,
/// `-s[ARG]`, `--x<n>`).
fn split_glued(tok: &str) -> (&str, Option<(Arity, &str)>) {
    if let Some(i) = tok.find("[=") {
        return (
            &tok[..i],
            Some((Arity::Optional, tok[i + 2..].trim_end_matches(']'))),
        );
    }
    if let Some(i) = tok.find('=') {
        return (&tok[..i], Some((Arity::Required, &tok[i + 1..])));
    }
    if let Some(i) = tok.find('[') {
        if i > 1 {
            return (
                &tok[..i],
                Some((Arity::Optional, tok[i + 1..].trim_end_matches(']'))),
            );
        }
    }
    if let Some(i) = tok.find('<') {
        if i > 1 {
            return (&tok[..i], Some((Arity::Required, &tok[i..])));
        }
    }
    (tok, None)
}

/// Read one line: its options, if it is an option line.
fn option_line(line: &str) -> Option<HelpOption> {
    let line = line.replace('\t', "    ");
    let indent = line.len() - line.trim_start().len();
    let rest = line.trim_start();
    if indent > 10 || !rest.starts_with('-') {
        return None;
    }
    // The names end at two spaces (the description's column).
    let spec = rest.split("  ").next().unwrap_or(rest).trim();
    let mut names = Vec::new();
    let mut arity = Arity::None;
    let mut placeholder = None;
    let mut last_was_name = false;
    for raw in spec.split([' ', ',']).filter(|t| !t.is_empty()) {
        if raw.starts_with('-') && raw.len() > 1 {
            let (name, glued) = split_glued(raw);
            if !is_name(name) {
                break;
            }
            // `--check, --check=WHEN`: a name written bare and with a value takes it only
            // glued.
            let bare_before = names.iter().any(|n| n == name);
            names.push(name.to_string());
            if let Some((a, p)) = glued {
                let a = if bare_before { Arity::Optional } else { a };
                if a > arity || arity == Arity::None {
                    arity = a;
                }
                if bare_before {
                    arity = Arity::Optional;
                }
                if !p.is_empty() {
                    placeholder = Some(p.to_string());
                }
            }
            last_was_name = true;
        } else if last_was_name && is_placeholder(raw) {
            let optional = raw.starts_with('[') && !raw.starts_with("[-]");
            let a = if optional {
                Arity::Optional
            } else {
                Arity::Required
            };
            if arity != Arity::Required {
                arity = a;
            }
            placeholder = Some(raw.trim_matches(['[', ']']).to_string());
            // `-s ARG, --long=ARG`: more names may follow.
            last_was_name = true;
        } else {
            break;
        }
    }
    if names.is_empty() {
        return None;
    }
    // Short ones first, as written otherwise.
    names.sort_by_key(|n| n.starts_with("--"));
    names.dedup();
    Some(HelpOption {
        names,
        arity,
        placeholder,
        help: rest.trim().to_string(),
    })
}

/// Every option a help text (or man page text) lists, one entry per line; a name listed on
/// two lines (a help text and its man page) is one entry, with the names of both.
pub fn parse(text: &str) -> Vec<HelpOption> {
    let mut out: Vec<HelpOption> = Vec::new();
    // The option being read and its line's indentation: deeper lines continue it.
    let mut current: Option<(HelpOption, usize)> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        if let Some(opt) = option_line(line) {
            if let Some((done, _)) = current.take() {
                merge_into(&mut out, done);
            }
            current = Some((opt, indent));
            continue;
        }
        match &mut current {
            Some((opt, at)) if !line.trim().is_empty() && indent > *at => {
                opt.help.push(' ');
                opt.help.push_str(line.trim());
            }
            Some(_) => {
                if let Some((done, _)) = current.take() {
                    merge_into(&mut out, done);
                }
            }
            None => {}
        }
    }
    if let Some((done, _)) = current.take() {
        merge_into(&mut out, done);
    }
    out
}

/// Add `opt` to `list`, merged with an entry sharing a name.
pub fn merge_into(list: &mut Vec<HelpOption>, opt: HelpOption) {
    if let Some(e) = list
        .iter_mut()
        .find(|e| e.names.iter().any(|n| opt.names.contains(n)))
    {
        for n in opt.names {
            if !e.names.contains(&n) {
                e.names.push(n);
            }
        }
        e.names.sort_by_key(|n| n.starts_with("--"));
        // The stricter reading wins: a value the other text names is a value.
        if opt.arity == Arity::Required || e.arity == Arity::None {
            e.arity = opt.arity;
        }
        if e.placeholder.is_none() {
            e.placeholder = opt.placeholder;
        }
        e.help.push_str(" | ");
        e.help.push_str(&opt.help);
        return;
    }
    list.push(opt);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> (Vec<String>, Arity) {
        let o = option_line(line).unwrap_or_else(|| panic!("not an option line: {line:?}"));
        (o.names, o.arity)
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn gnu_util_linux_and_man_forms() {
        let cases: &[(&str, &[&str], Arity)] = &[
            (
                "  -e, --echo                treat each ARG",
                &["-e", "--echo"],
                Arity::None,
            ),
            (
                "  -n, --head-count=COUNT    output at most",
                &["-n", "--head-count"],
                Arity::Required,
            ),
            (
                "      --random-source=FILE  get random",
                &["--random-source"],
                Arity::Required,
            ),
            (
                "      --color[=WHEN]        colorize",
                &["--color"],
                Arity::Optional,
            ),
            (
                " -o, --output-separator <string>  columns",
                &["-o", "--output-separator"],
                Arity::Required,
            ),
            ("  -1              suppress column 1", &["-1"], Arity::None),
            ("  -s ARG, -b       x", &["-s", "-b"], Arity::Required),
            (
                "       --help display this help and exit",
                &["--help"],
                Arity::None,
            ),
            (
                "  -n, --lines=[-]NUM       print",
                &["-n", "--lines"],
                Arity::Required,
            ),
            (
                "  -i[SUFFIX], --in-place[=SUFFIX]",
                &["-i", "--in-place"],
                Arity::Optional,
            ),
            (
                "\t-w, --width=WIDTH\tuse WIDTH",
                &["-w", "--width"],
                Arity::Required,
            ),
            (
                "  -d, --delimiters=LIST   reuse",
                &["-d", "--delimiters"],
                Arity::Required,
            ),
            ("  -x FILE   read", &["-x"], Arity::Required),
            ("  -name pattern", &["-name"], Arity::None),
            (
                "  -c, --check, --check=diagnose-first  check",
                &["-c", "--check"],
                Arity::Optional,
            ),
        ];
        for (line, want, arity) in cases {
            let (n, a) = one(line);
            let mut want = names(want);
            want.sort_by_key(|n| n.starts_with("--"));
            assert_eq!((n, a), (want, *arity), "{line:?}");
        }
    }

    #[test]
    fn prose_and_continuations_are_not_options() {
        for line in [
            "Usage: shuf [OPTION]... [FILE]",
            "                            the description goes on -n here",
            "  tac -s x   an example",
            "With no FILE, or when FILE is -, read standard input.",
            "  -  a dash alone",
            "  --  the end of options",
        ] {
            assert!(option_line(line).is_none(), "{line:?}");
        }
    }

    #[test]
    fn help_and_man_merge_by_name() {
        let mut v = parse("  -n, --head-count=COUNT  x\n");
        merge_into(
            &mut v,
            HelpOption {
                names: names(&["--head-count"]),
                arity: Arity::Required,
                placeholder: None,
                help: String::new(),
            },
        );
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].names, names(&["-n", "--head-count"]));
    }
}
