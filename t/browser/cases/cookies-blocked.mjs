// Licensed under the Apache License, Version 2.0; see LICENSE.
//
// c5: a reader who blocks cookies gets the download, never a loop.

import fs from 'node:fs';
import path from 'node:path';
import { TERMINAL, decisions, logFor } from '../lib/accesslog.mjs';
import { cfg } from '../lib/config.mjs';
import { closeBrowser, downloadsIn, launch, newPage } from '../lib/launch.mjs';
import { check, runCase } from '../lib/results.mjs';
import { urlOf } from '../lib/urls.mjs';
import { viewerState } from '../lib/viewer.mjs';
import { sleep, waitFor } from '../lib/wait.mjs';

export async function caseNoCookies() {
  await runCase('c5', async (r) => {
    const c = cfg.cases.c5;
    const ctx = await launch('nocookies', { blockCookies: true });
    try {
      const page = await newPage(ctx, r);
      await page.goto(c.attacker, { waitUntil: 'load', timeout: 15000 });
      await page.click('#go');
      await waitFor(() => logFor(c.path).some((e) => TERMINAL.has(e.tag)), 15000,
                    'a final decision in the access log');
      const expected = fs.readFileSync(c.file);
      const got = await waitFor(() => {
        const f = downloadsIn(ctx).filter((x) => !x.endsWith('.part') && !x.endsWith('.crdownload'));
        if (f.length !== 1) return null;
        const data = fs.readFileSync(path.join(ctx.downloads, f[0]));
        return data.equals(expected) ? f[0] : null;
      }, 15000, 'the PDF in the download directory');
      await sleep(1000); // a loop would show up here
      const entries = logFor(c.path);
      const seq = decisions(entries);
      check(r, JSON.stringify(seq) === JSON.stringify(['redirect', 'fallback']),
            `access log: expected [redirect, fallback], got ${JSON.stringify(seq)}`);
      check(r, seq.filter((t) => t === 'redirect').length <= 1, 'more than one redirect: a loop');
      check(r, entries.every((e) => e.cookies.size === 0), 'a cookie was sent although cookies are blocked');
      const fb = entries.find((e) => e.tag === 'fallback');
      check(r, fb && /^attachment/.test(fb.disposition), `fallback disposition ${fb && fb.disposition}`);
      let view = null;
      try {
        view = await viewerState(page, page.mainFrame());
      } catch { /* navigating */ }
      check(r, !view || view.contentType !== 'application/pdf', 'the PDF is shown inline');
      r.notes.push(`log ${seq.join(',')}; saved as ${got}; page stays on ${await urlOf(page)}`);
      r.outcome = `download (${fb ? fb.disposition.split(';')[0] : '?'}), ${seq.filter((t) => t === 'redirect').length} redirect`;
      await page.close();
    } finally {
      await closeBrowser(ctx);
    }
  });
}
