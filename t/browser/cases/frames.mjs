// Licensed under the Apache License, Version 2.0; see LICENSE.
//
// c6a, c6b, c8: tabs and frames.

import { TERMINAL, decisions, logFor } from '../lib/accesslog.mjs';
import { B, cfg } from '../lib/config.mjs';
import { downloadsIn, newPage, startGoto } from '../lib/launch.mjs';
import { check, limit, runCase } from '../lib/results.mjs';
import { renderedShot, screenshot } from '../lib/screenshot.mjs';
import { fragmentOf, framesOf, queryToken, urlOf } from '../lib/urls.mjs';
import { STALLED_VIEWER, viewerState, waitForViewer } from '../lib/viewer.mjs';
import { sleep, waitFor } from '../lib/wait.mjs';

async function holdFollowUps(pages, docUrl, n) {
  if (B === 'webkit') return pages[0]._browser.proxy.hold(docUrl, n);
  let held = 0;
  let release;
  const gate = new Promise((res) => { release = res; });
  const timer = setTimeout(() => release('timeout'), 10000);
  for (const page of pages) {
    await page.setRequestInterception(true);
    page.on('request', (req) => {
      if (req.isInterceptResolutionHandled()) return;
      if (req.url().startsWith(docUrl) && queryToken(req.url())) {
        held += 1;
        if (held === n) release('all held');
        gate.then(() => req.continue().catch(() => {}));
      } else {
        req.continue().catch(() => {});
      }
    });
  }
  return { done: gate.finally(() => clearTimeout(timer)) };
}


export async function caseTwoTabs(ctx) {
  await runCase('c6a', async (r) => {
    const c = cfg.cases.c6a;
    const pages = [await newPage(ctx, r), await newPage(ctx, r)];
    const gate = await holdFollowUps(pages, c.url, 2);
    pages.forEach((p) => startGoto(p, c.url));
    check(r, await gate.done === 'all held', 'the two follow-up requests were not both held (gate timed out)');
    await waitFor(() => logFor(c.path).filter((e) => TERMINAL.has(e.tag)).length >= 2,
                  15000, 'two pass/fallback lines');
    const views = [];
    for (const page of pages) {
      try {
        views.push(await waitForViewer(page, () => page.mainFrame(), c.label, 15000, c.url));
      } catch (e) {
        r.failures.push(`tab ${views.length + 1}: ${e.message}`);
        views.push(null);
      }
    }
    await sleep(500);
    const entries = logFor(c.path);
    const seq = decisions(entries);
    const count = (t) => seq.filter((x) => x === t).length;
    check(r, count('redirect') === 2 && count('pass') === 2 && seq.length === 4,
          `access log: expected 2 redirects and 2 passes, got ${JSON.stringify(seq)}`);
    check(r, JSON.stringify(seq.slice(0, 2)) === '["redirect","redirect"]',
          `the two visits did not overlap: ${JSON.stringify(seq)}`);
    const passes = entries.filter((e) => e.tag === 'pass');
    check(r, passes.every((e) => e.cookieMatch), 'a pass without its matching cookie');
    check(r, passes.length === 2 && passes[0].token !== passes[1].token, 'the two tabs got one token');
    const urls = [];
    for (const p of pages) urls.push(await urlOf(p));
    const tokens = urls.map((u) => queryToken(u));
    check(r, urls.every((u) => !fragmentOf(u)), 'a tab ended with a fragment');
    check(r, new Set(tokens).size === 2 && tokens.every((t) => passes.some((e) => e.token === t)),
          `the tabs are not on the two passed URLs: ${urls}`);
    for (const [i, page] of pages.entries()) {
      await page.bringToFront();
      const stats = await renderedShot(page, `c6a-tab${i + 1}`);
      if (views[i] && views[i].stalled) {
        limit(r, STALLED_VIEWER);
        continue;
      }
      check(r, stats.rendered, `tab ${i + 1}: screenshot looks blank ${JSON.stringify(stats)}`);
    }
    check(r, downloadsIn(ctx).length === 0 && ctx.events.length === 0, 'a download happened');
    r.notes.push(`log ${seq.join(',')}; cookies sent with the passes: ` +
                 passes.map((e) => e.cookies.size).join(','));
    r.outcome = views.every(Boolean) ? 'both inline (R,R,P,P)' : 'not both inline';
    if (views.some((v) => v && v.stalled)) r.outcome += ', one WebKit viewer stalled';
    for (const page of pages) await page.close();
  });
}

export async function caseTwoIframes(ctx) {
  await runCase('c6b', async (r) => {
    const c = cfg.cases.c6b;
    const page = await newPage(ctx, r);
    const gate = await holdFollowUps([page], c.url, 2);
    startGoto(page, c.embed);
    check(r, await gate.done === 'all held', 'the two follow-up requests were not both held (gate timed out)');
    await waitFor(() => logFor(c.path).filter((e) => TERMINAL.has(e.tag)).length >= 2,
                  15000, 'two pass/fallback lines');
    const pdfFrames = async () => (await framesOf(page)).filter(
      (x) => x.parentFrame() === page.mainFrame() && x.url() && x.url().startsWith(c.url));
    // Both iframes end on their own tokenized URL: follow each by its URL
    // (a frame object can be replaced when the document moves process).
    const urls = await waitFor(async () => {
      const u = (await pdfFrames()).map((f) => f.url());
      return u.length === 2 && u.every((x) => queryToken(x)) && u[0] !== u[1] ? u : null;
    }, 10000, 'two iframes on tokenized PDF URLs');
    const views = [];
    for (const [i, url] of urls.entries()) {
      try {
        views.push(await waitForViewer(page, async () => (await pdfFrames()).find((f) => f.url() === url),
                                       c.label, 15000, c.url));
      } catch (e) {
        r.failures.push(`iframe ${i + 1}: ${e.message}`);
        views.push(null);
      }
    }
    const stats = await renderedShot(page, 'c6b-iframes');
    await sleep(500);
    const entries = logFor(c.path);
    const seq = decisions(entries);
    const count = (t) => seq.filter((x) => x === t).length;
    check(r, count('redirect') === 2 && count('pass') === 2 && seq.length === 4,
          `access log: expected 2 redirects and 2 passes, got ${JSON.stringify(seq)}`);
    const passes = entries.filter((e) => e.tag === 'pass');
    check(r, passes.every((e) => e.cookieMatch), 'a pass without its matching cookie');
    for (const [i, url] of urls.entries()) {
      check(r, !fragmentOf(url) && queryToken(url) && passes.some((e) => e.token === queryToken(url)),
            `iframe ${i + 1} is on ${url}, not on a URL that passed`);
    }
    if (views.some((v) => v && v.stalled)) limit(r, STALLED_VIEWER);
    else check(r, stats.rendered, `screenshot looks blank ${JSON.stringify(stats)}`);
    check(r, downloadsIn(ctx).length === 0 && ctx.events.length === 0, 'a download happened');
    check(r, JSON.stringify(seq.slice(0, 2)) === '["redirect","redirect"]',
          `the two visits did not overlap: ${JSON.stringify(seq)}`);
    r.notes.push(`log ${seq.join(',')}; sec-fetch-dest ${entries.map((e) => e.dest).join(',')}; ` +
                 `cookies sent with the passes: ${passes.map((e) => e.cookies.size).join(',')}`);
    r.outcome = views.every(Boolean) ? 'both inline (R,R,P,P)' : 'not both inline';
    if (views.some((v) => v && v.stalled)) r.outcome += ', one WebKit viewer stalled';
    await page.close();
  });
}

export async function caseCrossSiteIframe(ctx) {
  await runCase('c8', async (r) => {
    const c = cfg.cases.c8;
    const before = downloadsIn(ctx);
    const eventsBefore = ctx.events.length;
    const page = await newPage(ctx, r);
    await page.goto(c.attacker, { waitUntil: 'load', timeout: 15000 }).catch(() => {});
    await waitFor(() => logFor(c.path).some((e) => TERMINAL.has(e.tag) || e.status >= 400),
                  15000, 'a final decision for the iframe in the access log');
    await sleep(2500); // time for a download to land
    const entries = logFor(c.path);
    const seq = decisions(entries);
    // The invariant: never inline (pass) without the matching cookie.
    for (const e of entries.filter((x) => x.tag === 'pass')) {
      check(r, e.cookieMatch, `served inline (pass) without the matching cookie: ${e.line}`);
    }
    check(r, seq.filter((t) => t === 'redirect').length <= 1, `a redirect loop: ${JSON.stringify(seq)}`);
    const frame = (await framesOf(page)).find((f) => f.parentFrame() === page.mainFrame());
    let view = null;
    if (frame) {
      try {
        view = await viewerState(page, frame);
      } catch (e) {
        view = { error: e.message };
      }
    }
    const inline = view && view.contentType === 'application/pdf';
    if (inline) {
      check(r, !fragmentOf(frame.url()), `the iframe shows the PDF with a fragment: ${frame.url()}`);
    }
    const downloaded = downloadsIn(ctx).filter((f) => !before.includes(f));
    const events = ctx.events.slice(eventsBefore);
    const disp = entries.filter((e) => e.tag === 'fallback').map((e) => e.disposition.split(';')[0]);
    let what;
    if (seq.includes('pass')) what = 'inline (pass with cookie)';
    else if (seq.includes('fallback')) {
      what = `fallback (${disp.join(',')})` +
        (downloaded.length || events.length ? ', downloaded' : ', no download');
    } else what = `no final answer: ${seq.join(',')}`;
    check(r, !seq.includes('pass'), 'expected the fallback (SameSite=Lax cookie withheld in a cross-site iframe), got a pass');
    r.notes.push(`log ${seq.join(',')}; sec-fetch ${entries.map((e) => `${e.site}/${e.dest}`).join(',')}; ` +
                 `cookie sent on follow-up: ${entries.slice(1).some((e) => e.cookies.size > 0)}; ` +
                 `iframe ${frame ? frame.url() || '(empty)' : 'none'}; downloads ${JSON.stringify(downloaded)}`);
    r.outcome = what;
    await page.close();
  });
}
