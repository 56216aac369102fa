//! The environment is a secret store (issue 22, item 7): expanding a variable the command did
//! not set, or printing the environment, is a read checked against `[env] read`, under both
//! shipped policies. Ordinary reads of harmless variables keep working.

use std::sync::OnceLock;

use shellgate::{Context, Policy, Verdict};

fn shipped() -> &'static [Policy; 2] {
    static P: OnceLock<[Policy; 2]> = OnceLock::new();
    P.get_or_init(|| {
        [
            Policy::shipped("read-only").expect("shipped"),
            Policy::shipped("developer").expect("shipped"),
        ]
    })
}

fn codes(policy: &Policy, cmd: &str) -> (Verdict, Vec<&'static str>) {
    let d = policy.evaluate(&Context::example(), cmd);
    (d.verdict, d.reasons.iter().map(|r| r.code).collect())
}

/// Reads of credentials and dumps of the environment: each refused with `env-read` under
/// both policies (whatever else refuses them too).
const HOSTILE: &[&str] = &[
    "echo $AWS_SECRET_ACCESS_KEY",
    "echo ${GITHUB_TOKEN}",
    "echo \"$OPENAI_API_KEY\"",
    "echo ${#ANTHROPIC_API_KEY}",
    "echo ${NPM_TOKEN:+set}",
    "echo ${DATABASE_URL:-none}",
    "echo \"${!AWS*}\"",
    "echo \"${!GITHUB@}\"",
    "echo $gh_token",
    "echo $http_proxy",
    "cat <<EOF\n$AWS_SECRET_ACCESS_KEY\nEOF",
    "grep -r \"$SOME_SECRET\" .",
    "echo $UNKNOWN_VARIABLE",
    "X=1 echo $AWS_SESSION_TOKEN",
    "(AWS_SECRET_ACCESS_KEY=1); echo $AWS_SECRET_ACCESS_KEY",
    "cat /proc/self/environ",
    "cat /proc/1/environ",
    "head -c 4096 /proc/self/environ",
    "cat < /proc/self/environ",
    "cat /proc/self/env*",
    "env",
    "printenv",
    "printenv AWS_SECRET_ACCESS_KEY",
    "declare -p",
    "declare -p GITHUB_TOKEN",
    "typeset -p",
    "export -p",
    "export",
    "declare",
    "set",
    "compgen -v",
    "compgen -e",
    "compgen -A variable",
];

#[test]
fn reads_of_credentials_and_environment_dumps_are_refused() {
    let mut bad = Vec::new();
    for policy in shipped() {
        for cmd in HOSTILE {
            let (v, c) = codes(policy, cmd);
            if v == Verdict::Allow || !c.contains(&"env-read") {
                bad.push(format!("{} {cmd:?} -> {v} {c:?}", policy.name));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// awk's ENVIRON is refused by the awk reader (any use of it), and a payload of `bash -c`
/// is read like any command.
#[test]
fn awk_environ_and_nested_payloads_are_refused() {
    let developer = &shipped()[1];
    for (cmd, code) in [
        ("awk 'BEGIN{print ENVIRON[\"X\"]}'", "awk-program"),
        ("awk 'BEGIN { for (k in ENVIRON) print k }'", "awk-program"),
        ("bash -c 'echo $AWS_SECRET_ACCESS_KEY'", "env-read"),
        ("sh -c 'printenv'", "env-read"),
        ("timeout 5 env", "env-read"),
        ("x=1 | echo $AWS_SECRET_ACCESS_KEY", "env-read"),
        ("echo $(GH_TOKEN=1) $GH_TOKEN", "env-read"),
        // jq is developer's (read-only refuses the program): its `env` and `$ENV` are reads.
        ("jq -n env", "env-read"),
        ("jq -n '$ENV'", "env-read"),
        ("jq -n '$ENV.X'", "env-read"),
        ("jq -n 'env.AWS_SECRET_ACCESS_KEY'", "env-read"),
        ("jq -n '$ENV | keys'", "env-read"),
        ("jq -r '.name' package.json | grep $NPM_TOKEN", "env-read"),
    ] {
        let (v, c) = codes(developer, cmd);
        assert!(
            v != Verdict::Allow && c.contains(&code),
            "{cmd:?} -> {v} {c:?}"
        );
    }
}

/// Harmless variables, bash's own, and the command's own variables are not refused.
#[test]
fn ordinary_reads_are_allowed() {
    let both = [
        "echo $HOME",
        "echo \"$PATH\"",
        "echo $USER $LANG $TERM $PWD",
        "echo $LC_ALL",
        "echo $? $# $$ \"$@\" $0 $1",
        "echo $RANDOM $LINENO $BASH_VERSION $SECONDS $PPID",
        "x=1; echo $x",
        "for f in a b; do echo \"$f\"; done",
        "for ((i=0;i<2;i++)); do echo $i; done",
        "name=world; echo \"hello ${name}\"",
        "echo \"${x:-default}\"",
        "echo $my_var",
        "echo \"$OLDPWD\" \"$TMPDIR\"",
    ];
    let developer_only = [
        "cd $HOME/..",
        "jq -n '$ENV.HOME'",
        "jq -n 'env.PATH'",
        "jq '.env.HOME' package.json",
        "echo $CARGO_HOME $VIRTUAL_ENV $CI",
        "export foo_dir=$PWD/x",
        "cargo tree 2>&1 | tail -5; echo \"exit: $?\"",
    ];
    let mut bad = Vec::new();
    for policy in shipped() {
        for cmd in both {
            let (v, c) = codes(policy, cmd);
            if c.contains(&"env-read") || v != Verdict::Allow {
                bad.push(format!("{} {cmd:?} -> {v} {c:?}", policy.name));
            }
        }
    }
    for cmd in developer_only {
        let (v, c) = codes(&shipped()[1], cmd);
        // `cd $HOME/..` leaves the workspace: refused as a path, never as an env read.
        if c.contains(&"env-read") || (v != Verdict::Allow && !cmd.starts_with("cd")) {
            bad.push(format!("developer {cmd:?} -> {v} {c:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// `[env] read` in a policy of one's own: names it lists are readable, `read_deny` wins (in
/// any case), and `read_default` decides the rest.
#[test]
fn read_rules_of_a_policy_file() {
    let src = r#"
[policy]
name = "reads"
default = "deny"
[env]
read = ["HOME", "APP_*"]
read_deny = ["*SECRET*"]
read_default = "ask"
[programs.echo]
operands = "text"
no_option_allowlist = "echo prints"
"#;
    let policy = Policy::from_toml(src, "reads.toml").expect("valid");
    let verdict = |cmd: &str| policy.evaluate(&Context::example(), cmd).verdict;
    assert_eq!(verdict("echo $HOME $APP_MODE"), Verdict::Allow);
    assert_eq!(verdict("echo $APP_SECRET"), Verdict::Deny);
    assert_eq!(verdict("echo $app_secret_x"), Verdict::Deny);
    assert_eq!(verdict("echo $OTHER"), Verdict::Ask);
    // A dump reads every name: a deny list makes it a denial.
    assert_eq!(verdict("echo ${!APP*}"), Verdict::Deny);
    // Contradiction is reported at load.
    let bad = src.replace("read_deny = [\"*SECRET*\"]", "read_deny = [\"HOME\"]");
    let err = Policy::from_toml(&bad, "reads.toml").expect_err("contradiction");
    assert!(
        err.diagnostics()
            .iter()
            .any(|d| d.code == "policy-contradiction"),
        "{err:?}"
    );
}
