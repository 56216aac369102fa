//! `policy-check migrate FILE...`: rewrite each file's old option lists as `options` tables
//! (in place, atomically; or to `--output`), or with `--check` only say which files would
//! change (exit 1). See `shellgate::policy::migrate`.

use std::path::{Path, PathBuf};

use crate::error::CliError;

/// Runs the migration; returns the exit code.
pub fn migrate_cmd(files: &[PathBuf], output: Option<&Path>, check: bool) -> Result<u8, CliError> {
    if output.is_some() && files.len() != 1 {
        return Err(CliError::Failed(
            "--output takes one input file".to_string(),
        ));
    }
    let mut changed = 0usize;
    for file in files {
        let source = std::fs::read_to_string(file).map_err(|e| CliError::read(file, e))?;
        let m = shellgate::policy::migrate::migrate(&source)
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
