# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The Debian package on this machine's own apache2, the way an
administrator uses it, and back.

`dpkg -i` the package that `make deb` built (twice: a reinstall keeps the
secret), start the stock /usr/sbin/apache2 from the stock /etc/apache2
configuration with one test site on a free 127.0.0.1 port, then what
issue 15 asks of the package: `a2enmod pdftoken && apache2ctl configtest`
and a reload; a protected PDF redirects with its cookie and its token is
signed with the secret the postinst made; a token minted before a restart
still opens the PDF after it; the error log names the secret file;
`a2dismod pdftoken` leaves a configuration that passes configtest and
starts; `dpkg --purge` deletes the secret and leaves one that starts.  At
the end /etc/apache2, /var/lib/apache2, the module directory, the
package's doc and state directories are exactly as they were.  Needs root,
as CI has.

How the server is run.  The stock configuration listens on every address
(ports.conf) and this machine's servers may bind 127.0.0.1 only, so the
server starts from a copy of /etc/apache2/apache2.conf in which two lines
differ: `Include ports.conf` and `IncludeOptional sites-enabled/*.conf` are
replaced by one `Listen 127.0.0.1:PORT` and one virtual host.  Everything
else (mods-enabled, conf-enabled, envvars, the `ErrorLog
${APACHE_LOG_DIR}/error.log` line) is the system's own, read in place.
`apache2ctl configtest` runs as is, on the whole stock configuration (it
binds nothing).  The reload is `apache2 -k graceful`, which is what both
`apache2ctl graceful` and `systemctl reload apache2` (apache2.service's
ExecReload) come down to; neither can be run as such here, since both act
on the stock server on port 80 (and systemd may not be running at all).
The run-time files and logs go to a temporary directory (APACHE_RUN_DIR,
APACHE_LOCK_DIR, APACHE_LOG_DIR, APACHE_PID_FILE overridden), so a stock
apache2 that is already running is never touched and is still running, with
the same pid, at the end, and /var/log/apache2 gets no line: the error log
checked is the stock `${APACHE_LOG_DIR}/error.log`, the file that is
/var/log/apache2/error.log on a real server.
"""

import functools
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import client
import httpd
import pdftoken_ref as ref
import system
from checks import (assert_attachment, assert_inline, assert_redirect,
                    assert_untouched)
from samplepdf import make_pdf

APACHE = "/usr/sbin/apache2"
APACHE2CTL = "/usr/sbin/apache2ctl"
CONFDIR = "/etc/apache2"
MODULE_SO = "/usr/lib/apache2/modules/mod_pdftoken.so"
LOAD = CONFDIR + "/mods-available/pdftoken.load"
CONF = CONFDIR + "/mods-available/pdftoken.conf"
ENABLED = (CONFDIR + "/mods-enabled/pdftoken.load",
           CONFDIR + "/mods-enabled/pdftoken.conf")
SECRET = CONFDIR + "/pdftoken.secret"
MADE_MARK = system.STATE_DIR + "/secret-made-by-package"
EXAMPLE = system.REPO / "conf" / "pdftoken.conf.example"
DOC = "/prot/doc.pdf"
OPEN_DOC = "/open/doc.pdf"
# The test site's token lifetime: long enough that a token minted before a
# stop and a start is still fresh after them, on a busy machine.
TIMEOUT = 120
# The start-up notice that names the secret in use (issue 15).
SECRET_NOTICE = re.compile(r"PDFTOKEN00016: .*/etc/apache2/pdftoken\.secret")

# The two lines of the stock apache2.conf that would make it listen on
# every address (ports.conf) and serve the default site.
PORTS_LINE = re.compile(r"^[ \t]*Include[ \t]+ports\.conf[ \t]*$", re.M)
SITES_LINE = re.compile(
    r"^[ \t]*IncludeOptional[ \t]+sites-enabled/\*\.conf[ \t]*$", re.M)

# No PdfTokenSecretFile: the site uses what the packaged pdftoken.conf
# sets.  The module's directives are inside <IfModule>, unlike what the
# README and the example configuration recommend, because this one site
# must serve before a2enmod, after a2dismod and after the purge: the test
# checks that the package's own files leave a configuration that starts.
# The access log is the README's: its LogFormat line, in the site.
SITE = """
# mod_pdftoken deploy test: one site, on the loopback address only.
Listen 127.0.0.1:@PORT@
<VirtualHost 127.0.0.1:@PORT@>
    ServerName 127.0.0.1
    DocumentRoot "@TMP@/htdocs"
    ErrorLog "@TMP@/logs/site-error.log"
    @LOGFORMAT@
    CustomLog "@TMP@/logs/site-access.log" pdftoken
    <Directory "@TMP@/htdocs">
        Require all granted
    </Directory>
    <IfModule pdftoken_module>
        # A module's LogLevel, too, needs the module.
        LogLevel notice pdftoken:debug
        <Directory "@TMP@/htdocs/prot">
            PdfTokenProtect On
            PdfTokenTimeout @TIMEOUT@
        </Directory>
    </IfModule>
</VirtualHost>
"""


def readme_logformat():
    """The README's LogFormat line (README.md, "Logging")."""
    lines = re.findall(r"^LogFormat .* pdftoken$",
                       (system.REPO / "README.md").read_text(), re.M)
    assert len(lines) == 1, lines
    return lines[0]


@functools.lru_cache(maxsize=None)
def deb_path():
    deb = os.environ.get("PDFTOKEN_DEB")
    if not deb:
        system.run(["make", "-C", str(system.REPO), "deb"], timeout=600)
        debs = sorted((system.REPO / "build").glob(system.PACKAGE
                                                    + "_*.deb"))
        assert len(debs) == 1, debs
        deb = str(debs[0])
    assert os.path.isfile(deb), "no package at %s" % deb
    return deb


def stock_env(tmp):
    """The environment apache2ctl gives apache2 (from /etc/apache2/envvars),
    with the run-time and log directories moved to tmp."""
    base = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
            "APACHE_CONFDIR": CONFDIR}
    p = subprocess.run(["sh", "-c", ". %s/envvars && env -0" % CONFDIR],
                       env=base, capture_output=True, timeout=30, check=True)
    env = dict(kv.split("=", 1) for kv in
               p.stdout.decode().split("\0") if "=" in kv)
    assert env.get("APACHE_RUN_USER") and env.get("APACHE_RUN_GROUP"), env
    env.update({
        "APACHE_RUN_DIR": str(tmp / "run"),
        "APACHE_PID_FILE": str(tmp / "run" / "apache2.pid"),
        "APACHE_LOCK_DIR": str(tmp / "lock"),
        "APACHE_LOG_DIR": str(tmp / "logs"),
    })
    return env


def apache2ctl_configtest():
    """`apache2ctl configtest` on the system's own configuration, as an
    administrator runs it: (exit status, output)."""
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}
    return system.run([APACHE2CTL, "configtest"], env=env, check=False,
                      timeout=60)


def file_state(path):
    st = os.lstat(path)
    return {"kind": "file" if stat.S_ISREG(st.st_mode) else "other",
            "mode": stat.S_IMODE(st.st_mode), "uid": st.st_uid,
            "gid": st.st_gid, "ino": st.st_ino,
            "mtime": st.st_mtime_ns, "data": Path(path).read_bytes()}


class Site:
    """What checks.assert_redirect needs to know of the server."""

    tls = False

    def __init__(self, port):
        self.port = port

    def url(self, target):
        return "http://127.0.0.1:%d%s" % (self.port, target)

    def get(self, target, cookies=(), headers=()):
        headers = list(headers)
        if cookies:
            headers.append(("Cookie", "; ".join(cookies)))
        return client.http_request(self.port, "GET", target,
                                   headers=headers, timeout=20)


class Deployment:
    """Install, start; the tests enable, reload, restart, disable and
    purge in order; teardown undoes all of it, whatever happened."""

    def __init__(self, deb):
        self.deb = deb
        self.tmp = None
        self.proc = None
        self.undone = False
        self.problems = []

    # -- doing

    def setup(self):
        assert os.geteuid() == 0, \
            "the deploy test installs a package: run it as root (CI does)"
        assert not system.package_present(), (
            "%s is already on this machine (%s); the deploy test installs "
            "and purges it, so it must start without it"
            % (system.PACKAGE, system.package_status()))
        assert not any(os.path.lexists(p) for p in ENABLED)
        assert not os.path.lexists(SECRET), (
            "%s exists: the deploy test checks that the package makes it, "
            "so it must start without one (move it aside)" % SECRET)
        stock = Path(CONFDIR, "apache2.conf").read_text()
        assert len(PORTS_LINE.findall(stock)) == 1, \
            "cannot find `Include ports.conf` in %s/apache2.conf" % CONFDIR
        assert len(SITES_LINE.findall(stock)) == 1, \
            "cannot find `IncludeOptional sites-enabled/*.conf`"
        self.stock_pid = system.stock_apache_pid()
        self.before = system.snapshot()

        self.tmp = Path(tempfile.mkdtemp(prefix="pdftoken-deploy-",
                                         dir="/tmp"))
        self.tmp.chmod(0o755)
        for d in ("run", "lock", "logs", "htdocs/prot", "htdocs/open"):
            (self.tmp / d).mkdir(parents=True, exist_ok=True)
            (self.tmp / d).chmod(0o755)
        self.docs = {"prot": make_pdf("deploy protected"),
                     "open": make_pdf("deploy open")}
        for name, data in self.docs.items():
            path = self.tmp / "htdocs" / name / "doc.pdf"
            path.write_bytes(data)
            path.chmod(0o644)

        self.install_out = system.dpkg("-i", self.deb)
        self.after_install = system.snapshot()
        self.secret_made = file_state(SECRET) \
            if os.path.lexists(SECRET) else None
        self.reinstall_out = system.dpkg("-i", self.deb)
        self.after_reinstall = system.snapshot()
        self.secret_after_reinstall = file_state(SECRET) \
            if os.path.lexists(SECRET) else None

        self.env = stock_env(self.tmp)
        self.port = httpd.free_port()
        site = (SITE.replace("@PORT@", str(self.port))
                .replace("@TMP@", str(self.tmp))
                .replace("@TIMEOUT@", str(TIMEOUT))
                .replace("@LOGFORMAT@", readme_logformat()))
        conf = PORTS_LINE.sub("# (ports.conf left out by the deploy test)",
                              stock)
        conf = SITES_LINE.sub(lambda m: site, conf)
        self.conf = self.tmp / "apache2.conf"
        self.conf.write_text(conf)
        # The server runs before the module is enabled, as a production
        # server does when the package arrives.
        self.start()

    def error_log(self):
        p = self.tmp / "logs" / "error.log"
        return p.read_text("latin-1") if p.exists() else ""

    def generations(self):
        """How many times the server has finished (re)reading its
        configuration."""
        return self.error_log().count("resuming normal operations")

    def wait_generation(self, count, old=(), timeout=30):
        """Wait for the count-th start-up notice, for the children of the
        previous generation (old: their pids) to exit, since until then
        one of them may still answer under the old configuration, and for
        an answer."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("stock apache2 exited %d:\n%s"
                                     % (self.proc.returncode, self.logs()))
            if self.generations() >= count and not system.live(old):
                try:
                    client.http_request(self.port, "GET", "/", timeout=5)
                    return
                except OSError:
                    pass
            time.sleep(0.1)
        raise AssertionError("stock apache2 did not come up:\n" + self.logs())

    def start(self, timeout=30):
        assert self.proc is None
        count = self.generations()
        log = open(self.tmp / "logs" / "stderr.log", "ab")
        self.proc = subprocess.Popen(
            [APACHE, "-d", CONFDIR, "-f", str(self.conf), "-DFOREGROUND"],
            env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True, cwd=str(self.tmp))
        log.close()
        self.wait_generation(count + 1, timeout=timeout)

    def graceful(self):
        """What `apache2ctl graceful` and `systemctl reload apache2` do:
        apache2 -k graceful, with this server's configuration."""
        count = self.generations()
        old = system.children(self.proc.pid)
        system.run([APACHE, "-d", CONFDIR, "-f", str(self.conf), "-k",
                    "graceful"], env=self.env, timeout=60)
        self.wait_generation(count + 1, old)

    def logs(self):
        out = ""
        for name in ("error.log", "site-error.log", "stderr.log"):
            p = self.tmp / "logs" / name
            if p.exists():
                out += "== %s\n%s" % (name, p.read_text("latin-1")[-3000:])
        return out

    def pids(self):
        return [self.proc.pid] + system.children(self.proc.pid)

    # -- undoing

    def _step(self, what, fn):
        try:
            fn()
        except Exception as e:  # every step runs, whatever failed before
            self.problems.append("%s: %s" % (what, e))

    def stop(self):
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
                raise AssertionError("apache2 ignored SIGTERM for 30 s")

    def disable(self):
        if any(os.path.lexists(p) for p in ENABLED):
            system.run(["a2dismod", "-q", "pdftoken"])

    def purge(self):
        if system.package_status():
            system.dpkg("--purge", system.PACKAGE)

    def remove_state_dirs(self):
        # a2enmod makes /var/lib/apache2/module/enabled_by_admin (and
        # a2dismod disabled_by_admin) when they do not exist yet; the purge
        # empties them but leaves the directories.
        system.remove_new_empty_dirs(self.before, "/var/lib/apache2")

    def teardown(self):
        """Put the machine back; returns what could not be undone."""
        if self.undone:
            return self.problems
        self.undone = True
        self._step("stop apache2", self.stop)
        self._step("a2dismod", self.disable)
        self._step("dpkg --purge", self.purge)
        if hasattr(self, "before"):
            self._step("state directories", self.remove_state_dirs)
        if self.tmp and not os.environ.get("PDFTOKEN_KEEP_TMP"):
            shutil.rmtree(self.tmp, ignore_errors=True)
        return self.problems


@pytest.fixture(scope="module")
def deployment():
    deb = deb_path()
    with system.MachineLock():
        d = Deployment(deb)
        try:
            d.setup()
        except BaseException:
            d.teardown()
            raise
        yield d
        problems = d.teardown()
        assert not problems, "could not undo the deployment:\n" + \
            "\n".join(problems)


# ---------------------------------------------------------- the package


def test_package_holds_the_module_and_the_a2enmod_files():
    deb = deb_path()
    _, listing = system.run(["dpkg-deb", "-c", deb])
    files = sorted(line.split()[-1].lstrip(".") for line in
                   listing.splitlines() if not line.startswith("d"))
    doc = "/usr/share/doc/" + system.PACKAGE
    # The secret is not in the package (every installation makes its own).
    # The Markdown files keep their names and layout, so that their links
    # resolve (test_shipped_docs_link_only_to_each_other).
    assert files == sorted([
        MODULE_SO, LOAD, CONF,
        doc + "/README.md", doc + "/docs/directives.md",
        doc + "/docs/behaviour.md", doc + "/docs/logging.md",
        doc + "/docs/cross-site.md",
        doc + "/changelog.gz", doc + "/changelog.Debian.gz",
        doc + "/copyright", doc + "/examples/pdftoken.conf.example",
    ]), listing
    _, version = system.run(["dpkg-parsechangelog", "-l",
                             str(system.REPO / "debian" / "changelog"),
                             "-S", "Version"])
    _, arch = system.run(["dpkg", "--print-architecture"])
    assert os.path.basename(deb) == "%s_%s_%s.deb" % (
        system.PACKAGE, version.strip(), arch.strip()), deb
    _, fields = system.run(["dpkg-deb", "-f", deb, "Package", "Version",
                            "Depends"])
    assert "Package: libapache2-mod-pdftoken\n" in fields, fields
    assert "Version: %s\n" % version.strip() in fields, fields
    # dh_apache2: the module API the .so was built against.
    assert "apache2-api-20120211" in fields, fields
    assert "libssl3" in fields, fields


def test_maintainer_scripts_make_the_secret_and_never_enable():
    deb = deb_path()
    tmp = Path(tempfile.mkdtemp(prefix="pdftoken-debctl-"))
    try:
        system.run(["dpkg-deb", "-e", deb, str(tmp)])
        assert sorted(os.listdir(tmp)) == ["conffiles", "control",
                                           "md5sums", "postinst", "postrm",
                                           "prerm"]
        assert (tmp / "conffiles").read_text().split() == [CONF, LOAD]
        postinst = (tmp / "postinst").read_text()
        # The postinst makes the secret; enabling stays the
        # administrator's choice (dh_apache2 --noenable): no enmod.
        assert SECRET in postinst
        assert "apache2_invoke enmod" not in postinst, postinst
        assert re.search(r"^set -e$", postinst, re.M), postinst
        # prerm and postrm disable and purge the module's state.
        assert "apache2_invoke dismod $conf" in (tmp / "prerm").read_text()
        postrm = (tmp / "postrm").read_text()
        assert "apache2_invoke dismod $conf" in postrm
        assert SECRET in postrm
        for name in ("postinst", "postrm", "prerm"):
            system.run(["sh", "-n", str(tmp / name)])
            assert (tmp / name).stat().st_mode & 0o111, name
    finally:
        shutil.rmtree(tmp)


def test_packaged_files_load_the_module_and_read_the_secret():
    deb = deb_path()
    tmp = Path(tempfile.mkdtemp(prefix="pdftoken-debx-"))
    try:
        system.run(["dpkg-deb", "-x", deb, str(tmp)])
        _, out = system.run(["nm", "-D", "--defined-only",
                             str(tmp) + MODULE_SO])
        symbols = {line.split()[-1] for line in out.splitlines()
                   if line.split() and line.split()[-2] in "TDBRV"}
        assert symbols == {"pdftoken_module"}, out
        load = (tmp / LOAD.lstrip("/")).read_text()
        assert load == ("LoadModule pdftoken_module %s\n" % MODULE_SO), load
        conf = (tmp / CONF.lstrip("/")).read_text()
        active = [line.strip() for line in conf.splitlines()
                  if line.strip() and not line.strip().startswith("#")]
        # Safe to enable as is: the secret the postinst made, nothing
        # else.  No LogFormat: a nickname that a2dismod takes away leaves
        # CustomLog logging the bare word.  PdfTokenProtect and the
        # rotation line are only shown in comments.
        assert active == ["<IfModule pdftoken_module>",
                          "PdfTokenSecretFile " + SECRET,
                          "</IfModule>"], active
        assert "#PdfTokenSecretFile %s %s.old" % (SECRET, SECRET) in conf
        assert re.search(r"^#\s+PdfTokenProtect On$", conf, re.M), conf
        # No LogLevel: httpd logs notices (the secret in use) whatever
        # LogLevel says, and a module level here would hide the info lines
        # of an administrator's `LogLevel info`.
        assert "LogLevel" not in "\n".join(active)
    finally:
        shutil.rmtree(tmp)


def test_shipped_docs_link_only_to_each_other():
    """Every relative link of a Markdown file the package ships names a
    file the package ships: nothing points at the source tree."""
    deb = deb_path()
    tmp = Path(tempfile.mkdtemp(prefix="pdftoken-debdoc-"))
    try:
        system.run(["dpkg-deb", "-x", deb, str(tmp)])
        doc = tmp / "usr/share/doc" / system.PACKAGE
        pages = sorted(doc.rglob("*.md"))
        assert len(pages) == 5, pages
        for page in pages:
            for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
                if re.match(r"https?://", target):
                    continue
                file = target.partition("#")[0]
                assert not file or (page.parent / file).is_file(), \
                    (page.relative_to(doc), target)
        # The packaged pdftoken.conf points at files that are there.
        conf = (tmp / CONF.lstrip("/")).read_text()
        for path in re.findall(r"/usr/share/doc/[\w./-]*[\w/]", conf):
            assert (tmp / path.lstrip("/")).exists(), path
    finally:
        shutil.rmtree(tmp)


# ------------------------------------------------------------ installed


def test_dpkg_i_adds_the_module_its_files_and_the_secret_only(deployment):
    d = deployment
    assert system.package_status() == "install ok installed"
    added = system.diff(d.before, d.after_install)
    doc = "/usr/share/doc/" + system.PACKAGE
    expected = {MODULE_SO, LOAD, CONF, SECRET, doc, system.STATE_DIR,
                MADE_MARK}
    assert {line.split()[1] for line in added
            if not line.split()[1].startswith(doc + "/")} == expected, \
        "\n".join(added)
    assert all(line.startswith("added ") for line in added), added
    # Not enabled by the installation itself.
    assert not any(p in d.after_install for p in ENABLED)
    assert "made %s" % SECRET in d.install_out, d.install_out


def test_postinst_made_a_root_only_secret_of_32_random_bytes(deployment):
    s = deployment.secret_made
    assert s is not None, "dpkg -i made no %s" % SECRET
    assert s["kind"] == "file", s
    assert (s["uid"], s["gid"]) == (0, 0), s
    assert s["mode"] == 0o600, oct(s["mode"])
    # 32 bytes as 64 hex digits and a newline: the module ignores the
    # newline and keys its HMAC with the 64 bytes (at least 32 needed).
    assert re.fullmatch(rb"[0-9a-f]{64}\n", s["data"]), s["data"]
    assert len(ref.secret_from_file_bytes(s["data"])) == 64
    # Random, as far as a test can tell: not a run of one digit.
    assert len(set(s["data"][:64])) > 8, s["data"]


def test_reinstall_keeps_the_secret(deployment):
    d = deployment
    assert d.secret_after_reinstall == d.secret_made
    assert "made %s" % SECRET not in d.reinstall_out, d.reinstall_out
    assert system.diff(d.after_install, d.after_reinstall) == []


def test_installing_alone_protects_nothing(deployment):
    d = deployment
    site = Site(d.port)
    assert_untouched(site.get(DOC), d.docs["prot"])


# ------------------------------------- a2enmod, configtest, reload


def test_a2enmod_configtest_and_reload_turn_protection_on(deployment):
    d = deployment
    before = system.snapshot()
    system.run(["a2enmod", "pdftoken"])
    changes = system.diff(before, system.snapshot())
    assert os.readlink(ENABLED[0]) == "../mods-available/pdftoken.load"
    assert os.readlink(ENABLED[1]) == "../mods-available/pdftoken.conf"
    etc = [c for c in changes if c.split()[1].startswith(CONFDIR)]
    assert sorted(c.split()[1] for c in etc) == sorted(ENABLED), changes
    # The whole stock configuration, ports.conf and the default site
    # included: the packaged files with the secret the postinst made.
    rc, out = apache2ctl_configtest()
    assert rc == 0, out
    assert "Syntax OK" in out, out
    pid = d.proc.pid
    d.graceful()
    assert d.proc.pid == pid and d.proc.poll() is None
    _, out = system.run([APACHE, "-d", CONFDIR, "-f", str(d.conf), "-M"],
                        env=d.env, timeout=60)
    assert re.search(r"^ pdftoken_module \(shared\)$", out, re.M), out


def test_stock_server_listens_on_loopback_only(deployment):
    d = deployment
    assert d.proc.poll() is None, d.logs()
    assert system.listening_addresses(d.pids()) == {("127.0.0.1", d.port)}


def test_protected_pdf_redirects_with_a_token_signed_by_the_secret_file(
        deployment):
    d = deployment
    site = Site(d.port)
    secret = ref.read_secret(SECRET)
    r = site.get(DOC)
    token, cookie = assert_redirect(site, r, DOC, secret=secret,
                                    timeout=TIMEOUT)
    assert_inline(site.get(r.location_target(), cookies=[cookie]),
                  d.docs["prot"])
    # The same token without its cookie: the default fallback, a download.
    assert_attachment(site.get(r.location_target()), d.docs["prot"],
                      filename="doc.pdf")


def test_unprotected_pdf_is_untouched(deployment):
    d = deployment
    assert_untouched(Site(d.port).get(OPEN_DOC), d.docs["open"])


def test_error_log_names_the_secret_file(deployment):
    # The main server's start-up notice goes to the stock ErrorLog
    # (${APACHE_LOG_DIR}/error.log: /var/log/apache2/error.log on a real
    # server), whatever LogLevel says.
    d = deployment
    text = d.error_log()
    assert SECRET_NOTICE.search(text), (
        "no line matching %r in the stock error log after the reload: the "
        "module must log, at start-up, the secret each server uses "
        "(PDFTOKEN00016, issue 15)%s\n== error.log\n%s" % (
            SECRET_NOTICE.pattern,
            "" if "PDFTOKEN_LOGNO(00016)" in
            (system.REPO / "mod_pdftoken.c").read_text()
            else "; mod_pdftoken.c has no PDFTOKEN00016 yet", text[-3000:]))


def test_a_token_minted_before_a_restart_opens_the_pdf_after_it(deployment):
    d = deployment
    site = Site(d.port)
    r = site.get(DOC)
    token, cookie = assert_redirect(site, r, DOC,
                                    secret=ref.read_secret(SECRET),
                                    timeout=TIMEOUT)
    old_pid = d.proc.pid
    # A full stop and start, as `systemctl restart apache2`: a new parent
    # process, which would make a new random secret if the packaged
    # pdftoken.conf did not name the file.
    d.stop()
    d.start()
    assert d.proc.pid != old_pid
    assert_inline(site.get(r.location_target(), cookies=[cookie]),
                  d.docs["prot"])


def test_readme_logformat_logs_the_decision(deployment):
    d = deployment
    site = Site(d.port)
    r = site.get(DOC)
    token, cookie = assert_redirect(site, r, DOC, timeout=TIMEOUT)
    assert_inline(site.get(r.location_target(), cookies=[cookie]),
                  d.docs["prot"])
    assert_untouched(site.get(OPEN_DOC + "?logcheck"), d.docs["open"])
    log = d.tmp / "logs" / "site-access.log"
    deadline = time.time() + 5
    want = ['"GET %s HTTP/1.1" 302 ' % DOC,
            '"GET %s?pdftoken=%s HTTP/1.1" 200 ' % (DOC, token),
            '"GET %s?logcheck HTTP/1.1" 200 ' % OPEN_DOC]
    while True:
        lines = log.read_text("latin-1").splitlines() if log.exists() else []
        found = [next((ln for ln in lines if w in ln), None) for w in want]
        if all(found) or time.time() > deadline:
            break
        time.sleep(0.1)
    assert all(found), lines
    assert [ln.rsplit(" ", 1)[1] for ln in found] == [
        "pdftoken=redirect", "pdftoken=pass", "pdftoken=-"], found


def test_example_configuration_passes_configtest_with_the_package(
        deployment):
    # conf/pdftoken.conf.example as is, added to the stock configuration
    # with the package's module enabled: its ServerRoot-relative secret
    # is the file the postinst made.
    d = deployment
    rc, out = system.run([APACHE, "-t", "-d", CONFDIR, "-f",
                          CONFDIR + "/apache2.conf",
                          "-c", "Include %s" % EXAMPLE],
                         env=d.env, check=False, timeout=60)
    assert rc == 0 and "Syntax OK" in out, out


def test_logs_hold_no_token(deployment):
    d = deployment
    text = d.logs()
    for token in ref.SEEN_TOKENS:
        assert token not in text
    for pattern in httpd.FATAL_LOG_PATTERNS:
        assert pattern not in text, text


# ------------------------------------------------------------- and back


def test_a2dismod_leaves_a_configuration_that_passes_and_starts(
        deployment):
    d = deployment
    system.run(["a2dismod", "pdftoken"])
    assert not any(os.path.lexists(p) for p in ENABLED)
    rc, out = apache2ctl_configtest()
    assert rc == 0 and "Syntax OK" in out, out
    d.stop()
    d.start()
    assert d.proc.poll() is None
    # The module is gone: the PDF is served as without it.
    assert_untouched(Site(d.port).get(DOC), d.docs["prot"])
    # The README's LogFormat is mod_log_config's: without the module the
    # decision logs "-", not the nickname as a literal word.
    log = d.tmp / "logs" / "site-access.log"
    want = '"GET %s HTTP/1.1" 200 ' % DOC
    deadline = time.time() + 5
    while want not in log.read_text("latin-1").splitlines()[-1] \
            and time.time() < deadline:
        time.sleep(0.1)
    last = log.read_text("latin-1").splitlines()[-1]
    assert want in last and last.endswith(" pdftoken=-"), last
    # The example, unwrapped on purpose, now fails configtest by name
    # instead of leaving the PDFs silently unprotected.
    rc, out = system.run([APACHE, "-t", "-d", CONFDIR, "-f",
                          CONFDIR + "/apache2.conf",
                          "-c", "Include %s" % EXAMPLE],
                         env=d.env, check=False, timeout=60)
    assert rc != 0, out
    assert "Invalid command 'PdfTokenProtect'" in out, out


def test_purge_deletes_the_secret_and_leaves_a_configuration_that_starts(
        deployment):
    d = deployment
    d.stop()
    out = system.dpkg("--purge", system.PACKAGE)
    assert not system.package_present(), system.package_status()
    assert not os.path.lexists(SECRET), out
    assert not os.path.lexists(SECRET + ".old")
    assert not os.path.lexists(system.STATE_DIR)
    rc, out = apache2ctl_configtest()
    assert rc == 0 and "Syntax OK" in out, out
    d.start()
    assert_untouched(Site(d.port).get(DOC), d.docs["prot"])


def test_teardown_puts_the_machine_back(deployment):
    d = deployment
    pids = d.pids() if d.proc else []
    problems = d.teardown()
    assert not problems, problems
    assert [p for p in pids if system.running_apache(p)] == []
    assert not system.package_present(), system.package_status()
    assert not os.path.exists(MODULE_SO)
    assert system.diff(d.before, system.snapshot()) == []
    assert sorted(os.listdir(CONFDIR + "/mods-enabled")) == sorted(
        os.path.basename(p) for p, v in d.before.items()
        if os.path.dirname(p) == CONFDIR + "/mods-enabled")
    # A stock apache2 that ran before runs still, untouched.
    assert system.stock_apache_pid() == d.stock_pid
