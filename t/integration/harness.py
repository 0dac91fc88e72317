# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The names the test harness had when it was one file, for scripts that
still import them from here (t/browser).  New code imports from where
each concern lives:

    httpd.py        a real httpd: configuration, start, restart, stop, logs
                    (Httpd, ServerPool, make_workdir, MPM, cgi_module, ...)
    client.py       the HTTP/1.1 client and Response parsing
    h2client.py     the HTTP/2 client (H2Client, curl)
    disposition.py  Content-Disposition as browsers read it

Assigning a setting here (harness.MPM = ...) changes nothing: set it on
httpd instead.
"""

from client import (Response, http_request, parse_set_cookie,  # noqa: F401
                    query_values, raw_request, tls_context, tls_wrap)
from disposition import download_name, parse_content_disposition  # noqa
from h2client import H2Client, H2Response, curl  # noqa: F401
from httpd import (APACHE, FATAL_LOG_PATTERNS, HTTPD_PRELOAD,  # noqa: F401
                   MODULE, MPM, Httpd, ServerPool, cgi_module, free_port,
                   make_workdir, module_path, remove_workdir, reserve_port)
