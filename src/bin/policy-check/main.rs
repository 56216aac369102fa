//! `policy-check`: check commands against a shellgate policy, test policies, explain decisions.
//!
//! Exit codes: 0 every command allowed (or the policy's examples pass), 1 a command was denied
//! or needs approval (or an example failed), 2 a usage error or an unreadable/invalid policy.

#[cfg(feature = "mcp")]
mod mcp;
mod sandbox;
mod serve;

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use error::CliError;
use shellgate::{report, Context, Decision, Policy, Verdict};

mod approve;
mod error;
mod hook_doctor;
mod hook_tools;
mod hooks;
mod init;
mod lint;
mod migrate;
mod oracle;
mod output;
mod scripts;
mod undo;

#[derive(Parser)]
#[command(
    name = "policy-check",
    version,
    about = "Check bash commands against a shellgate policy",
    long_about = "Check the bash commands an AI agent wants to run against a shellgate policy \
(TOML, default deny): from the command line, from shell scripts in CI, or as a pre-tool hook \
of Claude Code, Codex or Gemini CLI. Also lints and tests policy files.",
    after_help = AFTER_HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

const AFTER_HELP: &str = "\
Examples:
  policy-check check --policy read-only 'ls -la' 'cat data.txt|grep x'
  policy-check check --policy policy.toml --script scripts/*.sh --format sarif > shellgate.sarif
  policy-check explain --policy developer 'git push --force'
  policy-check lint --policy policy.toml
  policy-check init --base developer --output shellgate.toml
  policy-check hook claude-code --policy shellgate.toml < payload.json

Exit codes: 0 allowed / clean, 1 denied / findings, 2 usage error or unreadable input.";

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    /// For people: carets under the part of the command each reason is about.
    Text,
    /// One JSON object per command (or per lint finding), one per line.
    Json,
    /// One SARIF 2.1.0 log, for code scanning (GitHub upload-sarif).
    Sarif,
}

/// `explain --format`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ExplainFormat {
    /// For people: the reasons with carets, then one line per part and its rule.
    Text,
    /// One JSON object: the command, the decision, its reasons and its `trace`.
    Json,
}

impl Format {
    fn out(self) -> scripts::Out {
        match self {
            Format::Text => scripts::Out::Text,
            Format::Json => scripts::Out::Json,
            Format::Sarif => scripts::Out::Sarif,
        }
    }
}

#[derive(clap::Args)]
struct PolicyArgs {
    /// A policy file, or a shipped policy name (`read-only`, `developer`). Default: read-only.
    #[arg(long, short = 'p')]
    policy: Option<String>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Check commands: given as arguments, or as lines on stdin (plain text, a JSON string, or
    /// an object with a "command" string). Exit 0 if all are allowed, 1 if any is denied or asks.
    Check {
        #[command(flatten)]
        policy: PolicyArgs,
        /// Workspace root and working directory for path rules (default: current directory).
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// Shell scripts to check: each top-level command is one decision, reported at its
        /// file:line:col. Repeatable.
        #[arg(long = "script", value_name = "PATH", num_args = 1..)]
        scripts: Vec<PathBuf>,
        /// The COMMAND arguments are shell script files, like --script (for pre-commit,
        /// which appends file names).
        #[arg(long)]
        files: bool,
        /// Decide as serve and run do under an enforcing kernel sandbox: the rules of
        /// `[sandbox.programs]` apply (without it they are refused with `sandbox-required`).
        #[arg(long)]
        sandboxed: bool,
        /// Commands to check (each one argument). Without any (and no --script), read JSON
        /// lines from stdin.
        #[arg(last = false, trailing_var_arg = true, allow_hyphen_values = true)]
        commands: Vec<String>,
    },
    /// Lint policy files: every load error and warnings about dangerous or dead rules, each
    /// with file:line:col and a stable code. Exit 0 clean, 1 findings, 2 unreadable.
    Lint {
        /// Policy files (or shipped names). Repeatable.
        #[arg(long, short = 'p', value_name = "FILE", num_args = 1..)]
        policy: Vec<String>,
        /// More policy files (as pre-commit passes them).
        #[arg(value_name = "FILE", required_unless_present = "policy")]
        files: Vec<String>,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Act as a pre-tool hook of a coding agent: read its hook payload on stdin, answer
    /// allow / ask / deny in its format. Fails closed (exit 2, reason on stderr).
    Hook {
        /// The agent whose hook format to speak.
        #[arg(value_enum)]
        agent: hooks::Agent,
        #[command(flatten)]
        policy: PolicyArgs,
        /// Workspace root for path rules (default: the agent's project directory:
        /// $CLAUDE_PROJECT_DIR, $GEMINI_PROJECT_DIR, else the git work tree of the payload's
        /// `cwd`, else that `cwd`). A relative --policy is resolved against it.
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// On allow, print nothing, so that the agent's own permission rules decide
        /// (shellgate then only vetoes).
        #[arg(long)]
        defer_allow: bool,
        /// Print the agent's hook configuration for this policy (every tool the hook guards
        /// in its matcher) instead of answering a payload: paste it into the agent's settings.
        #[arg(long)]
        print_config: bool,
        /// Check the agent's installed hook configuration instead of answering a payload:
        /// every guarded tool in the matcher, the policy loads, the workspace pinned, and the
        /// agent will run the hook (Codex's trust, Claude Code from a subdirectory). Exit 1
        /// when a check fails.
        #[arg(long, conflicts_with = "print_config")]
        doctor: bool,
    },
    /// Print the JSON Schema of the policy format (for editors: taplo, Even Better TOML).
    Schema,
    /// Write a commented starter policy that includes a shipped one.
    Init {
        /// The shipped policy to start from.
        #[arg(long, value_enum, default_value = "read-only")]
        base: init::Base,
        /// Where to write it (default: stdout). Never replaces a file without --force.
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<PathBuf>,
        /// Replace an existing file.
        #[arg(long)]
        force: bool,
    },
    /// Rewrite policy files' old option lists (`allow_options`, `options_with_value`, ...) as
    /// `options` tables, one entry per option, keeping comments and order: in place
    /// (atomically), or to --output. Exit 0, or with --check 1 when a file would change.
    Migrate {
        /// Policy files to rewrite.
        #[arg(value_name = "FILE", required = true)]
        files: Vec<PathBuf>,
        /// Write the result here instead of over the file (one input file only).
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<PathBuf>,
        /// Write nothing; exit 1 when a file would change.
        #[arg(long)]
        check: bool,
        /// Write the spellings a program's own `--help` (`git SUB -h`) gives one option
        /// (`-a, --all`) as one entry, where the old lists treat them the same. Runs each
        /// program of the file with `--help` (no input, only PATH, HOME and rustup's variables
        /// of the environment, a scratch directory, 10 s at most).
        #[arg(long)]
        aliases_from_help: bool,
    },
    /// Print a shell completion script: `policy-check completions bash > /etc/bash_completion.d/policy-check`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Run a policy's [examples]; exit 1 if one fails.
    Test {
        #[command(flatten)]
        policy: PolicyArgs,
        /// More policy files to test (as pre-commit passes them).
        #[arg(value_name = "FILE")]
        files: Vec<String>,
    },
    /// Explain the decision for one command: carets under each reason, then the rule that
    /// decided each part (allowed parts too).
    Explain {
        #[command(flatten)]
        policy: PolicyArgs,
        /// Workspace root and working directory for path rules (default: current directory).
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Text for people, or one JSON object with the reasons and the `trace`.
        #[arg(long, value_enum, default_value_t = ExplainFormat::Text)]
        format: ExplainFormat,
        /// The command.
        command: String,
    },
    /// Redact credentials from stdin to stdout (exit 0).
    Redact {
        /// A policy file; only its `[redact]` table is read.
        #[arg(long)]
        policy: Option<PathBuf>,
        /// A standalone redaction rules file.
        #[arg(long)]
        rules: Option<PathBuf>,
        /// Print a count per rule on stderr.
        #[arg(long)]
        stats: bool,
    },
    /// Truncate stdin to a byte and line budget, keeping head and (more) tail.
    Truncate {
        /// Byte budget (default 30000).
        #[arg(long)]
        max_bytes: Option<usize>,
        /// Line budget (default 400).
        #[arg(long)]
        max_lines: Option<usize>,
    },
    /// Run one command through the policy in a bash session: its output on stdout. Exit 0 if
    /// it ran and exited 0, 1 if the policy refused it, 3 if it ran and failed.
    Run {
        #[command(flatten)]
        policy: PolicyArgs,
        /// Workspace root and the session's starting directory (default: current directory).
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Seconds the command may run before the session is killed.
        #[arg(long, default_value = "30", value_parser = parse_secs)]
        timeout: std::time::Duration,
        #[command(flatten)]
        session: serve::SessionArgs,
        /// The command: one argument (`run 'ls -la'`, as with `sh -c`) or the words after `--`
        /// (`run -- ls -la`); several words are joined with spaces. Everything after the first
        /// word belongs to the command, so options of `run` come before it.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
    /// Serve the bash tool (and with --tools the text editor and code execution shapes):
    /// tool_use blocks (or whole assistant messages) as JSON lines on stdin, one answer line
    /// each on stdout, one bash session kept across lines.
    Serve {
        #[command(flatten)]
        policy: PolicyArgs,
        /// Workspace root and the session's starting directory (default: current directory).
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Seconds one command may run before the session is killed and restarted.
        #[arg(long, default_value = "30", value_parser = parse_secs)]
        timeout: std::time::Duration,
        /// Append an audit record (JSON lines) for each call to this file.
        #[arg(long)]
        audit: Option<PathBuf>,
        /// Who decides commands the policy marks `ask`: refuse them, allow them, or send an
        /// `approval_request` line and wait for the `approval_response` line (docs/serve.md).
        #[arg(long, value_enum, default_value = "deny")]
        ask: approve::Ask,
        /// With `--ask prompt`: seconds to wait for an answer before refusing.
        #[arg(long, default_value = "300", value_parser = parse_secs)]
        ask_timeout: std::time::Duration,
        #[command(flatten)]
        session: serve::SessionArgs,
        /// At end of input: `finish` answers every line already read (each under its
        /// timeout), then exits; `stop` ends a running command at once and answers lines not
        /// yet run with an error. A closed stdout (the client gone) always kills at once.
        #[arg(long, value_enum, default_value = "finish")]
        at_eof: serve::AtEof,
        #[command(flatten)]
        tools: serve::ToolArgs,
    },
    /// Serve the guarded bash tool and text editor tool to an MCP host over stdio (the host
    /// starts `policy-check mcp --policy P --cwd DIR`), or over Streamable HTTP on a local
    /// address (`--http 127.0.0.1:8931`): docs/serve.md.
    #[cfg(feature = "mcp")]
    Mcp {
        #[command(flatten)]
        policy: PolicyArgs,
        /// Workspace root and the session's starting directory (default: current directory).
        /// The client's roots may narrow it, never widen it.
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Seconds one command may run before the session is killed and restarted.
        #[arg(long, default_value = "30", value_parser = parse_secs)]
        timeout: std::time::Duration,
        /// Append an audit record (JSON lines) for each call to this file.
        #[arg(long)]
        audit: Option<PathBuf>,
        /// Who decides commands the policy marks `ask`: the user, through the client's MCP
        /// elicitation (refused when the client has none), or nobody (refused).
        #[arg(long, value_enum, default_value = "elicit")]
        ask: mcp::McpAsk,
        #[command(flatten)]
        session: serve::SessionArgs,
        #[command(flatten)]
        http: mcp::http::HttpArgs,
    },
    /// Restore the workspace to before the latest call that changed it (repeat to walk
    /// back), or with --to ID to before the call with that tool_use id. Undo is undoable
    /// (`--to undo-N`). Refused while a session (serve, run) uses the workspace.
    Undo {
        #[command(flatten)]
        policy: PolicyArgs,
        /// The workspace (default: current directory).
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Restore to before the call with this tool_use id (see `history`).
        #[arg(long, value_name = "ID")]
        to: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// List the workspace's snapshots: time, id, command (redacted) and the paths each call
    /// added (+), changed (~) and removed (-).
    History {
        #[command(flatten)]
        policy: PolicyArgs,
        /// The workspace (default: current directory).
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Output format (json: one object per snapshot, one per line).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Run a program inside the kernel sandbox (Landlock, limits, its own PID namespace),
    /// with rules from a policy: how serve and run start their shell.
    Sandbox(sandbox::SandboxArgs),
    /// Run the option-effect oracle on a policy's rules: each allowed option (and each value
    /// kind) of each program runs in the jail, in a scratch workspace with decoys beside it,
    /// under strace. Reports every option whose real effect (a program run, a read outside,
    /// a write, the network) exceeds its entry, at the rule's file:line:col. Exit 0 none,
    /// 1 findings, 2 error (no jail, no strace).
    Oracle {
        #[command(flatten)]
        policy: PolicyArgs,
        /// Try every value of every kind (a number, a path inside, a decoy, the decoy
        /// program), not only the first of each kind.
        #[arg(long)]
        full: bool,
        /// Output format (json: one object with the findings, counts and skipped rules).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// The programs to check (default: every program of the policy).
        programs: Vec<String>,
    },
    /// Draft an option table for a program from its --help and man page, each option typed
    /// by the option-effect oracle (in the jail): path-read or path-write values, denials
    /// for options that run programs, write, read outside or connect, and `review` notes
    /// (denied) where the oracle could not settle the effect. Review it before use.
    Draft {
        /// The program (a name on PATH).
        program: String,
        /// Where to write it (default: stdout), atomically. Never replaces a file without
        /// --force.
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<std::path::PathBuf>,
        /// Replace an existing file.
        #[arg(long)]
        force: bool,
        /// Output format (json: the draft as data).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
}

fn parse_secs(s: &str) -> Result<std::time::Duration, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => {
            Ok(std::time::Duration::from_secs_f64(v))
        }
        _ => Err(format!(
            "{s:?} is not a number of seconds between 0 and 86400"
        )),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(msg) => {
            eprintln!("policy-check: {msg}");
            ExitCode::from(2)
        }
    }
}

fn load(args: &PolicyArgs) -> Result<Policy, CliError> {
    let spec = match &args.policy {
        Some(p) => p.as_str(),
        None => {
            eprintln!("policy-check: no --policy given; using the shipped read-only policy");
            "read-only"
        }
    };
    Ok(load_cached(spec)?)
}

/// [`Policy::from_name_or_file`], through the user's cache of compiled policies when there
/// is one (`SHELLGATE_CACHE=off` skips it): the same policy, without parsing TOML again.
pub fn load_cached(spec: &str) -> Result<Policy, shellgate::PolicyError> {
    match shellgate::policy_cache::PolicyCache::from_env() {
        Some(cache) => cache.load(spec),
        None => Policy::from_name_or_file(spec),
    }
}

/// The policy, for its `[snapshots]` table: without --policy the defaults, said nowhere.
fn load_quiet(args: &PolicyArgs) -> Result<Policy, CliError> {
    Ok(Policy::from_name_or_file(
        args.policy.as_deref().unwrap_or("read-only"),
    )?)
}

fn context(cwd: Option<PathBuf>) -> Result<Context, CliError> {
    let dir = match cwd {
        Some(d) => d,
        None => std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    Ok(Context::new(dir))
}

fn run(cli: Cli) -> Result<u8, CliError> {
    match cli.command {
        Cmd::Check {
            policy,
            cwd,
            format,
            mut scripts,
            files,
            sandboxed,
            mut commands,
        } => {
            // Kept to the end of the process: freeing a policy's thousands of strings at exit
            // would cost more than checking a command (issue 29), and the OS frees it anyway.
            let policy: &'static Policy = Box::leak(Box::new(load(&policy)?));
            let mut ctx = context(cwd)?;
            if sandboxed {
                ctx.sandbox = shellgate::evaluate::SandboxState::Enforced;
            }
            if files {
                scripts.extend(commands.drain(..).map(PathBuf::from));
            }
            if format == Format::Sarif || !scripts.is_empty() {
                return scripts::check_cmd(policy, &ctx, format.out(), &commands, &scripts);
            }
            check(policy, &ctx, format, commands)
        }
        Cmd::Lint {
            mut policy,
            files,
            format,
        } => {
            policy.extend(files);
            lint::lint_cmd(&policy, format.out())
        }
        Cmd::Hook {
            agent,
            policy,
            workspace,
            defer_allow,
            print_config,
            doctor,
        } => {
            if doctor {
                let ws = match workspace {
                    Some(w) => w,
                    None => std::env::current_dir()
                        .map_err(|e| format!("cannot read the current directory: {e}"))?,
                };
                return Ok(hook_doctor::doctor(agent, &ws));
            }
            let spec = policy.policy.as_deref().unwrap_or("read-only");
            if print_config {
                println!(
                    "{}",
                    hooks::config_snippet(agent, spec, workspace.as_deref())?
                );
                return Ok(0);
            }
            Ok(hooks::hook_cmd(&hooks::HookOptions {
                agent,
                policy: spec,
                workspace,
                defer_allow,
            }))
        }
        Cmd::Schema => {
            print!("{}", shellgate::policy::schema::json_schema_text());
            Ok(0)
        }
        Cmd::Init {
            base,
            output,
            force,
        } => init::init(base, output.as_deref(), force),
        Cmd::Migrate {
            files,
            output,
            check,
            aliases_from_help,
        } => migrate::migrate_cmd(&files, output.as_deref(), check, aliases_from_help),
        Cmd::Completions { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "policy-check",
                &mut std::io::stdout(),
            );
            Ok(0)
        }
        Cmd::Test { policy, files } => {
            let mut specs: Vec<String> = policy.policy.into_iter().chain(files).collect();
            if specs.is_empty() {
                specs.push("read-only".into());
            }
            let mut code = 0;
            for spec in &specs {
                match test_one(spec) {
                    Ok(c) => code = code.max(c),
                    Err(e) if specs.len() == 1 => return Err(e),
                    Err(e) => {
                        eprintln!("policy-check: {e}");
                        code = 2;
                    }
                }
            }
            Ok(code)
        }
        Cmd::Run {
            policy,
            cwd,
            timeout,
            session,
            command,
        } => {
            let policy = load(&policy)?;
            let ctx = context(cwd)?;
            serve::run(&policy, &ctx.cwd, timeout, &session, &command.join(" "))
        }
        Cmd::Serve {
            policy,
            cwd,
            timeout,
            audit,
            ask,
            ask_timeout,
            session,
            at_eof,
            tools,
        } => {
            let policy = load(&policy)?;
            let ctx = context(cwd)?;
            let ask = (ask, ask_timeout);
            let serve = serve::ServeOptions {
                audit: audit.as_deref(),
                ask,
                at_eof,
                tools: &tools,
            };
            serve::serve(&policy, &ctx.cwd, timeout, &session, serve)
        }
        #[cfg(feature = "mcp")]
        Cmd::Mcp {
            policy,
            cwd,
            timeout,
            audit,
            ask,
            session,
            http,
        } => {
            let policy = load(&policy)?;
            let ctx = context(cwd)?;
            let options = mcp::McpOptions {
                policy,
                cwd: ctx.cwd,
                timeout,
                session,
                ask,
                audit,
            };
            match http.http {
                Some(_) => mcp::http::serve(options, &http),
                None => mcp::mcp(options),
            }
        }
        Cmd::Sandbox(args) => sandbox::launch(args),
        Cmd::Oracle {
            policy,
            full,
            format,
            programs,
        } => {
            let policy = load(&policy)?;
            oracle::oracle_cmd(&policy, &programs, full, format == Format::Json)
        }
        Cmd::Draft {
            program,
            output,
            force,
            format,
        } => oracle::draft_cmd(&program, output.as_deref(), force, format == Format::Json),
        Cmd::Undo {
            policy,
            cwd,
            to,
            format,
        } => {
            let policy = load_quiet(&policy)?;
            let ctx = context(cwd)?;
            undo::undo(&policy, &ctx.cwd, to.as_deref(), format == Format::Json)
        }
        Cmd::History {
            policy,
            cwd,
            format,
        } => {
            let policy = load_quiet(&policy)?;
            let ctx = context(cwd)?;
            undo::history(&policy, &ctx.cwd, format == Format::Json)
        }
        Cmd::Redact {
            policy,
            rules,
            stats,
        } => output::redact(policy.as_deref(), rules.as_deref(), stats).map(exit_code),
        Cmd::Truncate {
            max_bytes,
            max_lines,
        } => output::truncate(max_bytes, max_lines).map(exit_code),
        Cmd::Explain {
            policy,
            cwd,
            format,
            command,
        } => {
            let policy = load(&policy)?;
            let ctx = context(cwd)?;
            let d = policy.evaluate(&ctx, &command);
            match format {
                ExplainFormat::Text => print!("{}", report::explain(&command, &d, false)),
                ExplainFormat::Json => println!("{}", report::json_line(&command, &d)),
            }
            Ok(exit_for(d.verdict))
        }
    }
}

/// The longest stdin line `check` accepts (a JSON-encoded command; policies cap commands far
/// below this).
const MAX_LINE: usize = 16 << 20;

pub(crate) enum LineRead {
    Line,
    TooLong,
    Eof,
}

/// Read one line into `buf` (without the newline), holding at most `max` bytes: a longer line
/// is consumed and reported, so endless input cannot exhaust memory.
pub(crate) fn read_line_capped(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    buf.clear();
    let mut too_long = false;
    let mut any = false;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok(match (any, too_long) {
                (false, _) => LineRead::Eof,
                (true, true) => LineRead::TooLong,
                (true, false) => LineRead::Line,
            });
        }
        any = true;
        let (part, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        if !too_long {
            if buf.len() + part.len() > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(part);
            }
        }
        let used = done.unwrap_or(chunk.len());
        input.consume(used);
        if done.is_some() {
            return Ok(if too_long {
                LineRead::TooLong
            } else {
                LineRead::Line
            });
        }
    }
}

/// `test` for one policy: 0 its examples pass, 1 one fails, `Err` it does not load.
/// Reads commands as JSON lines from stdin (a JSON string, or an object with a `"command"`
/// string), each line capped at [`MAX_LINE`], and calls `f` for each in order. A line that
/// cannot be read is reported on stderr with its number and skipped, never dropped silently;
/// returns whether there was one.
pub(crate) fn for_each_stdin_command(
    mut f: impl FnMut(String) -> Result<(), CliError>,
) -> Result<bool, CliError> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut bad_input = false;
    let mut line = Vec::new();
    let mut lineno = 0;
    loop {
        lineno += 1;
        match read_line_capped(&mut input, &mut line, MAX_LINE) {
            Ok(LineRead::Eof) => return Ok(bad_input),
            Ok(LineRead::Line) => {}
            Ok(LineRead::TooLong) => {
                eprintln!(
                    "policy-check: stdin:{lineno}: line longer than {MAX_LINE} bytes, skipped"
                );
                bad_input = true;
                continue;
            }
            Err(source) => return Err(CliError::read("stdin", source)),
        }
        let Ok(text) = std::str::from_utf8(&line) else {
            eprintln!("policy-check: stdin:{lineno}: not valid UTF-8");
            bad_input = true;
            continue;
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        match stdin_command(text) {
            Ok(command) => f(command)?,
            Err(why) => {
                eprintln!("policy-check: stdin:{lineno}: {why}; {STDIN_FORMS}");
                bad_input = true;
            }
        }
    }
}

/// The forms `check` accepts on stdin, told with every line it cannot read.
const STDIN_FORMS: &str = "each stdin line is a command as plain text (`ls -la`), a JSON string \
(`\"ls -la\"`), or a JSON object with a \"command\" string (a tool_use input)";

/// The command one stdin line of `check` holds: a JSON string, the `"command"` of a JSON
/// object, or else the line itself as plain text (`ls -la`, `"$HOME/x" -v`, `{ ls; }`, `true`).
/// A line that opens a JSON object (`{"`, never the start of a bash command worth checking)
/// must be one, so a malformed tool_use input is an error and not a command nobody meant.
fn stdin_command(text: &str) -> Result<String, String> {
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::String(s)) => Ok(s),
        Ok(serde_json::Value::Object(o)) => match o.get("command") {
            Some(serde_json::Value::String(s)) => Ok(s.clone()),
            _ => Err("the JSON object has no \"command\" string".to_string()),
        },
        Err(e) if text.starts_with("{\"") => Err(format!("invalid JSON: {e}")),
        _ => Ok(text.to_string()),
    }
}

fn test_one(spec: &str) -> Result<u8, CliError> {
    // Loading checks the examples (here always, even a shipped policy's proven ones); a
    // failing one is an invalid policy (exit 2) there, but here it is the test result (exit 1).
    match shellgate::load::load_name_or_file(spec, shellgate::load::ExampleCheck::Always) {
        Ok((p, _)) => {
            println!("{}: {} example(s) passed", spec, p.examples.len());
            Ok(0)
        }
        Err(e) => {
            let failing: Vec<_> = e
                .diagnostics()
                .iter()
                .filter(|d| d.code == "policy-example-failed")
                .collect();
            if failing.is_empty() || failing.len() != e.diagnostics().len() {
                return Err(e.into());
            }
            for d in failing {
                println!("{d}");
            }
            Ok(1)
        }
    }
}

fn exit_code(code: i32) -> u8 {
    u8::try_from(code).unwrap_or(2)
}

fn exit_for(v: Verdict) -> u8 {
    if v == Verdict::Allow {
        0
    } else {
        1
    }
}

fn emit(out: &mut impl Write, format: Format, command: &str, d: &Decision) -> Result<(), CliError> {
    let text = match format {
        Format::Json => format!("{}\n", report::json_line(command, d)),
        Format::Text | Format::Sarif => report::human(command, d, false),
    };
    out.write_all(text.as_bytes())
        .map_err(|source| CliError::write("stdout", source))
}

fn check(
    policy: &Policy,
    ctx: &Context,
    format: Format,
    commands: Vec<String>,
) -> Result<u8, CliError> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut worst = Verdict::Allow;
    if !commands.is_empty() {
        for c in &commands {
            let d = policy.evaluate(ctx, c);
            worst = worst.max(d.verdict);
            emit(&mut out, format, c, &d)?;
        }
        return Ok(exit_for(worst));
    }
    let bad_input = for_each_stdin_command(|command| {
        let d = policy.evaluate(ctx, &command);
        worst = worst.max(d.verdict);
        emit(&mut out, format, &command, &d)
    })?;
    out.flush().map_err(|e| CliError::write("stdout", e))?;
    if bad_input {
        return Ok(2);
    }
    Ok(exit_for(worst))
}
