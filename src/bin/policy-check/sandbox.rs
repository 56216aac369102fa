//! `policy-check sandbox [SPEC] -- PROGRAM ARGS...`: run a program inside the kernel sandbox
//! (see `shellgate::sandbox`). The session's shell is started this way; it is also usable by
//! hand. Exit status: the program's, or 125 when the sandbox cannot be set up (the reason
//! code, `sandbox-unavailable` or `sandbox-setup`, is on stderr).
//!
//! `policy-check sandbox --policy P --print-plan` prints the jail the policy builds (the
//! mount view, namespaces, limits) and bubblewrap's arguments, and runs nothing.

use crate::error::CliError;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

use shellgate::sandbox::{self, plan::JailPlan, SandboxSpec};
use shellgate::Context;

/// Limits given on the command line (they override the policy's).
#[derive(clap::Args, Clone, Default)]
pub struct LimitArgs {
    /// CPU seconds per process (RLIMIT_CPU).
    #[arg(long, value_name = "N")]
    pub cpu_seconds: Option<u64>,
    /// Address space per process, in bytes (RLIMIT_AS).
    #[arg(long, value_name = "BYTES")]
    pub address_space: Option<u64>,
    /// Processes (a pids cgroup where one can be made, and RLIMIT_NPROC).
    #[arg(long, value_name = "N")]
    pub processes: Option<u64>,
    /// Largest file written, in bytes (RLIMIT_FSIZE).
    #[arg(long, value_name = "BYTES")]
    pub file_size: Option<u64>,
    /// Open files per process (RLIMIT_NOFILE).
    #[arg(long, value_name = "N")]
    pub open_files: Option<u64>,
}

impl LimitArgs {
    pub fn apply(&self, spec: &mut SandboxSpec) {
        let l = &mut spec.limits;
        for (from, to) in [
            (self.cpu_seconds, &mut l.cpu_seconds),
            (self.address_space, &mut l.address_space),
            (self.processes, &mut l.processes),
            (self.file_size, &mut l.file_size),
            (self.open_files, &mut l.open_files),
        ] {
            if from.is_some() {
                *to = from;
            }
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(clap::Args)]
pub struct SandboxArgs {
    /// Derive the rules from this policy (`[paths]`, `[sandbox]`).
    #[arg(long, short = 'p')]
    policy: Option<String>,
    /// The workspace that `{workspace}` stands for (default: the current directory).
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// Another readable root. Repeatable.
    #[arg(long, value_name = "PATH")]
    read: Vec<PathBuf>,
    /// Another writable root. Repeatable.
    #[arg(long, value_name = "PATH")]
    write: Vec<PathBuf>,
    /// TCP connect and bind (default: the policy's, else off).
    #[arg(long, value_enum)]
    network: Option<OnOff>,
    /// No Landlock: only the PID namespace, the parent-death signals and the limits.
    #[arg(long)]
    no_landlock: bool,
    /// The private temporary directory (writable).
    #[arg(long, value_name = "DIR")]
    tmp: Option<PathBuf>,
    /// A cgroup directory to join before starting the program. Repeatable (cgroup v1: one
    /// per hierarchy).
    #[arg(long, value_name = "DIR")]
    cgroup: Vec<PathBuf>,
    /// The whole spec as JSON (how the session passes it; overrides `--policy`).
    #[arg(long, value_name = "JSON", hide = true)]
    spec: Option<String>,
    /// Without a policy: run inside the bubblewrap jail too (with `--policy`, the policy's
    /// `[sandbox] mode` decides).
    #[arg(long)]
    jail: bool,
    /// Print the jail the policy builds (mounts, namespaces, limits, bubblewrap's arguments)
    /// and exit without running anything.
    #[arg(long)]
    print_plan: bool,
    #[command(flatten)]
    limits: LimitArgs,
    /// Internal: the second stage (confine, then exec).
    #[arg(long, hide = true)]
    stage2: bool,
    /// Also write a setup failure to stdout (the session reads only the shell's stdout, so
    /// its start error then says why).
    #[arg(long, hide = true)]
    errors_to_stdout: bool,
    /// The program and its arguments (after `--`).
    #[arg(last = true, required_unless_present = "print_plan")]
    command: Vec<OsString>,
}

pub fn launch(args: SandboxArgs) -> Result<u8, CliError> {
    let mut spec = match (&args.spec, &args.policy) {
        (Some(json), _) => serde_json::from_str::<SandboxSpec>(json)
            .map_err(|e| format!("--spec is not a sandbox spec: {e}"))?,
        (None, Some(p)) => {
            let policy = shellgate::Policy::from_name_or_file(p).map_err(|e| e.to_string())?;
            let ws = match &args.workspace {
                Some(w) => w.clone(),
                None => std::env::current_dir()
                    .map_err(|e| format!("cannot read the current directory: {e}"))?,
            };
            let mut spec = SandboxSpec::from_policy(&policy, &Context::new(ws));
            spec.landlock = true;
            // Stage 2 reads the policy again inside the jail: its files must be in view there
            // (a hook's policy above a workspace started in a subdirectory is not), read-only.
            for source in policy.sources.iter().filter(|s| !s.starts_with("shipped:")) {
                if let Ok(abs) = std::path::absolute(source) {
                    spec.read.push(abs);
                }
            }
            spec
        }
        (None, None) => SandboxSpec {
            landlock: true,
            jail: args.jail,
            home: std::env::var_os("HOME").map(PathBuf::from),
            bwrap: sandbox::find_bwrap(),
            overlay: sandbox::find_bwrap()
                .as_deref()
                .is_some_and(sandbox::plan::bwrap_has_overlay),
            ..SandboxSpec::default()
        },
    };
    spec.read.extend(args.read.iter().cloned());
    spec.write.extend(args.write.iter().cloned());
    if let Some(n) = args.network {
        spec.network = matches!(n, OnOff::On);
    }
    if args.no_landlock {
        spec.landlock = false;
    }
    args.limits.apply(&mut spec);
    if args.print_plan {
        return print_plan(&spec);
    }
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("policy-check sandbox: {e}");
        if args.errors_to_stdout {
            println!("policy-check sandbox: {e}");
        }
        Ok(125)
    };
    if args.stage2 {
        let err = sandbox::confine_and_exec(&spec, args.tmp.as_deref(), &args.command);
        return fail(&err);
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut stage2 = Command::new(exe);
    // The same arguments, marked as stage 2.
    stage2.arg("sandbox").arg("--stage2");
    // Run by hand (or by a hook's rewritten command) there is no session directory: the jail
    // needs one for the files it generates (credential-free copies of ~/.npmrc and
    // ~/.gitconfig) and as its /tmp; a private one is made, and removed when the program ends.
    let tmp = match &args.tmp {
        Some(t) => t.clone(),
        None => {
            let t =
                private_tmp().map_err(|e| format!("cannot make the sandbox's directory: {e}"))?;
            stage2.arg("--tmp").arg(&t);
            t
        }
    };
    stage2.args(std::env::args_os().skip(2));
    match sandbox::launch(&spec, Some(&tmp), &args.cgroup, stage2) {
        Ok(code) => Ok(u8::try_from(code).unwrap_or(255)),
        Err(e) => fail(&e),
    }
}

/// `--print-plan`: the jail, for people, then bubblewrap's arguments (one per line).
fn print_plan(spec: &SandboxSpec) -> Result<u8, CliError> {
    if !spec.jail {
        println!(
            "no jail: the policy's [sandbox] mode is \"off\" (the launcher gives a PID namespace \
             and parent-death signals only)"
        );
        return Ok(0);
    }
    let plan = JailPlan::build(spec, None, None, spec.overlay).map_err(|e| e.to_string())?;
    print!("{}", plan.describe());
    let l = &spec.limits;
    println!(
        "cgroup      memory.max {} MiB, pids.max {}, cpu.max {}% of a core ({})",
        l.memory_or_default() >> 20,
        l.processes_or_default(),
        l.cpu_percent_or_default(),
        if l.cgroup_optional {
            "optional"
        } else {
            "required: sandbox-unavailable without it"
        }
    );
    println!(
        "inside      Landlock (the roots above), seccomp (TIOCSTI, set-id bits, AF_UNIX sockets, \
         keyrings, perf, bpf, userfaultfd, mounts, namespaces, modules{})",
        if spec.network {
            ""
        } else {
            ", UDP and raw sockets"
        }
    );
    match &spec.bwrap {
        Some(b) => println!("\n{}", b.display()),
        None => println!("\nbwrap (not installed: sandbox-unavailable)"),
    }
    for a in plan.bwrap_args() {
        println!("  {a}");
    }
    Ok(0)
}

/// A new directory only this user can enter, under the system's temporary directory.
fn private_tmp() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    let dir = std::env::temp_dir().join(format!(
        "shellgate-sandbox.{}.{:016x}",
        std::process::id(),
        u64::from_le_bytes(bytes)
    ));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}
