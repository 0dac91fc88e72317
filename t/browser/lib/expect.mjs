// Licensed under the Apache License, Version 2.0; see LICENSE.
//
// The common endings of a visit that must end inline.

import { TERMINAL, decisions, logFor } from './accesslog.mjs';
import { cfg } from './config.mjs';
import { downloadsIn, newPage, startGoto } from './launch.mjs';
import { check, limit } from './results.mjs';
import { renderedShot, screenshot } from './screenshot.mjs';
import { fragmentOf, queryToken, urlOf } from './urls.mjs';
import { STALLED_VIEWER, viewerState, waitForViewer } from './viewer.mjs';
import { sleep, waitFor } from './wait.mjs';

// WebKit's built-in pdf.js opens every PDF on page 1: its viewer frame is
// viewer.html?file= without the document's fragment.  Measured once per
// run on the unprotected control document (c3's): does #page=2 show page 2?
let pageFragmentShown = null;
export const NO_PAGE_FRAGMENT = ['viewer ignores #page', 'WebKit\'s PDF viewer ignores #page=N ' +
  '(measured: the unprotected control doc.pdf#page=2 opens on page 1), so the page shown ' +
  'cannot tell a kept fragment; the URL and location.hash still do'];
// c3 measures it too, on its own control visit.
export function notePageFragmentShown(shown) {
  pageFragmentShown = shown;
}

export async function viewerShowsPageFragment(ctx, r) {
  if (pageFragmentShown === null) {
    const c = cfg.cases.c3.control;
    const { page: ctl } = await viewControl(ctx, r, c);
    try {
      await sleep(300);
      const v = await viewerState(ctl, ctl.mainFrame());
      pageFragmentShown = v.page === 2 ? true : v.page === 1 ? false : null;
      if (pageFragmentShown === null) throw new Error(`control viewer on page ${v.page}`);
    } finally {
      await ctl.close();
    }
  }
  return pageFragmentShown;
}

// Open an unprotected control document (c.pageUrl, labelled c.label) in a
// page of its own and wait for its viewer.  A control measures the engine,
// not the module, so a WebKit viewer that stalled (see waitForViewer) is
// opened again, up to three times in all, with a note; the caller closes
// the page it gets.
export async function viewControl(ctx, r, c) {
  for (let attempt = 1; ; attempt++) {
    const page = await newPage(ctx, r);
    startGoto(page, c.pageUrl);
    const view = await waitForViewer(page, () => page.mainFrame(), c.label, 15000,
                                     attempt < 3 ? c.url : null);
    if (!view.stalled) return { page, view };
    r.notes.push(`control view ${attempt}: WebKit's viewer stalled, opened again`);
    await page.close();
  }
}

// The common ending of a visit that must end inline: the log shows
// `redirect` (a 302, or with PdfTokenFragment safe the 200 fragment page:
// redirectStatus) then `pass` with the matching cookie, the page is on the
// tokenized URL with an empty fragment (or exactly `fragment`, without
// its '#', when given), the viewer shows the document, a screenshot is not
// blank, nothing was downloaded.  `since` skips log entries of earlier
// visits to the same path.
export async function expectInline(r, ctx, page, c, { since = 0, downloadsBefore = [], shot = c.label,
                                               fragment, redirectStatus = 302, noViewer = null } = {}) {
  await waitFor(() => logFor(c.path).slice(since).some((e) => TERMINAL.has(e.tag)),
                15000, `a pass/fallback line for ${c.path} in the access log`);
  let view = null;
  let blank = false;
  try {
    view = await waitForViewer(page, () => page.mainFrame(), c.label, 15000, c.url);
    if (view.stalled) limit(r, STALLED_VIEWER);
  } catch (e) {
    // `noViewer`: an engine whose viewer cannot run here; the PDF's
    // document must still be there, with no viewer in it.
    const s = noViewer && await viewerState(page, page.mainFrame()).catch(() => null);
    if (s && s.contentType === 'application/pdf' && s.title === null && s.pages === null) {
      blank = true;
      limit(r, noViewer);
      r.notes.push(`the PDF's document is at ${s.href}, location.hash ${JSON.stringify(s.hash)}`);
      if (fragment === '' || fragment === undefined) {
        check(r, s.hash === '', `location.hash is ${JSON.stringify(s.hash)}, expected ""`);
      }
    } else {
      r.failures.push(`viewer: ${e.message}`);
    }
  }
  const stats = blank ? { rendered: false, blank: true }
    : await renderedShot(page, shot.replace(/\W+/g, '-'));
  await sleep(500); // let anything that would follow (a loop, a download) show
  const entries = logFor(c.path).slice(since);
  const seq = decisions(entries);
  check(r, JSON.stringify(seq) === JSON.stringify(['redirect', 'pass']),
        `access log: expected [redirect, pass], got ${JSON.stringify(seq)}`);
  const redirects = entries.filter((e) => e.tag === 'redirect');
  check(r, redirects.every((e) => e.status === redirectStatus),
        `the redirect was answered with status ${redirects.map((e) => e.status).join(',')}, ` +
        `expected ${redirectStatus}`);
  const pass = entries.find((e) => e.tag === 'pass');
  check(r, pass && pass.cookieMatch, 'the pass request did not carry the matching cookie');
  const url = await urlOf(page);
  const frag = fragmentOf(url);
  if (fragment === undefined) {
    check(r, !frag, `final URL has fragment "#${frag}": ${url}`);
  } else {
    check(r, frag === fragment, `final URL ${url} does not end in "#${fragment}"`);
  }
  check(r, pass && queryToken(url) === pass.token,
        `final URL is not the tokenized URL that passed: ${url}`);
  if (view) {
    const hash = fragment ? `#${fragment}` : '';
    check(r, view.hash === hash, `location.hash is ${JSON.stringify(view.hash)}, expected ${JSON.stringify(hash)}`);
  }
  check(r, stats.rendered || blank || view?.stalled, `screenshot looks blank: ${JSON.stringify(stats)}`);
  const downloads = downloadsIn(ctx).filter((f) => !downloadsBefore.includes(f));
  check(r, downloads.length === 0 && ctx.events.length === 0,
        `a download happened: ${JSON.stringify(downloads.concat(ctx.events))}`);
  r.notes.push(`log ${seq.join(',')}; sec-fetch-site ${entries[0] ? entries[0].site : '?'}`);
  return { view, url, entries, stats, pass };
}
