//! Small conservative readers for the languages of sed and awk, so that a read-only use of
//! them is told apart from one that runs commands or writes files.
//!
//! Both fail closed: a construct they do not understand is reported as unsafe.

/// Check a sed script: refuse `e`, `w`, `W`, `r`, `R` commands, the `e` and `w` flags of `s`,
/// and anything unparsable.
pub fn check_sed(script: &str) -> Result<(), String> {
    let b = script.as_bytes();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && matches!(b[*i], b' ' | b'\t' | b'\n' | b';') {
            *i += 1;
        }
    };
    loop {
        skip_ws(&mut i);
        if i >= b.len() {
            return Ok(());
        }
        // Addresses: number, $, /re/, \cREc, first~step, addr1,addr2, addr!
        for _ in 0..2 {
            match b.get(i) {
                Some(c) if c.is_ascii_digit() => {
                    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'~') {
                        i += 1;
                    }
                }
                Some(b'$') => i += 1,
                Some(b'/') => i = skip_delimited(b, i + 1, b'/')?,
                Some(b'\\') => {
                    let d = *b.get(i + 1).ok_or("an unterminated address")?;
                    i = skip_delimited(b, i + 2, d)?;
                }
                _ => {}
            }
            while i < b.len() && matches!(b[i], b'I' | b'M') && i > 0 && b[i - 1] == b'/' {
                i += 1;
            }
            if b.get(i) == Some(&b',') {
                i += 1;
                if b.get(i) == Some(&b'+') || b.get(i) == Some(&b'~') {
                    i += 1;
                }
                continue;
            }
            break;
        }
        while i < b.len() && matches!(b[i], b' ' | b'\t' | b'!') {
            i += 1;
        }
        let Some(&cmd) = b.get(i) else { return Ok(()) };
        i += 1;
        match cmd {
            b'{' | b'}' | b'=' | b'd' | b'D' | b'g' | b'G' | b'h' | b'H' | b'l' | b'n' | b'N'
            | b'p' | b'P' | b'x' | b'z' | b'F' => {}
            b'q' | b'Q' | b'L' => {
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            b':' | b'b' | b't' | b'T' => {
                while i < b.len() && !matches!(b[i], b';' | b'\n') {
                    i += 1;
                }
            }
            b'a' | b'i' | b'c' => {
                // Text to the end of the line (with backslash continuations).
                while i < b.len() && b[i] != b'\n' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'y' => {
                let d = *b.get(i).ok_or("an unterminated `y` command")?;
                // Neither part of `y` is a regex: brackets are plain characters there.
                i = skip_plain(b, i + 1, d)?;
                i = skip_plain(b, i, d)?;
            }
            b's' => {
                let d = *b.get(i).ok_or("an unterminated `s` command")?;
                if d == b'\n' || d == b'\\' {
                    return Err("an `s` command with an unusual delimiter".into());
                }
                i = skip_delimited(b, i + 1, d)?;
                // The replacement is not a regex: `s/a/[b/` replaces with `[b`.
                i = skip_plain(b, i, d)?;
                while let Some(&f) = b.get(i) {
                    match f {
                        b'g' | b'p' | b'i' | b'I' | b'm' | b'M' | b'0'..=b'9' => i += 1,
                        b'e' => {
                            return Err("the `e` flag of `s` runs the result as a command".into())
                        }
                        b'w' => return Err("the `w` flag of `s` writes a file".into()),
                        _ => break,
                    }
                }
            }
            b'e' => return Err("the `e` command runs a shell command".into()),
            b'w' | b'W' => return Err("the `w`/`W` command writes a file".into()),
            b'r' | b'R' => return Err("the `r`/`R` command reads a file".into()),
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            other => {
                return Err(format!(
                    "the sed command `{}` is not understood",
                    other as char
                ));
            }
        }
    }
}

/// Skip to just past the next unescaped `delim` that is not inside a bracket expression
/// (`s/[/]/x/`: the `/` in brackets does not end the regex). A newline inside is allowed by
/// GNU sed.
fn skip_delimited(b: &[u8], mut i: usize, delim: u8) -> Result<usize, String> {
    while i < b.len() {
        match b[i] {
            b'\\' => {
                i += 2;
                continue;
            }
            b'[' => {
                i = skip_bracket(b, i).ok_or("an unterminated bracket expression")?;
                continue;
            }
            c if c == delim => return Ok(i + 1),
            _ => {}
        }
        i += 1;
    }
    Err("an unterminated regular expression".into())
}

/// Skip to just past the next unescaped `delim` in text that is not a regex (the replacement
/// of `s`, both parts of `y`), where `[` is an ordinary character.
fn skip_plain(b: &[u8], mut i: usize, delim: u8) -> Result<usize, String> {
    while i < b.len() {
        match b[i] {
            b'\\' => {
                i += 2;
                continue;
            }
            c if c == delim => return Ok(i + 1),
            _ => {}
        }
        i += 1;
    }
    Err("an unterminated replacement".into())
}

/// Skip a bracket expression starting at `open` (`[`), with `]` first being literal and
/// `[:class:]`, `[=e=]`, `[.c.]` inside. Returns the index after the closing `]`.
fn skip_bracket(b: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    if b.get(i) == Some(&b'^') {
        i += 1;
    }
    if b.get(i) == Some(&b']') {
        i += 1;
    }
    while i < b.len() {
        match b[i] {
            b'[' if matches!(b.get(i + 1), Some(b':') | Some(b'=') | Some(b'.')) => {
                let kind = b[i + 1];
                i += 2;
                while i + 1 < b.len() && !(b[i] == kind && b[i + 1] == b']') {
                    i += 1;
                }
                i += 2;
            }
            b']' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// Check an awk program, conservatively: refuse `system`, `getline`, pipes (`|` other than
/// `||`), gawk's `@include`/`@load`, writes to `ARGV`/`ENVIRON` (which choose the files awk
/// reads), and any `>` after a `print`/`printf` up to the end of that statement (output
/// redirection). Words are found on the raw text, even inside strings and regexes: a false
/// refusal is the price of never missing one.
///
/// Pipes and `>` are looked for in the program's code with its strings, comments and regex
/// literals blanked (`awk_code`), so that `/error|warn/` and `print $1 " -> " $2` pass. A
/// hostile program can hide code from a tokenizer (regex and division look alike, `/` sits
/// inside brackets), so the blanking is only done when the program has nothing a tokenizer
/// could misread; otherwise the raw text is checked, as if every character were code.
pub fn check_awk(program: &str) -> Result<(), String> {
    let words = |w: &str| {
        program.match_indices(w).any(|(i, _)| {
            let before = program[..i].chars().next_back();
            let after = program[i + w.len()..].chars().next();
            let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            !ident(before) && !ident(after)
        })
    };
    if words("system") {
        return Err("`system()` in awk runs a shell command".into());
    }
    if words("getline") {
        return Err("`getline` in awk can read files and run commands".into());
    }
    if program.contains('@') {
        return Err("gawk `@` directives load code".into());
    }
    if words("ARGV") || words("ENVIRON") || words("ARGC") {
        return Err("changing ARGV/ENVIRON chooses what awk reads".into());
    }
    let code = awk_code(program).unwrap_or_else(|| program.to_string());
    let b = code.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c == b'|' {
            let double = b.get(i + 1) == Some(&b'|') || (i > 0 && b[i - 1] == b'|');
            if !double {
                return Err("a pipe in awk runs a shell command".into());
            }
        }
    }
    for w in ["print", "printf"] {
        for (i, _) in code.match_indices(w) {
            let rest = &code[i + w.len()..];
            let end = rest.find([';', '}']).unwrap_or(rest.len());
            if rest[..end].contains('>') {
                return Err("`print >` in awk writes a file".into());
            }
        }
    }
    Ok(())
}

/// The code of an awk program with the contents of its strings, comments and regex literals
/// replaced by blanks (same length), or `None` when any part of it could be read in two ways.
///
/// Only what every awk reads the same way is blanked: a `"` string without a newline, a `#`
/// comment, and a `/.../` regex that starts where a division is impossible (at the start, or
/// right after `{`, `;`, a newline, `(`, `,`, `!`, `~`, `&&` or `||`) and holds no bracket
/// expression or newline. Any other `/` (a division, or a regex after `print` or `x++`,
/// which awks read differently) and any backslash-newline outside a string give `None`.
fn awk_code(program: &str) -> Option<String> {
    let b = program.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let mut j = i + 1;
                loop {
                    match b.get(j)? {
                        b'"' => break,
                        b'\\' if b.get(j + 1).is_some_and(|&c| c != b'\n') => j += 2,
                        b'\n' | b'\\' => return None,
                        _ => j += 1,
                    }
                }
                out[i + 1..j].fill(b' ');
                i = j + 1;
            }
            b'#' => {
                let end = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p);
                out[i..end].fill(b' ');
                i = end;
            }
            b'\\' if b.get(i + 1) == Some(&b'\n') => return None,
            b'/' => {
                let before = b[..i]
                    .iter()
                    .rposition(|&c| c != b' ' && c != b'\t')
                    .map(|p| (p, b[p]));
                let regex_start = match before {
                    None => true,
                    Some((_, b'{' | b';' | b'\n' | b'(' | b',' | b'!' | b'~')) => true,
                    Some((p, c @ (b'&' | b'|'))) => p > 0 && b[p - 1] == c,
                    _ => false,
                };
                if !regex_start {
                    return None;
                }
                // Where the regex ends, read without and with bracket expressions (awks
                // differ on whether `/` inside `[...]` ends it): blanked only if both agree.
                let plain = regex_end(b, i + 1, false)?;
                if regex_end(b, i + 1, true)? != plain {
                    return None;
                }
                let j = plain;
                out[i + 1..j].fill(b' ');
                i = j + 1;
            }
            _ => i += 1,
        }
    }
    String::from_utf8(out).ok()
}

/// The index of the `/` that ends an awk regex literal whose text starts at `start`, reading
/// bracket expressions as such or not; `None` at a newline, a backslash-newline or the end.
fn regex_end(b: &[u8], start: usize, brackets: bool) -> Option<usize> {
    let mut j = start;
    loop {
        match b.get(j)? {
            b'/' => return Some(j),
            b'\\' if b.get(j + 1).is_some_and(|&c| c != b'\n') => j += 2,
            b'\n' | b'\\' => return None,
            b'[' if brackets => j = skip_bracket(b, j)?,
            _ => j += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_read_only_scripts_pass() {
        for s in [
            "s/a/b/g",
            "1,5p",
            "/foo/d",
            "s|a|b|2",
            "$!N;P;D",
            "y/abc/xyz/",
            "10q",
            "s/a\\/b/c/;p",
            // The replacement is not a regex: a `[` there is a character.
            "s/a/[b/",
            "s/x/[&]/g",
            "y/[/]/",
        ] {
            assert!(check_sed(s).is_ok(), "{s}");
        }
    }

    #[test]
    fn sed_exec_and_write_are_refused() {
        for s in [
            "1e id",
            "e id",
            "s/a/b/e",
            "s/a/b/w /tmp/x",
            "w out",
            "1r /etc/passwd",
            "/x/W f",
            "s/a/b/gw f",
            "1!e ls",
            "k",
        ] {
            assert!(check_sed(s).is_err(), "{s}");
        }
    }

    #[test]
    fn awk_reads_pass_and_actions_are_refused() {
        for p in [
            "{print $1}",
            "$3 > 100 {print}",
            "NR==1",
            "{ s += $2 } END { print s/NR }",
            "$1 ~ /x/ || $2 > 3",
            "/error|warn/ {print}",
            "$1 ~ /a|b/ && $2 !~ /c|d/",
            "!/^#|^$/",
            "NR > 1 && /x|y/ { c++ } END { print c }",
            "{print $1 \" -> \" $2}",
            "{split($0, a, \"|\"); print a[1] \"|\" a[2]}",
            "# a comment with | and >\n{print}",
            "{printf \"%s > %s\\n\", $1, $2}",
            "/a\\/b|c/",
        ] {
            assert!(check_awk(p).is_ok(), "{p}");
        }
        for p in [
            "{system(\"id\")}",
            "{print > \"/tmp/x\"}",
            "{print | \"sh\"}",
            "BEGIN{while ((\"id\" | getline l) > 0) print l}",
            "{getline x < \"/etc/passwd\"}",
            "@include \"x\"",
            "{printf \"%s\", $0 >> \"f\"}",
        ] {
            assert!(check_awk(p).is_err(), "{p}");
        }
    }

    /// Programs built to make a tokenizer and awk disagree on where strings and regexes are:
    /// each still has its pipe or redirection found.
    #[test]
    fn awk_strings_and_regexes_cannot_hide_code() {
        for p in [
            "/a|b/ {print} {print \"x\" | \"sh\"}",
            "/x/ {print $1 \" > \" $2 > \"/home/user/.bashrc\"}",
            "{ print /\"/ } /a|b/ { print \"x\" | \"sh\" } { print /\"/ }",
            "$1 ~ /a|\"/ { print \"y\" } { print \"z\" | \"sh\" }",
            "# \"\n{ print \"x\" | \"sh\" }",
            "{ s = \"\\\"|\" | \"sh\" }",
            "x++ /a|b/ {print | \"sh\"}",
            "/[|\"]/ {print} {print \"x\" | \"sh\"} /\"/",
            "a = /x|y/",
            "{ print 1 } /a|b/ / 2 { print | \"sh\" }",
            "{ x = \"a\\\n|\" }",
            "/a|b\\\n/ {print}",
            "{ print \"x\" \\\n> \"f\" }",
            "{ print \"x\",\n\"\" > \"f\" }",
        ] {
            assert!(check_awk(p).is_err(), "{p:?}");
        }
    }

    #[test]
    fn awk_code_blanks_only_what_is_unambiguous() {
        // A bracket expression without `/` in it ends the same way in every reading.
        assert_eq!(
            awk_code("/[0-9]+ (GET|POST)/"),
            Some(format!("/{}/", " ".repeat(17)))
        );
        assert!(check_awk("/[0-9]+ (GET|POST)/ {print $1}").is_ok());
        assert!(check_awk("/[|]/ {print $1}").is_ok());
        assert!(check_awk("/[/]/ {print | \"sh\"}").is_err());
        assert_eq!(
            awk_code("/a|b/ {print \"|\" > 1} # |").as_deref(),
            Some("/   / {print \" \" > 1}    ")
        );
        for p in [
            "{print s/2}",
            "{print /x/}",
            // `/` inside brackets: awks disagree on where the regex ends.
            "/[/]/",
            "/a[/]|b/",
            "x = \"a\\\nb\"",
            "\"open",
        ] {
            assert_eq!(awk_code(p), None, "{p:?}");
        }
    }
}
