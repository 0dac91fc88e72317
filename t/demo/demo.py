# Licensed under the Apache License, Version 2.0; see LICENSE.
"""make demo: run httpd with mod_pdftoken in the foreground on 127.0.0.1.

Everything (config, documents, logs) is generated in a fresh temporary
directory; the system's /etc/apache2 is never read or touched.  Ctrl-C
stops the server and removes the directory.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "t", "integration"))
from samplepdf import make_pdf  # noqa: E402

APACHE = "/usr/sbin/apache2"
MODULES = "/usr/lib/apache2/modules"

INDEX = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>mod_pdftoken demo</title></head>
<body>
<h1>mod_pdftoken demo</h1>
<p>Every PDF under this server is protected by <code>PdfTokenProtect On</code>.
Open a link and watch the address bar: the first request is answered with a
302 to <code>sample.pdf?pdftoken=&hellip;#</code> and a cookie, and the PDF is
shown inline on the second.</p>
<ul>
<li><a href="sample.pdf">a normal link</a> (<code>sample.pdf</code>)</li>
<li><a href="sample.pdf#page=2">a link to page 2</a>
  (<code>sample.pdf#page=2</code>: the redirect drops every fragment, so
  this opens on page 1)</li>
<li><a href="sample.pdf#x=javascript:alert(document.domain)">the attack</a>
  (<code>sample.pdf#x=javascript:alert(document.domain)</code>: the fragment
  never reaches the PDF viewer)</li>
</ul>
<p>The access log (<code>%s</code>) shows each decision:
redirect, pass, range, fallback or deny.</p>
</body></html>
"""

CONF = """ServerRoot "{root}"
Listen 127.0.0.1:{port}
ServerName 127.0.0.1:{port}
PidFile "{root}/httpd.pid"
DefaultRuntimeDir "{root}"
Mutex file:{root} default
ErrorLog "{root}/error.log"
LogLevel warn pdftoken:debug
LoadModule mpm_event_module {mods}/mod_mpm_event.so
LoadModule authz_core_module {mods}/mod_authz_core.so
LoadModule mime_module {mods}/mod_mime.so
LoadModule dir_module {mods}/mod_dir.so
LoadModule pdftoken_module "{module}"
{user}
TypesConfig /etc/mime.types
LogFormat "%h \\"%r\\" %>s %b pdftoken=%{{PDFTOKEN}}e" demo
CustomLog "{root}/access.log" demo
DocumentRoot "{root}/htdocs"
DirectoryIndex index.html
<Directory "{root}/htdocs">
    Require all granted
    PdfTokenProtect On
</Directory>
"""


def interrupt(signum, frame):
    raise KeyboardInterrupt


def main():
    # make demo may be stopped by SIGTERM or a closed terminal as well as
    # Ctrl-C: stop httpd (it runs in its own session) in every case.
    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGHUP, interrupt)
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--module",
                    default=os.path.join(REPO, ".libs", "mod_pdftoken.so"))
    args = ap.parse_args()
    if not os.path.exists(args.module):
        sys.exit("demo: %s is missing; run `make` first" % args.module)

    root = tempfile.mkdtemp(prefix="pdftoken-demo-")
    os.chmod(root, 0o755)  # the children run as www-data when we are root
    try:
        docs = os.path.join(root, "htdocs")
        os.mkdir(docs)
        with open(os.path.join(docs, "sample.pdf"), "wb") as f:
            f.write(make_pdf("mod_pdftoken demo", pages=3, padding=0))
        with open(os.path.join(docs, "index.html"), "w") as f:
            f.write(INDEX % os.path.join(root, "access.log"))
        for name in os.listdir(docs):
            os.chmod(os.path.join(docs, name), 0o644)
        os.chmod(docs, 0o755)
        user = "User www-data\nGroup www-data" if os.geteuid() == 0 else ""
        conf = os.path.join(root, "httpd.conf")
        with open(conf, "w") as f:
            f.write(CONF.format(root=root, port=args.port, mods=MODULES,
                                module=args.module, user=user))
        check = subprocess.run([APACHE, "-t", "-f", conf],
                               capture_output=True, text=True)
        if check.returncode != 0:
            sys.exit("demo: configuration refused:\n" + check.stderr)
        print("mod_pdftoken demo on http://127.0.0.1:%d/" % args.port)
        print("  open http://127.0.0.1:%d/ and follow the three links" %
              args.port)
        print("  or: curl -si http://127.0.0.1:%d/sample.pdf" % args.port)
        print("  access log: %s/access.log" % root)
        print("  error log:  %s/error.log (LogLevel pdftoken:debug)" % root)
        print("Ctrl-C stops the server.", flush=True)
        proc = subprocess.Popen([APACHE, "-f", conf, "-DFOREGROUND"],
                                start_new_session=True)
        try:
            proc.wait()
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=10)
        if proc.returncode not in (0, -signal.SIGTERM):
            with open(os.path.join(root, "error.log")) as f:
                sys.stderr.write(f.read())
            sys.exit("demo: httpd exited with status %d" % proc.returncode)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
