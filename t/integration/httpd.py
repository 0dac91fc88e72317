# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Run a real Apache httpd with mod_pdftoken for the tests.

Httpd writes a self-contained configuration (never /etc/apache2) into its
own directory, starts Debian's /usr/sbin/apache2 in the foreground on a
free 127.0.0.1 port, and stops it gracefully (SIGWINCH).  ServerPool makes
servers under one directory and stops them together; make_workdir() gives
each test process a directory of its own.

Configuration bodies use @NAME@ placeholders instead of str.format braces,
because httpd configuration is full of % and {}:

    @ROOT@     the server's directory        @DOCROOT@  @ROOT@/htdocs
    @PORT@     the listening port            @MODULE@   mod_pdftoken.so
    @SECRET@   @ROOT@/secret (random, made at construction)
"""

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pdftoken_ref
from client import http_request, raw_request, to_bytes
from samplepdf import make_pdf

APACHE = "/usr/sbin/apache2"
MODULES_DIR = "/usr/lib/apache2/modules"
REPO = Path(__file__).resolve().parents[2]
MODULE = os.environ.get("PDFTOKEN_MODULE",
                        str(REPO / ".libs" / "mod_pdftoken.so"))
MPM = os.environ.get("PDFTOKEN_MPM", "event")

# Sanitizer runs (make test-asan).  An instrumented module in Debian's
# uninstrumented apache2 needs the sanitizer runtime loaded first, so
# PDFTOKEN_HTTPD_PRELOAD goes into LD_PRELOAD of every apache2 the harness
# runs.  The runtimes then write their reports into <server>/sanitizer/,
# which must be empty when the server stops; PDFTOKEN_SANITIZER_LOG_DIR,
# when set, also keeps a copy of every report (the server trees are
# removed after the run).
HTTPD_PRELOAD = os.environ.get("PDFTOKEN_HTTPD_PRELOAD", "")
SANITIZER_LOG_DIR = os.environ.get("PDFTOKEN_SANITIZER_LOG_DIR", "")

# Error-log lines that mean a child died or memory was corrupted.
FATAL_LOG_PATTERNS = ("exit signal", "AH00052", "AH00060",
                      "Segmentation fault", "double free", "corrupted",
                      "stack smashing", "AddressSanitizer",
                      "runtime error:")

# Modules every server loads (names without the mod_ prefix).
BASE_MODULES = ("authz_core", "mime", "dir", "alias", "headers", "env",
                "setenvif")


def free_port():
    """A port nobody listens on now; another process may take it before
    the caller binds it (Httpd holds its port with reserve_port())."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reserve_port():
    """(port, socket): a free 127.0.0.1 port, held by a socket bound to it
    with SO_REUSEADDR and never listening.  As long as that socket is
    open, the kernel hands the port to no other bind() (port 0 or
    explicit, in any process: another test worker, a back end), while
    httpd, which sets SO_REUSEADDR on its own socket, can still bind and
    listen on it.  Close the socket once the server is stopped."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1], s


def module_path():
    if not os.path.exists(MODULE):
        raise AssertionError(
            "mod_pdftoken is not built: %s does not exist (run make, or set "
            "PDFTOKEN_MODULE)" % MODULE)
    return MODULE


def cgi_module():
    """mod_cgid under the threaded event MPM, mod_cgi under prefork."""
    return "cgi" if MPM == "prefork" else "cgid"


def mpm_block():
    if MPM == "prefork":
        return ("LoadModule mpm_prefork_module %s/mod_mpm_prefork.so\n"
                "StartServers 3\nMinSpareServers 2\nMaxSpareServers 6\n"
                "MaxRequestWorkers 30\n" % MODULES_DIR)
    if MPM == "event":
        return ("LoadModule mpm_event_module %s/mod_mpm_event.so\n"
                "StartServers 2\nServerLimit 4\nThreadsPerChild 10\n"
                "MaxRequestWorkers 40\nMinSpareThreads 5\n"
                "MaxSpareThreads 30\n" % MODULES_DIR)
    raise AssertionError("PDFTOKEN_MPM must be event or prefork, not %r"
                         % MPM)


class Httpd:
    """One Apache httpd instance with its own directory tree."""

    def __init__(self, root, tls=False, modules=(), secret_directive=True):
        self.root = Path(root)
        self.docroot = self.root / "htdocs"
        self.tls = tls
        self.scheme = "https" if tls else "http"
        self.port, self._port_hold = reserve_port()
        self.extra_modules = list(modules)
        self.secret_directive = secret_directive
        self.proc = None
        self._may_owe_children = False   # set by a graceful restart
        self._stopping = None   # when begin_stop() signalled the parent
        self.conf = self.root / "httpd.conf"
        self.error_log = self.root / "logs" / "error.log"
        self.access_log = self.root / "logs" / "access.log"
        self.stderr_log = self.root / "logs" / "stderr.log"
        self.sanitizer_dir = self.root / "sanitizer"
        for d in (self.root, self.docroot, self.root / "logs",
                  self.root / "run"):
            d.mkdir(parents=True, exist_ok=True)
            d.chmod(0o755)
        self.secret_path = self.root / "secret"
        self.write_secret(self.secret_path, secrets.token_hex(32) + "\n")
        self.body = ""
        self.base_used = True
        if tls:
            self._make_certificate()

    # -- files

    def write(self, rel, data, mode=0o644, base=None):
        """Write a file below the docroot (or `base`), dirs made 0755."""
        base = Path(base) if base else self.docroot
        path = base / rel
        self._mkdirs(path.parent)
        if isinstance(data, str):
            data = data.encode("utf-8")
        path.write_bytes(data)
        path.chmod(mode)
        return path

    def write_pdf(self, rel, label=None, pages=3, base=None, link=None):
        data = make_pdf(label or str(rel), pages=pages, link=link)
        self.write(rel, data, base=base)
        return data

    def write_pdf_cgi(self, rel, pdf_rel):
        """A CGI script at rel (below the docroot) that answers with the
        file pdf_rel (below the docroot) as application/pdf."""
        return self.write(rel, "#!/bin/sh\nprintf 'Content-Type: "
                          "application/pdf\\r\\n\\r\\n'\ncat '%s'\n"
                          % (self.docroot / pdf_rel), mode=0o755)

    def _mkdirs(self, d):
        d = Path(d)
        missing = []
        while not d.exists():
            missing.append(d)
            d = d.parent
        for m in reversed(missing):
            m.mkdir()
            m.chmod(0o755)

    def write_secret(self, path, content):
        path = Path(path)
        self._mkdirs(path.parent)
        path.write_bytes(to_bytes(content) if isinstance(content, str)
                         else content)
        path.chmod(0o644)
        return path

    @property
    def secret(self):
        return pdftoken_ref.read_secret(self.secret_path)

    def _make_certificate(self):
        self.cert = self.root / "cert.pem"
        self.key = self.root / "key.pem"
        cert, key = _certificate()
        self.cert.write_bytes(cert)
        self.key.write_bytes(key)
        self.key.chmod(0o600)

    # -- configuration

    def substitute(self, text):
        return (text.replace("@DOCROOT@", str(self.docroot))
                .replace("@ROOT@", str(self.root))
                .replace("@PORT@", str(self.port))
                .replace("@MODULE@", MODULE)
                .replace("@SECRET@", str(self.secret_path)))

    def base_config(self):
        mods = list(BASE_MODULES) + [m for m in self.extra_modules
                                     if m not in BASE_MODULES]
        if self.tls:
            mods += [m for m in ("socache_shmcb", "ssl") if m not in mods]
        lines = [
            'ServerRoot "@ROOT@"',
            'DefaultRuntimeDir "@ROOT@/run"',
            'PidFile "@ROOT@/run/httpd.pid"',
            'Mutex file:@ROOT@/run default',
            'Listen 127.0.0.1:@PORT@' + (" https" if self.tls else ""),
            'ServerName 127.0.0.1:@PORT@',
            'ErrorLog "@ROOT@/logs/error.log"',
            'LogFormat "%{X-Test-Id}i %>s %{PDFTOKEN}e" pdftoken',
            'CustomLog "@ROOT@/logs/access.log" pdftoken',
            'Timeout 30',
            'KeepAlive Off',
            mpm_block(),
        ]
        # Servers stop gracefully (see stop()): bounded, like the SIGTERM
        # it replaces.
        lines.append("GracefulShutdownTimeout 10")
        if os.geteuid() == 0:
            lines += ["User www-data", "Group www-data"]
        for m in mods:
            lines.append("LoadModule %s_module %s/mod_%s.so"
                         % (m, MODULES_DIR, m))
        if "cgid" in mods:
            lines.append('ScriptSock "@ROOT@/run/cgid.sock"')
        lines += [
            "LoadModule pdftoken_module @MODULE@",
            # pdftoken:debug: the module says why at info/debug, and its
            # messages must still never carry a token.  (After LoadModule:
            # a per-module level needs the module loaded.)
            "LogLevel notice pdftoken:debug",
            "TypesConfig /etc/mime.types",
            "AddType application/pdf .pdf",
            "AddType text/html .html",
            "AddType text/plain .txt",
            'DocumentRoot "@DOCROOT@"',
            "<Directory />",
            "    AllowOverride None",
            "    Require all denied",
            "</Directory>",
            '<Directory "@ROOT@">',
            "    Options FollowSymLinks",
            "    AllowOverride None",
            "    Require all granted",
            "</Directory>",
        ]
        if self.tls:
            lines += ["SSLEngine on",
                      'SSLCertificateFile "%s"' % self.cert,
                      'SSLCertificateKeyFile "%s"' % self.key,
                      'SSLSessionCache "shmcb:@ROOT@/run/ssl_scache(512000)"']
        if self.secret_directive:
            lines.append('PdfTokenSecretFile "@SECRET@"')
        return "\n".join(lines) + "\n"

    def configure(self, body="", base=True):
        """Write httpd.conf: the base configuration, then `body`."""
        self.body = body
        self.base_used = base
        text = (self.base_config() if base else "") + body + "\n"
        self.conf.write_text(self.substitute(text))
        self.conf.chmod(0o644)
        return self.conf

    def configtest(self):
        """Run `apache2 -t`; return (exit status, stdout + stderr)."""
        p = subprocess.run([APACHE, "-t", "-f", str(self.conf)],
                           capture_output=True, timeout=60,
                           env=self.httpd_env())
        return p.returncode, (p.stdout + p.stderr).decode("latin-1")

    # -- process

    def httpd_env(self):
        """The environment apache2 runs in: ours, plus the sanitizer
        runtime and its options when PDFTOKEN_HTTPD_PRELOAD is set."""
        env = dict(os.environ)
        if not HTTPD_PRELOAD:
            return env
        # The children run as www-data: the report directory must be
        # writable by them.
        self._mkdirs(self.sanitizer_dir)
        self.sanitizer_dir.chmod(0o777)
        env["LD_PRELOAD"] = " ".join(
            p for p in (HTTPD_PRELOAD, env.get("LD_PRELOAD", "")) if p)
        # Defaults first, so that the caller's options override them; the
        # log path last, so that every report lands where it is checked.
        # httpd's own SIGSEGV handler would hide ASan's report (and its
        # stack) behind a bare "exit signal Segmentation fault".
        env["ASAN_OPTIONS"] = ":".join(
            p for p in ("detect_leaks=0:abort_on_error=0:"
                        "allow_user_segv_handler=0",
                        env.get("ASAN_OPTIONS", ""),
                        "log_path=%s/asan" % self.sanitizer_dir) if p)
        # gcc's libubsan may still print to stderr (logs/stderr.log),
        # where "runtime error:" is one of the fatal patterns.
        env["UBSAN_OPTIONS"] = ":".join(
            p for p in ("print_stacktrace=1:halt_on_error=1",
                        env.get("UBSAN_OPTIONS", ""),
                        "log_path=%s/ubsan" % self.sanitizer_dir) if p)
        return env

    def sanitizer_reports(self):
        """[(file name, text)] of every ASan/UBSan report of this server."""
        if not self.sanitizer_dir.is_dir():
            return []
        reports = []
        for f in sorted(self.sanitizer_dir.iterdir()):
            text = f.read_bytes().decode("latin-1")
            reports.append((f.name, text))
            if SANITIZER_LOG_DIR:
                keep = Path(SANITIZER_LOG_DIR)
                keep.mkdir(parents=True, exist_ok=True)
                (keep / ("%s-%s" % (self.root.name, f.name))).write_text(
                    text, "latin-1")
        return reports

    def start(self, expect_failure=False, timeout=30):
        module_path()
        if not self.conf.exists():
            self.configure()
        self._starts = self._count_starts()
        stderr = open(self.stderr_log, "ab")
        self.proc = subprocess.Popen(
            [APACHE, "-f", str(self.conf), "-DFOREGROUND"],
            env=self.httpd_env(),
            stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
            start_new_session=True, cwd=str(self.root))
        stderr.close()
        deadline = time.time() + timeout
        while time.time() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                self.proc = None
                if expect_failure:
                    return rc
                raise AssertionError(
                    "httpd exited with status %d at start-up:\n%s"
                    % (rc, self.logs_text()))
            if self._count_starts() > self._starts and self._answers() \
                    and self._cgid_ready():
                if expect_failure:
                    raise AssertionError("httpd started although it "
                                         "should have refused to")
                return 0
            time.sleep(0.05)
        self.stop()
        raise AssertionError("httpd did not come up in %ds:\n%s"
                             % (timeout, self.logs_text()))

    def _cgid_ready(self, restarted=False):
        # mod_cgid's daemon makes its socket (ScriptSock, with the
        # parent's pid appended) after the server already answers; a CGI
        # request before that gets a 503 on a loaded machine.  A restart
        # replaces the daemon: then the socket must take a connection.
        if not self.base_used or "cgid" not in self.extra_modules \
                or "ScriptSock" in self.body:
            return True
        socks = [p for p in (self.root / "run").iterdir()
                 if p.name.startswith("cgid.sock.")]
        if not restarted:
            return bool(socks)
        for p in socks:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as u:
                try:
                    u.connect(str(p))
                    return True
                except OSError:
                    pass
        return False

    def _answers(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port),
                                          timeout=1):
                return True
        except OSError:
            return False

    def _count_starts(self):
        # AH00489/AH00094: "... configured -- resuming normal operations"
        return self.error_text().count("resuming normal operations")

    def restart(self, graceful=False, timeout=30):
        """SIGHUP (or SIGUSR1) the parent and wait until it has read its
        configuration again and every child of the old generation has
        exited, so that the next request is answered under the new
        configuration (a graceful restart lets old children finish what
        they hold, and until then one of them may still accept)."""
        assert self.proc is not None
        self._settle()
        before = self._count_starts()
        old = self._children()
        self.proc.send_signal(signal.SIGUSR1 if graceful else signal.SIGHUP)
        deadline = time.time() + timeout
        while time.time() < deadline:
            assert self.proc.poll() is None, \
                "httpd died on restart:\n" + self.logs_text()
            if self._count_starts() > before and self._answers() \
                    and not (old & self._children()) \
                    and self._cgid_ready(restarted=True):
                self._may_owe_children = graceful
                return
            time.sleep(0.02)
        raise AssertionError("httpd did not restart:\n" + self.logs_text())

    def _settle(self, quiet=1.5, timeout=30):
        """After a graceful restart, wait until the parent has started the
        children it still owes before signalling it again.

        A graceful restart leaves the parent owing StartServers children,
        which it starts one per old child it reaps, and the rest once a
        whole second of its maintenance loop passes without a reap.  A
        signal ends that second early: the parent then starts the children
        it owes under the configuration it is about to leave, after the
        pid snapshot of the next restart, and one of them may answer the
        next request under the old configuration (CI: a secret dropped by
        a second graceful restart was still accepted).  The owed children
        are started within that second of the last change, so a child set
        unchanged for longer than it means nothing is owed."""
        if not self._may_owe_children:
            return
        self._may_owe_children = False
        deadline = time.time() + timeout
        seen, since = self._children(), time.time()
        while time.time() - since < quiet:
            assert time.time() < deadline, \
                "httpd's children did not settle:\n" + self.logs_text()
            time.sleep(0.02)
            now = self._children()
            if now != seen:
                seen, since = now, time.time()

    def _children(self):
        """The parent's live (not exited) child processes: their pids."""
        pid = self.proc.pid
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                pids = {int(p) for p in f.read().split()}
        except FileNotFoundError:   # a kernel without CONFIG_PROC_CHILDREN
            pids = set()
            for d in os.listdir("/proc"):
                if d.isdigit() and _proc_stat(int(d))[1] == pid:
                    pids.add(int(d))
        # An exited child stays a zombie until the parent reaps it, which
        # httpd does once a second: exited is enough here.
        return {p for p in pids if _proc_stat(p)[0] not in ("Z", None)}

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """Stop httpd and wait until it has exited."""
        self.begin_stop()
        self.finish_stop()

    def begin_stop(self):
        """Ask httpd to stop, without waiting: a graceful stop takes at
        least a second (the parent looks at its children once a second),
        so ServerPool stops all its servers at once and leaves the wait to
        the end of the run (finish_stops)."""
        if self.proc is None or self._stopping is not None:
            return
        if self.proc.poll() is None:
            # Stop gracefully: on SIGTERM the event MPM's children close
            # their workers' sockets from the main thread
            # (close_worker_sockets), a race inside httpd that crashes a
            # child about once in 200 stops, with or without this module,
            # and the crash check would fail the test.
            self.proc.send_signal(signal.SIGWINCH)
        self._stopping = time.time()
        _STOPPING.append(self)

    def finish_stop(self, timeout=30):
        """Wait for a stop begun by begin_stop(); then the port is free."""
        if self._stopping is not None:
            proc, self.proc = self.proc, None
            left = max(1, timeout - (time.time() - self._stopping))
            self._stopping = None
            if self in _STOPPING:
                _STOPPING.remove(self)
            try:
                proc.wait(timeout=left)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
                raise AssertionError("httpd did not stop within %ds"
                                     % timeout)
        if self.proc is None and self._port_hold is not None:
            self._port_hold.close()
            self._port_hold = None

    # -- logs

    def error_text(self):
        try:
            return self.error_log.read_bytes().decode("latin-1")
        except FileNotFoundError:
            return ""

    def _all_logs_text(self):
        """The error log, then what httpd wrote to stderr."""
        out = self.error_text()
        try:
            out += self.stderr_log.read_bytes().decode("latin-1")
        except FileNotFoundError:
            pass
        return out

    def logs_text(self):
        return self._all_logs_text()[-6000:]

    def log_problems(self):
        """What is wrong with this server's error log (empty list if ok)."""
        text = self._all_logs_text()
        problems = []
        for pattern in FATAL_LOG_PATTERNS:
            for line in text.splitlines():
                if pattern in line:
                    problems.append("%s: %s" % (pattern, line))
        for name, report in self.sanitizer_reports():
            problems.append("sanitizer report %s:\n%s" % (name,
                                                          report[:6000]))
        for token in sorted(pdftoken_ref.SEEN_TOKENS):
            if token in text:
                problems.append("issued/minted token %s... appears in the "
                                "error log" % token[:12])
        return problems

    def error_log_size(self):
        try:
            return self.error_log.stat().st_size
        except FileNotFoundError:
            return 0

    def error_log_since(self, offset):
        """What the error log got after `offset` (error_log_size()).

        No waiting is needed for the lines of a request made with
        client.http_request or raw_request: they read until httpd closes
        the connection, which httpd does only after the request is done
        and logged (its access-log line, and every error-log line, is
        written when the end-of-request bucket is destroyed, once the
        answer is written; the close comes after that)."""
        with open(self.error_log, "rb") as f:
            f.seek(offset)
            return f.read().decode("latin-1")

    def access_log_entry(self, test_id, timeout=5):
        """(status, PDFTOKEN) logged for the request with X-Test-Id."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                lines = self.access_log.read_text("latin-1").splitlines()
            except FileNotFoundError:
                lines = []
            for line in lines:
                fields = line.split(" ")
                if fields[0] == test_id:
                    return fields[1], fields[2]
            time.sleep(0.05)
        raise AssertionError("no access log line for %s" % test_id)

    # -- requests

    def url(self, target):
        return "%s://127.0.0.1:%d%s" % (self.scheme, self.port, target)

    def request(self, method, target, headers=(), cookies=None, body=b"",
                host=None, **kw):
        headers = list(headers)
        if cookies:
            headers.append(("Cookie", "; ".join(cookies)))
        return http_request(self.port, method, target, headers=headers,
                            body=body, host=host, tls=self.tls,
                            cafile=self.cert if self.tls else None, **kw)

    def get(self, target, **kw):
        return self.request("GET", target, **kw)

    def raw(self, data):
        return raw_request(self.port, data, tls=self.tls,
                           cafile=self.cert if self.tls else None)

    def head(self, target, **kw):
        return self.request("HEAD", target, **kw)

    def first_visit(self, target, name="pdftoken", **kw):
        """GET without a token: returns (response, token, cookie pair)."""
        r = self.get(target, **kw)
        assert r.status == 302, r
        token = r.location_token(name)
        cookie = None
        prefix = "%s_" % name
        for cname, cval, _ in r.set_cookies():
            if cname.startswith(prefix) and cval == token:
                cookie = "%s=%s" % (cname, cval)
        assert cookie, "no cookie for the token in %r" % r
        return r, token, cookie

    def view(self, target, name="pdftoken", **kw):
        """A browser's whole visit: redirect, then follow with the cookie."""
        r, token, cookie = self.first_visit(target, name=name, **kw)
        return self.get(r.location_target(), cookies=[cookie], **kw)


class ServerPool:
    """Makes Httpd instances under one directory and stops them all."""

    def __init__(self, base):
        self.base = Path(base)
        self.servers = []

    def make(self, name="httpd", **kw):
        root = self.base / ("%s-%d" % (name, len(self.servers)))
        server = Httpd(root, **kw)
        self.servers.append(server)
        return server

    def close(self, wait=True):
        """Stop every server; return what their logs show wrong.

        With wait=False the stops are only begun: the logs are checked as
        they are now, and finish_stops() waits for the servers and checks
        what they logged while stopping."""
        problems = []
        for s in self.servers:
            s.begin_stop()
        for s in self.servers:
            if wait:
                try:
                    s.finish_stop()
                except AssertionError as e:
                    problems.append("%s: %s" % (s.root, e))
            found = s.log_problems()
            s.reported = set(found)
            problems += ["%s: %s" % (s.root.name, p) for p in found]
        self.servers = []
        return problems


# Servers whose stop was begun and not yet waited for.
_STOPPING = []


def finish_stops():
    """Wait for every stop begun and not finished; return the problems
    those servers' logs show that ServerPool.close() did not report."""
    problems = []
    for s in list(_STOPPING):
        try:
            s.finish_stop()
        except AssertionError as e:
            problems.append("%s: %s" % (s.root, e))
        problems += ["%s: %s (while stopping)" % (s.root, p)
                     for p in s.log_problems()
                     if p not in getattr(s, "reported", ())]
    return problems


_CERTIFICATE = []


def _certificate():
    """(certificate, key) in PEM for IP:127.0.0.1, made once per process:
    every TLS server of a run may present the same one, and RSA key
    generation is the slowest part of making a server."""
    if not _CERTIFICATE:
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key")
            subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                 "-keyout", key, "-out", cert, "-days", "2",
                 "-subj", "/CN=127.0.0.1",
                 "-addext", "subjectAltName=IP:127.0.0.1"],
                check=True, capture_output=True)
            with open(cert, "rb") as c, open(key, "rb") as k:
                _CERTIFICATE.append((c.read(), k.read()))
    return _CERTIFICATE[0]


def _proc_stat(pid):
    """(state, parent pid) of a process from /proc; (None, None) once it
    is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            text = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None, None
    fields = text.rpartition(")")[2].split()
    return fields[0], int(fields[1])


def make_workdir():
    """A directory under /tmp that the www-data children can read."""
    import tempfile
    d = Path(tempfile.mkdtemp(prefix="pdftoken-it-", dir="/tmp"))
    d.chmod(0o755)
    return d


def remove_workdir(d):
    if os.environ.get("PDFTOKEN_KEEP_TMP"):
        return
    shutil.rmtree(d, ignore_errors=True)
