// Licensed under the Apache License, Version 2.0; see LICENSE.
//
// f1-f6: PdfTokenFragment safe.

import { decisions, logFor } from '../lib/accesslog.mjs';
import { B, cfg } from '../lib/config.mjs';
import { NO_PAGE_FRAGMENT, expectInline, viewerShowsPageFragment } from '../lib/expect.mjs';
import { closeBrowser, launch, newPage, startGoto } from '../lib/launch.mjs';
import { check, limit, runCase } from '../lib/results.mjs';
import { fragmentOf, queryToken } from '../lib/urls.mjs';
import { viewerState } from '../lib/viewer.mjs';
import { sleep, waitFor, withTimeout } from '../lib/wait.mjs';

// One visit of the f1 probe: navigate (a real navigation, so the request
// says Sec-Fetch-Dest: document) to probe.html?n=<n><fragment>; the module
// answers with its fragment page, whose script goes on to
// probe.html?n=<n>&pdftoken=T#<kept>; the probe keeps its location there.
// `n` tells this visit's probe from the previous one's.
async function visitProbe(page, url, n) {
  const nav = page.goto(url, { waitUntil: 'load', timeout: 20000 }).catch((e) => e);
  const want = `?n=${n}&pdftoken=`;
  try {
    return await waitFor(async () => {
      const p = await withTimeout(page.evaluate(() => window.pdftokenProbe || null),
                                  2000, 'reading the probe');
      return p && p.href.includes(want) ? p : null;
    }, 20000, 'the probe page'); // a loaded machine can take seconds
  } finally {
    await nav;
  }
}

// Show a fragment in a table cell or a message: JSON, long ones cut.
function showFragment(f) {
  const s = JSON.stringify(f);
  return s.length > 60 ? `${s.slice(0, 40)}...(${f.length} chars)` : s;
}

export async function caseFragmentTable(ctx) {
  await runCase('f1', async (r) => {
    const c = cfg.cases.f1;
    const page = await newPage(ctx, r);
    const bad = [];
    const missed = [];
    for (const [i, f] of c.fragments.entries()) {
      const n = i + 1;
      let got;
      try {
        got = await visitProbe(page, `${c.url}?n=${n}${f.fragment}`, n);
      } catch (e) {
        bad.push(`${showFragment(f.fragment)}: expected ${showFragment(f.expected)}, got no probe (${e.message})`);
        missed.push(showFragment(f.fragment));
        continue;
      }
      const frag = fragmentOf(got.href);
      const hash = f.expected === '#' ? '' : f.expected;
      if (frag === null || `#${frag}` !== f.expected || got.hash !== hash || !queryToken(got.href)) {
        bad.push(`${showFragment(f.fragment)} (${f.why}): expected ${showFragment(f.expected)}, ` +
                 `got ${frag === null ? 'no fragment' : showFragment(`#${frag}`)} ` +
                 `(location.hash ${showFragment(got.hash)}, ${got.href.length > 200 ? 'long URL' : got.href})`);
        missed.push(showFragment(f.fragment));
      }
    }
    await sleep(300);
    // Every visit: the fragment page (200, logged as redirect), then the
    // probe itself with its token and matching cookie; nothing else.
    const entries = logFor(c.path);
    const seq = decisions(entries);
    const count = (t) => seq.filter((x) => x === t).length;
    const N = c.fragments.length;
    check(r, count('redirect') === N && count('pass') === N && seq.length === 2 * N,
          `access log: expected ${N} redirects and ${N} passes, got ${count('redirect')} ` +
          `redirects, ${count('pass')} passes of ${seq.length}`);
    const redirects = entries.filter((e) => e.tag === 'redirect');
    check(r, redirects.every((e) => e.status === 200 && e.dest === 'document' && !e.token),
          'a first visit was not answered with the 200 fragment page: ' +
          redirects.filter((e) => e.status !== 200 || e.dest !== 'document').map((e) => e.line)[0]);
    const passes = entries.filter((e) => e.tag === 'pass');
    check(r, passes.every((e) => e.cookieMatch && e.status === 200),
          'a pass without its matching cookie');
    for (const b of bad) r.failures.push(`fragment ${b}`);
    r.notes.push(`sec-fetch-dest of the first visits: ${[...new Set(redirects.map((e) => e.dest))].join(',')}`);
    r.outcome = `${N - bad.length}/${N} fragments as expected` +
      (missed.length ? `; mismatch: ${missed.join(' ')}` : '');
    await page.close();
  }, 150000);
}

// Wait until the viewer of the page's main frame is on page `want`.
async function viewerOnPage(page, want, timeout = 6000) {
  let last = null;
  try {
    return await waitFor(async () => {
      last = await viewerState(page, page.mainFrame());
      return last.page === want ? last : null;
    }, timeout, `the viewer on page ${want}`);
  } catch {
    return last;
  }
}

export async function caseSafePage(ctx) {
  await runCase('f2', async (r) => {
    const c = cfg.cases.f2;
    const page = await newPage(ctx, r);
    startGoto(page, c.pageUrl);
    const { view } = await expectInline(r, ctx, page, c, { fragment: 'page=3', redirectStatus: 200 });
    const after = await viewerOnPage(page, 3);
    if (B === 'webkit' && after && after.page === 1 && !await viewerShowsPageFragment(ctx, r)) {
      limit(r, NO_PAGE_FRAGMENT);
    } else {
      check(r, view?.stalled || (after && after.page === 3), `the viewer is on page ${after && after.page}, expected 3`);
    }
    r.outcome = view ? `inline, #page=3 kept, viewer p.${after && after.page}/${after && after.pages}` : 'not inline';
    await page.close();
  });
}

export async function caseSafeLinks(ctx) {
  for (const [id, fragment, wantPage] of [['f3', 'page=3', 3], ['f4', '', 1]]) {
    await runCase(id, async (r) => {
      const c = cfg.cases[id];
      const page = await newPage(ctx, r);
      await page.goto(c.attacker, { waitUntil: 'load', timeout: 15000 });
      await page.click('#go');
      const { view, entries } = await expectInline(r, ctx, page, c, { fragment, redirectStatus: 200 });
      const after = await viewerOnPage(page, wantPage);
      if (B === 'webkit' && wantPage !== 1 && after && after.page === 1 &&
          !await viewerShowsPageFragment(ctx, r)) {
        limit(r, NO_PAGE_FRAGMENT);
      } else {
        check(r, view?.stalled || (after && after.page === wantPage),
              `the viewer is on page ${after && after.page}, expected ${wantPage}`);
      }
      await sleep(300); // a script from the fragment would have run by now
      r.notes.push(`sec-fetch ${entries.map((e) => `${e.site}/${e.dest}`).join(',')}`);
      r.outcome = view ? `inline, ends on "#${fragment}", viewer p.${after && after.page}` : 'not inline';
      await page.close();
    });
  }
}

// A browser without JavaScript: the fragment page's <noscript> refresh
// goes on to the tokenized URL with an empty fragment.  The link asks for
// #page=3, so an empty fragment at the end also shows that the page's
// script did not run.
export async function caseNoScript(mainCtx) {
  await runCase('f5', async (r) => {
    const c = cfg.cases.f5;
    const own = B !== 'chromium';
    const ctx = own ? await launch('noscript', { noScript: true }) : mainCtx;
    try {
      const page = await newPage(ctx, r);
      if (!own) await page.setJavaScriptEnabled(false);
      startGoto(page, c.attackUrl);
      // WebKit's built-in pdf.js is JavaScript too: with it off, the PDF's
      // document loads and shows nothing.
      const { view } = await expectInline(r, ctx, page, c, {
        fragment: '', redirectStatus: 200,
        noViewer: B === 'webkit' ? ['no viewer without JavaScript', 'with JavaScript off ' +
          'WebKit\'s built-in PDF viewer (pdf.js) does not run: the tokenized PDF document ' +
          'loads (application/pdf, empty fragment) and shows nothing, so no page is read'] : null,
      });
      const after = view && await viewerState(page, page.mainFrame());
      if (view || !r.limits.length) {
        check(r, view?.stalled || (after && after.page === 1), `the viewer is on page ${after && after.page}, expected 1`);
      }
      const seq = decisions(logFor(c.path));
      const steps = `${seq.filter((t) => t === 'redirect').length} page + ` +
        `${seq.filter((t) => t === 'pass').length} pass`;
      r.outcome = view ? `inline, empty fragment, p.${after.page}, ${steps}`
        : r.limits.length ? `PDF document, empty fragment, no viewer, ${steps}` : 'not inline';
      r.notes.push(B === 'firefox' ? 'javascript.enabled=false' : B === 'webkit'
        ? 'MiniBrowser --enable-javascript=false' : 'page.setJavaScriptEnabled(false)');
      await page.close();
    } finally {
      if (own) await closeBrowser(ctx);
    }
  }, 60000);
}

export async function caseStripScope(ctx) {
  await runCase('f6', async (r) => {
    const c = cfg.cases.f6;
    const page = await newPage(ctx, r);
    startGoto(page, c.pageUrl);
    const { view } = await expectInline(r, ctx, page, c, { fragment: '', redirectStatus: 302 });
    await sleep(300);
    const after = await viewerState(page, page.mainFrame());
    check(r, view?.stalled || after.page === 1, `the viewer is on page ${after.page}, expected 1`);
    r.outcome = view ? `inline, 302, empty fragment, p.${after.page}` : 'not inline';
    await page.close();
  });
}
