// Licensed under the Apache License, Version 2.0; see LICENSE.
//
// x1-x7: partner sites framing protected PDFs (issue 22, PdfTokenCrossSite;
// t/browser/crosssite.py serves partner.test and other.test).
//
//   x1  partner.test's <iframe> of a PDF, Off and On (as shipped)
//   x2  the attacker's fragment (#FDF=javascript:alert(1)) through a
//       partner's iframe, embed and object, and its top-level link, On:
//       never shown with that fragment
//   x3  a tokenized URL (minted by the harness) framed by other.test,
//       where the reader has no cookie: the fallback, never inline
//   x4  partner.test's frame gets the cookie in its partition; the same
//       tokenized URL at top level and in other.test's frame: fallback
//   x5  the matrix: each cookie setting x element x scope x fragment
//   x6  x4 with each other cookie setting
//   x7  a script's attachment named x.pdf in partner frames, #FDF=: judged
//       (octet-stream; binary text/plain; no type)
//   x8  what the module leaves alone although it holds a PDF, in the
//       same frames: shown by no engine
//
// x1, x4, x5 and x6 write rows that run.py compares with crosssite.tsv.

import { TERMINAL, decisions, logFor } from '../lib/accesslog.mjs';
import { B, cfg } from '../lib/config.mjs';
import { expectInline } from '../lib/expect.mjs';
import { closeBrowser, downloadsIn, launch, newPage, startGoto } from '../lib/launch.mjs';
import { check, runCase } from '../lib/results.mjs';
import { fragmentOf } from '../lib/urls.mjs';
import { CHROME_PDF_EXTENSION } from '../lib/viewer.mjs';
import { sleep, waitFor, withTimeout } from '../lib/wait.mjs';

const X = () => cfg.cases.xs;
const ELEMENTS = ['iframe', 'embed', 'object'];
// How long an element may take to show a PDF whose pass is logged, and a
// download to land after the fallback is logged (a negative observation:
// the only fixed waits here).
const SHOW_MS = 12000;
const DOWNLOAD_MS = 6000;

// What the frame showing `doc` holds, if any: its href and content type.
async function frameFor(page, doc) {
  let frames = [];
  try {
    frames = await withTimeout(Promise.resolve(page.frames()), 5000, 'listing frames');
  } catch {
    return null;
  }
  // puppeteer can keep a frame object that the document left (it moved
  // process): every frame on the URL is read, one showing a PDF wins
  let seen = null;
  for (const f of frames) {
    if (f === page.mainFrame()) continue;
    const u = f.url();
    if (!u || !u.startsWith(doc.url)) continue;
    try {
      // Firefox's pdf.js shows application/octet-stream named x.pdf in
      // an <object> or <embed>, attachment or not: its document keeps
      // that type, so the viewer itself is what tells
      const s = await withTimeout(f.evaluate(() => ({ href: location.href, hash: location.hash,
                                                      contentType: document.contentType,
                                                      pdfjs: !!window.PDFViewerApplication })),
                                  3000, 'evaluating in the frame');
      if (s.contentType === 'application/pdf' || s.pdfjs) {
        return { ...s, contentType: 'application/pdf', url: u };
      }
      seen = { ...s, url: u };
    } catch (e) {
      seen = seen || { href: u, url: u, contentType: null, error: e.message.slice(0, 80) };
    }
  }
  if (B === 'chromium' && seen) {
    // Chromium's frame for an <embed> or <object> was seen now and then
    // to read as text/html or to refuse evaluation while its PDF viewer
    // (an extension frame inside it) was there: the PDF is shown
    const viewer = frames.find((f) => f.url().startsWith(CHROME_PDF_EXTENSION) && f.parentFrame() &&
                               (f.parentFrame().url() || '').startsWith(doc.url));
    if (viewer) return { ...seen, contentType: 'application/pdf', via: 'viewer frame' };
  }
  return seen;
}

function downloadedFile(ctx, doc, before) {
  const stem = doc.file.replace(/\.pdf$/, '');
  return downloadsIn(ctx).filter((f) => !before.includes(f))
    .find((f) => f.split('/').pop().startsWith(stem) && !/\.(crdownload|part)$/.test(f)) || null;
}

function eventFor(ctx, doc, eventsBefore) {
  return ctx.events.slice(eventsBefore).find((u) => u.startsWith(doc.url)) || null;
}

// Load a page whose elements frame `docs` ({element: doc}); for each, what
// the module logged and what the element showed: inline (a pass and the
// PDF in the frame), empty (a pass, nothing shown), download (the
// fallback, saved), blocked (the fallback or nothing, not saved, nothing
// shown).  A frame showing the PDF without a pass, or with a fragment
// other than `allowed`, is a failure of r.  `untouched`: an answer the
// module left alone (logged "-") is final too.
export async function measure(ctx, r, url, docs, { allowed = [null, ''], page = null,
                                                   untouched = false } = {}) {
  const since = Object.fromEntries(Object.entries(docs).map(([el, d]) => [el, logFor(d.path).length]));
  const before = downloadsIn(ctx);
  const eventsBefore = ctx.events.length;
  const own = !page;
  if (own) page = await newPage(ctx, r);
  startGoto(page, url);
  const tail = (el) => logFor(docs[el].path).slice(since[el]);
  const done = (el) => tail(el).some((e) => TERMINAL.has(e.tag) || e.status >= 400 ||
                                      (untouched && e.tag === '-'));
  try {
    await waitFor(() => Object.keys(docs).every(done), 15000, 'a final decision for every element');
  } catch (e) {
    r.notes.push(e.message);
  }
  // The elements without a pass wait for their downloads together: a
  // blocked one costs DOWNLOAD_MS once per page, not once per element.
  const savedOf = (el) => downloadedFile(ctx, docs[el], before) || eventFor(ctx, docs[el], eventsBefore);
  const waiting = Object.keys(docs).filter((el) => !tail(el).some((e) => e.tag === 'pass'));
  try {
    await waitFor(() => waiting.every(savedOf), DOWNLOAD_MS, 'the downloads');
  } catch { /* the others: blocked */ }
  const out = {};
  for (const [el, doc] of Object.entries(docs)) {
    const entries = tail(el);
    const seq = decisions(entries);
    const pass = entries.find((e) => e.tag === 'pass');
    const fallback = entries.find((e) => e.tag === 'fallback');
    let frame = null;
    // (looked at here: the frames waited for meanwhile gave it more time)
    const file = pass ? null : savedOf(el);
    if (pass) {
      try {
        frame = await waitFor(async () => {
          const f = await frameFor(page, doc);
          return f && f.contentType === 'application/pdf' ? f : null;
        }, SHOW_MS, `${el} to show the PDF`);
      } catch {
        frame = await frameFor(page, doc);
      }
    } else {
      frame = await frameFor(page, doc);
    }
    const shown = !!frame && frame.contentType === 'application/pdf';
    if (shown) {
      check(r, !!pass && pass.cookieMatch,
            `${el}: the frame shows the PDF without a pass with its cookie (log ${seq.join(',')})`);
      const frag = fragmentOf(frame.href);
      check(r, allowed.includes(frag) && !/javascript/i.test(frame.href),
            `${el}: the frame shows the PDF at ${frame.href}`);
    }
    if (pass) check(r, pass.cookieMatch, `${el}: a pass without its matching cookie: ${pass.line}`);
    const outcome = shown ? 'inline' : pass ? 'empty' : file ? 'download' : 'blocked';
    out[el] = { outcome, seq, frame, file, pass, fallback, entries };
  }
  if (own) await page.close().catch(() => {});
  return out;
}

const show = (m) => Object.entries(m).map(([el, x]) => `${el} ${x.outcome}`).join(', ');
const logs = (m) => Object.entries(m).map(([el, x]) =>
  `${el}: log ${x.seq.join(',') || '-'} dest ${x.entries.map((e) => e.dest).join(',')}` +
  `${x.frame ? ` at ${x.frame.href} (${x.frame.contentType})` : ''}${x.file ? ` saved ${x.file}` : ''}`).join('; ');

// -------------------------------------------------------------- x1-x4

async function caseX1(ctx, setting) {
  await runCase('x1', async (r) => {
    const c = X().x1;
    r.rows = [];
    const got = {};
    for (const scope of ['off', 'on']) {
      const m = await measure(ctx, r, c[scope].page, { iframe: c[scope].doc });
      got[scope] = m.iframe.outcome;
      r.rows.push(['x1', B, setting, 'iframe', scope, 'none', m.iframe.outcome]);
      r.notes.push(`${scope}: ${logs(m)}`);
    }
    r.outcome = `partner.test iframe: Off ${got.off}, On ${got.on}`;
  });
}

async function caseX2(ctx) {
  await runCase('x2', async (r) => {
    const c = X().x2;
    // the top-level link first: expectInline wants no download in ctx yet
    const page = await newPage(ctx, r);
    await page.goto(c.linkPage, { waitUntil: 'load', timeout: 15000 });
    await page.click('#go');
    const { view } = await expectInline(r, ctx, page, c.link);
    await page.close();
    const m = await measure(ctx, r, c.page, c.docs);
    for (const [el, x] of Object.entries(m)) {
      check(r, !x.pass || !x.frame || !fragmentOf(x.frame.href),
            `${el}: shows the PDF with a fragment`);
      check(r, x.seq.filter((t) => t === 'redirect').length <= 1, `${el}: a redirect loop ${x.seq}`);
    }
    r.notes.push(logs(m));
    r.outcome = `link: ${view ? 'inline, empty fragment' : 'not inline'}; frames with #FDF=: ${show(m)}`;
  });
}

async function caseX3(ctx) {
  await runCase('x3', async (r) => {
    const c = X().x3;
    const m = await measure(ctx, r, c.page, c.docs);
    for (const [el, x] of Object.entries(m)) {
      // the harness's own first request is the redirect; the browser's
      // request with the minted token must get the fallback
      const mine = x.entries.filter((e) => e.token);
      check(r, mine.length > 0 && mine.every((e) => e.tag === 'fallback'),
            `${el}: the tokenized URL got ${mine.map((e) => e.tag).join(',') || 'no request'}, expected fallback`);
      check(r, x.outcome !== 'inline', `${el}: shown inline`);
      check(r, !x.fallback || /^attachment/.test(x.fallback.disposition),
            `${el}: fallback disposition ${x.fallback && x.fallback.disposition}`);
    }
    r.notes.push(logs(m));
    r.outcome = `other.test frames a minted token: ${show(m)} (log fallback)`;
  });
}

// x7: a script's download (attachment, filename="x.pdf") framed by
// partner.test with #FDF=, in each form Firefox shows in an <object> or
// <embed> (application/octet-stream; text/plain with a binary body; no
// type, with bytes before %PDF-): each takes the token step; without the
// cookie (Off: SameSite=Lax) every element gets the fallback, which no
// frame shows.
// Three pages, each of which may wait up to 15 s for the log: three times
// a case's usual budget.
const X7_TIMEOUT = 135000;

async function caseX7(ctx) {
  await runCase('x7', async (r) => {
    const shown = [];
    for (const [form, c] of Object.entries(X().x7.forms)) {
      const m = await measure(ctx, r, c.page, c.docs);
      for (const [el, x] of Object.entries(m)) {
        // judged: the redirect, or the fallback at once (PDFTOKEN00022)
        check(r, x.seq.length > 0 && ['redirect', 'fallback'].includes(x.seq[0]),
              `${form} ${el}: the script's download was not judged (log ${x.seq.join(',') || 'nothing'})`);
        check(r, x.outcome !== 'inline', `${form} ${el}: shown inline`);
      }
      r.notes.push(`${form}: ${logs(m)}`);
      shown.push(`${form}: ${show(m)}`);
    }
    r.outcome = `a script's attachment in partner frames with #FDF=: ${shown.join('; ')}`;
  }, X7_TIMEOUT);
}

// x8: answers the module leaves alone although they hold a PDF (a
// text/plain or octet-stream attachment without a name, one named x.pdf
// of a type no engine re-guesses, junk before %PDF- without a valid type,
// ...), framed by partner.test with #FDF=: no engine may show one.
async function caseX8(ctx) {
  await runCase('x8', async (r) => {
    const counts = {};
    for (const c of X().x8.pages) {
      const m = await measure(ctx, r, c.page, c.docs, { untouched: true });
      for (const [key, x] of Object.entries(m)) {
        check(r, x.outcome !== 'inline', `${key}: shown inline (log ${x.seq.join(',') || '-'})`);
        check(r, x.entries.length > 0, `${key}: never requested`);
        counts[x.outcome] = (counts[x.outcome] || 0) + 1;
      }
      r.notes.push(logs(m));
    }
    r.outcome = `frames that show a PDF the module left alone: ${counts.inline || 'none'} (${
      Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(', ')})`;
  }, X7_TIMEOUT);
}

// x4/x6: partner.test's iframe, then the tokenized URL it ended on at top
// level and in other.test's iframe, each with the attacker's fragment.
async function partitionCheck(ctx, r, c, caseId, setting, strict, scope = 'on') {
  const m = await measure(ctx, r, c.page, { iframe: c.doc });
  const x = m.iframe;
  // the token: the frame's URL (automation) or the server's log
  const tokened = x.entries.filter((e) => e.token);
  const token = tokened.length ? tokened[tokened.length - 1].token : null;
  r.rows.push([caseId, B, setting, 'frame', scope, 'none', x.outcome]);
  if (!token && x.fallback && !x.fallback.token) {
    // the fallback at once (PDFTOKEN00022, WebKitGTK): no token to carry
    // elsewhere, and no cookie was set in the frame
    r.rows.push([caseId, B, setting, 'top', scope, 'fdf', 'no-token']);
    r.rows.push([caseId, B, setting, 'other', scope, 'fdf', 'no-token']);
    return `frame ${x.outcome} (${x.seq.join(',')}), no token minted`;
  }
  if (!check(r, !!token, 'the partner frame never reached a tokenized URL')) return;
  const tokUrl = `${c.doc.url}?pdftoken=${token}`;
  const fdf = '#FDF=javascript:alert(1)';
  // top level, in a tab of its own
  const since = logFor(c.doc.path).length;
  const top = await newPage(ctx, r);
  startGoto(top, tokUrl + fdf);
  const topEntry = await waitFor(() => logFor(c.doc.path).slice(since)
    .find((e) => e.token === token && (TERMINAL.has(e.tag) || e.tag === 'redirect')),
                                 15000, 'the top-level view in the log');
  let topFrame = null;
  try {
    topFrame = await withTimeout(top.mainFrame().evaluate(() => ({ href: location.href,
                                                                   contentType: document.contentType })),
                                 3000, 'reading the tab');
  } catch { /* navigating or a download */ }
  await top.close().catch(() => {});
  r.rows.push([caseId, B, setting, 'top', scope, 'fdf', topEntry.tag]);
  // other.test's iframe
  const otherUrl = `${c.otherBase}?iframe=${encodeURIComponent(tokUrl + fdf)}`;
  const since2 = logFor(c.doc.path).length;
  const other = await measure(ctx, r, otherUrl, { iframe: { ...c.doc } });
  const otherEntry = logFor(c.doc.path).slice(since2).find((e) => e.token === token &&
                                                          (TERMINAL.has(e.tag) || e.tag === 'redirect'));
  r.rows.push([caseId, B, setting, 'other', scope, 'fdf', otherEntry ? otherEntry.tag : 'none']);
  const say = `frame ${x.outcome} (${x.seq.join(',')}); top ${topEntry.tag}; ` +
    `other.test ${otherEntry ? otherEntry.tag : 'no request'} (${other.iframe.outcome})`;
  if (topEntry.tag === 'redirect' || (otherEntry && otherEntry.tag === 'redirect')) {
    r.notes.push('the token had expired (R4) before a later step: not a measurement of the partition');
  }
  const leak = [];
  if (topEntry.tag === 'pass') leak.push(`the partner frame's cookie was sent at top level (pass, ${topFrame ? topFrame.href : 'tab unread'})`);
  if (otherEntry && otherEntry.tag === 'pass') leak.push('the partner frame\'s cookie was sent in other.test\'s frame (pass)');
  if (strict) r.failures.push(...leak);
  else r.notes.push(...leak);
  if (topFrame && topFrame.contentType === 'application/pdf') {
    check(r, !/javascript/i.test(topFrame.href), `the tab shows the PDF at ${topFrame.href}`);
  }
  return say;
}

async function caseX4(ctx, setting) {
  await runCase('x4', async (r) => {
    r.rows = [];
    r.outcome = await partitionCheck(ctx, r, X().x4[setting], 'x4', setting, true);
  }, 90000);
}

export async function caseCrossSite() {
  const want = ['x1', 'x2', 'x3', 'x4', 'x7', 'x8'].filter((id) => !cfg.only || cfg.only.includes(id));
  if (!want.length) return;
  const shipped = X().settings[0];
  const ctx = await launch('xs', { downloadEvents: true, cookies: shipped });
  try {
    await caseX2(ctx); // first: its link must be the first download-free view
    await caseX1(ctx, shipped);
    await caseX3(ctx);
    await caseX4(ctx, shipped);
    await caseX7(ctx);
    await caseX8(ctx);
  } finally {
    await closeBrowser(ctx);
  }
}

// ------------------------------------------------------------------ x5, x6

export async function caseCrossSiteMatrix() {
  for (const id of ['x5', 'x6']) {
    if (cfg.only && !cfg.only.includes(id)) continue;
    const settings = id === 'x5' ? X().settings : X().settings.slice(1);
    await runCase(id, async (r) => {
      r.rows = [];
      const said = [];
      for (const s of settings) {
        const ctx = await launch(`${id}-${s}`, { downloadEvents: true, cookies: s });
        try {
          if (id === 'x5') {
            const counts = {};
            for (const p of X().x5[s]) {
              const allowed = p.scope === 'safe' && p.variant === 'page2' ? [null, '', 'page=2'] : [null, ''];
              const m = await measure(ctx, r, p.page, p.docs, { allowed });
              for (const [el, x] of Object.entries(m)) {
                r.rows.push(['x5', B, s, el, p.scope, p.variant, x.outcome]);
                const k = `${p.scope} ${el} ${x.outcome}`;
                counts[k] = (counts[k] || 0) + 1;
              }
              r.notes.push(`${s} ${p.scope} ${p.variant}: ${logs(m)}`);
            }
            said.push(`${s}: ${ELEMENTS.map((el) => `${el} ${['off', 'on', 'safe'].map((sc) =>
              Object.keys(counts).filter((k) => k.startsWith(`${sc} ${el} `))
                .map((k) => k.split(' ')[2]).join('/')).join('|')}`).join(', ')}`);
          } else {
            for (const scope of ['off', 'on']) {
              said.push(`${s} ${scope}: ${await partitionCheck(ctx, r, X().x6[s][scope], 'x6', s, false, scope)}`);
            }
          }
        } finally {
          await closeBrowser(ctx);
        }
      }
      r.outcome = said.join('; ');
    }, 900000);
  }
}
