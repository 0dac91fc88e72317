# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The Debian package on this machine's own apache2, and back.

`dpkg -i` the package that `make deb` built, `a2enmod pdftoken`, start the
stock /usr/sbin/apache2 from the stock /etc/apache2 configuration with one
site on a free 127.0.0.1 port, check that a protected PDF gets R1 and then
R2, stop it, `a2dismod`, `dpkg --purge`, and check that /etc/apache2,
/var/lib/apache2, the module directory and the package's doc directory are
exactly as they were.  Needs root, as CI has.

The stock server starts from a copy of /etc/apache2/apache2.conf in which
two lines differ: `Include ports.conf` (Listen 80, and 443 with mod_ssl)
and `IncludeOptional sites-enabled/*.conf` (the default site) are replaced
by one `Listen 127.0.0.1:PORT` and one virtual host.  Everything else
(mods-enabled, conf-enabled, envvars) is the system's own, read in place;
nothing is added to /etc/apache2 but what the package and a2enmod add.
Its run-time files and logs go to a temporary directory (APACHE_RUN_DIR,
APACHE_LOCK_DIR, APACHE_LOG_DIR, APACHE_PID_FILE from envvars, overridden),
so a stock apache2 that is already running is never touched and is still
running, with the same pid, at the end.
"""

import functools
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import harness
import pdftoken_ref as ref
import system
from checks import (assert_attachment, assert_inline, assert_redirect,
                    assert_untouched)
from samplepdf import make_pdf

APACHE = "/usr/sbin/apache2"
CONFDIR = "/etc/apache2"
MODULE_SO = "/usr/lib/apache2/modules/mod_pdftoken.so"
LOAD = CONFDIR + "/mods-available/pdftoken.load"
CONF = CONFDIR + "/mods-available/pdftoken.conf"
ENABLED = (CONFDIR + "/mods-enabled/pdftoken.load",
           CONFDIR + "/mods-enabled/pdftoken.conf")
DOC = "/prot/doc.pdf"
OPEN_DOC = "/open/doc.pdf"

# The two lines of the stock apache2.conf that would make it listen on
# every address (ports.conf) and serve the default site.
PORTS_LINE = re.compile(r"^[ \t]*Include[ \t]+ports\.conf[ \t]*$", re.M)
SITES_LINE = re.compile(
    r"^[ \t]*IncludeOptional[ \t]+sites-enabled/\*\.conf[ \t]*$", re.M)

SITE = """
# mod_pdftoken deploy test: one site, on the loopback address only.
Listen 127.0.0.1:@PORT@
<VirtualHost 127.0.0.1:@PORT@>
    ServerName 127.0.0.1
    DocumentRoot "@TMP@/htdocs"
    ErrorLog "@TMP@/logs/site-error.log"
    # The nickname is defined by the packaged pdftoken.conf.
    CustomLog "@TMP@/logs/site-access.log" pdftoken
    LogLevel notice pdftoken:debug
    PdfTokenSecretFile "@TMP@/secret"
    <Directory "@TMP@/htdocs">
        Require all granted
    </Directory>
    <Directory "@TMP@/htdocs/prot">
        PdfTokenProtect On
    </Directory>
</VirtualHost>
"""


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
        return harness.http_request(self.port, "GET", target,
                                    headers=headers, timeout=20)


class Deployment:
    """Install, enable, start; and undo all of it, whatever happened."""

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
        (self.tmp / "secret").write_text(os.urandom(32).hex() + "\n")
        (self.tmp / "secret").chmod(0o600)
        self.secret = ref.read_secret(self.tmp / "secret")

        self.install_out = system.dpkg("-i", self.deb)
        self.after_install = system.snapshot()
        _, self.enmod_out = system.run(["a2enmod", "pdftoken"])
        self.after_enable = system.snapshot()

        self.env = stock_env(self.tmp)
        self.configtest_rc, self.configtest_out = system.run(
            [APACHE, "-t", "-d", CONFDIR, "-f", CONFDIR + "/apache2.conf"],
            env=self.env, check=False, timeout=60)

        self.port = harness.free_port()
        site = (SITE.replace("@PORT@", str(self.port))
                .replace("@TMP@", str(self.tmp)))
        conf = PORTS_LINE.sub("# (ports.conf left out by the deploy test)",
                              stock)
        conf = SITES_LINE.sub(lambda m: site, conf)
        self.conf = self.tmp / "apache2.conf"
        self.conf.write_text(conf)
        self.start()

    def start(self, timeout=30):
        log = open(self.tmp / "logs" / "stderr.log", "ab")
        self.proc = subprocess.Popen(
            [APACHE, "-d", CONFDIR, "-f", str(self.conf), "-DFOREGROUND"],
            env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True, cwd=str(self.tmp))
        log.close()
        error_log = self.tmp / "logs" / "error.log"
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("stock apache2 exited %d:\n%s"
                                     % (self.proc.returncode, self.logs()))
            text = error_log.read_text("latin-1") if error_log.exists() \
                else ""
            if "resuming normal operations" in text:
                try:
                    harness.http_request(self.port, "GET", "/", timeout=5)
                    return
                except OSError:
                    pass
            time.sleep(0.1)
        raise AssertionError("stock apache2 did not come up:\n" + self.logs())

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
        after = system.tree_state("/var/lib/apache2")
        for p in sorted(set(after) - set(self.before), reverse=True):
            if after[p][0] == "dir" and not os.listdir(p):
                os.rmdir(p)

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
    assert files == sorted([
        MODULE_SO, LOAD, CONF,
        doc + "/README.md.gz", doc + "/directives.md.gz",
        doc + "/changelog.Debian.gz", doc + "/copyright",
        doc + "/examples/pdftoken.conf.example",
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


def test_package_installs_without_enabling_and_disables_on_removal():
    deb = deb_path()
    tmp = Path(tempfile.mkdtemp(prefix="pdftoken-debctl-"))
    try:
        system.run(["dpkg-deb", "-e", deb, str(tmp)])
        assert sorted(os.listdir(tmp)) == ["conffiles", "control",
                                           "md5sums", "postrm", "prerm"]
        assert (tmp / "conffiles").read_text().split() == [CONF, LOAD]
        # No postinst: installing leaves the running server alone
        # (dh_apache2 --noenable).  prerm and postrm disable and purge.
        assert "apache2_invoke dismod $conf" in (tmp / "prerm").read_text()
        assert "apache2_invoke dismod $conf" in (tmp / "postrm").read_text()
    finally:
        shutil.rmtree(tmp)


def test_packaged_module_exports_only_its_module_record():
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
        # Safe to enable as is: nothing but the IfModule and a LogFormat
        # nickname is active; PdfTokenProtect and PdfTokenSecretFile are
        # only shown in comments.
        assert active[0] == "<IfModule pdftoken_module>", active
        assert active[-1] == "</IfModule>", active
        assert [a.split()[0] for a in active[1:-1]] == ["LogFormat"], active
        assert "#PdfTokenSecretFile /etc/apache2/pdftoken.secret" in conf
        assert "#    PdfTokenProtect On" in conf
    finally:
        shutil.rmtree(tmp)


# ------------------------------------------------- installed and enabled


def test_dpkg_i_adds_the_module_and_mods_available_files_only(deployment):
    d = deployment
    assert system.package_status() == "install ok installed"
    added = system.diff(d.before, d.after_install)
    doc = "/usr/share/doc/" + system.PACKAGE
    expected = {MODULE_SO, LOAD, CONF, doc}
    assert {line.split()[1] for line in added
            if not line.split()[1].startswith(doc + "/")} == expected, \
        "\n".join(added)
    assert all(line.startswith("added ") for line in added), added
    # Not enabled by the installation itself.
    assert not any(p in d.after_install for p in ENABLED)


def test_a2enmod_links_the_load_and_conf_files(deployment):
    d = deployment
    changes = system.diff(d.after_install, d.after_enable)
    assert os.readlink(ENABLED[0]) == "../mods-available/pdftoken.load"
    assert os.readlink(ENABLED[1]) == "../mods-available/pdftoken.conf"
    etc = [c for c in changes if c.split()[1].startswith(CONFDIR)]
    assert sorted(c.split()[1] for c in etc) == sorted(ENABLED), changes


def test_stock_configuration_with_module_enabled_passes_configtest(
        deployment):
    # The whole stock configuration, ports.conf and default site included
    # (apache2 -t binds nothing): the packaged files are valid as shipped,
    # with no secret file and no protection anywhere.
    d = deployment
    assert d.configtest_rc == 0, d.configtest_out
    assert "Syntax OK" in d.configtest_out, d.configtest_out


def test_stock_server_loaded_the_packaged_module(deployment):
    d = deployment
    _, out = system.run([APACHE, "-d", CONFDIR, "-f", str(d.conf), "-M"],
                        env=d.env, timeout=60)
    assert re.search(r"^ pdftoken_module \(shared\)$", out, re.M), out


def test_stock_server_listens_on_loopback_only(deployment):
    d = deployment
    assert d.proc.poll() is None, d.logs()
    assert system.listening_addresses(d.pids()) == {("127.0.0.1", d.port)}


def test_protected_pdf_redirects_then_serves_inline(deployment):
    d = deployment
    site = Site(d.port)
    r = site.get(DOC)
    token, cookie = assert_redirect(site, r, DOC, secret=d.secret)
    assert_inline(site.get(r.location_target(), cookies=[cookie]),
                  d.docs["prot"])
    # The same token without its cookie: the default fallback, a download.
    assert_attachment(site.get(r.location_target()), d.docs["prot"],
                      filename="doc.pdf")


def test_unprotected_pdf_is_untouched(deployment):
    # Enabling the module and its pdftoken.conf protects nothing by itself.
    d = deployment
    assert_untouched(Site(d.port).get(OPEN_DOC), d.docs["open"])


def test_packaged_logformat_logs_the_decision(deployment):
    d = deployment
    site = Site(d.port)
    r = site.get(DOC)
    token, cookie = assert_redirect(site, r, DOC, secret=d.secret)
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


def test_logs_hold_no_token(deployment):
    d = deployment
    text = d.logs()
    for token in ref.SEEN_TOKENS:
        assert token not in text
    for pattern in harness.FATAL_LOG_PATTERNS:
        assert pattern not in text, text


# ------------------------------------------------------------- and back


def test_purge_puts_the_machine_back(deployment):
    d = deployment
    pids = d.pids()
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
