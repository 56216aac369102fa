//! `policy-check migrate FILE...`: rewrite each file's old option lists as `options` tables
//! (in place, atomically; or to `--output`), or with `--check` only say which files would
//! change (exit 1). See `shellgate::policy::migrate`.

use std::path::{Path, PathBuf};

use crate::error::CliError;

/// Runs the migration; returns the exit code.
pub fn migrate_cmd(
    files: &[PathBuf],
    output: Option<&Path>,
    check: bool,
    aliases_from_help: bool,
) -> Result<u8, CliError> {
    if output.is_some() && files.len() != 1 {
        return Err(CliError::Failed(
            "--output takes one input file".to_string(),
        ));
    }
    let mut changed = 0usize;
    for file in files {
        let source = std::fs::read_to_string(file).map_err(|e| CliError::read(file, e))?;
        let m = if aliases_from_help {
            shellgate::policy::migrate::migrate_with(&source, &help_groups)
        } else {
            shellgate::policy::migrate::migrate(&source)
        }
        .map_err(|e| CliError::Failed(format!("{}: {e}", file.display())))?;
        for (rule, why) in &m.kept {
            eprintln!(
                "policy-check: {}: `{rule}` left in the old form: {why}",
                file.display()
            );
        }
        let differs = m.text != source;
        if differs {
            changed += 1;
        }
        if check {
            if differs {
                println!(
                    "{}: {} rule(s) would be migrated",
                    file.display(),
                    m.migrated.len()
                );
            }
            continue;
        }
        let target = output.unwrap_or(file);
        if differs || output.is_some() {
            write_atomically(target, &m.text)?;
        }
        eprintln!(
            "policy-check: {}: {} rule(s) migrated{}",
            file.display(),
            m.migrated.len(),
            if output.is_some() {
                format!(", written to {}", target.display())
            } else {
                String::new()
            }
        );
    }
    if aliases_from_help {
        let _ = std::fs::remove_dir_all(help_dir());
    }
    Ok(if check && changed > 0 { 1 } else { 0 })
}

/// `text` into `path` through a temporary file beside it and a rename, so a reader sees the
/// old file or the new one, never a part (the old file's permissions are kept).
fn write_atomically(path: &Path, text: &str) -> Result<(), CliError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "policy".into());
    let tmp = dir.join(format!(".{name}.migrate-{}", std::process::id()));
    let result = (|| {
        std::fs::write(&tmp, text)?;
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&tmp, meta.permissions())?;
        }
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(CliError::write(path, e));
    }
    Ok(())
}

/// The scratch directory the programs' `--help` run in (removed when the migration ends).
fn help_dir() -> PathBuf {
    std::env::temp_dir().join(format!("policy-check-help-{}", std::process::id()))
}

/// The spellings the program's own `--help` (`git SUB -h`) gives one option, for the rule
/// named `rule` (`ls`, `git push`). Nothing for a rule whose program is not a plain name on
/// `PATH`, or whose help does not come within a few seconds. The program runs with an empty
/// environment (but `PATH`, `HOME`, rustup's variables and `LANG=C`), no input, in a fresh
/// temporary directory.
fn help_groups(rule: &str) -> Vec<Vec<String>> {
    use std::process::{Command, Stdio};
    let rule = rule.strip_prefix("sandbox.programs.").unwrap_or(rule);
    if rule.starts_with("sandbox.") || rule.ends_with(" --") {
        return Vec::new();
    }
    let words: Vec<&str> = rule.split(' ').collect();
    let Some((program, subs)) = words.split_first() else {
        return Vec::new();
    };
    let plain = |w: &str| {
        !w.is_empty()
            && !w.starts_with('-')
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '['))
    };
    if !plain(program) || !subs.iter().all(|s| plain(s)) {
        return Vec::new();
    }
    // `git SUB --help` opens the manual; `-h` prints the usage.
    let flag = if *program == "git" && !subs.is_empty() {
        "-h"
    } else {
        "--help"
    };
    let dir = help_dir();
    if std::fs::create_dir_all(&dir).is_err() {
        return Vec::new();
    }
    let mut cmd = Command::new(program);
    // Toolchain proxies (rustup's cargo) find the real program through these.
    for var in ["HOME", "RUSTUP_HOME", "CARGO_HOME", "RUSTUP_TOOLCHAIN"] {
        if let Some(v) = std::env::var_os(var) {
            cmd.env(var, v);
        }
    }
    cmd.args(subs)
        .arg(flag)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LANG", "C")
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let Ok(child) = cmd.spawn() else {
        return Vec::new();
    };
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(10)) {
        Ok(Ok(out)) => {
            let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            shellgate::policy::migrate::help_aliases(&text)
        }
        Ok(Err(_)) => Vec::new(),
        Err(_) => {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            Vec::new()
        }
    }
}
