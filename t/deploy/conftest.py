# Licensed under the Apache License, Version 2.0; see LICENSE.
"""The deploy tests reuse the integration suite's HTTP client and checks.

    PDFTOKEN_DEB   the package to install (make deploy-test passes the one
                   `make deb` built; without it the tests run `make deb`)
"""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))
