# Licensed under the Apache License, Version 2.0; see LICENSE.
"""`make install` puts mod_pdftoken.so into `apxs -q LIBEXECDIR` under
DESTDIR, and nothing else anywhere: no .la, no httpd.conf edit (never
`apxs -a`)."""

import filecmp
import shutil
import tempfile
from pathlib import Path

import system


def test_make_install_destdir_installs_exactly_the_module():
    _, libexecdir = system.run(["apxs", "-q", "LIBEXECDIR"])
    libexecdir = libexecdir.strip()
    assert libexecdir.startswith("/"), libexecdir
    dest = Path(tempfile.mkdtemp(prefix="pdftoken-destdir-"))
    before = system.snapshot()
    try:
        system.run(["make", "-C", str(system.REPO), "install",
                    "DESTDIR=%s" % dest], timeout=300)
        files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*")
                       if not p.is_dir())
        assert files == [libexecdir.lstrip("/") + "/mod_pdftoken.so"], files
        installed = dest / libexecdir.lstrip("/") / "mod_pdftoken.so"
        assert filecmp.cmp(installed, system.REPO / ".libs" /
                           "mod_pdftoken.so", shallow=False)
        assert oct(installed.stat().st_mode & 0o777) == "0o644"
        dirs = sorted(str(p.relative_to(dest)) for p in dest.rglob("*")
                      if p.is_dir())
        parts = Path(libexecdir.lstrip("/")).parts
        assert dirs == [str(Path(*parts[:i + 1])) for i in range(len(parts))]
        # Nothing outside DESTDIR: /etc/apache2, the module directory and
        # the rest of the watched system directories are as they were.
        assert system.diff(before, system.snapshot()) == []
    finally:
        shutil.rmtree(dest, ignore_errors=True)
