# Licensed under the Apache License, Version 2.0; see LICENSE.
"""`make install`: mod_pdftoken.so into `apxs -q LIBEXECDIR`, and on Debian
pdftoken.load (naming that .so) and pdftoken.conf into
/etc/apache2/mods-available, all under DESTDIR; no .la, no httpd.conf edit
(never `apxs -a`), no a2enmod.  Onto the live system (no DESTDIR) it also
makes the secret beside httpd.conf, so that `a2enmod pdftoken` then gives a
configuration that passes `apache2ctl configtest`, and where there is no
mods-available it prints the two lines that load the module."""

import filecmp
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

import system

MODS = "etc/apache2/mods-available"
SECRET = "/etc/apache2/pdftoken.secret"
ENABLED = ("/etc/apache2/mods-enabled/pdftoken.load",
           "/etc/apache2/mods-enabled/pdftoken.conf")


def libexecdir():
    _, out = system.run(["apxs", "-q", "LIBEXECDIR"])
    out = out.strip()
    assert out.startswith("/"), out
    return out


def test_make_install_destdir_installs_the_module_and_a2enmod_files():
    lib = libexecdir()
    dest = Path(tempfile.mkdtemp(prefix="pdftoken-destdir-"))
    before = system.snapshot()
    try:
        system.run(["make", "-C", str(system.REPO), "install",
                    "DESTDIR=%s" % dest], timeout=300)
        files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*")
                       if not p.is_dir())
        # No secret: a staged tree is copied, and every copy would share
        # it.
        assert files == sorted([lib.lstrip("/") + "/mod_pdftoken.so",
                                MODS + "/pdftoken.load",
                                MODS + "/pdftoken.conf"]), files
        installed = dest / lib.lstrip("/") / "mod_pdftoken.so"
        assert filecmp.cmp(installed, system.REPO / ".libs" /
                           "mod_pdftoken.so", shallow=False)
        for f in files:
            assert oct((dest / f).stat().st_mode & 0o777) == "0o644", f
        # The path the running server sees: without DESTDIR.
        assert (dest / MODS / "pdftoken.load").read_text() == \
            "LoadModule pdftoken_module %s/mod_pdftoken.so\n" % lib
        assert filecmp.cmp(dest / MODS / "pdftoken.conf",
                           system.REPO / "debian" / "pdftoken.conf",
                           shallow=False)
        dirs = sorted(str(p.relative_to(dest)) for p in dest.rglob("*")
                      if p.is_dir())
        want = set()
        for d in (lib.lstrip("/"), MODS):
            parts = Path(d).parts
            want |= {str(Path(*parts[:i + 1])) for i in range(len(parts))}
        assert dirs == sorted(want), dirs
        # Nothing outside DESTDIR: /etc/apache2, the module directory and
        # the rest of the watched system directories are as they were.
        assert system.diff(before, system.snapshot()) == []

        # Again: an administrator's edited pdftoken.conf is kept.
        (dest / MODS / "pdftoken.conf").write_text("# edited\n")
        _, out = system.run(["make", "-C", str(system.REPO), "install",
                             "DESTDIR=%s" % dest], timeout=300)
        assert (dest / MODS / "pdftoken.conf").read_text() == "# edited\n"
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def test_make_install_without_mods_available_installs_the_module_only():
    lib = libexecdir()
    dest = Path(tempfile.mkdtemp(prefix="pdftoken-destdir-"))
    try:
        system.run(["make", "-C", str(system.REPO), "install",
                    "DESTDIR=%s" % dest, "APACHE_MODS_AVAILABLE="],
                   timeout=300)
        files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*")
                       if not p.is_dir())
        assert files == [lib.lstrip("/") + "/mod_pdftoken.so"], files
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def test_make_install_then_a2enmod_passes_configtest():
    """The administrator's path without the package, on this machine's
    apache2, and back: make install, a2enmod pdftoken, apache2ctl
    configtest; then a2dismod and the installed files removed."""
    so = libexecdir() + "/mod_pdftoken.so"
    with system.MachineLock():
        assert not system.package_present(), system.package_status()
        for p in (so, SECRET, "/" + MODS + "/pdftoken.load",
                  "/" + MODS + "/pdftoken.conf") + ENABLED:
            assert not os.path.lexists(p), "%s exists already" % p
        before = system.snapshot()
        try:
            _, out = system.run(["make", "-C", str(system.REPO), "install"],
                                timeout=300)
            assert "made %s" % SECRET in out, out
            assert "Enable it with:  a2enmod pdftoken" in out, out
            st = os.stat(SECRET)
            assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o600)
            assert re.fullmatch(rb"[0-9a-f]{64}\n",
                                Path(SECRET).read_bytes())
            made = Path(SECRET).read_bytes()
            # Nothing enabled by the install.
            assert not any(os.path.lexists(p) for p in ENABLED)
            system.run(["a2enmod", "pdftoken"])
            env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}
            rc, out = system.run(["apache2ctl", "-M"], env=env,
                                 check=False, timeout=60)
            assert rc == 0, out
            assert re.search(r"^ pdftoken_module \(shared\)$", out, re.M)
            rc, out = system.run(["apache2ctl", "configtest"], env=env,
                                 check=False, timeout=60)
            assert rc == 0 and "Syntax OK" in out, out
            # A second install keeps the secret.
            _, out = system.run(["make", "-C", str(system.REPO), "install"],
                                timeout=300)
            assert "kept %s" % SECRET in out, out
            assert Path(SECRET).read_bytes() == made
        finally:
            system.run(["a2dismod", "-q", "-p", "pdftoken"], check=False)
            for p in (so, SECRET, "/" + MODS + "/pdftoken.load",
                      "/" + MODS + "/pdftoken.conf"):
                if os.path.lexists(p):
                    os.unlink(p)
            system.remove_new_empty_dirs(before, "/var/lib/apache2")
        assert system.diff(before, system.snapshot()) == []


def printed_lines(out):
    """The two lines `make install` prints where there is no
    mods-available: LoadModule and PdfTokenSecretFile."""
    lines = re.findall(r"^  ((?:LoadModule|PdfTokenSecretFile) .*)$", out,
                       re.M)
    assert [line.split()[0] for line in lines] == [
        "LoadModule", "PdfTokenSecretFile"], out
    return lines


def apxs_layout_conf(root, lib, body):
    """A minimal httpd.conf of an httpd built from source, in root."""
    return ("ServerRoot %s\n"
            "LoadModule mpm_event_module %s/mod_mpm_event.so\n"
            "LoadModule authz_core_module %s/mod_authz_core.so\n"
            "ServerName 127.0.0.1\n"
            "Listen 127.0.0.1:80\n"
            "ErrorLog %s/error.log\n%s\n" % (root, lib, lib, root, body))


def test_make_install_elsewhere_prints_the_lines_that_load_it():
    """README, "Any httpd 2.4 with apxs", where there is no
    mods-available: `make install` onto the live system makes the secret
    beside httpd.conf (apxs -q SYSCONFDIR) and prints the two lines to add;
    with them and the example configuration, configtest passes.  Then the
    installed files are removed."""
    lib = libexecdir()
    so = lib + "/mod_pdftoken.so"
    with system.MachineLock():
        assert not system.package_present(), system.package_status()
        for p in (so, SECRET):
            assert not os.path.lexists(p), "%s exists already" % p
        before = system.snapshot()
        root = Path(tempfile.mkdtemp(prefix="pdftoken-elsewhere-"))
        try:
            _, out = system.run(["make", "-C", str(system.REPO), "install",
                                 "APACHE_MODS_AVAILABLE="], timeout=300)
            assert "made %s" % SECRET in out, out
            lines = printed_lines(out)
            assert lines == ["LoadModule pdftoken_module " + so,
                             "PdfTokenSecretFile " + SECRET], lines
            example = system.REPO / "conf" / "pdftoken.conf.example"
            (root / "httpd.conf").write_text(apxs_layout_conf(
                root, lib, "\n".join(lines) + "\nInclude %s" % example))
            rc, out = system.run(["/usr/sbin/apache2", "-t", "-f",
                                  str(root / "httpd.conf")], check=False,
                                 timeout=60)
            assert rc == 0 and "Syntax OK" in out, out
        finally:
            shutil.rmtree(root, ignore_errors=True)
            for p in (so, SECRET):
                if os.path.lexists(p):
                    os.unlink(p)
        assert system.diff(before, system.snapshot()) == []


def test_example_configuration_passes_configtest_with_apxs_layout():
    """conf/pdftoken.conf.example in an httpd laid out as one built from
    source: the module loaded by the absolute path make install used, the
    secret in ServerRoot's conf/, nothing from /etc/apache2."""
    lib = libexecdir()
    dest = Path(tempfile.mkdtemp(prefix="pdftoken-apxs-"))
    try:
        system.run(["make", "-C", str(system.REPO), "install",
                    "DESTDIR=%s" % dest, "APACHE_MODS_AVAILABLE="],
                   timeout=300)
        root = dest / "serverroot"
        (root / "conf").mkdir(parents=True)
        (root / "conf" / "pdftoken.secret").write_text("c" * 64 + "\n")
        example = system.REPO / "conf" / "pdftoken.conf.example"
        so = "%s%s/mod_pdftoken.so" % (dest, lib)
        (root / "httpd.conf").write_text(apxs_layout_conf(
            root, lib, "LoadModule pdftoken_module %s\n"
            "PdfTokenSecretFile conf/pdftoken.secret\n"
            "Include %s" % (so, example)))
        rc, out = system.run(["/usr/sbin/apache2", "-t", "-f",
                              str(root / "httpd.conf")], check=False,
                             timeout=60)
        assert rc == 0 and "Syntax OK" in out, out
        # Without the module the same file fails configtest by name:
        # the example is unwrapped on purpose.
        (root / "httpd.conf").write_text(apxs_layout_conf(
            root, lib, "Include %s" % example))
        rc, out = system.run(["/usr/sbin/apache2", "-t", "-f",
                              str(root / "httpd.conf")], check=False,
                             timeout=60)
        assert rc != 0 and "Invalid command 'PdfTokenProtect'" in out, out
    finally:
        shutil.rmtree(dest, ignore_errors=True)
