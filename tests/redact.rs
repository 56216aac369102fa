//! Integration tests of the redaction pipeline: the rule pack's own examples, user
//! configuration, a corpus of realistic command output, and properties.
//!
//! Every secret here is SYNTHETIC, generated from a fixed seed.

use proptest::prelude::*;
use shellgate::redact::{redact, RedactConfig, RedactError, Redactor, RuleSet};

/// A tiny deterministic generator for synthetic secrets.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn string(&mut self, charset: &str, len: usize) -> String {
        let set: &[u8] = match charset {
            "A" => b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwyz0123456789",
            "a" => b"abcdefghijklmnopqrstuvwyz0123456789",
            "L" => b"ABCDEFGHIJKLMNOPQRSTUVWYZabcdefghijklmnopqrstuvwyz",
            "h" => b"0123456789abcdef",
            "U" => b"ABCDEFGHIJKLMNOPQRSTUVWYZ234567",
            "b" => b"ABCDEFGHIJKLMNOPQRSTUVWYZabcdefghijklmnopqrstuvwyz0123456789+/",
            "u" => b"ABCDEFGHIJKLMNOPQRSTUVWYZabcdefghijklmnopqrstuvwyz0123456789_-",
            "d" => b"0123456789",
            "B32" => b"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
            "H" => b"0123456789ABCDEF",
            "l" => b"abcdefghijklmnopqrstuvwyz0123456789",
            "N" => b"ABCDEFGHIJKLMNOPQRSTUVWYZ0123456789",
            "e" => b"abcdefghijklmnopqrstuvwyz0123456789_-",
            "E" => b"abcdefghijklmnopqrstuvwyz0123456789=_-",
            "X" => b"abcdefghijklmnopqrstuvwyz0123456789/=_+-",
            "w" => b"ABCDEFGHIJKLMNOPQRSTUVWYZabcdefghijklmnopqrstuvwyz0123456789_",
            "M" => b"0123456789abcdefABCDEF",
            other => panic!("charset {other}"),
        };
        // Avoid runs that look like placeholders (`0000`, `0123`, `abcd...`, `xxxxxx`).
        loop {
            let s: String = (0..len)
                .map(|_| set[(self.next() % set.len() as u64) as usize] as char)
                .collect();
            let lower = s.to_ascii_lowercase();
            if ![
                "0000", "0123", "abcdefgh", "example", "test", "secret", "token", "pass", "dummy",
            ]
            .iter()
            .any(|w| lower.contains(w))
            {
                return s;
            }
        }
    }
}

/// Expands `{{rule:PREFIX:charset:len}}` and `{{pem:rule:LABEL}}` slots: returns the input with
/// generated secrets, the expected redacted output, and the planted secrets.
fn expand(template: &str, seed: u64) -> (String, String, Vec<String>) {
    let mut g = Gen(seed);
    let (mut input, mut expected, mut secrets) = (String::new(), String::new(), Vec::new());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        // `${{ secrets.X }}` is text, not a slot.
        if rest[open + 2..].starts_with(' ') {
            input.push_str(&rest[..open + 2]);
            expected.push_str(&rest[..open + 2]);
            rest = &rest[open + 2..];
            continue;
        }
        input.push_str(&rest[..open]);
        expected.push_str(&rest[..open]);
        let close = rest[open..].find("}}").expect("slot closes") + open;
        let parts: Vec<&str> = rest[open + 2..close].split(':').collect();
        if parts[0] == "pem" {
            let (rule, label) = (parts[1], parts[2]);
            let body: Vec<String> = (0..6).map(|_| g.string("b", 64)).collect();
            input.push_str(&format!(
                "-----BEGIN {label}-----\n{}\n-----END {label}-----",
                body.join("\n")
            ));
            expected.push_str(&format!(
                "-----BEGIN {label}-----\n[REDACTED:{rule}]\n-----END {label}-----"
            ));
            secrets.extend(body);
        } else {
            let (rule, prefix, cs, len) = (parts[0], parts[1], parts[2], parts[3]);
            let secret = format!("{prefix}{}", g.string(cs, len.parse().expect("len")));
            input.push_str(&secret);
            expected.push_str(&format!("[REDACTED:{rule}]"));
            secrets.push(secret);
        }
        rest = &rest[close + 2..];
    }
    input.push_str(rest);
    expected.push_str(rest);
    (input, expected, secrets)
}

const CORPUS: &str = include_str!("data/corpus.tmpl");

#[test]
fn builtin_pack_compiles_and_has_60_rules() {
    let set = RuleSet::builtin();
    assert!(set.len() >= 60, "only {} rules", set.len());
}

#[test]
fn every_rule_example_and_negative() {
    let failures = RuleSet::builtin().check_examples();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn corpus_secrets_go_and_nothing_else_changes() {
    for seed in [1, 2, 3, 42, 2026] {
        let (input, expected, secrets) = expand(CORPUS, seed);
        let out = redact(input.as_bytes());
        let out = String::from_utf8(out).expect("utf-8 in, utf-8 out");
        if out != expected {
            for (i, (a, b)) in out.lines().zip(expected.lines()).enumerate() {
                assert_eq!(a, b, "seed {seed}, line {}", i + 1);
            }
            assert_eq!(out, expected, "seed {seed}");
        }
        for s in &secrets {
            assert!(
                !out.contains(s.as_str()),
                "seed {seed}: secret survived: {s}"
            );
        }
        // Chunked the same, at several chunk sizes.
        for size in [1, 7, 64, 4096] {
            let mut r = Redactor::new(RuleSet::builtin());
            let mut o = Vec::new();
            for c in input.as_bytes().chunks(size) {
                r.feed(c, &mut o);
            }
            r.finish(&mut o);
            assert_eq!(
                String::from_utf8_lossy(&o),
                expected,
                "seed {seed}, chunks of {size}"
            );
        }
    }
}

#[test]
fn look_alikes_stay() {
    let text = "\
commit 9fceb02d0ae598e95dc970b74767f19372d61af8
sha256:4c8f2a1d9e7b6c5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a
sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXPs17LhbZVGedAJv8XZ1tvj5FvSg==
image: nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31
uuid 123e4567-e89b-42d3-a456-556642440000
arn:aws:iam::123456789012:role/AKIA-lookalike-role
arn:aws:s3:::my-bucket/prefix
AKIAIOSFODNN7EXAMPLE
ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
token: ${{ secrets.TOKEN }}
export API_KEY=$API_KEY
api_key: <your-token>
data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==
-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo
-----END PUBLIC KEY-----
ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 dev@host
";
    assert_eq!(String::from_utf8_lossy(&redact(text.as_bytes())), text);
}

#[test]
fn context_around_the_secret_stays() {
    let out = redact(b"aws_secret_access_key = q7Rk2VbN9wLmZ4xT8yH3pJc6DfGs1UaWe0iOnB5t\n");
    assert_eq!(
        out,
        b"aws_secret_access_key = [REDACTED:aws-secret-access-key]\n"
    );
}

#[test]
fn invalid_utf8_passes_through() {
    let input = b"\xff\xfe caf\xe9 \xc3\x28 ok\npassword=\xffq7Rk2VbN9wLm\n";
    let out = redact(input);
    assert!(out.starts_with(b"\xff\xfe caf\xe9 \xc3\x28 ok\n"));
    assert!(!out.windows(12).any(|w| w == b"q7Rk2VbN9wLm"));
}

#[test]
fn unclosed_key_block_is_redacted_at_eof_and_at_a_non_key_line() {
    let eof = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0";
    assert_eq!(
        String::from_utf8_lossy(&redact(eof.as_bytes())),
        "-----BEGIN RSA PRIVATE KEY-----\n[REDACTED:private-key]"
    );
    let cut = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n$ echo done\n";
    assert_eq!(
        String::from_utf8_lossy(&redact(cut.as_bytes())),
        "-----BEGIN RSA PRIVATE KEY-----\n[REDACTED:private-key]\n$ echo done\n"
    );
}

#[test]
fn key_block_past_the_bound_is_still_redacted_chunked_or_not() {
    let mut text = String::from("-----BEGIN PRIVATE KEY-----\n");
    let mut g = Gen(9);
    for _ in 0..(shellgate::redact::MAX_BLOCK_LINES + 50) {
        text.push_str(&g.string("b", 64));
        text.push('\n');
    }
    text.push_str("-----END PRIVATE KEY-----\ntail\n");
    let whole = redact(text.as_bytes());
    assert_eq!(
        String::from_utf8_lossy(&whole),
        "-----BEGIN PRIVATE KEY-----\n[REDACTED:private-key]\n-----END PRIVATE KEY-----\ntail\n"
    );
    let mut r = Redactor::new(RuleSet::builtin());
    let mut o = Vec::new();
    for c in text.as_bytes().chunks(1000) {
        r.feed(c, &mut o);
    }
    r.finish(&mut o);
    assert_eq!(o, whole);
}

#[test]
fn long_lines_are_cut_the_same_way_chunked_or_not() {
    let mut text = Vec::new();
    let mut g = Gen(5);
    for i in 0..40_000 {
        text.extend_from_slice(format!("k{i}=v ").as_bytes());
        if i % 9000 == 0 {
            text.extend_from_slice(format!("ghp_{} ", g.string("A", 36)).as_bytes());
        }
    }
    let whole = redact(&text);
    assert_eq!(whole.windows(4).filter(|w| w == b"ghp_").count(), 0);
    for size in [1, 999, 70_000] {
        let mut r = Redactor::new(RuleSet::builtin());
        let mut o = Vec::new();
        for c in text.chunks(size) {
            r.feed(c, &mut o);
        }
        r.finish(&mut o);
        assert!(o == whole, "chunks of {size}");
    }
}

#[test]
fn user_rules_extend_disable_and_allow() {
    let config = RedactConfig::from_policy_str(
        r#"
[policy]
default = "deny"

[redact]
disable = ["jwt"]
allow = ["^ghp_Fixture"]

[[redact.rule]]
id = "acme-token"
keywords = ["acme_"]
regex = '''\b(acme_[a-z0-9]{32})\b'''
examples = ["ACME=acme_q7rk2vbn9wlmz4xt8yh3pjc6dfgs1uaw"]
"#,
    )
    .expect("config parses");
    let set = RuleSet::with_config(&config).expect("compiles");
    assert!(set.check_examples().is_empty());
    let (out, stats) = set.redact(
        b"acme_q7rk2vbn9wlmz4xt8yh3pjc6dfgs1uaw eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U ghp_FixtureAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n",
    );
    assert_eq!(
        String::from_utf8_lossy(&out),
        "[REDACTED:acme-token] eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U ghp_FixtureAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
    );
    assert_eq!(stats.get("acme-token"), 1);
    assert!(!set.ids().any(|id| id == "jwt"));
}

#[test]
fn a_user_rule_with_a_builtin_id_replaces_it() {
    let config = RedactConfig::from_toml_str(
        r#"
[[rule]]
id = "github-pat"
keywords = ["ghp_"]
regex = '''(ghp_[A-Za-z0-9]{10,})'''
"#,
    )
    .expect("parses");
    let set = RuleSet::with_config(&config).expect("compiles");
    assert_eq!(set.len(), RuleSet::builtin().len());
    let (out, _) = set.redact(b"ghp_q7Rk2VbN9wLm\n");
    assert_eq!(out, b"[REDACTED:github-pat]\n");
}

#[test]
fn standalone_rules_file_without_builtins() {
    let dir = std::env::temp_dir().join(format!("shellgate-rules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let path = dir.join("rules.toml");
    std::fs::write(
        &path,
        "builtin = false\n[[rule]]\nid = \"only\"\nkeywords = [\"only_\"]\nregex = '''(only_\\w+)'''\n",
    )
    .expect("write");
    let config = RedactConfig::load(&path).expect("loads");
    let set = RuleSet::with_config(&config).expect("compiles");
    assert_eq!(set.len(), 1);
    let (out, _) = set.redact(b"only_abc ghp_q7Rk2VbN9wLmZ4xT8yH3pJc6DfGs1UaWe0iO\n");
    assert_eq!(
        out,
        b"[REDACTED:only] ghp_q7Rk2VbN9wLmZ4xT8yH3pJc6DfGs1UaWe0iO\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `requires`: a line with the keyword but without every required literal is skipped before
/// the regex runs (here the regex alone would match it), and each example must hold them.
#[test]
fn required_literals_gate_the_regex_and_are_checked_in_examples() {
    let toml = r#"builtin = false
[[rule]]
id = "at-token"
keywords = ["tok_"]
requires = ["@", "host"]
regex = '''(tok_[a-z0-9]{8})'''
examples = ["tok_abcd1234@host"]
"#;
    let set = RuleSet::with_config(&RedactConfig::from_toml_str(toml).expect("parses"))
        .expect("compiles");
    assert!(
        set.check_examples().is_empty(),
        "{:?}",
        set.check_examples()
    );
    let (out, _) = set.redact(b"tok_abcd1234@host\ntok_abcd1234 host\ntok_abcd1234@\n");
    assert_eq!(
        out,
        b"[REDACTED:at-token]@host\ntok_abcd1234 host\ntok_abcd1234@\n"
    );
    let bad = toml.replace("[\"tok_abcd1234@host\"]", "[\"tok_abcd1234 host\"]");
    let set = RuleSet::with_config(&RedactConfig::from_toml_str(&bad).expect("parses"))
        .expect("compiles");
    let failures = set.check_examples().join("\n");
    assert!(failures.contains("required literal \"@\""), "{failures}");
    let e = config_error(&toml.replace("[\"@\", \"host\"]", "[\"\"]"));
    assert!(e.contains("at-token") && e.contains("non-empty"), "{e}");
}

fn config_error(toml: &str) -> String {
    match RedactConfig::from_toml_str(toml) {
        Err(e) => e.to_string(),
        Ok(c) => match RuleSet::with_config(&c) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted: {toml}"),
        },
    }
}

#[test]
fn invalid_user_rules_name_the_rule_and_the_problem() {
    let e = config_error("[[rule]]\nid = \"bad-re\"\nkeywords = [\"abc\"]\nregex = '''(abc'''\n");
    assert!(e.contains("bad-re") && e.contains("invalid regex"), "{e}");
    let e = config_error("[[rule]]\nid = \"no-group\"\nkeywords = [\"abc\"]\nregex = '''abc'''\n");
    assert!(e.contains("no-group") && e.contains("capture group"), "{e}");
    let e = config_error(
        "[[rule]]\nid = \"twice\"\nkeywords = [\"abc\"]\nregex = '''(abc)'''\n[[rule]]\nid = \"twice\"\nkeywords = [\"abc\"]\nregex = '''(abc)'''\n",
    );
    assert!(e.contains("twice") && e.contains("more than once"), "{e}");
    let e = config_error(
        "[[rule]]\nid = \"typo\"\nkeywords = [\"abc\"]\nregex = '''(abc)'''\nentropyy = 3.0\n",
    );
    assert!(e.contains("typo") && e.contains("entropyy"), "{e}");
    let e = config_error("[[rule]]\nid = \"short\"\nkeywords = [\"ab\"]\nregex = '''(ab)'''\n");
    assert!(e.contains("short") && e.contains("3 bytes"), "{e}");
    let e =
        config_error("[[rule]]\nid = \"Not_Kebab\"\nkeywords = [\"abc\"]\nregex = '''(abc)'''\n");
    assert!(e.contains("Not_Kebab") && e.contains("kebab"), "{e}");
    let e = config_error(
        "[[rule]]\nid = \"keyless\"\nkeywords = [\"abc\"]\nregex = '''abc=(\\w+)'''\nkey_allow = ['''Id$''']\n",
    );
    assert!(e.contains("keyless") && e.contains("named `key`"), "{e}");
    let e = config_error("disable = [\"no-such-rule\"]\n");
    assert!(e.contains("no-such-rule"), "{e}");
    let e = config_error("unknown = 1\n");
    assert!(e.contains("unknown"), "{e}");
    assert!(matches!(
        RuleSet::with_config(&RedactConfig {
            disable: vec!["nope".into()],
            ..RedactConfig::default()
        }),
        Err(RedactError::UnknownRule { .. })
    ));
}

/// A user rule's `key_allow` filters on its `key` group: the name decides, not the value.
#[test]
fn key_allow_filters_on_the_key_name() {
    let config = RedactConfig::from_toml_str(
        "builtin = false\n[[rule]]\nid = \"acme\"\nkeywords = [\"acme\"]\nregex = '''(?P<key>acme[A-Za-z]*)=(?P<secret>\\w{8,})'''\nkey_allow = ['''Id$''']\n",
    )
    .expect("parses");
    let set = RuleSet::with_config(&config).expect("compiles");
    let (out, _) = set.redact(b"acmeToken=Zq8Lr3Vx6Nm1 acmeClientId=Zq8Lr3Vx6Nm1\n");
    assert_eq!(
        String::from_utf8_lossy(&out),
        "acmeToken=[REDACTED:acme] acmeClientId=Zq8Lr3Vx6Nm1\n"
    );
}

/// Entropy thresholds per alphabet: random values of each alphabet pass, runs and counters
/// do not (issue 26: one threshold for every charset rejected hex and numeric secrets).
#[test]
fn entropy_thresholds_follow_the_alphabet() {
    use shellgate::redact::{entropy_threshold, shannon_entropy};
    let cases: [(&[u8], bool); 6] = [
        (b"6941056460664420", true),
        (b"1733097600000", false),
        (b"ef119384-e246-48f3-91a7-b63300d2d3cf", true),
        (b"aaaabbbbccccdddd", false),
        (b"tk8qha0cd7og0ktcdo3zozf4ek77", true),
        (b"Zq8Lr3Vx6Nm1Kp4Tw7Yb2Hc5", true),
    ];
    for (v, secret) in cases {
        assert_eq!(
            shannon_entropy(v) >= entropy_threshold(v, 3.5),
            secret,
            "{}: {:.2} vs {:.2}",
            String::from_utf8_lossy(v),
            shannon_entropy(v),
            entropy_threshold(v, 3.5)
        );
    }
}

#[test]
fn stats_count_per_rule() {
    let (_, stats) = RuleSet::builtin().redact(
        b"a ghp_q7Rk2VbN9wLmZ4xT8yH3pJc6DfGs1UaWe0iO b ghp_Rk2VbN9wLmZ4xT8yH3pJc6DfGs1UaWe0iOqZ\n",
    );
    assert_eq!(stats.get("github-pat"), 2);
    assert_eq!(stats.total(), 2);
}

// ---- properties ----

fn secret_line() -> impl Strategy<Value = String> {
    let tok = "[A-Za-z0-9]{40}";
    prop_oneof![
        tok.prop_map(|s| format!("GITHUB_TOKEN=ghp_{}", &s[..36])),
        tok.prop_map(|s| format!("aws_secret_access_key = {s}")),
        tok.prop_map(|s| format!(
            "AKIA{}",
            s[..16]
                .to_ascii_uppercase()
                .replace(['0', '1', '8', '9'], "Q")
        )),
        tok.prop_map(|s| format!("  \"password\": \"{}\",", &s[..14])),
        tok.prop_map(|s| format!("export API_KEY={s}")),
        tok.prop_map(|s| format!("Authorization: Bearer {s}")),
        tok.prop_map(|s| format!("postgres://u:{}@db/x", &s[..20])),
        tok.prop_map(|s| format!("xoxb-{}", &s[..30])),
        tok.prop_map(|s| format!(
            "-----BEGIN RSA PRIVATE KEY-----\n{s}{s}\n{s}\n-----END RSA PRIVATE KEY-----"
        )),
    ]
}

fn fragment() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        secret_line().prop_map(String::into_bytes),
        "[ -~]{0,40}".prop_map(String::into_bytes),
        proptest::collection::vec(any::<u8>(), 0..12),
        Just(b"\n".to_vec()),
        Just(b"[REDACTED:github-pat]".to_vec()),
        Just(b"-----BEGIN PRIVATE KEY-----\n".to_vec()),
        Just(b"-----END PRIVATE KEY-----\n".to_vec()),
        Just(b"data:\n  key: dmFsdWU=\n".to_vec()),
        Just(b"kind: Secret\n".to_vec()),
        Just(b"kind: ConfigMap\n".to_vec()),
        Just(b"---\n".to_vec()),
        Just(b"  \"data\": {\n    \"k\": \"dmFsdWUxMjM0\"\n  },\n".to_vec()),
        Just(b"password=".to_vec()),
        Just(b"ghp_".to_vec()),
        // Issue 26: the code and config forms, identifiers next to them, tokens that run into
        // the next key, the multi-line forms.
        Just(b"xoxb-580239624394-0846479657378-20K98cHZ3hvlzZj5YK7QUOsi".to_vec()),
        Just(b"data:".to_vec()),
        Just(b"var apiToken string = \"Zq8Lr3Vx6Nm1Kp4Tw7Yb2Hc5\"\n".to_vec()),
        Just(b"SONAR_TOKEN ::= `Zq8Lr3Vx6Nm1Kp4Tw7Yb2Hc5`".to_vec()),
        Just(b"<deployToken>\n    Zq8Lr3Vx6Nm1Kp4Tw7Yb2Hc5\n</deployToken>\n".to_vec()),
        Just(
            b"curl -X POST \\\n  -u ci:Zq8Lr3Vx6Nm1Kp4T \\\n  https://ci.internal.test/\n".to_vec()
        ),
        Just(b"  secretName: app-tls-104857\n".to_vec()),
        Just(b"credentialsId: 'ff083f76-7804-4ef1-80e4-fe975bb9141b'\n".to_vec()),
        Just(b"  LOG_LEVEL: debug\n".to_vec()),
        Just(b"  ".to_vec()),
        Just(b":".to_vec()),
    ]
}

fn input() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(fragment(), 0..24).prop_map(|v| v.concat())
}

fn chunked(input: &[u8], cuts: &[usize]) -> Vec<u8> {
    let mut r = Redactor::new(RuleSet::builtin());
    let mut out = Vec::new();
    let mut at = 0;
    for &c in cuts {
        let end = (at + c).min(input.len());
        r.feed(&input[at..end], &mut out);
        at = end;
    }
    r.feed(&input[at..], &mut out);
    r.finish(&mut out);
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn idempotent(input in input()) {
        let once = redact(&input);
        let twice = redact(&once);
        prop_assert_eq!(String::from_utf8_lossy(&twice), String::from_utf8_lossy(&once));
    }

    #[test]
    fn idempotent_over_mixed_inputs(parts in proptest::collection::vec(fragment(), 0..40)) {
        let input = parts.concat();
        let once = redact(&input);
        let twice = redact(&once);
        prop_assert_eq!(String::from_utf8_lossy(&twice), String::from_utf8_lossy(&once));
    }

    #[test]
    fn chunked_equals_whole(input in input(), cuts in proptest::collection::vec(0usize..64, 0..40)) {
        let whole = redact(&input);
        let parts = chunked(&input, &cuts);
        prop_assert_eq!(String::from_utf8_lossy(&parts), String::from_utf8_lossy(&whole));
    }

    #[test]
    fn planted_secrets_never_survive(
        noise in proptest::collection::vec("[ -~]{0,30}", 0..6),
        tokens in proptest::collection::vec("[A-Za-z0-9]{36}", 1..4),
        cuts in proptest::collection::vec(1usize..50, 0..30),
    ) {
        let mut text = String::new();
        for (i, t) in tokens.iter().enumerate() {
            if let Some(n) = noise.get(i) {
                text.push_str(n);
                text.push('\n');
            }
            text.push_str(&format!("GITHUB_TOKEN=ghp_{t}\nsk_live_{t}\n"));
        }
        let out = chunked(text.as_bytes(), &cuts);
        for t in &tokens {
            prop_assert!(!out.windows(t.len()).any(|w| w == t.as_bytes()), "survived: {}", t);
        }
    }
}

/// Found by the fuzz campaign (fuzz/artifacts/redact/crash-e3017b33): a marker ended a value
/// that a longer, rejected candidate had covered, so a second pass found one more secret.
/// Issue 26: a token that runs into the next key (`xoxb-...data:`) is a key line once it is a
/// marker too, so the second pass reads the same mapping and changes nothing.
#[test]
fn a_marker_line_is_the_key_line_it_was() {
    let input = "kind: ConfigMap\nxoxb-580239624394-0846479657378-20K98cHZ3hvlzZj5YK7QUOsidata:\n  key: dmFsdWU=\ndata:\n  key: dmFsdWU=\n";
    let once = redact(input.as_bytes());
    assert!(!String::from_utf8_lossy(&once).contains("20K98cHZ"));
    assert_eq!(
        String::from_utf8_lossy(&redact(&once)),
        String::from_utf8_lossy(&once)
    );
}

/// Found with `PROPTEST_CASES=20000` (issue 26): lines held as a possible private-key body
/// (`Name: value` reads as an armor header) and then let go were read without the state they
/// change, so the `kind: ConfigMap` they held kept deciding a `data` section after the line
/// that ended its mapping; once the token became a marker the lines were not held and the
/// section was redacted on the second pass. Held lines are now read like any others.
#[test]
fn lines_held_as_a_key_block_and_let_go_are_read_like_any_lines() {
    let held = "-----BEGIN PRIVATE KEY-----\nxoxb-580239624394-0846479657378-20K98cHZ3hvlzZj5YK7QUOsicredentialsId: 'ff083f76-7804-4ef1-80e4-fe975bb9141b'\n  kind: ConfigMap\nexport X=1\n  \"data\": {\n    \"k\": \"dmFsdWUxMjM0\"\n  },\n";
    let once = chunked_at_every_size(held);
    assert!(!once.contains("20K98cHZ"), "{once}");
    // `export X=1` ends the ConfigMap's mapping: the next `data` is undecided, by shape.
    assert!(
        once.contains("\"k\": \"[REDACTED:kubernetes-secret-data]\""),
        "{once}"
    );
    assert_eq!(redact(once.as_bytes()), once.as_bytes());
    // The same lines with no opening line before them read the same way.
    let plain = held.replace("-----BEGIN PRIVATE KEY-----\n", "");
    let plain_out = chunked_at_every_size(&plain);
    assert_eq!(format!("-----BEGIN PRIVATE KEY-----\n{plain_out}"), once);
}

/// Issue 26: a `data:` section whose mapping never names its kind is redacted by value shape:
/// base64 and token-like values go, plain settings stay.
#[test]
fn an_undecided_data_section_is_redacted_by_value_shape() {
    let input = "$ kubectl get cm,secret -o yaml | grep -A4 data:\ndata:\n  LOG_LEVEL: debug\n  API_URL: https://api.internal.test/v1\n  replicas: \"3\"\n  password: WnE4THIzVng2Tm0xS3A0VHc=\n  token: Zq8Lr3Vx6Nm1Kp4Tw7Yb2Hc5\n--\n";
    let out = chunked_at_every_size(input);
    assert_eq!(
        out,
        "$ kubectl get cm,secret -o yaml | grep -A4 data:\ndata:\n  LOG_LEVEL: debug\n  API_URL: https://api.internal.test/v1\n  replicas: \"3\"\n  password: [REDACTED:kubernetes-secret-data]\n  token: [REDACTED:kubernetes-secret-data]\n--\n"
    );
}

#[test]
fn regression_fuzz_second_pass_found_a_url_credential() {
    let input: &[u8] = b"p`s\x01passwo_TOmapfile KEN=es://user:s3cr3tP4ses://user:s3cs$@res://user:\x00\x00\x00user]:s3cr3tP4\x1css@db:503";
    let once = shellgate::redact::redact(input);
    assert_eq!(shellgate::redact::redact(&once), once, "not idempotent");
    assert_eq!(
        once.windows(b"[REDACTED:url-credentials]".len())
            .filter(|w| w == b"[REDACTED:url-credentials]")
            .count(),
        2
    );
}

// ---- Keywords cover the regex: the prefilter can never hide a match ------------------------

mod keyword_coverage {
    use regex_syntax::hir::{Class, Hir, HirKind};
    use std::collections::BTreeSet;

    /// Most strings an exact expansion may hold.
    const MAX_SET: usize = 4096;

    /// The finite language of `h`, when it is small (classes of at most 16 members, bounded
    /// repetitions of at most 3).
    fn exact(h: &Hir) -> Option<BTreeSet<Vec<u8>>> {
        let one = |v: Vec<u8>| Some(BTreeSet::from([v]));
        match h.kind() {
            HirKind::Empty | HirKind::Look(_) => one(Vec::new()),
            HirKind::Literal(l) => one(l.0.to_vec()),
            HirKind::Class(Class::Bytes(c)) => {
                let bytes: Vec<u8> = c
                    .iter()
                    .flat_map(|r| r.start()..=r.end())
                    .take(17)
                    .collect();
                (bytes.len() <= 16).then(|| bytes.into_iter().map(|b| vec![b]).collect())
            }
            HirKind::Class(Class::Unicode(c)) => {
                let chars: Vec<char> = c
                    .iter()
                    .flat_map(|r| r.start()..=r.end())
                    .take(17)
                    .collect();
                (chars.len() <= 16).then(|| {
                    chars
                        .into_iter()
                        .map(|ch| ch.to_string().into_bytes())
                        .collect()
                })
            }
            HirKind::Capture(c) => exact(&c.sub),
            HirKind::Concat(xs) => {
                let mut acc = BTreeSet::from([Vec::new()]);
                for x in xs {
                    acc = product(&acc, &exact(x)?)?;
                }
                Some(acc)
            }
            HirKind::Alternation(xs) => {
                let mut acc = BTreeSet::new();
                for x in xs {
                    acc.extend(exact(x)?);
                    if acc.len() > MAX_SET {
                        return None;
                    }
                }
                Some(acc)
            }
            HirKind::Repetition(r) => {
                let max = r.max.filter(|&m| m <= 3)?;
                let sub = exact(&r.sub)?;
                let mut acc = BTreeSet::new();
                let mut power = BTreeSet::from([Vec::new()]);
                for k in 0..=max {
                    if k >= r.min {
                        acc.extend(power.iter().cloned());
                    }
                    power = product(&power, &sub)?;
                }
                Some(acc)
            }
        }
    }

    fn product(a: &BTreeSet<Vec<u8>>, b: &BTreeSet<Vec<u8>>) -> Option<BTreeSet<Vec<u8>>> {
        if a.len() * b.len() > MAX_SET {
            return None;
        }
        Some(
            a.iter()
                .flat_map(|x| b.iter().map(move |y| [&x[..], &y[..]].concat()))
                .collect(),
        )
    }

    fn holds_keyword(s: &[u8], keywords: &[String]) -> bool {
        keywords
            .iter()
            .any(|k| s.windows(k.len()).any(|w| w == k.as_bytes()))
    }

    /// Whether every match of `h` contains one of `keywords`: a string of a small finite part
    /// of the pattern that every match contains (a run of concatenated pieces) always holds
    /// one, or each branch of an alternation is covered.
    pub fn covered(h: &Hir, keywords: &[String]) -> bool {
        if let Some(e) = exact(h) {
            return e.iter().all(|s| holds_keyword(s, keywords));
        }
        match h.kind() {
            HirKind::Capture(c) => covered(&c.sub, keywords),
            HirKind::Repetition(r) => r.min >= 1 && covered(&r.sub, keywords),
            HirKind::Alternation(xs) => xs.iter().all(|x| covered(x, keywords)),
            HirKind::Concat(xs) => {
                if xs.iter().any(|x| covered(x, keywords)) {
                    return true;
                }
                // Runs of consecutive pieces with a small exact language, expanded together
                // (a keyword may straddle pieces: `[Tt]oken`), from every start.
                for start in 0..xs.len() {
                    let mut acc = BTreeSet::from([Vec::new()]);
                    for x in &xs[start..] {
                        // A piece without a small language ends the run, with what every
                        // match of it starts with.
                        let (piece, last) = match exact(x) {
                            Some(e) => (e, false),
                            None => (prefixes(x), true),
                        };
                        let Some(next) = product(&acc, &piece) else {
                            break;
                        };
                        acc = next;
                        if acc.iter().all(|s| holds_keyword(s, keywords)) {
                            return true;
                        }
                        if last {
                            break;
                        }
                    }
                }
                false
            }
            _ => false,
        }
    }

    /// A set of strings every match of `h` starts with one of (`{""}` when nothing is known).
    fn prefixes(h: &Hir) -> BTreeSet<Vec<u8>> {
        let nothing = || BTreeSet::from([Vec::new()]);
        if let Some(e) = exact(h) {
            return e;
        }
        match h.kind() {
            HirKind::Capture(c) => prefixes(&c.sub),
            HirKind::Repetition(r) if r.min >= 1 => prefixes(&r.sub),
            HirKind::Alternation(xs) => {
                let mut acc = BTreeSet::new();
                for x in xs {
                    acc.extend(prefixes(x));
                }
                if acc.len() > MAX_SET {
                    nothing()
                } else {
                    acc
                }
            }
            HirKind::Concat(xs) => {
                let mut acc = nothing();
                for x in xs {
                    let (piece, last) = match exact(x) {
                        Some(e) => (e, false),
                        None => (prefixes(x), true),
                    };
                    match product(&acc, &piece) {
                        Some(next) => acc = next,
                        None => break,
                    }
                    if last {
                        break;
                    }
                }
                acc
            }
            _ => nothing(),
        }
    }

    pub fn parse(pattern: &str) -> Hir {
        regex_syntax::ParserBuilder::new()
            .unicode(false)
            .utf8(false)
            .build()
            .parse(pattern)
            .unwrap_or_else(|e| panic!("{pattern}: {e}"))
    }
}

#[test]
fn every_match_of_every_rule_holds_one_of_its_keywords() {
    let mut failures = Vec::new();
    for def in RuleSet::builtin_defs() {
        // A section rule's keywords select its header line, not the regex's lines.
        let (pattern, what) = match &def.section {
            Some(header) => (header.clone(), "section header"),
            None => (def.regex.clone(), "regex"),
        };
        let hir = keyword_coverage::parse(&pattern);
        if !keyword_coverage::covered(&hir, &def.keywords) {
            failures.push(format!(
                "{}: a match of its {what} can lack all of {:?}",
                def.id, def.keywords
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_coverage_check_catches_a_missing_casing() {
    let hir = keyword_coverage::parse(r"(?:[Ss]ecret|[Tt]oken)\s*=\s*(\w+)");
    let kws = |k: &[&str]| k.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(!keyword_coverage::covered(&hir, &kws(&["ecret", "token"])));
    assert!(keyword_coverage::covered(&hir, &kws(&["ecret", "oken"])));
    assert!(keyword_coverage::covered(
        &hir,
        &kws(&["ecret", "token", "Token"])
    ));
    let hir = keyword_coverage::parse(r"\b((?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b");
    assert!(!keyword_coverage::covered(&hir, &kws(&["AKIA", "ASIA"])));
    assert!(keyword_coverage::covered(
        &hir,
        &kws(&["AKIA", "ASIA", "ABIA", "ACCA"])
    ));
}

// ---- False positives: harmless text stays ------------------------------------------------

#[test]
fn placeholders_references_and_names_are_not_secrets() {
    let cases = [
        // Placeholders.
        "curl -u user:pass https://httpbin.org/basic-auth/user/pass",
        "postgres://user:pass@localhost:5432/db",
        "SLACK_BOT_TOKEN=xoxb-my-bot-token",
        "slack_token: xoxb-your-slack-bot-token-here",
        "auth_token = \"my-auth-token-value\"",
        "token: xxx",
        "GITHUB_TOKEN=ghp_xxx",
        "api_key: <API_KEY>",
        "OPENAI_API_KEY=sk-<your key here>",
        "Authorization: Token <your-token>",
        "token: ghp_abc...xyz",
        // Variable references and code that fetches the value.
        "password = os.environ[\"DB_PASSWORD\"]",
        "db_password = os.getenv('DB_PASSWORD')",
        "secret_key = os.environ['SECRET_KEY']",
        "api_key = settings.OPENAI_API_KEY",
        "password: ${DB_PASSWORD}",
        "TOKEN=$GITHUB_TOKEN",
        "export AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-}",
        "mysql -u root -p$MYSQL_PWD app",
        "client_secret: \"{{ .Values.clientSecret }}\"",
        // Names and paths of secrets, not secrets.
        "secret_name = \"prod/db/credentials\"",
        "SECRET_ARN=arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db/credentials-AbCdEf",
        "\"SecretId\": \"arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-Xy12Zq\"",
        "  secretRef: app-secrets/database-url",
    ];
    let mut changed = Vec::new();
    for c in cases {
        let line = format!("{c}\n");
        let out = redact(line.as_bytes());
        if out != line.as_bytes() {
            changed.push(format!("{c:?} -> {:?}", String::from_utf8_lossy(&out)));
        }
    }
    assert!(changed.is_empty(), "changed:\n{}", changed.join("\n"));
}

#[test]
fn real_values_next_to_those_shapes_are_still_redacted() {
    for (line, rule) in [
        (
            "curl -u deploy:Zq8Lr3Vx6Nm1Kp4T https://ci.internal.test/",
            "curl-user-credentials",
        ),
        (
            "SLACK_BOT_TOKEN=xoxb-580239624394-0846479657378-20K98cHZ3hvlzZj5YK7QUOsi",
            "slack-token",
        ),
        ("password = \"Wq7Zr2Lx9Kp4Tn\"", "password-assignment"),
        (
            "secret_value = \"Zq8Lr3Vx6Nm1Kp4TwY7b2Hc5\"",
            "secret-assignment",
        ),
        ("accessToken=Zq8Lr3Vx6Nm1Kp4Tw7Yb2Hc5", "secret-assignment"),
    ] {
        let (out, stats) = RuleSet::builtin().redact(format!("{line}\n").as_bytes());
        assert_eq!(
            stats.get(rule),
            1,
            "{line} -> {}",
            String::from_utf8_lossy(&out)
        );
    }
}

fn chunked_at_every_size(input: &str) -> String {
    let whole = String::from_utf8(redact(input.as_bytes())).unwrap();
    for size in [1, 3, 17, 4096] {
        let mut r = Redactor::new(RuleSet::builtin());
        let mut o = Vec::new();
        for c in input.as_bytes().chunks(size) {
            r.feed(c, &mut o);
        }
        r.finish(&mut o);
        assert_eq!(String::from_utf8_lossy(&o), whole, "chunks of {size}");
    }
    whole
}

#[test]
fn kubernetes_data_is_redacted_only_inside_a_secret() {
    // kubectl's key order: data before kind.
    let config_map = "apiVersion: v1\ndata:\n  LOG_LEVEL: debug\n  SENTRY_DSN_HASH: Zq8Lr3Vx6Nm1Kp4T\nkind: ConfigMap\nmetadata:\n  name: app\n";
    assert_eq!(chunked_at_every_size(config_map), config_map);
    let secret = config_map.replace("ConfigMap", "Secret");
    let out = chunked_at_every_size(&secret);
    assert!(
        out.contains("LOG_LEVEL: [REDACTED:kubernetes-secret-data]"),
        "{out}"
    );
    assert!(!out.contains("Zq8Lr3Vx6Nm1Kp4T"), "{out}");
    // Hand-written order: kind first.
    let manifest =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  LOG_LEVEL: debug\n";
    assert_eq!(chunked_at_every_size(manifest), manifest);
    let out = chunked_at_every_size(&manifest.replace("ConfigMap", "Secret"));
    assert!(
        out.contains("LOG_LEVEL: [REDACTED:kubernetes-secret-data]"),
        "{out}"
    );
    // Two documents: the second's kind is its own.
    let two = format!(
        "{}---\n{config_map}",
        manifest.replace("ConfigMap", "Secret")
    );
    let out = chunked_at_every_size(&two);
    assert_eq!(
        out.matches("[REDACTED:kubernetes-secret-data]").count(),
        1,
        "{out}"
    );
    assert!(out.ends_with(config_map), "{out}");
    // A list of both (kubectl get -o yaml).
    let list = "items:\n- apiVersion: v1\n  data:\n    tls.key: Zq8Lr3Vx6Nm1Kp4T\n  kind: Secret\n- apiVersion: v1\n  data:\n    LOG_LEVEL: debug\n  kind: ConfigMap\n";
    let out = chunked_at_every_size(list);
    assert!(
        out.contains("tls.key: [REDACTED:kubernetes-secret-data]"),
        "{out}"
    );
    assert!(out.contains("LOG_LEVEL: debug"), "{out}");
    // Cut before its kind (head, grep): unknown, so redacted (fail closed).
    let cut = "apiVersion: v1\ndata:\n  password: Zq8Lr3Vx6Nm1Kp4T\n";
    let out = chunked_at_every_size(cut);
    assert!(!out.contains("Zq8Lr3Vx6Nm1Kp4T"), "{out}");
    // JSON.
    let json = "{\n    \"data\": {\n        \"LOG_LEVEL\": \"debug\"\n    },\n    \"kind\": \"ConfigMap\"\n}\n";
    assert_eq!(chunked_at_every_size(json), json);
    let out = chunked_at_every_size(&json.replace("ConfigMap", "Secret"));
    assert!(out.contains("[REDACTED:kubernetes-secret-data]"), "{out}");
}

#[test]
fn a_held_section_is_bounded() {
    // A huge data: mapping with no kind is held only up to the block bound, then redacted.
    let mut text = String::from("data:\n");
    for i in 0..5000 {
        text.push_str(&format!("  key{i}: Zq8Lr3Vx6Nm1Kp4T{i}\n"));
    }
    text.push_str("kind: ConfigMap\n");
    let out = chunked_at_every_size(&text);
    assert!(
        !out.contains("key1: Zq8Lr3Vx6Nm1Kp4T1\n"),
        "held past the bound"
    );
}

// ---- Recall and false positives per format family (tests/data/recall.tmpl) ---------------

const RECALL: &str = include_str!("data/recall.tmpl");

/// Per family: (positives, caught, negatives, changed, misses not marked `+?`).
fn recall_figures() -> Vec<(String, usize, usize, usize, usize, Vec<String>)> {
    let mut families: Vec<(String, usize, usize, usize, usize, Vec<String>)> = Vec::new();
    for raw in RECALL.lines() {
        if let Some(name) = raw.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            families.push((name.to_string(), 0, 0, 0, 0, Vec::new()));
            continue;
        }
        let Some(f) = families.last_mut() else {
            continue;
        };
        let (positive, known_miss, template) = if let Some(t) = raw.strip_prefix("+?") {
            (true, true, t)
        } else if let Some(t) = raw.strip_prefix("+ ") {
            (true, false, t)
        } else if let Some(t) = raw.strip_prefix("- ") {
            (false, false, t)
        } else {
            continue;
        };
        let template = format!("{}\n", template.replace("\\n", "\n"));
        for seed in [7, 8, 9] {
            let (input, _, secrets) = expand(&template, seed);
            let out = String::from_utf8_lossy(&redact(input.as_bytes())).into_owned();
            if positive {
                f.1 += 1;
                if secrets.iter().all(|s| !out.contains(s.as_str())) {
                    f.2 += 1;
                } else if !known_miss {
                    f.5.push(format!("missed: {input:?} -> {out:?}"));
                }
            } else {
                f.3 += 1;
                if out != input {
                    f.4 += 1;
                    f.5.push(format!("changed: {input:?} -> {out:?}"));
                }
            }
        }
    }
    families
}

#[test]
fn recall_and_false_positives_per_family() {
    let figures = recall_figures();
    let (mut p, mut c, mut n, mut x) = (0, 0, 0, 0);
    let mut problems = Vec::new();
    eprintln!("family              recall          false positives");
    for (name, pos, caught, neg, changed, probs) in &figures {
        eprintln!(
            "{name:<18}  {caught:>3}/{pos:<3} {:>5.1}%   {changed:>2}/{neg:<3} {:>5.1}%",
            100.0 * *caught as f64 / (*pos).max(1) as f64,
            100.0 * *changed as f64 / (*neg).max(1) as f64
        );
        (p, c, n, x) = (p + pos, c + caught, n + neg, x + changed);
        problems.extend(probs.iter().cloned());
    }
    eprintln!(
        "all                 {c:>3}/{p:<3} {:>5.1}%   {x:>2}/{n:<3} {:>5.1}%",
        100.0 * c as f64 / p as f64,
        100.0 * x as f64 / n as f64
    );
    assert!(
        figures.len() >= 10 && p >= 350 && n >= 150,
        "corpus too small: {p} / {n}"
    );
    // Every positive not marked as a known miss is caught, and no negative changes.
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---- A secret scanner's rule tests, held out (tests/data/scanner.tmpl) -------------------

const SCANNER: &str = include_str!("data/scanner.tmpl");

/// Whether any part of a planted secret is still in `out`: any 8-byte window of it (a secret
/// cut short by a marker still leaks its tail), or the whole of a shorter one.
fn leaks(out: &str, secret: &str) -> bool {
    let b = secret.as_bytes();
    if b.len() < 4 {
        return false;
    }
    if b.len() <= 8 {
        return out.contains(secret);
    }
    b.windows(8)
        .any(|w| memchr::memmem::find(out.as_bytes(), w).is_some())
}

/// Per family of the scanner: hand-written (samples, caught), generated (samples, caught),
/// benign (samples, changed), and the failures.
#[derive(Default)]
struct ScannerFigures {
    hand: (usize, usize),
    generated: (usize, usize),
    benign: (usize, usize),
    failures: Vec<String>,
}

fn scanner_figures() -> Vec<(String, ScannerFigures)> {
    let forms: Vec<String> = SCANNER
        .lines()
        .filter_map(|l| l.strip_prefix("@form "))
        .map(|f| f.replace("\\n", "\n"))
        .collect();
    assert_eq!(forms.len(), 25, "the 25 sample forms");
    let mut families: Vec<(String, ScannerFigures)> = Vec::new();
    let set = RuleSet::builtin();
    let check = |f: &mut ScannerFigures, template: &str, seed: u64, kind: char| {
        let (input, _, secrets) = expand(template, seed);
        let out = String::from_utf8_lossy(&set.redact(input.as_bytes()).0).into_owned();
        match kind {
            '-' => {
                f.benign.0 += 1;
                if out != input {
                    f.benign.1 += 1;
                    f.failures.push(format!("changed: {input:?} -> {out:?}"));
                }
            }
            _ => {
                // A hand-written sample's slots also stand for names and ids around the secret
                // (a sample's runs with digits were all replaced): there only the long ones,
                // the secrets, count.
                let min = if kind == '+' { 12 } else { 0 };
                let caught = !secrets.iter().any(|s| s.len() >= min && leaks(&out, s));
                let slot = if kind == '+' {
                    &mut f.hand
                } else {
                    &mut f.generated
                };
                slot.0 += 1;
                if caught {
                    slot.1 += 1;
                } else {
                    f.failures
                        .push(format!("missed ({kind}): {input:?} -> {out:?}"));
                }
            }
        }
    };
    for raw in SCANNER.lines() {
        if let Some(name) = raw.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            families.push((name.to_string(), ScannerFigures::default()));
            continue;
        }
        let Some((_, f)) = families.last_mut() else {
            continue;
        };
        if let Some(t) = raw.strip_prefix("+ ").or_else(|| raw.strip_prefix("- ")) {
            let kind = raw.as_bytes()[0] as char;
            let template = format!("{}\n", t.replace("\\n", "\n"));
            for seed in [7, 8, 9] {
                check(f, &template, seed, kind);
            }
        } else if let Some(t) = raw.strip_prefix("* ") {
            let (id, shape) = t.split_once(' ').expect("`* id shape`");
            let upper: String = id
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() {
                        c.to_ascii_uppercase()
                    } else {
                        '_'
                    }
                })
                .collect();
            for (i, form) in forms.iter().enumerate() {
                let template = format!(
                    "{}\n",
                    form.replace("{i}", id)
                        .replace("{I}", &upper)
                        .replace("{s}", shape)
                );
                for seed in [0, 1, 2] {
                    check(f, &template, 100 * seed + i as u64, '*');
                }
            }
        }
    }
    families
}

fn pct(a: usize, b: usize) -> f64 {
    100.0 * a as f64 / b.max(1) as f64
}

/// The measure of issue 26: recall on the scanner's hand-written and generated samples, and
/// what its benign samples lose. Prints one row per family (`-- --nocapture` to see it) and
/// holds the pack to the figures it reached, so that a change that loses recall fails here.
#[test]
fn scanner_rule_tests_recall_and_false_positives() {
    let figures = scanner_figures();
    let mut all = ScannerFigures::default();
    eprintln!("family                 hand-written       generated          benign changed");
    for (name, f) in &figures {
        eprintln!(
            "{name:<20} {:>4}/{:<4} {:>5.1}%  {:>5}/{:<5} {:>5.1}%  {:>3}/{:<3} {:>5.1}%",
            f.hand.1,
            f.hand.0,
            pct(f.hand.1, f.hand.0),
            f.generated.1,
            f.generated.0,
            pct(f.generated.1, f.generated.0),
            f.benign.1,
            f.benign.0,
            pct(f.benign.1, f.benign.0)
        );
        all.hand = (all.hand.0 + f.hand.0, all.hand.1 + f.hand.1);
        all.generated = (
            all.generated.0 + f.generated.0,
            all.generated.1 + f.generated.1,
        );
        all.benign = (all.benign.0 + f.benign.0, all.benign.1 + f.benign.1);
        all.failures.extend(f.failures.iter().cloned());
    }
    eprintln!(
        "all                  {:>4}/{:<4} {:>5.1}%  {:>5}/{:<5} {:>5.1}%  {:>3}/{:<3} {:>5.1}%",
        all.hand.1,
        all.hand.0,
        pct(all.hand.1, all.hand.0),
        all.generated.1,
        all.generated.0,
        pct(all.generated.1, all.generated.0),
        all.benign.1,
        all.benign.0,
        pct(all.benign.1, all.benign.0)
    );
    if std::env::var_os("SCANNER_FAILURES").is_some() {
        for f in &all.failures {
            eprintln!("{f}");
        }
    }
    let (hand, generated, benign) = (
        pct(all.hand.1, all.hand.0),
        pct(all.generated.1, all.generated.0),
        pct(all.benign.1, all.benign.0),
    );
    assert!(all.hand.0 >= 600 && all.generated.0 >= 10_000 && all.benign.0 >= 600);
    assert!(
        hand >= HAND_FLOOR && generated >= GENERATED_FLOOR && benign <= BENIGN_CEILING,
        "hand-written {hand:.1}% (floor {HAND_FLOOR}), generated {generated:.1}% (floor \
         {GENERATED_FLOOR}), benign changed {benign:.1}% (ceiling {BENIGN_CEILING}); \
         SCANNER_FAILURES=1 lists the failures"
    );
}

/// What the pack reached on the scanner measure; a change may raise these, never lower them.
const HAND_FLOOR: f64 = 95.0;
const GENERATED_FLOOR: f64 = 99.5;
const BENIGN_CEILING: f64 = 1.0;

/// Real command output with no secret in it (`cargo build -v`, `git log -p` and `git log
/// --stat` of this repository, a `package-lock.json`, `kubectl get -o yaml` of non-secret
/// kinds): not one byte may change, whole or chunked.
#[test]
fn real_command_output_without_secrets_is_untouched() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/benign");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).expect("tests/data/benign") {
        let path = entry.expect("entry").path();
        let input = std::fs::read(&path).expect("readable");
        let (out, stats) = RuleSet::builtin().redact(&input);
        assert!(
            out == input,
            "{}: changed ({:?})",
            path.display(),
            stats.iter().collect::<Vec<_>>()
        );
        assert_eq!(
            chunked(&input, &[4096, 1, 777]),
            input,
            "{}",
            path.display()
        );
        files += 1;
    }
    assert!(files >= 5, "only {files} corpora");
}
