// Licensed under the Apache License, Version 2.0; see LICENSE.
//
// The browser side of the mod_pdftoken end-to-end tests: drives one browser
// (Debian's Chromium over CDP, or Firefox ESR over WebDriver BiDi, with
// puppeteer-core; or WebKitGTK's MiniBrowser over W3C WebDriver through
// webkit.mjs, which gives it the same page interface) through every case,
// reads the server's access log, and writes the results as JSON.  Started
// by t/browser/run.py, which runs the servers:   node cases.mjs CONFIG.json
//
// Each case checks what a person would see (final URL, the PDF viewer and
// its page, a screenshot that is not blank, downloads) and what the server
// logged (redirect / pass / fallback, and whether the matching cookie came
// back).

import fs from 'node:fs';
import { caseNoCookies } from './cases/cookies-blocked.mjs';
import { caseCrossSite, caseCrossSiteMatrix } from './cases/crosssite.mjs';
import { caseFragmentTable, caseNoScript, caseSafeLinks, caseSafePage, caseStripScope } from './cases/fragment.mjs';
import { caseCrossSiteIframe, caseTwoIframes, caseTwoTabs } from './cases/frames.mjs';
import { caseHttps, casePlanted } from './cases/https.mjs';
import { caseCachedBefore, caseDynamic, caseLinkClick, casePage2, caseProbe, caseScript, caseStale, caseStaleLink, caseViewerLink } from './cases/links.mjs';
import { caseMatrix } from './cases/matrix.mjs';
import { caseFloodMethods, casePileUp } from './cases/pileup.mjs';
import { B, cfg } from './lib/config.mjs';
import { closeBrowser, launch } from './lib/launch.mjs';
import { setVersion, writeResults } from './lib/results.mjs';

async function caseHttpsAll() {
  const want = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].filter((id) => !cfg.only || cfg.only.includes(id));
  if (want.length) {
    const ctx = await launch('https', { downloadEvents: true });
    try {
      await caseHttps(ctx);
      await casePlanted(ctx);
    } finally {
      await closeBrowser(ctx);
    }
  }
  await caseFloodMethods();
  for (const id of ['p1', 'p2', 'p3']) await casePileUp(id);
}

// ------------------------------------------------------------------ main

async function main() {
  fs.mkdirSync(cfg.workdir, { recursive: true });
  writeResults();
  const ctx = await launch('main');
  try {
    const version = await ctx.browser.version();
    setVersion(version);
    console.log(`[${B}] ${version} (${cfg.executable})`);
    writeResults();
    await caseLinkClick(ctx);
    await caseScript(ctx);
    await casePage2(ctx);
    await caseCachedBefore(ctx);
    await caseViewerLink(ctx);
    await caseProbe(ctx);
    await caseTwoTabs(ctx);
    await caseTwoIframes(ctx);
    await caseStale(ctx);
    await caseStaleLink(ctx);
    await caseDynamic(ctx);
    // PdfTokenFragment safe, before c8: its download would count against
    // the "nothing downloaded" checks of any later case in this browser
    await caseFragmentTable(ctx);
    await caseSafePage(ctx);
    await caseSafeLinks(ctx);
    await caseStripScope(ctx);
    if (B === 'chromium') await caseNoScript(ctx);
    await caseCrossSiteIframe(ctx);
  } finally {
    await closeBrowser(ctx);
  }
  if (!cfg.only || cfg.only.includes('c5')) await caseNoCookies();
  if (B !== 'chromium' && (!cfg.only || cfg.only.includes('f5'))) await caseNoScript(null);
  await caseCrossSite();
  await caseHttpsAll();
  await caseCrossSiteMatrix();
  await caseMatrix();
  writeResults();
}

main().then(() => process.exit(0), (e) => {
  console.error(`[${B}] fatal: ${e.stack || e}`);
  writeResults();
  process.exit(1);
});
