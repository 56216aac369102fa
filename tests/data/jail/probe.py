#!/usr/bin/env python3
"""Escape probes for the jail conformance suite (tests/jail.rs).

Run as workspace code inside the sandbox, and unconfined as the control. Each probe prints
one line `NAME escaped DETAIL` (the attempt had its effect) or `NAME blocked DETAIL`. The
test checks the effects on the host itself; these lines say what each attempt saw.

argv: probe.py CONFIG.json  (paths and pids the test set up)
"""
import ctypes, ctypes.util, errno, json, os, socket, struct, sys, fcntl, termios, time

cfg = json.load(open(sys.argv[1]))
libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
libc.syscall.restype = ctypes.c_long
only = set(sys.argv[2:])


def report(name, escaped, detail=""):
    print(f"{name} {'escaped' if escaped else 'blocked'} {detail}".rstrip(), flush=True)


def err():
    e = ctypes.get_errno()
    return errno.errorcode.get(e, str(e))


def probe(fn):
    if only and fn.__name__ not in only:
        return fn
    try:
        fn()
    except Exception as e:  # a probe that cannot even try is blocked
        report(fn.__name__, False, f"{type(e).__name__}: {e}")
    return fn


# x86_64 syscall numbers
SYS = dict(add_key=248, keyctl=250, perf_event_open=298, bpf=321, userfaultfd=323,
           pivot_root=155, init_module=175, open_by_handle_at=304, name_to_handle_at=303,
           setns=308, clock_settime=227, io_uring_setup=425, ptrace=101)


@probe
def unix_socket_in_workspace():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(cfg["ws_socket"])
    s.sendall(b"PWNED\n")
    report("unix_socket_in_workspace", True)


@probe
def unix_socket_outside():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(cfg["outside_socket"])
    s.sendall(b"PWNED\n")
    report("unix_socket_outside", True)


@probe
def abstract_socket():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect("\0" + cfg["abstract"])
    s.sendall(b"PWNED\n")
    report("abstract_socket", True)


@probe
def tcp_to_host():
    s = socket.create_connection(("127.0.0.1", cfg["tcp_port"]), timeout=2)
    s.sendall(b"PWNED\n")
    report("tcp_to_host", True)


@probe
def host_interfaces():
    names = [l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]]
    report("host_interfaces", any(n != "lo" for n in names), ",".join(names))


@probe
def tiocsti():
    master, slave = os.openpty()
    r = libc.ioctl(slave, termios.TIOCSTI, ctypes.c_char_p(b"X"))
    if r != 0:
        return report("tiocsti", False, err())
    os.set_blocking(master, False)
    time.sleep(0.05)
    try:
        got = os.read(master, 10)
    except BlockingIOError:
        got = b""
    report("tiocsti", True, repr(got))


@probe
def controlling_tty():
    fd = os.open("/dev/tty", os.O_RDWR)
    report("controlling_tty", True, os.ttyname(fd))


@probe
def chmod_setuid():
    os.chmod(cfg["ws_victim"], 0o4755)
    report("chmod_setuid", os.stat(cfg["ws_victim"]).st_mode & 0o4000 != 0)


@probe
def create_setuid():
    p = cfg["ws_victim"] + ".suid"
    fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o4755)
    os.close(fd)
    report("create_setuid", os.stat(p).st_mode & 0o4000 != 0)


@probe
def chown_workspace_file():
    os.chown(cfg["ws_victim"], 4242, 4242)
    report("chown_workspace_file", True)


@probe
def file_capability_xattr():
    # a v2 security.capability blob granting cap_setuid
    blob = struct.pack("<IIIII", 0x02000001, 1 << 7, 0, 0, 0)
    os.setxattr(cfg["ws_victim"], "security.capability", blob)
    report("file_capability_xattr", True)


@probe
def outside_file_metadata():
    p = cfg["outside_file"]
    os.utime(p, (1, 1))
    os.chmod(p, 0o777)
    report("outside_file_metadata", True)


@probe
def read_outside_secret():
    report("read_outside_secret", True, open(cfg["outside_file"]).read().strip())


@probe
def sethostname():
    name = cfg["hostname"].encode()
    if libc.sethostname(name, len(name)) != 0:
        return report("sethostname", False, err())
    report("sethostname", True)


@probe
def clock_settime():
    class TS(ctypes.Structure):
        _fields_ = [("s", ctypes.c_long), ("ns", ctypes.c_long)]
    t = TS()
    libc.clock_gettime(0, ctypes.byref(t))
    if libc.syscall(SYS["clock_settime"], 0, ctypes.byref(t)) != 0:
        return report("clock_settime", False, err())
    report("clock_settime", True)


@probe
def sysv_shm():
    shmid = libc.shmget(cfg["shm_key"], 0, 0)
    report("sysv_shm", shmid >= 0, err() if shmid < 0 else str(shmid))


@probe
def other_processes():
    seen = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if cfg["marker"].encode() in open(f"/proc/{p}/cmdline", "rb").read():
                    seen.append(p)
            except OSError:
                pass
    report("other_processes", bool(seen), ",".join(seen))


@probe
def proc_root_of_outside_pid():
    data = open(f"/proc/{cfg['marker_pid']}/root{cfg['outside_file']}").read()
    report("proc_root_of_outside_pid", True, data.strip())


@probe
def ptrace_outside_pid():
    PTRACE_ATTACH, PTRACE_DETACH = 16, 17
    if libc.syscall(SYS["ptrace"], PTRACE_ATTACH, cfg["marker_pid"], 0, 0) != 0:
        return report("ptrace_outside_pid", False, err())
    time.sleep(0.05)
    libc.syscall(SYS["ptrace"], PTRACE_DETACH, cfg["marker_pid"], 0, 0)
    report("ptrace_outside_pid", True)


@probe
def mount_tmpfs():
    d = cfg["scratch"] + "/mnt"
    os.makedirs(d, exist_ok=True)
    if libc.mount(b"none", d.encode(), b"tmpfs", 0, None) != 0:
        return report("mount_tmpfs", False, err())
    libc.umount2(d.encode(), 0)
    report("mount_tmpfs", True)


@probe
def unshare_user():
    pid = os.fork()
    if pid == 0:
        os._exit(0 if libc.unshare(0x10000000) == 0 else ctypes.get_errno())
    _, st = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(st)
    report("unshare_user", code == 0, errno.errorcode.get(code, str(code)))


@probe
def setns_outside():
    fd = os.open(f"/proc/{cfg['marker_pid']}/ns/uts", os.O_RDONLY)
    pid = os.fork()
    if pid == 0:
        os._exit(0 if libc.syscall(SYS["setns"], fd, 0) == 0 else ctypes.get_errno())
    _, st = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(st)
    report("setns_outside", code == 0, errno.errorcode.get(code, str(code)))


@probe
def pivot_root():
    r = libc.syscall(SYS["pivot_root"], b"/", b"/")
    e = ctypes.get_errno()
    # EINVAL/EBUSY: the call was allowed and judged its arguments
    report("pivot_root", r == 0 or e not in (errno.EPERM, errno.ENOSYS), err())


@probe
def keyring():
    r = libc.syscall(SYS["add_key"], b"user", b"shellgate-probe", b"x", 1, -3)  # session keyring
    report("keyring", r >= 0, err() if r < 0 else str(r))


@probe
def perf_event_open():
    attr = bytearray(128)
    struct.pack_into("<II", attr, 0, 1, 128)  # PERF_TYPE_SOFTWARE, size
    struct.pack_into("<Q", attr, 8, 0)  # PERF_COUNT_SW_CPU_CLOCK
    buf = (ctypes.c_char * 128).from_buffer(attr)
    fd = libc.syscall(SYS["perf_event_open"], buf, 0, -1, -1, 0)
    report("perf_event_open", fd >= 0, err() if fd < 0 else "")


@probe
def bpf_map():
    attr = bytearray(72)
    struct.pack_into("<IIII", attr, 0, 2, 4, 4, 1)  # BPF_MAP_TYPE_ARRAY, key 4, value 4, 1 entry
    buf = (ctypes.c_char * 72).from_buffer(attr)
    fd = libc.syscall(SYS["bpf"], 0, buf, 72)
    report("bpf_map", fd >= 0, err() if fd < 0 else "")


@probe
def userfaultfd():
    fd = libc.syscall(SYS["userfaultfd"], os.O_CLOEXEC)
    report("userfaultfd", fd >= 0, err() if fd < 0 else "")


@probe
def io_uring():
    params = (ctypes.c_char * 120)()
    fd = libc.syscall(SYS["io_uring_setup"], 1, params)
    report("io_uring", fd >= 0, err() if fd < 0 else "")


@probe
def module_loading():
    r = libc.syscall(SYS["init_module"], b"\0" * 64, 64, b"")
    e = ctypes.get_errno()
    # ENOEXEC/EINVAL: the kernel looked at the "module": permission was granted
    report("module_loading", r == 0 or e not in (errno.EPERM, errno.ENOSYS), err())


@probe
def open_by_handle_at():
    class FH(ctypes.Structure):
        _fields_ = [("bytes", ctypes.c_uint), ("type", ctypes.c_int), ("h", ctypes.c_char * 128)]
    fh = FH(128, 0)
    mount_id = ctypes.c_int()
    r = libc.syscall(SYS["name_to_handle_at"], -100, b"/etc/passwd", ctypes.byref(fh), ctypes.byref(mount_id), 0)
    if r != 0:
        return report("open_by_handle_at", False, "name_to_handle_at " + err())
    fd = libc.syscall(SYS["open_by_handle_at"], -100, ctypes.byref(fh), os.O_RDONLY)
    report("open_by_handle_at", fd >= 0, err() if fd < 0 else "")


@probe
def mknod_device():
    p = cfg["ws_victim"] + ".dev"
    os.mknod(p, 0o600 | 0o020000, os.makedev(1, 3))
    report("mknod_device", True)


@probe
def sys_visible():
    report("sys_visible", os.path.isdir("/sys/kernel"), "")


@probe
def run_visible():
    report("run_visible", os.path.isdir("/run") and bool(os.listdir("/run")), "")


@probe
def protected_files():
    changed = []
    for p in cfg["protected"]:
        try:
            with open(p, "a") as f:
                f.write("PWNED\n")
            changed.append(os.path.basename(p))
        except OSError:
            pass
    report("protected_files", bool(changed), ",".join(changed))


@probe
def protected_replace():
    changed = []
    for p in cfg["protected"]:
        try:
            tmp = p + ".new"
            with open(tmp, "w") as f:
                f.write("PWNED\n")
            os.rename(tmp, p)
            changed.append(os.path.basename(p))
        except OSError:
            try:
                os.unlink(p + ".new")
            except OSError:
                pass
    report("protected_replace", bool(changed), ",".join(changed))


@probe
def cache_write():
    p = cfg["cache_dir"] + "/shellgate-probe"
    with open(p, "w") as f:
        f.write("PWNED\n")
    report("cache_write", True)


@probe
def home_secret():
    report("home_secret", True, open(cfg["home_secret"]).read().strip())


@probe
def etc_shadow():
    report("etc_shadow", True, str(len(open("/etc/shadow").read())))


@probe
def capabilities():
    eff = [l for l in open("/proc/self/status").read().splitlines() if l.startswith("CapEff")][0]
    report("capabilities", int(eff.split()[1], 16) != 0, eff.split()[1])
