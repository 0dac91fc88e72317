# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The package and a secret that was there before it: an administrator's,
say the one a cluster shares, copied from another node.  The postinst uses
it as is, and a purge leaves it (debian/libapache2-mod-pdftoken.postrm).
A module of its own: test_deb.py holds the machine lock until its last
test."""

import os

import system
from test_deb import (MADE_MARK, SECRET, apache2ctl_configtest, deb_path,
                      file_state)


def test_an_administrators_secret_is_kept_by_install_and_purge():
    """A secret that was there first (the one a cluster shares, copied
    from another node) is used as is, and a purge leaves it."""
    deb = deb_path()
    with system.MachineLock():
        assert not system.package_present(), system.package_status()
        assert not os.path.lexists(SECRET), SECRET
        before = system.snapshot()
        try:
            mine = b"an administrator's secret of more than 32 bytes\n"
            fd = os.open(SECRET, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(mine)
            made = file_state(SECRET)
            install_out = system.dpkg("-i", deb)
            assert file_state(SECRET) == made
            assert "made %s" % SECRET not in install_out, install_out
            assert not os.path.lexists(MADE_MARK)
            # The packaged pdftoken.conf accepts it.
            system.run(["a2enmod", "-q", "pdftoken"])
            rc, out = apache2ctl_configtest()
            system.run(["a2dismod", "-q", "pdftoken"])
            assert rc == 0 and "Syntax OK" in out, out
            purge_out = system.dpkg("--purge", system.PACKAGE)
            assert file_state(SECRET) == made
            assert "kept %s" % SECRET in purge_out, purge_out
        finally:
            if system.package_status():
                system.run(["a2dismod", "-q", "pdftoken"], check=False)
                system.dpkg("--purge", system.PACKAGE)
            if os.path.lexists(SECRET):
                os.unlink(SECRET)
            system.remove_new_empty_dirs(before, "/var/lib/apache2")
        assert system.diff(before, system.snapshot()) == []
