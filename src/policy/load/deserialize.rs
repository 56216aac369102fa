//! Reading one file's TOML into the raw types, collecting every syntax error, unknown key and
//! value of the wrong type (each once, at its own place) instead of stopping at the first.

use std::ops::Range;

use super::{first_line, File, Loader};
use crate::codes::DiagnosticCode;
use crate::policy::raw::RawPolicy;

/// Values of the wrong type reported from one file before giving up (each costs a re-read).
const MAX_TYPE_ERRORS: usize = 100;

impl Loader {
    /// TOML → raw types, collecting every unknown key and every value of the wrong type.
    ///
    /// serde stops at the first value of the wrong type, so after one the value is removed
    /// from a copy of the document and the rest is read again, until it reads: each wrong
    /// value is reported once at its own place, and the rest of the file is still validated.
    pub(super) fn parse(&mut self, file: &mut File) -> Option<RawPolicy> {
        let table = match toml::de::DeTable::parse(file.source) {
            Ok(t) => t,
            Err(e) => {
                let loc = file.loc(e.span().unwrap_or(0..0));
                self.diag(DiagnosticCode::PolicySyntax, first_line(e.message()), loc);
                return None;
            }
        };
        // The copy that wrong values are removed from, made at the first one (a copy of the
        // whole document costs as much as a tenth of the load).
        let mut work: Option<toml::Spanned<toml::de::DeTable>> = None;
        let mut unknown: Vec<Vec<String>> = Vec::new();
        let mut found: Vec<(Range<usize>, DiagnosticCode, String)> = Vec::new();
        let mut removed_keys: Vec<Vec<String>> = Vec::new();
        let raw = loop {
            let de = toml::de::Deserializer::from(work.as_ref().unwrap_or(&table).clone());
            let result: Result<RawPolicy, _> = serde_ignored::deserialize(de, |path| {
                let mut segs = Vec::new();
                path_segments(&path, &mut segs);
                if !unknown.contains(&segs) {
                    unknown.push(segs);
                }
            });
            let e = match result {
                Ok(raw) => break Some(raw),
                Err(e) => e,
            };
            let span = e.span().unwrap_or(0..0);
            let mut key = Vec::new();
            let work = work.get_or_insert_with(|| table.clone());
            let removed = !span.is_empty() && remove_at(work.get_mut(), &span, &mut key);
            // A table that lacks a key only because its wrong value was just removed is
            // the same mistake, reported once.
            let cascade = removed && removed_keys.iter().any(|k| k.starts_with(&key));
            if !cascade {
                found.push((
                    span.clone(),
                    DiagnosticCode::PolicyType,
                    type_message(&key, e.message()),
                ));
            }
            removed_keys.push(key);
            if !removed {
                break None;
            }
            if found.len() >= MAX_TYPE_ERRORS {
                found.push((
                    span,
                    DiagnosticCode::PolicyType,
                    format!(
                        "more than {MAX_TYPE_ERRORS} values of the wrong type: fix these first"
                    ),
                ));
                break None;
            }
        };
        for segs in unknown {
            let span = key_span(table.get_ref(), &segs).unwrap_or(0..0);
            let dotted = segs.join(".");
            found.push((
                span,
                DiagnosticCode::PolicyUnknownKey,
                format!("unknown key `{dotted}`"),
            ));
        }
        // In the order of the file, whatever order serde met them in.
        found.sort_by_key(|(span, _, _)| span.start);
        for (span, code, message) in found {
            self.diag(code, message, file.loc(span));
        }
        file.table = Some(table.into_inner());
        raw
    }
}

fn path_segments(path: &serde_ignored::Path, out: &mut Vec<String>) {
    use serde_ignored::Path as P;
    match path {
        P::Root => {}
        P::Seq { parent, index } => {
            path_segments(parent, out);
            out.push(index.to_string());
        }
        P::Map { parent, key } => {
            path_segments(parent, out);
            out.push(key.clone());
        }
        P::Some { parent } | P::NewtypeStruct { parent } | P::NewtypeVariant { parent } => {
            path_segments(parent, out)
        }
    }
}

fn contains(outer: &Range<usize>, inner: &Range<usize>) -> bool {
    outer.start <= inner.start && inner.end <= outer.end
}

/// Removes the innermost key (or list item) whose key or value holds `span` from `table`,
/// pushing the path to it on `path`; false when nothing holds it. Every table is searched,
/// whatever its own span: a `[header]` table's span is its header, not its keys.
fn remove_at(table: &mut toml::de::DeTable, span: &Range<usize>, path: &mut Vec<String>) -> bool {
    let keys: Vec<_> = table.keys().cloned().collect();
    for key in keys {
        let Some(value) = table.get_mut(&key) else {
            continue;
        };
        let holds = contains(&value.span(), span) || contains(&key.span(), span);
        path.push(key.get_ref().to_string());
        if remove_in(value.get_mut(), span, path) {
            return true;
        }
        if holds {
            table.remove(&key);
            return true;
        }
        path.pop();
    }
    false
}

/// [`remove_at`] below a value: true when something inside `value` was removed.
fn remove_in(value: &mut toml::de::DeValue, span: &Range<usize>, path: &mut Vec<String>) -> bool {
    use toml::de::{DeArray, DeValue};
    match value {
        DeValue::Table(t) => remove_at(t, span, path),
        DeValue::Array(arr) => {
            for i in 0..arr.len() {
                let item = &mut (**arr)[i];
                let holds = contains(&item.span(), span);
                path.push(i.to_string());
                if remove_in(item.get_mut(), span, path) {
                    return true;
                }
                if holds {
                    let items = std::mem::replace(arr, DeArray::new());
                    *arr = items
                        .into_iter()
                        .enumerate()
                        .filter(|(j, _)| *j != i)
                        .map(|(_, item)| item)
                        .collect();
                    return true;
                }
                path.pop();
            }
            false
        }
        _ => false,
    }
}

/// serde's message for a value of the wrong type, in words a policy author reads, with the
/// key it is about: "`limits.max_bytes`: expected a whole number, found the string \"big\"".
fn type_message(key: &[String], msg: &str) -> String {
    let msg = first_line(msg);
    let text = if let Some(rest) = msg
        .strip_prefix("invalid type: ")
        .or_else(|| msg.strip_prefix("invalid value: "))
    {
        match rest.rsplit_once(", expected ") {
            Some((found, expected)) => {
                format!(
                    "expected {}, found {}",
                    expected_words(expected),
                    found_words(found)
                )
            }
            None => rest.to_string(),
        }
    } else if msg.starts_with("data did not match any variant of untagged enum OneOrMany") {
        "expected a string or a list of strings".to_string()
    } else if let Some(field) = msg.strip_prefix("missing field ") {
        format!("this table needs the key {field}")
    } else {
        msg
    };
    // Keys of list items read `args[0]`, not `args.0`.
    let mut name = String::new();
    for seg in key {
        if seg.parse::<usize>().is_ok() {
            name.push_str(&format!("[{seg}]"));
        } else {
            if !name.is_empty() {
                name.push('.');
            }
            name.push_str(seg);
        }
    }
    if name.is_empty() {
        text
    } else {
        format!("`{name}`: {text}")
    }
}

/// What serde says it expected (a Rust type name or a visitor's phrase), in TOML words.
fn expected_words(expected: &str) -> String {
    let e = expected.trim();
    match e {
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64" | "u128"
        | "usize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "a boolean" | "bool" => "true or false".into(),
        "a string" | "a borrowed string" | "a string key" | "a char" => {
            "a string (in quotes)".into()
        }
        "a sequence" | "a list" => "a list (`[...]`)".into(),
        "a map" => "a table".into(),
        _ if e.starts_with("struct ") => "a table".into(),
        _ => e.into(),
    }
}

/// serde's `Unexpected` (`string "big"`, `integer `3``, `sequence`) in TOML words.
fn found_words(found: &str) -> String {
    let f = found.trim();
    let bare = |s: &str| s.trim_matches('`').to_string();
    if let Some(v) = f.strip_prefix("integer ") {
        format!("the whole number {}", bare(v))
    } else if let Some(v) = f.strip_prefix("floating point ") {
        format!("the number {}", bare(v))
    } else if let Some(v) = f.strip_prefix("boolean ") {
        bare(v)
    } else if let Some(v) = f.strip_prefix("string ") {
        format!("the string {v}")
    } else {
        match f {
            "sequence" => "a list".into(),
            "map" => "a table".into(),
            _ => f.into(),
        }
    }
}

/// The span of the key at `segs` in the document, for unknown-key diagnostics.
pub(super) fn key_span(root: &toml::de::DeTable, segs: &[String]) -> Option<Range<usize>> {
    use toml::de::DeValue;
    let mut table = root;
    let mut span = None;
    let mut iter = segs.iter().peekable();
    while let Some(seg) = iter.next() {
        let (k, v) = table
            .iter()
            .find(|(k, _)| k.get_ref().as_ref() == seg.as_str())?;
        span = Some(k.span());
        let mut value = v.get_ref();
        // Arrays of tables: the next segment is an index. A key whose value is a list (and
        // nothing under it is the unknown key) is the place itself.
        while let DeValue::Array(arr) = value {
            let Some(idx) = iter.peek().and_then(|s| s.parse::<usize>().ok()) else {
                return span;
            };
            iter.next();
            match arr.get(idx) {
                Some(item) => value = item.get_ref(),
                None => return span,
            }
        }
        match value {
            DeValue::Table(t) => table = t,
            _ => break,
        }
    }
    span
}
