// Licensed under the Apache License, Version 2.0; see LICENSE.
//
// The run's configuration, written by run.py: node cases.mjs CONFIG.json.

import fs from 'node:fs';

export const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
export const B = cfg.browser;
