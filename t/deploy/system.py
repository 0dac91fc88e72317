# Licensed under the Apache License, Version 2.0; see LICENSE.
"""What the deploy tests need from the machine: commands that must
succeed, snapshots of system directories to prove they were put back, the
state of the stock apache2, and the sockets a process listens on."""

import fcntl
import hashlib
import os
import re
import socket
import stat
import subprocess
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "libapache2-mod-pdftoken"
# Where the postinst notes that it made the secret (debian/*.postinst).
STATE_DIR = "/var/lib/" + PACKAGE

# System directories that installing, enabling, disabling and purging the
# package may touch; each must end exactly as it started.
WATCHED = ("/etc/apache2", "/var/lib/apache2", "/usr/lib/apache2/modules",
           "/usr/share/doc/" + PACKAGE, STATE_DIR)


def run(cmd, timeout=180, env=None, check=True):
    """Run cmd; fail with its output unless it exits 0 (when check)."""
    p = subprocess.run(cmd, capture_output=True, timeout=timeout, env=env,
                       stdin=subprocess.DEVNULL)
    out = (p.stdout + p.stderr).decode("utf-8", "replace")
    if check and p.returncode != 0:
        raise AssertionError("%s exited %d:\n%s" % (" ".join(map(str, cmd)),
                                                   p.returncode, out))
    return p.returncode, out


def dpkg(*args, timeout=180):
    """dpkg with the arguments; waits (bounded) while another dpkg or apt
    holds the lock instead of failing at once."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    deadline = time.time() + timeout
    while True:
        rc, out = run(["dpkg"] + list(args), timeout=timeout, env=env,
                      check=False)
        if rc == 0:
            return out
        if "lock" in out and time.time() < deadline:
            time.sleep(2)
            continue
        raise AssertionError("dpkg %s exited %d:\n%s" % (" ".join(args), rc,
                                                       out))


def package_status(name=PACKAGE):
    """dpkg's status words for name, "" when dpkg knows nothing of it."""
    rc, out = run(["dpkg-query", "-W", "-f=${Status}", name], check=False)
    return out.strip() if rc == 0 else ""


def package_present(name=PACKAGE):
    status = package_status(name)
    return bool(status) and not status.endswith("not-installed")


def tree_state(root):
    """{path: description} for root and everything below it (no links
    followed): kind, mode, and a content hash or link target."""
    state = {}
    root = str(root)
    if not os.path.lexists(root):
        return state
    paths = [root]
    for dirpath, dirnames, filenames in os.walk(root):
        paths += [os.path.join(dirpath, n) for n in dirnames + filenames]
    for p in paths:
        st = os.lstat(p)
        mode = stat.S_IMODE(st.st_mode)
        if stat.S_ISLNK(st.st_mode):
            state[p] = ("link", os.readlink(p))
        elif stat.S_ISDIR(st.st_mode):
            state[p] = ("dir", mode, st.st_uid, st.st_gid)
        elif stat.S_ISREG(st.st_mode):
            with open(p, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            state[p] = ("file", mode, st.st_uid, st.st_gid, digest)
        else:
            state[p] = ("other", st.st_mode)
    return state


def remove_new_empty_dirs(before, root):
    """Remove the empty directories under root that a snapshot taken
    before did not have (a2enmod and a2dismod make their state
    directories, /var/lib/apache2/module/enabled_by_admin and the like,
    and nothing removes them)."""
    after = tree_state(root)
    for p in sorted(set(after) - set(before), reverse=True):
        if after[p][0] == "dir" and not os.listdir(p):
            os.rmdir(p)


def snapshot():
    out = {}
    for root in WATCHED:
        out.update(tree_state(root))
    return out


def diff(before, after):
    """Human-readable differences between two snapshots."""
    lines = []
    for p in sorted(set(before) | set(after)):
        if p not in after:
            lines.append("removed  %s %r" % (p, before[p]))
        elif p not in before:
            lines.append("added    %s %r" % (p, after[p]))
        elif before[p] != after[p]:
            lines.append("changed  %s %r -> %r" % (p, before[p], after[p]))
    return lines


def stock_apache_pid():
    """The pid of the system's own apache2 if it runs, else None."""
    pidfile = Path("/var/run/apache2/apache2.pid")
    try:
        pid = int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        comm = Path("/proc/%d/comm" % pid).read_text().strip()
    except OSError:
        return None
    return pid if comm.startswith("apache2") else None


def running_apache(pid):
    """True while pid is a live (not zombie) apache2 process."""
    try:
        comm = Path("/proc/%d/comm" % pid).read_text().strip()
        state = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1]
    except OSError:
        return False
    return comm.startswith("apache2") and state.split()[0] != "Z"


def live(pids):
    """The pids among these whose process is alive (not exited: a zombie
    waiting for its parent to reap it counts as exited)."""
    out = []
    for pid in pids:
        try:
            stat_line = Path("/proc/%d/stat" % pid).read_text()
        except OSError:
            continue
        if stat_line.rsplit(")", 1)[1].split()[0] != "Z":
            out.append(pid)
    return out


def children(pid):
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat_line = Path("/proc/%s/stat" % entry).read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...; comm may hold spaces and parentheses.
        ppid = int(stat_line.rsplit(")", 1)[1].split()[1])
        if ppid == pid:
            out.append(int(entry))
    return out


def _decode_addr(hexaddr, family):
    ip, port = hexaddr.split(":")
    raw = bytes.fromhex(ip)
    if family == socket.AF_INET:
        addr = socket.inet_ntop(family, raw[::-1])
    else:
        # Four 32-bit words, each in host (little-endian) order.
        addr = socket.inet_ntop(family, b"".join(
            raw[i:i + 4][::-1] for i in range(0, 16, 4)))
    return addr, int(port, 16)


def listening_addresses(pids):
    """(address, port) of every TCP socket in LISTEN state held by pids."""
    inodes = set()
    for pid in pids:
        try:
            fds = os.listdir("/proc/%d/fd" % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            m = re.fullmatch(r"socket:\[(\d+)\]", target)
            if m:
                inodes.add(m.group(1))
    found = set()
    for table, family in (("/proc/net/tcp", socket.AF_INET),
                          ("/proc/net/tcp6", socket.AF_INET6)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:
                found.add(_decode_addr(f[1], family))
    return found


class MachineLock:
    """Serialises deploy tests on one machine: they install one package
    into the one system apache2."""

    def __init__(self, path="/tmp/pdftoken-deploy-test.lock",
                 timeout=600):
        self.path = path
        self.timeout = timeout
        self.fd = None

    def __enter__(self):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o600)
        deadline = time.time() + self.timeout
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except BlockingIOError:
                if time.time() > deadline:
                    raise AssertionError("another deploy test holds %s"
                                         % self.path)
                time.sleep(1)

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
        self.fd = None
