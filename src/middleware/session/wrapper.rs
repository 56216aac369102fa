//! The per-call wrapper, defined once per session as two shell functions, so that a call
//! sends one short line and its command as a counted payload.
//!
//! bash reads its script from a pipe one byte per `read(2)` (it must not read past a line a
//! child process might want), so every byte of wrapper text sent per call is a system call:
//! the 507-byte wrapper of a call cost more than a short command itself. Now the session's
//! startup script defines `_sgbID` (begin) and `_sgeID` (end), read-only, and a call
//! sends:
//!
//! ```text
//! \_sgbID LEN&&\builtin eval "$_sgcID"</dev/null;\_sgeID "$?"
//! PAYLOAD (LEN bytes: the call's random sentinel token, then the command)
//! ```
//!
//! The begin function reads exactly LEN bytes with `read -r -N` (which bash reads in blocks,
//! never past the count) into `_sgcID`, takes the token off its front, turns the rest back
//! into the command with `printf -v ... %b`, and prints the call's random begin line. The payload is pure ASCII (see
//! [`encode`]) so that LEN characters are LEN bytes whatever the session's locale. The
//! command runs with `eval` at the top level, not inside a function: `declare`, `local`,
//! `return`, `$1` and `FUNCNAME` mean what they mean at a prompt. The end function prints the
//! sentinel line with the exit status and `$PWD`.
//!
//! Fail closed: if the payload cannot be read whole (a variable made read-only, a read
//! interrupted), the shell exits (status 97) rather than run the rest of the payload as
//! script text, and the session is restarted. The functions are read-only, so no command can
//! redefine or remove them; their names carry a random part per session, and the begin
//! function is called with a backslash so that no alias replaces it.

/// The startup script's definitions of the session `id`'s wrapper functions.
pub(super) fn wrapper_functions(id: &str) -> String {
    format!(
        "_sgb{id}() {{ \\builtin read -r -N \"$1\" _sgc{id} && [[ ${{#_sgc{id}}} == \"$1\" ]] \
         || {{ \\builtin printf '\\nshellgate: the command could not be read whole; the session ends\\n'; \\builtin exit 97; }}; \
         \\builtin jobs >/dev/null 2>&1; _sgt{id}=${{_sgc{id}:0:{TOKEN_LEN}}}; \
         \\builtin printf -v _sgc{id} %b \"${{_sgc{id}:{TOKEN_LEN}}}\"; \
         \\builtin printf '%s\\n' \"SG_BEGIN_$_sgt{id}\"; }}\n\
         _sge{id}() {{ \\builtin unset -v _sgc{id}; \
         \\builtin printf '\\n%s %d %s %s\\n' \"SG_END_$_sgt{id}\" \"$1\" \"$PWD\" \"SG_END_$_sgt{id}\"; }}\n\
         \\builtin readonly -f _sgb{id} _sge{id} || exit 97\n"
    )
}

/// The length of a call's sentinel token (32 hex digits), the payload's first bytes.
const TOKEN_LEN: usize = 32;

/// What to write to the shell for one call of `command` (no NUL byte) with sentinel `token`
/// ([`TOKEN_LEN`] ASCII characters).
pub(super) fn call_line(id: &str, token: &str, command: &str) -> Vec<u8> {
    debug_assert!(token.len() == TOKEN_LEN && token.is_ascii());
    let mut payload = token.as_bytes().to_vec();
    payload.extend(encode(command));
    if !command.ends_with('\n') {
        payload.push(b'\n');
    }
    let mut out = format!(
        "\\_sgb{id} {}&&\\builtin eval \"$_sgc{id}\"</dev/null;\\_sge{id} \"$?\"\n",
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(&payload);
    out
}

/// `command` as `printf %b` input in ASCII: each backslash doubled, each byte above 0x7f as
/// `\xHH`. Everything else as it is (newlines, quotes, control characters).
pub(super) fn encode(command: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(command.len() + 8);
    for &b in command.as_bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x80.. => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(&[
                    b'\\',
                    b'x',
                    HEX[usize::from(b >> 4)],
                    HEX[usize::from(b & 15)],
                ]);
            }
            _ => out.push(b),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::process::{Command, Stdio};

    /// Real bash, given the functions and one call line per command, prints each command's
    /// exact bytes (through `printf %s`), in any locale, and nothing of a payload ever runs as
    /// script text.
    #[test]
    fn bash_gets_every_command_back_byte_for_byte() {
        let commands = [
            "printf %s 'plain'",
            "printf %s 'a\\nb \\\\ \\x41 \\c end'",
            "printf %s 'é ü 日本 \u{1F600}'",
            "printf %s \"$(printf 'x\\ty')\"",
            "printf %s '\r\u{7f}\u{1}'",
            "printf %s '\\'",
            "cat <<'EOF'\nSG_EOF line\n\\x41\nEOF",
        ];
        for locale in ["C", "C.UTF-8"] {
            let mut script = wrapper_functions("t1");
            let mut input = script.clone().into_bytes();
            for (i, c) in commands.iter().enumerate() {
                input.extend(call_line("t1", &format!("{i:0>32}"), c));
            }
            script.clear();
            let mut child = Command::new("bash")
                .args(["--noprofile", "--norc"])
                .env_clear()
                .env("LC_ALL", locale)
                .env("PATH", "/usr/bin:/bin")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(&input).unwrap();
            let out = child.wait_with_output().unwrap();
            let text = String::from_utf8(out.stdout).unwrap();
            for (i, c) in commands.iter().enumerate() {
                let begin = format!("SG_BEGIN_{i:0>32}\n");
                let end = format!("\nSG_END_{i:0>32} 0 ");
                let from = text.find(&begin).unwrap() + begin.len();
                let to = text[from..].find(&end).unwrap() + from;
                let got = &text[from..to];
                let want = if c.starts_with("cat") {
                    "SG_EOF line\n\\x41\n".to_string()
                } else {
                    // What bash's own printf %s of the quoted text gives.
                    let o = Command::new("bash")
                        .args(["-c", c])
                        .env("LC_ALL", locale)
                        .output()
                        .unwrap();
                    String::from_utf8(o.stdout).unwrap()
                };
                assert_eq!(got, want, "{locale}: {c:?}");
            }
        }
    }

    /// `declare`, `return` and the positional parameters mean at a call what they mean at a
    /// prompt: the command does not run inside the wrapper function.
    #[test]
    fn commands_run_at_the_top_level() {
        let mut input = wrapper_functions("t2").into_bytes();
        input.extend(call_line(
            "t2",
            &"a".repeat(32),
            "declare kept=yes; return 3; echo after",
        ));
        input.extend(call_line(
            "t2",
            &"b".repeat(32),
            "echo \"[$kept] [$1] [${FUNCNAME[*]}]\"",
        ));
        let mut child = Command::new("bash")
            .args(["--noprofile", "--norc"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&input).unwrap();
        let text = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
        assert!(text.contains("after"), "{text}"); // `return` at the top level is an error
        assert!(
            text.contains(&format!("SG_END_{} ", "a".repeat(32))),
            "{text}"
        );
        assert!(text.contains("[yes] [] []"), "{text}");
        assert!(
            text.contains(&format!("SG_END_{} 0 ", "b".repeat(32))),
            "{text}"
        );
    }

    /// A command that makes the payload's variable read-only, or tries to replace the
    /// functions, cannot make a later payload run as script text: the shell exits.
    #[test]
    fn a_payload_that_cannot_be_read_ends_the_shell() {
        let mut input = wrapper_functions("t3").into_bytes();
        input.extend(call_line(
            "t3",
            &"a".repeat(32),
            "_sgbt3() { :; }; unset -f _sget3; readonly _sgct3",
        ));
        input.extend(call_line("t3", &"b".repeat(32), "echo PAYLOAD-RAN"));
        input.extend(b"echo STILL-HERE\n");
        let mut child = Command::new("bash")
            .args(["--noprofile", "--norc"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&input).unwrap();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains(&format!("SG_END_{} ", "a".repeat(32))),
            "{text}"
        );
        assert!(!text.contains("PAYLOAD-RAN"), "{text}");
        assert!(!text.contains("STILL-HERE"), "{text}");
        assert_eq!(out.status.code(), Some(97), "{text}");
    }

    #[test]
    fn encoding_is_ascii_and_counted_in_bytes() {
        let e = encode("a\\é");
        assert_eq!(e, b"a\\\\\\xc3\\xa9");
        assert!(e.is_ascii());
    }
}
