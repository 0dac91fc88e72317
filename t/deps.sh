#!/bin/sh
# Install the Debian packages that a group of make targets needs.
# Usage: t/deps.sh GROUP...   (groups: build demo unit fuzz integration
#                              deploy bench browser deb lint)
# As root, missing packages are installed with apt-get; otherwise the exact
# command is printed and the script fails, so nothing half-runs.
set -eu

pkgs_build="apache2-dev libssl-dev pkg-config make gcc"
# make demo: the server binary and its modules (apache2-bin: no service, no
# /etc/apache2), /etc/mime.types, and python3 to run t/demo/demo.py.
pkgs_demo="apache2-bin media-types python3"
# The unit suite alone: token.c and the Check tests against libcrypto (no
# httpd headers), python3 for t/unit/mint_ref.py (standard library only).
pkgs_unit="check pkg-config libssl-dev make gcc python3"
pkgs_fuzz="clang libclang-rt-dev"
# The test servers run /usr/sbin/apache2 from configurations of their own:
# apache2-bin is enough.  libapache2-mod-security2 and modsecurity-crs:
# test_neighbours.py runs the module beside ModSecurity and the OWASP CRS
# in its own server; libapache2-mod-xsendfile: test_xsendfile.py.  Their
# packages enable the module in the system apache2 when that is installed,
# and this script disables it again (below).
pkgs_integration="apache2-bin media-types apache2-dev python3 python3-pytest
 python3-pytest-xdist python3-h2 curl openssl
 php8.2-fpm libapache2-mod-security2 modsecurity-crs
 libapache2-mod-xsendfile"
# make deploy-test installs the module's package into the system's apache2
# (and puts it back as it was): the apache2 package, with /etc/apache2.
pkgs_deploy="apache2"
pkgs_bench="wrk valgrind"
pkgs_lint="clang-format cppcheck"
# `make deb` and the deploy test: dpkg-buildpackage with debhelper 13 and
# dh_apache2 (in apache2-dev, from the build group).
pkgs_deb="debhelper dpkg-dev fakeroot build-essential"
# Debian's browsers for t/browser: Chromium, Firefox ESR, and WebKitGTK's
# MiniBrowser with its WebDriver server (webkit2gtk-driver), which needs an
# X server (xvfb); certutil (libnss3-tools) and openssl for its test CA;
# Node.js and npm (to install puppeteer-core and selenium-webdriver) only
# when no node/npm is on PATH already.
pkgs_browser="chromium firefox-esr webkit2gtk-driver xvfb libnss3-tools openssl"
command -v node >/dev/null 2>&1 || pkgs_browser="$pkgs_browser nodejs"
command -v npm >/dev/null 2>&1 || pkgs_browser="$pkgs_browser npm"

want=""
for group in "$@"; do
    eval "list=\${pkgs_$group:-}"
    if [ -z "$list" ]; then
        echo "t/deps.sh: unknown group '$group'" >&2
        exit 2
    fi
    want="$want $list"
done

missing=""
for p in $want; do
    case " $missing " in *" $p "*) continue ;; esac
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null \
            | grep -q 'install ok installed'; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
    echo "Missing Debian packages:$missing" >&2
    echo "Install them as root with:" >&2
    echo "  apt-get update && apt-get install -y$missing" >&2
    exit 1
fi
echo "Installing missing Debian packages:$missing"
# libapache2-mod-security2's and libapache2-mod-xsendfile's postinst
# enable their module in the system apache2, and restart it, when the
# apache2 package is installed.  No test uses the system's apache2 for
# them: a module this run's install enabled is disabled again below, and a
# running system apache2 reloaded.
fresh_mods=""
for m in security2:libapache2-mod-security2 xsendfile:libapache2-mod-xsendfile; do
    case " $missing " in
        *" ${m#*:} "*)
            if [ ! -e "/etc/apache2/mods-enabled/${m%%:*}.load" ]; then
                fresh_mods="$fresh_mods ${m%%:*}"
            fi ;;
    esac
done
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq
# shellcheck disable=SC2086
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing
disabled=""
for mod in $fresh_mods; do
    if [ -e "/etc/apache2/mods-enabled/$mod.load" ]; then
        a2dismod -q "$mod"
        disabled=1
        echo "t/deps.sh: $mod disabled again in the system apache2 (its" \
             "package enabled it; the tests load it in servers of their own)"
    fi
done
if [ -n "$disabled" ]; then
    pid=$(cat /var/run/apache2/apache2.pid 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        apache2ctl graceful
    fi
fi
