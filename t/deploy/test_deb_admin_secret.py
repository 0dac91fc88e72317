# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The package and a secret it did not make: an administrator's, say the
one a cluster shares, copied from another node before the package was
installed, or copied over the package's own after it.  The postinst uses
it as is, and a purge leaves it (debian/libapache2-mod-pdftoken.postrm),
while a file that still holds what the package made (the previous secret
after a rotation) goes.  A module of its own: test_deb.py holds the
machine lock until its last test."""

import hashlib
import os
import shutil
import tempfile

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


def test_a_cluster_secret_copied_over_the_packages_survives_purge():
    """README, "Clusters and rotation": install the package (it makes its
    own secret), then copy the cluster's secret over it the way an
    administrator does, rotate once, and purge: the cluster's secret is
    kept and the purge says so; the previous secret, still the package's
    own content, is deleted with the package's state."""
    deb = deb_path()
    with system.MachineLock():
        assert not system.package_present(), system.package_status()
        assert not os.path.lexists(SECRET), SECRET
        before = system.snapshot()
        tmp = tempfile.mkdtemp(prefix="pdftoken-cluster-")
        try:
            install_out = system.dpkg("-i", deb)
            assert "made %s" % SECRET in install_out, install_out
            made = open(SECRET, "rb").read()
            with open(MADE_MARK) as f:
                assert f.read().strip() == \
                    hashlib.sha256(made).hexdigest()
            # The rotation's first step keeps the package's secret as .old;
            # then the cluster's secret arrives from another node, copied
            # over the file (cp keeps the file, its owner and mode).
            shutil.copy2(SECRET, SECRET + ".old")
            cluster = os.path.join(tmp, "pdftoken.secret")
            with open(cluster, "wb") as f:
                f.write(b"c1u57e7" * 10 + b"\n")
            system.run(["cp", cluster, SECRET])
            copied = file_state(SECRET)
            assert copied["mode"] == 0o600 and copied["data"] != made
            # The packaged pdftoken.conf accepts it.
            system.run(["a2enmod", "-q", "pdftoken"])
            rc, out = apache2ctl_configtest()
            system.run(["a2dismod", "-q", "pdftoken"])
            assert rc == 0 and "Syntax OK" in out, out
            purge_out = system.dpkg("--purge", system.PACKAGE)
            assert file_state(SECRET) == copied, purge_out
            assert "kept %s:" % SECRET in purge_out, purge_out
            assert not os.path.lexists(SECRET + ".old"), purge_out
            assert not os.path.lexists(system.STATE_DIR)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            if system.package_status():
                system.run(["a2dismod", "-q", "pdftoken"], check=False)
                system.dpkg("--purge", system.PACKAGE)
            for p in (SECRET, SECRET + ".old"):
                if os.path.lexists(p):
                    os.unlink(p)
            system.remove_new_empty_dirs(before, "/var/lib/apache2")
        assert system.diff(before, system.snapshot()) == []
