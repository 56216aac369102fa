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
                i = skip_delimited(b, i + 1, d)?;
                i = skip_delimited(b, i, d)?;
            }
            b's' => {
                let d = *b.get(i).ok_or("an unterminated `s` command")?;
                if d == b'\n' || d == b'\\' {
                    return Err("an `s` command with an unusual delimiter".into());
                }
                i = skip_delimited(b, i + 1, d)?;
                i = skip_delimited(b, i, d)?;
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

/// Skip to just past the next unescaped `delim` (a newline inside is allowed by GNU sed).
fn skip_delimited(b: &[u8], mut i: usize, delim: u8) -> Result<usize, String> {
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == delim {
            return Ok(i + 1);
        }
        i += 1;
    }
    Err("an unterminated regular expression".into())
}

/// Check an awk program: refuse `system`, pipes to or from commands, `getline` from files,
/// output redirection of `print`/`printf`, gawk's `@include`/`@load`, and `ENVIRON`-driven
/// tricks are left alone (reading the environment is not an action).
pub fn check_awk(program: &str) -> Result<(), String> {
    let b = program.as_bytes();
    let mut i = 0;
    let mut in_print = false;
    let mut prev_significant = b'{';
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                prev_significant = b'"';
                continue;
            }
            b'/' if is_regex_start(prev_significant) => {
                i += 1;
                while i < b.len() && b[i] != b'/' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                prev_significant = b'/';
                continue;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'@' => return Err("gawk `@` directives load code".into()),
            b'|' => {
                if b.get(i + 1) == Some(&b'|') {
                    i += 2;
                    prev_significant = b'|';
                    continue;
                }
                return Err("a pipe in awk runs a shell command".into());
            }
            b'>' if in_print => return Err("`print >` in awk writes a file".into()),
            b';' | b'\n' | b'}' | b'{' => in_print = false,
            _ if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let word = &program[start..i];
                match word {
                    "system" => return Err("`system()` in awk runs a shell command".into()),
                    "getline" => {
                        return Err("`getline` in awk can read files and run commands".into())
                    }
                    "print" | "printf" => in_print = true,
                    _ => {}
                }
                prev_significant = b'a';
                continue;
            }
            _ => {}
        }
        if !c.is_ascii_whitespace() {
            prev_significant = c;
        }
        i += 1;
    }
    Ok(())
}

/// Whether a `/` after `prev` starts a regex (rather than dividing).
fn is_regex_start(prev: u8) -> bool {
    !(prev.is_ascii_alphanumeric() || matches!(prev, b')' | b']' | b'"' | b'/' | b'_' | b'a'))
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
            "/a|b/ {print}",
            "$1 ~ /x/ || $2 > 3",
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
}
