//! Decoding of bash `$'...'` strings.

/// Decodes the text between `$'` and `'` as bash does. `Err(offset)` points at an escape we
/// refuse to guess about (relative to `raw`): an escape that yields a NUL (bash truncates
/// the string there), a non-UTF-8 byte sequence, or an invalid code point.
pub(crate) fn decode(raw: &str) -> Result<String, usize> {
    let b = raw.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c != b'\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let start = i;
        let Some(&e) = b.get(i + 1) else {
            // A trailing backslash stays.
            out.push(b'\\');
            break;
        };
        i += 2;
        match e {
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'e' | b'E' => out.push(0x1b),
            b'f' => out.push(0x0c),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(0x0b),
            b'\\' => out.push(b'\\'),
            b'\'' => out.push(b'\''),
            b'"' => out.push(b'"'),
            b'?' => out.push(b'?'),
            b'0'..=b'7' => {
                let mut v: u32 = u32::from(e - b'0');
                let mut n = 1;
                while n < 3 {
                    match b.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                            n += 1;
                        }
                        _ => break,
                    }
                }
                // bash keeps the low 8 bits of a 3-digit octal escape.
                out.push((v & 0xff) as u8);
            }
            b'x' => {
                let (v, n) = hex(b, i, 2);
                if n == 0 {
                    // `\x` without digits stays as written.
                    out.extend_from_slice(b"\\x");
                } else {
                    out.push(v as u8);
                    i += n;
                }
            }
            b'u' | b'U' => {
                let max = if e == b'u' { 4 } else { 8 };
                let (v, n) = hex(b, i, max);
                if n == 0 {
                    out.push(b'\\');
                    out.push(e);
                } else {
                    let ch = char::from_u32(v).ok_or(start)?;
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                    i += n;
                }
            }
            b'c' => {
                let Some(&x) = b.get(i) else {
                    return Err(start);
                };
                if !x.is_ascii() {
                    return Err(start);
                }
                i += 1;
                if x == b'\\' {
                    // `\c\\` is a control-backslash; bash consumes the second backslash too.
                    if b.get(i) == Some(&b'\\') {
                        i += 1;
                    }
                }
                // bash's TOCTRL: `?` is DEL, everything else is masked to a C0 control.
                out.push(if x == b'?' {
                    0x7f
                } else {
                    x.to_ascii_uppercase() & 0x1f
                });
            }
            other => {
                // Unknown escapes keep the backslash.
                out.push(b'\\');
                out.push(other);
            }
        }
        if out.last() == Some(&0) {
            return Err(start);
        }
    }
    String::from_utf8(out).map_err(|e| e.utf8_error().valid_up_to().min(raw.len()))
}

fn hex(b: &[u8], start: usize, max: usize) -> (u32, usize) {
    let mut v = 0u32;
    let mut n = 0;
    while n < max {
        match b.get(start + n).and_then(|c| (*c as char).to_digit(16)) {
            Some(d) => {
                v = v * 16 + d;
                n += 1;
            }
            None => break,
        }
    }
    (v, n)
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn escapes() {
        assert_eq!(decode(r"\x72\x6d").unwrap(), "rm");
        assert_eq!(decode(r"\162\155").unwrap(), "rm");
        assert_eq!(decode(r"\u0072m").unwrap(), "rm");
        assert_eq!(decode(r"\U0001F600").unwrap(), "😀");
        assert_eq!(decode(r"a\tb\nc").unwrap(), "a\tb\nc");
        assert_eq!(decode(r"\'\\\?\q").unwrap(), "'\\?\\q");
        assert_eq!(decode(r"\cA\e").unwrap(), "\u{1}\u{1b}");
        assert_eq!(decode(r"\c?\ca").unwrap(), "\u{7f}\u{1}");
        assert_eq!(decode(r"\x").unwrap(), "\\x");
    }

    #[test]
    fn refused() {
        assert!(decode(r"a\x00b").is_err());
        assert!(decode(r"\0").is_err());
        assert!(decode(r"\xff").is_err());
        assert!(decode(r"\uD800").is_err());
    }
}
