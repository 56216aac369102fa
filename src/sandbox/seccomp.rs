//! seccomp filters: what neither the jail's namespaces nor Landlock express.
//!
//! [`jail_filter`] (always, inside the jail):
//! - `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)` on any terminal (CVE-2017-5226: typing into the
//!   terminal of whoever reads it next), besides `--new-session`;
//! - setuid and setgid bits, by `chmod`/`fchmod`/`fchmodat`/`fchmodat2`, and on files and
//!   directories being created (`open`/`openat`/`creat` with `O_CREAT` or `O_TMPFILE`,
//!   `mkdir`/`mkdirat`): the workspace's files belong to the host user, and a setuid file
//!   made inside the jail would be a setuid file of the host's user outside;
//! - `socket(AF_UNIX)`: pathname sockets of the host are absent from the mount view anyway,
//!   but a host server can put its socket inside a writable root (as Anthropic's
//!   sandbox-runtime does, `socketpair` stays allowed);
//! - device nodes (`mknod` of character and block devices; FIFOs stay allowed);
//! - kernel surfaces an unprivileged process has no use for: keyrings (`keyctl`, `add_key`,
//!   `request_key`), `perf_event_open`, `bpf`, `userfaultfd`, mounts (`mount`, `umount2`,
//!   `pivot_root`, the new mount API), namespaces (`unshare`, `setns`, `clone` with
//!   `CLONE_NEWUSER`), modules (`init_module`, `finit_module`, `delete_module`), `kexec_*`,
//!   file handles (`open_by_handle_at`, `name_to_handle_at`), the clock and host names;
//! - `openat2` and `clone3` answer ENOSYS (their arguments are in memory seccomp cannot read;
//!   the C library falls back to `openat` and `clone`, which it can).
//!
//! [`no_udp_or_raw_sockets`] (with `network = "off"`): UDP, raw and packet sockets and
//! `io_uring_setup`.

use nix::libc;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op,
    SeccompCondition as Cond, SeccompFilter, SeccompRule,
};

use super::SandboxError;

type Rules = Vec<(i64, Vec<SeccompRule>)>;

fn setup(e: seccompiler::BackendError) -> SandboxError {
    SandboxError::Setup(format!("seccomp: {e}"))
}

fn cond(arg: u8, op: Op, v: u64) -> Result<Cond, SandboxError> {
    Cond::new(arg, Len::Dword, op, v).map_err(setup)
}

fn rule(conds: Vec<Cond>) -> Result<SeccompRule, SandboxError> {
    SeccompRule::new(conds).map_err(setup)
}

fn install(rules: Rules, errno: i32) -> Result<(), SandboxError> {
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e| SandboxError::Unavailable(format!("seccomp: {e}")))?;
    let filter = SeccompFilter::new(
        rules.into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .map_err(setup)?;
    let program: BpfProgram = filter.try_into().map_err(setup)?;
    seccompiler::apply_filter(&program)
        .map_err(|e| SandboxError::Unavailable(format!("seccomp: {e}")))
}

/// The set-id bits, each on its own (a rule matches when either is set).
const SET_ID: [u64; 2] = [libc::S_ISUID as u64, libc::S_ISGID as u64];

/// Rules matching a `mode` argument at `arg` with a set-id bit, when `extra` also holds.
fn set_id_mode(arg: u8, extra: &[(u8, u64)]) -> Result<Vec<SeccompRule>, SandboxError> {
    let mut out = Vec::new();
    for bit in SET_ID {
        let mut c = vec![cond(arg, Op::MaskedEq(bit), bit)?];
        for &(a, flag) in extra {
            c.push(cond(a, Op::MaskedEq(flag), flag)?);
        }
        out.push(rule(c)?);
    }
    Ok(out)
}

/// Rules for a created file's mode at `mode_arg`, with `O_CREAT` or `O_TMPFILE` in the flags
/// at `flags_arg`.
fn creating_set_id(flags_arg: u8, mode_arg: u8) -> Result<Vec<SeccompRule>, SandboxError> {
    let mut out = set_id_mode(mode_arg, &[(flags_arg, libc::O_CREAT as u64)])?;
    out.extend(set_id_mode(
        mode_arg,
        &[(flags_arg, (libc::O_TMPFILE & !libc::O_DIRECTORY) as u64)],
    )?);
    Ok(out)
}

/// The filter every process of the jail runs under; see the [module docs](self).
pub(crate) fn jail_filter() -> Result<(), SandboxError> {
    // The ioctl number's type differs between C libraries (unsigned long, int).
    #[allow(clippy::unnecessary_cast)]
    let (sti, linux) = (libc::TIOCSTI as u64, libc::TIOCLINUX as u64);
    let mut rules: Rules = vec![
        (
            libc::SYS_ioctl,
            vec![
                rule(vec![cond(1, Op::Eq, sti)?])?,
                rule(vec![cond(1, Op::Eq, linux)?])?,
            ],
        ),
        (libc::SYS_fchmod, set_id_mode(1, &[])?),
        (libc::SYS_fchmodat, set_id_mode(2, &[])?),
        (libc::SYS_fchmodat2, set_id_mode(2, &[])?),
        (libc::SYS_openat, creating_set_id(2, 3)?),
        (libc::SYS_mkdirat, set_id_mode(2, &[])?),
        (
            libc::SYS_socket,
            vec![rule(vec![cond(0, Op::Eq, libc::AF_UNIX as u64)?])?],
        ),
    ];
    let devices = |arg: u8| -> Result<Vec<SeccompRule>, SandboxError> {
        let fmt = libc::S_IFMT as u64;
        Ok(vec![
            rule(vec![cond(arg, Op::MaskedEq(fmt), libc::S_IFCHR as u64)?])?,
            rule(vec![cond(arg, Op::MaskedEq(fmt), libc::S_IFBLK as u64)?])?,
        ])
    };
    rules.push((libc::SYS_mknodat, devices(2)?));
    rules.push((
        libc::SYS_clone,
        vec![rule(vec![cond(
            0,
            Op::MaskedEq(libc::CLONE_NEWUSER as u64),
            libc::CLONE_NEWUSER as u64,
        )?])?],
    ));
    #[cfg(target_arch = "x86_64")]
    {
        rules.push((libc::SYS_chmod, set_id_mode(1, &[])?));
        rules.push((libc::SYS_open, creating_set_id(1, 2)?));
        rules.push((libc::SYS_creat, set_id_mode(1, &[])?));
        rules.push((libc::SYS_mkdir, set_id_mode(1, &[])?));
        rules.push((libc::SYS_mknod, devices(1)?));
    }
    for sys in [
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_perf_event_open,
        libc::SYS_bpf,
        libc::SYS_userfaultfd,
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_open_tree,
        libc::SYS_move_mount,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_mount_setattr,
        libc::SYS_unshare,
        libc::SYS_setns,
        libc::SYS_init_module,
        libc::SYS_finit_module,
        libc::SYS_delete_module,
        libc::SYS_kexec_load,
        libc::SYS_kexec_file_load,
        libc::SYS_open_by_handle_at,
        libc::SYS_name_to_handle_at,
        libc::SYS_clock_settime,
        libc::SYS_clock_adjtime,
        libc::SYS_settimeofday,
        libc::SYS_adjtimex,
        libc::SYS_sethostname,
        libc::SYS_setdomainname,
        libc::SYS_swapon,
        libc::SYS_swapoff,
        libc::SYS_reboot,
        libc::SYS_acct,
        libc::SYS_quotactl,
    ] {
        rules.push((sys, Vec::new()));
    }
    install(rules, libc::EPERM)?;
    install(
        vec![
            (libc::SYS_openat2, Vec::new()),
            (libc::SYS_clone3, Vec::new()),
        ],
        libc::ENOSYS,
    )
}

/// What Landlock cannot express, with seccomp (no `network`): `socket()` for UDP and raw
/// IPv4/IPv6 sockets and for packet sockets fails with EPERM, and so does `io_uring_setup`
/// (its socket operations would not pass through `socket()`).
pub(crate) fn no_udp_or_raw_sockets() -> Result<(), SandboxError> {
    let mut socket_rules = Vec::new();
    for family in [libc::AF_INET, libc::AF_INET6] {
        for kind in [libc::SOCK_DGRAM, libc::SOCK_RAW] {
            socket_rules.push(rule(vec![
                cond(0, Op::Eq, family as u64)?,
                // The type carries SOCK_NONBLOCK / SOCK_CLOEXEC in its high bits.
                cond(1, Op::MaskedEq(0xf), kind as u64)?,
            ])?);
        }
    }
    socket_rules.push(rule(vec![cond(0, Op::Eq, libc::AF_PACKET as u64)?])?);
    install(
        vec![
            (libc::SYS_socket, socket_rules),
            (libc::SYS_io_uring_setup, Vec::new()),
        ],
        libc::EPERM,
    )
}
