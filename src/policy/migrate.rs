//! `policy-check migrate`: a policy file's old option lists (`allow_options`,
//! `options_with_value`, `option_kinds`, `deny_options`, ...) rewritten as one `options` table
//! per rule, one entry per option, with the rest of the file (comments, order, other keys)
//! left as it is (`toml_edit`).
//!
//! The rewrite is exact: the table it writes is read back by the loader as the very lists it
//! replaced (see `load/options.rs`), so the compiled policy is the same (tests/migrate.rs
//! proves it on the shipped policies, and the decision snapshot on every corpus line). A rule
//! whose lists say something a table cannot say the same way is left as it is and named in
//! [`Migration::kept`]: an option with a value kind that takes no value, one that both takes
//! a value and an optional one, one both allowed and denied, a rule without `allow_options`
//! (a table is an allowlist), a list that is not a list of strings.
//!
//! One entry per spelling: the lists do not say which short and long options are the same
//! option (`-n` and `--head-count`), so the migration does not guess; join them by hand (or
//! draft the table from the program's `--help` with `policy-check draft`).

use std::collections::BTreeMap;

use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};

use super::load::OLD_OPTION_KEYS;

/// What [`migrate`] did to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migration {
    /// The file's new text (the same text when nothing was migrated).
    pub text: String,
    /// The rules rewritten, by name (`git`, `git push`, `sandbox.programs.tar`).
    pub migrated: Vec<String>,
    /// The rules left in the old form, each with why.
    pub kept: Vec<(String, String)>,
}

/// A file that is not TOML.
#[derive(Debug, thiserror::Error)]
#[error("not a TOML file: {0}")]
pub struct MigrateError(String);

/// `source` with every rule's old option lists rewritten as an `options` table, one entry
/// per spelling.
pub fn migrate(source: &str) -> Result<Migration, MigrateError> {
    migrate_with(source, &|_| Vec::new())
}

/// Which spellings of a rule's options are one option: for a rule (`ls`, `git push`,
/// `sandbox.programs.tar`), groups like `["-a", "--all"]` (from the program's `--help`, say).
pub type Aliases<'a> = dyn Fn(&str) -> Vec<Vec<String>> + 'a;

/// [`migrate`], writing the spellings `aliases` names as one option in one entry, where the
/// old lists say the same of each (a group whose spellings the lists treat differently stays
/// apart: the rewrite stays exact whatever `aliases` claims).
pub fn migrate_with(source: &str, aliases: &Aliases) -> Result<Migration, MigrateError> {
    let mut doc: DocumentMut = source
        .parse()
        .map_err(|e: toml_edit::TomlError| MigrateError(e.message().to_string()))?;
    let mut out = Migration {
        text: String::new(),
        migrated: Vec::new(),
        kept: Vec::new(),
    };
    if let Some(programs) = doc.get_mut("programs").and_then(Item::as_table_like_mut) {
        for (name, item) in programs.iter_mut() {
            rule(&name.to_string(), item, aliases, &mut out);
        }
    }
    if let Some(sandbox) = doc.get_mut("sandbox").and_then(Item::as_table_like_mut) {
        if let Some(programs) = sandbox
            .get_mut("programs")
            .and_then(Item::as_table_like_mut)
        {
            for (name, item) in programs.iter_mut() {
                rule(&format!("sandbox.programs.{name}"), item, aliases, &mut out);
            }
        }
        if let Some(item) = sandbox.get_mut("workspace_binaries") {
            rule("sandbox.workspace_binaries", item, aliases, &mut out);
        }
    }
    out.text = if out.migrated.is_empty() {
        source.to_string()
    } else {
        doc.to_string()
    };
    Ok(out)
}

/// One rule (and its subcommands and `after_double_dash`).
fn rule(name: &str, item: &mut Item, aliases: &Aliases, out: &mut Migration) {
    if let Some(t) = item.as_table_like_mut() {
        if let Some(subs) = t.get_mut("subcommands").and_then(Item::as_table_like_mut) {
            for (sub, sub_item) in subs.iter_mut() {
                rule(&format!("{name} {sub}"), sub_item, aliases, out);
            }
        }
        if let Some(dd) = t.get_mut("after_double_dash") {
            rule(&format!("{name} --"), dd, aliases, out);
        }
    }
    match item {
        Item::Table(t) => {
            let keys: Vec<String> = t.iter().map(|(k, _)| k.to_string()).collect();
            let read = |k: &str| t.get(k).and_then(Item::as_value).cloned();
            match plan(name, &keys, read, &aliases(name)) {
                Plan::Nothing => {}
                Plan::Keep(why) => out.kept.push((name.to_string(), why)),
                Plan::Write(options) => {
                    let order = order_of(&keys);
                    t.insert("options", Item::Value(Value::Array(options)));
                    for k in OLD_OPTION_KEYS {
                        if let Some((key, _)) = t.remove_entry(k) {
                            carry_key_decor(&key, t, "options");
                        }
                    }
                    t.sort_values_by(|a, _, b, _| order(a.get()).cmp(&order(b.get())));
                    out.migrated.push(name.to_string());
                }
            }
        }
        Item::Value(Value::InlineTable(t)) => {
            let keys: Vec<String> = t.iter().map(|(k, _)| k.to_string()).collect();
            let read = |k: &str| t.get(k).cloned();
            match plan(name, &keys, read, &aliases(name)) {
                Plan::Nothing => {}
                Plan::Keep(why) => out.kept.push((name.to_string(), why)),
                Plan::Write(options) => {
                    let order = order_of(&keys);
                    t.insert("options", Value::Array(options));
                    for k in OLD_OPTION_KEYS {
                        t.remove(k);
                    }
                    t.sort_values_by(|a, _, b, _| order(a.get()).cmp(&order(b.get())));
                    out.migrated.push(name.to_string());
                }
            }
        }
        _ => {}
    }
}

/// The comments written above a removed key, kept above the key that replaces it.
fn carry_key_decor(removed: &toml_edit::Key, t: &mut Table, to: &str) {
    let Some(prefix) = removed.leaf_decor().prefix().and_then(|p| p.as_str()) else {
        return;
    };
    if !prefix.contains('#') {
        return;
    }
    if let Some(mut key) = t.key_mut(to) {
        let mine = key
            .leaf_decor()
            .prefix()
            .and_then(|p| p.as_str())
            .unwrap_or("")
            .to_string();
        if !mine.contains(prefix) {
            key.leaf_decor_mut().set_prefix(format!("{mine}{prefix}"));
        }
    }
}

/// Where each key goes after the rewrite: where it was, with `options` at the place of the
/// first old list.
fn order_of(keys: &[String]) -> impl Fn(&str) -> usize + '_ {
    let first_old = keys
        .iter()
        .position(|k| OLD_OPTION_KEYS.contains(&k.as_str()))
        .unwrap_or(keys.len());
    move |k: &str| {
        if k == "options" {
            first_old
        } else {
            keys.iter().position(|x| x == k).unwrap_or(usize::MAX)
        }
    }
}

enum Plan {
    Nothing,
    Keep(String),
    Write(Array),
}

/// What one option is, gathered from every list that names it.
#[derive(Default, Clone, PartialEq, Eq)]
struct Opt {
    allow: bool,
    deny: bool,
    ask: bool,
    with_value: bool,
    optional: bool,
    two: bool,
    kind: Option<String>,
    values: Option<String>,
    write: bool,
    terminal: bool,
    delegate: bool,
    flag: bool,
    required: bool,
    pattern: bool,
    implicit: bool,
    glued: bool,
    /// Comments the old lists had at this option (or at their key, for its first option).
    comments: Vec<String>,
}

/// The option table that says what the rule's old lists say, or why there is none.
fn plan(
    name: &str,
    keys: &[String],
    read: impl Fn(&str) -> Option<Value>,
    aliases: &[Vec<String>],
) -> Plan {
    let old: Vec<&String> = keys
        .iter()
        .filter(|k| OLD_OPTION_KEYS.contains(&k.as_str()))
        .collect();
    if old.is_empty() {
        return Plan::Nothing;
    }
    if keys.iter().any(|k| k == "options") {
        return Plan::Keep("it has an `options` table already".into());
    }
    if !keys.iter().any(|k| k == "allow_options") {
        return Plan::Keep(
            "it has no `allow_options` (an `options` table is an allowlist): add one first".into(),
        );
    }
    let mut opts: Vec<(String, Opt)> = Vec::new();
    let mut at: BTreeMap<String, usize> = BTreeMap::new();
    for key in old {
        let Some(value) = read(key) else {
            return Plan::Keep(format!("`{key}` is not a value"));
        };
        let key_comments = comments(value.decor().suffix().and_then(|s| s.as_str()));
        let mut first_of_key = true;
        let entries: Vec<(String, Option<String>, Vec<String>)> = match &value {
            Value::Array(a) => {
                let mut v = Vec::new();
                for item in a.iter() {
                    let Some(s) = item.as_str() else {
                        return Plan::Keep(format!("`{key}` holds a value that is not a string"));
                    };
                    let mut c = comments(item.decor().prefix().and_then(|p| p.as_str()));
                    c.extend(comments(item.decor().suffix().and_then(|p| p.as_str())));
                    v.push((s.to_string(), None, c));
                }
                // A comment after the last item belongs to it.
                let trailing = comments(a.trailing().as_str());
                if let Some(last) = v.last_mut() {
                    last.2.extend(trailing);
                }
                v
            }
            Value::InlineTable(t) => {
                let mut v = Vec::new();
                for (k, item) in t.iter() {
                    let Some(s) = item.as_str() else {
                        return Plan::Keep(format!("`{key}.{k}` is not a string"));
                    };
                    v.push((k.to_string(), Some(s.to_string()), Vec::new()));
                }
                v
            }
            _ => return Plan::Keep(format!("`{key}` is neither a list nor a table")),
        };
        for (option, mapped, mut c) in entries {
            let i = *at.entry(option.clone()).or_insert_with(|| {
                opts.push((option.clone(), Opt::default()));
                opts.len() - 1
            });
            let o = &mut opts[i].1;
            if first_of_key {
                c.splice(0..0, key_comments.iter().cloned());
                first_of_key = false;
            }
            o.comments.extend(c);
            match key.as_str() {
                "allow_options" => o.allow = true,
                "deny_options" => o.deny = true,
                "ask_options" => o.ask = true,
                "options_with_value" => o.with_value = true,
                "options_with_optional_value" => o.optional = true,
                "options_with_two_values" => o.two = true,
                "option_kinds" => o.kind = mapped,
                "option_values" => o.values = mapped,
                "write_options" => o.write = true,
                "terminal_options" => o.terminal = true,
                "delegate_options" => o.delegate = true,
                "flags" => o.flag = true,
                "required_options" => o.required = true,
                "pattern_options" => o.pattern = true,
                "implicit_operand_options" => o.implicit = true,
                "glued_options" => o.glued = true,
                other => return Plan::Keep(format!("`{other}` is not an option list")),
            }
        }
    }
    // Spellings of one option, where the lists treat each the same: one entry.
    let same = |a: &Opt, b: &Opt| {
        let (mut a, mut b) = (a.clone(), b.clone());
        a.comments.clear();
        b.comments.clear();
        a == b
    };
    let mut groups: Vec<(Vec<String>, Opt)> = Vec::new();
    let mut placed: BTreeMap<String, usize> = BTreeMap::new();
    for (option, o) in &opts {
        if placed.contains_key(option) {
            continue;
        }
        let mut names = vec![option.clone()];
        let mut merged = o.clone();
        if let Some(group) = aliases.iter().find(|g| g.contains(option)) {
            for alias in group {
                if alias == option || placed.contains_key(alias) {
                    continue;
                }
                if let Some((_, other)) = opts.iter().find(|(n, _)| n == alias) {
                    if same(o, other) {
                        names.push(alias.clone());
                        merged.comments.extend(other.comments.iter().cloned());
                    }
                }
            }
            // In the order the program lists them (`-a, --all`).
            names.sort_by_key(|n| group.iter().position(|g| g == n));
        }
        for n in &names {
            placed.insert(n.clone(), groups.len());
        }
        groups.push((names, merged));
    }
    let mut array = Array::new();
    for (names_of, o) in &groups {
        let option = &names_of[0];
        let why = |what: &str| Plan::Keep(format!("option `{option}` of `{name}` {what}"));
        if o.deny && (o.allow || o.ask) {
            return why("is denied and also allowed or asked");
        }
        if o.with_value && o.optional {
            return why("takes a value and an optional one");
        }
        if o.two && !o.with_value {
            return why("takes two values but is not in options_with_value");
        }
        let takes_value = o.with_value || o.optional || o.two;
        if o.kind.is_some() && !takes_value {
            return why("has a value kind but takes no value");
        }
        if o.flag && takes_value {
            return why("is a flag and takes a value");
        }
        let mut e = InlineTable::new();
        let mut names = Array::new();
        for n in names_of {
            names.push(n.as_str());
        }
        e.insert("names", Value::Array(names));
        if o.with_value || o.two {
            e.insert(
                "value",
                Value::from(o.kind.clone().unwrap_or_else(|| "text".into())),
            );
        } else if o.optional {
            if let Some(k) = &o.kind {
                e.insert("value", Value::from(k.as_str()));
            }
            e.insert("optional_value", Value::from(true));
        }
        if o.two {
            e.insert("two_values", Value::from(true));
        }
        if o.deny {
            e.insert("verdict", Value::from("deny"));
        } else if o.ask {
            e.insert("verdict", Value::from("ask"));
        } else if !o.allow {
            e.insert("unlisted", Value::from(true));
        }
        for (on, key) in [
            (o.write, "writes_operands"),
            (o.terminal, "terminal"),
            (o.delegate, "delegate"),
            (o.flag, "flag"),
            (o.required, "required"),
            (o.pattern, "pattern"),
            (o.implicit, "implicit_operand"),
            (o.glued, "glued"),
        ] {
            if on {
                e.insert(key, Value::from(true));
            }
        }
        if let Some(v) = &o.values {
            e.insert("values", Value::from(v.as_str()));
        }
        let mut value = Value::InlineTable(e);
        let mut prefix = String::from("\n");
        for c in &o.comments {
            prefix.push_str("  ");
            prefix.push_str(c);
            prefix.push('\n');
        }
        prefix.push_str("  ");
        value.decor_mut().set_prefix(prefix);
        value.decor_mut().set_suffix("");
        array.push_formatted(value);
    }
    array.set_trailing_comma(true);
    array.set_trailing("\n");
    Plan::Write(array)
}

/// The groups of spellings a program's `--help` (or `git SUB -h`) text gives one option:
/// lines like `  -a, --all`, `  -A, --catenate, --concatenate`, `    -v, --[no-]verbose`,
/// `  -p, --package [<SPEC>]`. Only a line's leading option list counts, and only groups of
/// two or more names.
pub fn help_aliases(help: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for line in help.lines() {
        let t = line.trim_start();
        if !t.starts_with('-') || t.len() == line.len() {
            continue;
        }
        // The option list ends where the description begins (two spaces) or the line ends.
        let spec = t.split("  ").next().unwrap_or("");
        let mut names = Vec::new();
        for token in spec.split(", ") {
            let token = token.trim();
            let (dashes, rest) = if let Some(r) = token.strip_prefix("--") {
                ("--", r.strip_prefix("[no-]").unwrap_or(r))
            } else if let Some(r) = token.strip_prefix('-') {
                ("-", r)
            } else {
                break;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            if name.is_empty() || (dashes == "-" && name.chars().count() != 1) {
                break;
            }
            names.push(format!("{dashes}{name}"));
        }
        if names.len() >= 2 {
            out.push(names);
        }
    }
    out
}

/// The comment lines (`# ...`) of a piece of decor.
fn comments(raw: Option<&str>) -> Vec<String> {
    raw.unwrap_or("")
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_becomes_one_entry_per_option_with_comments_and_order_kept() {
        let src = r#"# head
[programs.shuf]
operands = "path-read"   # files
# the options
allow_options = ["-e", "-n", "-o"]  # every one
options_with_value = ["-n", "-o"]
option_kinds = { "-o" = "path-write" }
deny_options = [
  "-x",  # runs things
]
options_complete = true
"#;
        let m = migrate(src).unwrap();
        assert_eq!(m.migrated, vec!["shuf".to_string()]);
        assert_eq!(
            m.text,
            r#"# head
[programs.shuf]
operands = "path-read"   # files
# the options
options = [
  # every one
  { names = ["-e"] },
  { names = ["-n"], value = "text" },
  { names = ["-o"], value = "path-write" },
  # runs things
  { names = ["-x"], verdict = "deny" },
]
options_complete = true
"#
        );
        // Migrating again changes nothing.
        let again = migrate(&m.text).unwrap();
        assert_eq!(again.text, m.text);
        assert!(again.migrated.is_empty());
    }

    #[test]
    fn spellings_the_help_joins_are_one_entry_when_the_lists_agree() {
        let help = "Usage: x\n  -n, --head-count=COUNT  output at most COUNT lines\n  -o, --output=FILE  write\n    -v, --[no-]verbose    be loud\n  -A, --catenate, --concatenate   append\n  -e   alone\n";
        let groups = help_aliases(help);
        assert_eq!(
            groups,
            vec![
                vec!["-n".to_string(), "--head-count".to_string()],
                vec!["-o".to_string(), "--output".to_string()],
                vec!["-v".to_string(), "--verbose".to_string()],
                vec![
                    "-A".to_string(),
                    "--catenate".to_string(),
                    "--concatenate".to_string()
                ],
            ]
        );
        // `-o` is typed, `--output` is not: the lists disagree, so they stay two entries.
        let src = "[programs.x]\nallow_options = [\"--head-count\", \"-n\", \"-o\", \"--output\", \"-v\"]\noptions_with_value = [\"-n\", \"--head-count\", \"-o\", \"--output\"]\noption_kinds = { \"-o\" = \"path-write\" }\n";
        let m = migrate_with(src, &|rule| {
            assert_eq!(rule, "x");
            groups.clone()
        })
        .unwrap();
        assert_eq!(
            m.text,
            "[programs.x]\noptions = [\n  { names = [\"-n\", \"--head-count\"], value = \"text\" },\n  { names = [\"-o\"], value = \"path-write\" },\n  { names = [\"--output\"], value = \"text\" },\n  { names = [\"-v\"] },\n]\n"
        );
    }

    #[test]
    fn what_a_table_cannot_say_the_same_way_is_kept() {
        for (src, why) in [
            ("[programs.a]\ndeny_options = [\"-x\"]\n", "no `allow_options`"),
            (
                "[programs.a]\nallow_options = []\noption_kinds = { \"-o\" = \"path-write\" }\n",
                "takes no value",
            ),
            (
                "[programs.a]\nallow_options = [\"-i\"]\noptions_with_value = [\"-i\"]\noptions_with_optional_value = [\"-i\"]\n",
                "an optional one",
            ),
        ] {
            let m = migrate(src).unwrap();
            assert_eq!(m.text, src);
            assert_eq!(m.kept.len(), 1, "{src}");
            assert!(m.kept[0].1.contains(why), "{:?}", m.kept);
        }
    }

    #[test]
    fn subcommands_inline_tables_and_sandbox_rules_are_migrated() {
        let src = r#"[programs.git]
allow_options = ["-C"]
options_with_value = ["-C"]

[programs.npm]
subcommands = { status = { allow_options = ["-s"] } }

[programs.git.subcommands.push]
allow_options = ["--force"]
ask_options = ["--force"]

[sandbox.programs.make]
allow_options = ["-j"]
options_with_value = ["-j"]
"#;
        let m = migrate(src).unwrap();
        assert_eq!(m.kept, Vec::<(String, String)>::new());
        let mut got = m.migrated.clone();
        got.sort();
        assert_eq!(
            got,
            ["git", "git push", "npm status", "sandbox.programs.make"]
        );
        assert!(m
            .text
            .contains("status = { options = [\n  { names = [\"-s\"] },\n] }"));
        assert!(m
            .text
            .contains("{ names = [\"--force\"], verdict = \"ask\" }"));
    }
}
