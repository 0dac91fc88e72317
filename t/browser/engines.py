# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The engines: where each browser lives, running cases.mjs for one of them,
its Xvfb, and the loopback-only network namespace.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

BROWSERS = {
    "chromium": "/usr/bin/chromium",
    "firefox": "/usr/lib/firefox-esr/firefox-esr",
    # WebKitGTK's MiniBrowser, through its W3C WebDriver server (webkit.mjs)
    "webkit": "/usr/bin/WebKitWebDriver",
}
MINIBROWSER = "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser"
# Seconds for one browser's whole run, besides the render matrix's scopes,
# which have budgets of their own (run_node's `matrix_s`).
NODE_TIMEOUT = 900
# WebKit answers one WebDriver command at a time per MiniBrowser and loads
# its pdf.js for every PDF: its matrix takes about twice as long.
WEBKIT_SLOWER = 2


def alive_browser(pid, exe):
    try:
        cmd = Path("/proc/%d/cmdline" % pid).read_bytes()
    except OSError:
        return False
    real = os.path.realpath(exe)
    return (exe.encode() in cmd or real.encode() in cmd
            or b"/usr/lib/chromium/chromium" in cmd
            or b"WebKitWebDriver" in cmd or MINIBROWSER.encode() in cmd)


def reap_browsers(pidfile, exe):
    """Kill what is left of the browsers cases.mjs launched (by PID)."""
    try:
        pids = [int(x) for x in pidfile.read_text().split()]
    except (OSError, ValueError):
        return []
    left = []
    for pid in pids:
        if alive_browser(pid, exe):
            left.append(pid)
            try:
                # puppeteer starts the browser detached: its own group
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
    return left


class Xvfb:
    """An X server of the run's own for WebKit (MiniBrowser has no
    headless mode): started inside the network namespace, on the first
    free display (-displayfd), without TCP."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.proc = None
        self.display = None

    def start(self):
        r, w = os.pipe()
        log_file = open(self.workdir / "xvfb.log", "wb")
        self.proc = subprocess.Popen(
            ["Xvfb", "-displayfd", str(w), "-screen", "0", "1280x1024x24",
             "-nolisten", "tcp", "-noreset"],
            pass_fds=(w,), stdin=subprocess.DEVNULL, stdout=log_file,
            stderr=log_file, start_new_session=True)
        os.close(w)
        log_file.close()
        data = b""
        with os.fdopen(r, "rb") as f:
            while not data.endswith(b"\n"):
                chunk = f.read(1)
                if not chunk:
                    break
                data += chunk
        if not data.strip().isdigit():
            self.stop()
            raise SystemExit("Xvfb did not start: %s" % (
                self.workdir / "xvfb.log").read_text("latin-1")[-500:])
        self.display = ":" + data.strip().decode()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def run_node(b, config_path, workdir, display=None, matrix_s=0):
    """Run cases.mjs for browser b; return (results list, problems).

    matrix_s: the seconds its render matrix scopes may take (their
    budgets and grace), added to the backstop: a loaded CI machine took
    Firefox's rest set to 857 s of the 900 before the matrix grew."""
    node = os.environ.get("NODE", "node")
    env = dict(os.environ)
    home = workdir / ("home-" + b)
    tmp = workdir / ("tmp-" + b)
    for d in (home, tmp):
        d.mkdir(parents=True, exist_ok=True)
    # Browsers write caches and settings under HOME and TMPDIR: keep them
    # in the work directory, which is removed at the end.
    env.update(HOME=str(home), TMPDIR=str(tmp),
               XDG_CONFIG_HOME=str(home / ".config"),
               XDG_CACHE_HOME=str(home / ".cache"),
               MOZ_CRASHREPORTER_DISABLE="1")
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY",
                "DISPLAY", "WAYLAND_DISPLAY"):
        env.pop(var, None)
    if display:
        env["DISPLAY"] = display
    problems = []
    proc = subprocess.Popen([node, str(HERE / "cases.mjs"), str(config_path)],
                            stdin=subprocess.DEVNULL, env=env,
                            start_new_session=True, cwd=str(HERE))
    timeout = NODE_TIMEOUT * (WEBKIT_SLOWER if b == "webkit" else 1) \
        + matrix_s
    try:
        rc = proc.wait(timeout=timeout)
        if rc != 0:
            problems.append("cases.mjs for %s exited with status %d"
                            % (b, rc))
    except subprocess.TimeoutExpired:
        problems.append("cases.mjs for %s did not finish in %d s"
                        % (b, timeout))
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        left = reap_browsers(workdir / ("%s.pids" % b), BROWSERS[b])
        if left:
            problems.append("%s: browser processes %s were still running "
                            "and were killed" % (b, left))
    try:
        data = json.loads((workdir / ("results-%s.json" % b)).read_text())
    except (OSError, ValueError):
        data = {"results": [], "version": "unknown"}
    return data, problems


NETNS_ENV = "PDFTOKEN_BROWSER_NETNS"


def enter_private_network():
    """Re-execute inside a network namespace that has only loopback.

    Needs root and util-linux's unshare; returns (normally only inside the
    namespace) whether the run is isolated.
    """
    if os.environ.get(NETNS_ENV) == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        links = subprocess.run(["ip", "-o", "link", "show"], check=True,
                               capture_output=True, text=True).stdout
        names = [line.split(":")[1].strip().split("@")[0]
                 for line in links.splitlines() if ":" in line]
        if names != ["lo"]:
            raise SystemExit("network namespace has interfaces %s" % names)
        return True
    if os.geteuid() != 0 or not shutil.which("unshare") \
            or not shutil.which("ip"):
        return False
    if subprocess.run(["unshare", "--net", "true"],
                      capture_output=True).returncode != 0:
        return False
    os.environ[NETNS_ENV] = "1"
    sys.stdout.flush()
    # the driver again (run.py, not this file), with its arguments
    os.execvp("unshare", ["unshare", "--net", "--", sys.executable,
                          os.path.abspath(sys.argv[0])] + sys.argv[1:])
    return False  # not reached
