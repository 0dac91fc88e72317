// Licensed under the Apache License, Version 2.0; see LICENSE.
//
// m1, m2: the render matrix; m3: its protected copy in <embed>s.

import fs from 'node:fs';
import path from 'node:path';
import { TERMINAL, logFor, readLog } from '../lib/accesslog.mjs';
import { B, cfg } from '../lib/config.mjs';
import { closeBrowser, downloadsIn, launch, newPage, startGoto } from '../lib/launch.mjs';
import { check, describeError, notMeasured, runCase } from '../lib/results.mjs';
import { screenshot } from '../lib/screenshot.mjs';
import { fragmentOf, framesOf, queryToken } from '../lib/urls.mjs';
import { CHROME_PDF_EXTENSION, viewerState } from '../lib/viewer.mjs';
import { sleep, waitFor, withTimeout } from '../lib/wait.mjs';

// m1 and m2 (t/browser/matrix.py): a top-level navigation to every cell of
// the matrix, several tabs at a time, each ending in one outcome:
//   pdf       the browser's PDF viewer took the document (it may still fail
//             to parse an HTML body: the viewer is what the attack needs)
//   download  a download started (the browser's download event, or a file
//             carrying the cell's label in the download directory)
//   page      a document of another kind at the cell's URL (text, HTML,
//             an image, a blank page)
//   error     the browser's error page, or (Firefox, for a download with
//             an error status) a navigation aborted with nothing shown or
//             saved, or an error status answered and then nothing shown or
//             saved (WebKit; any engine on a cell's last try)
// This file only observes; run.py compares m1 with the recording and
// judges m2, which needs both engines' results.
const MATRIX_CELL_TIMEOUT = 12000;
// After a navigation is aborted (what a download does to it), how long a
// download still has to show up before the abort counts as the outcome.
// Both engines announce a download as the navigation ends, and the file
// follows within a second.
const MATRIX_ABORT_GRACE = 3000;
// Tries per cell.  Twice in CI Firefox showed nothing for m2's c265 (a
// 404 that the module answers with an attachment) in every try: no
// document, no download, and its navigation neither ended nor failed in
// 12 s, where other runs see NS_BINDING_ABORTED at once.  So a cell gets
// three tries, and on the last one every engine is judged as WebKit is in
// each: an error status that httpd answered and nothing shown or saved
// MATRIX_SILENT_GRACE later is the outcome "error", stated as silent.
const MATRIX_TRIES = 3;
const MATRIX_SILENT_GRACE = 6000;
// How long a page of a multipart/x-mixed-replace body must stay the same
// before it counts as the outcome (measureCell).
const MATRIX_PART_SETTLE = 4000;
const LABEL_RE = /pdftoken-matrix \S+ (m[12]) (c\d{3})/;

// The cell a file in the download directory holds, by its label.
function labelIn(file) {
  try {
    const m = LABEL_RE.exec(fs.readFileSync(file, 'latin1'));
    return m ? `${m[1]} ${m[2]}` : null;
  } catch {
    return null;
  }
}

// Downloads of matrix cells, by scope and id.  Both signals count: the
// event says a download started; the file (found by the label in its
// bytes) covers an engine that saves without telling, and names the cell
// even when the event's URL is not the one navigated to.
function matrixDownloads(ctx, server) {
  const seen = new Map();    // 'm1 c001' -> what showed it
  const scanned = new Map(); // file -> size when read
  const mark = (key, how) => { if (key && !seen.has(key)) seen.set(key, how); };
  return {
    has(scope, id) {
      for (const url of ctx.events) {
        let p;
        try { p = new URL(url, server).pathname; } catch { continue; }
        const m = /^\/[^/]+\/(m[12])\/(c\d{3})(\/x\.pdf)?$/.exec(p);
        if (m) mark(`${m[1]} ${m[2]}`, 'event');
      }
      for (const f of downloadsIn(ctx)) {
        const file = path.join(ctx.downloads, f);
        let size;
        try {
          const st = fs.statSync(file);
          if (!st.isFile()) continue;
          size = `${st.size} ${st.mtimeMs}`;
        } catch { continue; }
        if (scanned.get(f) === size) continue;
        scanned.set(f, size);
        const key = labelIn(file);
        mark(key, 'file');
        // WebKit does not save a download over a file of the same name
        // (many cells are called x.pdf): move a labelled file aside
        if (B === 'webkit' && key) {
          fs.mkdirSync(path.join(ctx.downloads, 'seen'), { recursive: true });
          try {
            fs.renameSync(file, path.join(ctx.downloads, 'seen', `${key.replace(' ', '-')}-${f.replace('/', '-')}`));
            scanned.delete(f);
          } catch { /* moved meanwhile */ }
        }
      }
      return seen.get(`${scope} ${id}`) || null;
    },
  };
}

// What the tab shows now.  Fails while a navigation replaces the document.
async function tabState(page) {
  return withTimeout(page.mainFrame().evaluate(() => ({
    href: location.href,
    uri: document.documentURI,
    contentType: document.contentType,
    ready: document.readyState,
    // Firefox's pdf.js, known by its page before its script has run: an
    // octet-stream PDF keeps its content type in the viewer
    pdfjs: !!window.PDFViewerApplication ||
      !!document.querySelector('script[src^="resource://pdf.js/"]') ||
      // WebKit's pdf.js, in an iframe of the PDF's document
      !!document.querySelector('iframe[src^="webkit-pdfjs-viewer:"]'),
  })), 2000, 'reading the tab');
}

const samePath = (href, p) => {
  try {
    return new URL(href).pathname === p;
  } catch {
    return false;
  }
};

// One navigation, one outcome.  The outcome is taken on a positive sign
// only (a download, or a committed document at the cell's URL), never
// because nothing happened for a while: an engine decides download or
// render before it commits a document, so neither can follow the other.
// The one exception is an error status that httpd has answered and the
// engine neither shows nor saves (WebKit always, every engine on a cell's
// last try; MATRIX_TRIES): "error", the tab never at the cell's URL.
// `parse` also waits (up to 8 s) for the viewer to show the document.
async function measureCell(ctx, page, cell, scope, dl, parse, run, lastTry) {
  const t0 = Date.now();
  const obs = { id: cell.id, outcome: null, href: null, notes: [] };
  let navError = null;
  let abortedAt = 0;
  const logBefore = logFor(cell.path).length;
  let answeredAt = 0;
  page.goto(cell.url, { waitUntil: 'load', timeout: MATRIX_CELL_TIMEOUT })
    .catch((e) => {
      navError = e.message.split('\n')[0];
      if (/NS_BINDING_ABORTED|net::ERR_ABORTED/.test(navError)) abortedAt = Date.now();
    });
  let pageSeen = null;
  let pageSince = 0;
  // How long an error answer may show and save nothing before that is the
  // outcome (0: never), and how long a page must stay the same.
  const silentGrace = B === 'webkit' ? MATRIX_ABORT_GRACE : lastTry ? MATRIX_SILENT_GRACE : 0;
  const settle = cell.body.startsWith('mxr') ? MATRIX_PART_SETTLE : 150;
  const deadline = t0 + MATRIX_CELL_TIMEOUT;
  while (Date.now() < deadline && !obs.outcome && !run.cancelled) {
    const how = dl.has(scope, cell.id);
    if (how) {
      obs.outcome = 'download';
      obs.notes.push(how);
      break;
    }
    let st = null;
    try {
      st = await tabState(page);
    } catch { /* navigating */ }
    if (abortedAt && Date.now() - abortedAt > MATRIX_ABORT_GRACE &&
        !(st && samePath(st.href, cell.path))) {
      obs.outcome = 'error';
      obs.notes.push(`navigation aborted (${/NS_BINDING_ABORTED|net::ERR_ABORTED/.exec(navError)[0]}), ` +
                     'nothing shown or saved');
      break;
    }
    // An error page, for this cell's URL: Firefox's names it in its own
    // URL (u=); Chromium's says nothing, but this cell's navigation
    // failed with a net:: error (an aborted one is a download's).
    // WebKit drops a response with an error status that it does not
    // render (no document, no download, no error page): once httpd has
    // logged the answer (status >= 400) and the grace has passed with the
    // tab still elsewhere and no download, that is this engine's "error".
    // On a cell's last try, every engine (MATRIX_TRIES).
    if (silentGrace && !answeredAt) {
      const e = logFor(cell.path).slice(logBefore).find((x) => x.status >= 400);
      if (e) answeredAt = Date.now();
    }
    if (silentGrace && answeredAt && Date.now() - answeredAt > silentGrace &&
        !(st && samePath(st.href, cell.path))) {
      obs.outcome = 'error';
      obs.notes.push(B === 'webkit' ? 'WebKit dropped the error answer: no document, no download'
        : `silent: the error answer showed nothing and saved nothing in ${silentGrace / 1000} s ` +
          `(last try${navError ? `; navigation: ${navError}` : ', no navigation event'})`);
      break;
    }
    const failed = !st ? null : st.href.startsWith('chrome-error:')
      ? (navError && !abortedAt ? (/ at (\S+)/.exec(navError) || [])[1] : null)
      : /^about:(neterror|certerror)\?/.test(st.uri)
        ? new URLSearchParams(st.uri.split('?')[1]).get('u') : null;
    if (failed && samePath(failed, cell.path)) {
      obs.outcome = 'error';
      obs.href = failed;
      obs.notes.push(st.href.startsWith('chrome-error:') ? `chrome-error ${navError || ''}`.trim()
        : st.uri.split('&')[0]);
      break;
    }
    // (WebKit's PDF document never leaves readyState "loading".)
    if (st && samePath(st.href, cell.path) && (st.ready !== 'loading' || st.pdfjs)) {
      obs.href = st.href;
      // viewerState's test: Chromium's PDF document, or Firefox's pdf.js
      if (st.contentType === 'application/pdf' || st.pdfjs) {
        obs.outcome = 'pdf';
        if (parse) {
          // Did the viewer parse the document (its /Title is the label)?
          // (The title alone is not enough: Firefox's pdf.js titles an
          // octet-stream PDF by its file name.)
          let v = null;
          try {
            v = await waitFor(async () => {
              const s = await viewerState(page, page.mainFrame());
              return s.pages >= 1 || (s.title && s.title.startsWith(cell.label)) ? s : null;
            }, 8000, 'the viewer to show the document');
          } catch { /* an HTML body, or a viewer that refused it */ }
          obs.notes.push(v ? 'viewer shows it' : 'viewer showed no document');
        }
        break;
      }
      // A page once loaded, in the same state for a while: 150 ms, enough
      // for a viewer that started as some other page to change; for a
      // multipart/x-mixed-replace body, MATRIX_PART_SETTLE, since a later
      // part replaces the document (WebKit shows c403's HTML part, then
      // its PDF part, and a loaded CI machine once took longer than
      // 150 ms between them).
      const sig = `${st.href} ${st.contentType} ${st.ready}`;
      if (st.ready === 'complete' && pageSeen === sig && Date.now() - pageSince >= settle) {
        obs.outcome = 'page';
        obs.notes.push(st.contentType);
        break;
      }
      if (pageSeen !== sig) {
        pageSeen = sig;
        pageSince = Date.now();
      }
      await sleep(150);
      continue;
    }
    await sleep(80);
  }
  if (!obs.outcome && navError) obs.notes.push(`navigation: ${navError}`);
  if (cfg.shots && obs.outcome && obs.outcome !== 'download') {
    await screenshot(page, `${scope}-${cell.id}-${obs.outcome}`).catch(() => {});
  }
  // A document must not also have started a download: look once more.
  if (obs.outcome === 'pdf' || obs.outcome === 'page') {
    const how = dl.has(scope, cell.id);
    if (how) obs.notes.push(`ALSO a download (${how})`);
  }
  obs.ms = Date.now() - t0;
  return obs;
}

function queryTokenOf(href) {
  try {
    return queryToken(href);
  } catch {
    return null;
  }
}

// The access log of a cell's path, reduced to what m2 judges: every
// decision with its status, and whether the tab ended on the tokenized URL
// that passed, with its matching cookie, after a 302 without a token.
function tokenStep(cell, href) {
  const entries = logFor(cell.path);
  const seq = entries.map((e) => `${e.status}:${e.tag}`);
  if (!href) return { seq, tokenStep: false };
  const frag = fragmentOf(href);
  const token = queryTokenOf(href);
  const ri = entries.findIndex((e) => e.tag === 'redirect' && e.status === 302 && !e.token);
  const pass = entries.find((e, i) => i > ri && e.tag === 'pass' && e.token === token);
  return {
    seq,
    fragment: frag,
    tokenStep: ri >= 0 && !!token && !frag && !!pass && pass.cookieMatch,
  };
}

// Run `cells` through `workers` tabs; a cell without an outcome gets
// more tries in a fresh tab (MATRIX_TRIES in all).  Tabs the browser opens by itself (Firefox
// opens a downloaded PDF from disk) are closed as they appear, and noted
// on their cell.  No cell starts after `until` (ms since the epoch): the
// cells left are "not measured".  A worker never throws (a tab that cannot
// be opened is a failed try of its cell), and every worker stops at its
// next step once `run.cancelled` is set: a scope whose case timed out must
// not go on measuring, and closing tabs, in the browser the next scope uses.
async function measureAll(ctx, r, cells, scope, workers, until, run) {
  const dl = matrixDownloads(ctx, cfg.server);
  const out = new Map();
  const queue = cells.map((c) => ({ cell: c, tries: 0 }));
  const own = new Set(await ctx.browser.pages());
  let opening = 0;
  const opened = new Map(); // 'm1 c001' -> URL of a tab the browser opened
  const retire = async (page) => {
    if (!page) return;
    own.delete(page);
    await withTimeout(page.close(), 5000, 'closing a tab').catch(() => {});
  };
  const fresh = async () => {
    opening += 1;
    try {
      const p = await withTimeout(newPage(ctx, r), 60000, 'opening a tab');
      own.add(p);
      return p;
    } finally {
      opening -= 1;
    }
  };
  let sweeping = false;
  const sweep = async () => {
    if (sweeping || opening) return;
    sweeping = true;
    try {
      for (const p of await withTimeout(ctx.browser.pages(), 10000, 'listing tabs')) {
        if (own.has(p) || opening) continue;
        const url = p.url();
        if (url.startsWith('file:')) {
          const key = labelIn(decodeURIComponent(new URL(url).pathname));
          if (key) opened.set(key, url);
        }
        await withTimeout(p.close(), 5000, 'closing a tab').catch(() => {});
      }
    } catch { /* a tab went away meanwhile */ } finally {
      sweeping = false;
    }
  };
  const worker = async () => {
    let page = null;
    for (let job = queue.shift(); job && !run.cancelled; job = queue.shift()) {
      if (Date.now() > until) {
        out.set(job.cell.id, { id: job.cell.id, outcome: null, notMeasured: true,
                               notes: ['not measured: out of time'] });
        continue;
      }
      let obs;
      try {
        page = page || await fresh();
        obs = await measureCell(ctx, page, job.cell, scope, dl,
                                cfg.matrix.parse && scope === 'm1' && job.cell.body !== 'html', run,
                                job.tries === MATRIX_TRIES - 1);
      } catch (e) {
        obs = { id: job.cell.id, outcome: null, notes: [`error: ${describeError(e)}`] };
      }
      if (run.cancelled) break;
      if (!obs.outcome && job.tries < MATRIX_TRIES - 1) {
        queue.push({ cell: job.cell, tries: job.tries + 1 });
        await retire(page);
        page = null;
        continue;
      }
      if (!obs.outcome) {
        // What httpd answered this cell, for the failure message.
        const seq = logFor(job.cell.path).map((e) => `${e.status}:${e.tag}`);
        obs.notes.push(`${MATRIX_TRIES} tries; httpd logged [${seq.join(', ')}]`);
      }
      if (scope === 'm2') {
        // httpd logs a request when it ends: give the pass a moment.
        const until2 = Date.now() + 2000;
        Object.assign(obs, tokenStep(job.cell, obs.href));
        while (!obs.tokenStep && obs.href && queryTokenOf(obs.href) && Date.now() < until2) {
          await sleep(200);
          Object.assign(obs, tokenStep(job.cell, obs.href));
        }
      }
      out.set(job.cell.id, obs);
      // The tab goes on to the next cell as it is: every state is matched
      // to its cell's URL, and a blank page between cells cost Firefox
      // seconds per cell.
      await sweep();
    }
    await retire(page);
  };
  await Promise.all(Array.from({ length: Math.min(workers, cells.length) }, worker));
  if (run.cancelled) return [];
  await sleep(500);
  await sweep();
  for (const [key, url] of opened) {
    const [sc, id] = key.split(' ');
    if (sc === scope && out.get(id)) out.get(id).notes.push(`opened from disk: ${path.basename(url)}`);
  }
  return cells.map((c) => out.get(c.id));
}

function matrixCounts(cells) {
  const n = {};
  for (const c of cells) {
    const k = c.outcome || (c.notMeasured ? 'not measured' : 'none');
    n[k] = (n[k] || 0) + 1;
  }
  return ['pdf', 'download', 'page', 'error', 'none', 'not measured'].filter((k) => n[k])
    .map((k) => `${k} ${n[k]}`).join(', ');
}

// A cell in flight when a scope's budget runs out may still take its
// navigation, the viewer's parse, a screenshot and a fresh tab: the case
// itself times out only this much later (and then fails).
const MATRIX_CASE_GRACE = 120000; // run.py: MATRIX_CASE_GRACE

// ------------------------------------------------------------------ m3

// How long a page's embeds have to reach a decision in the access log
// (every cell), its control to show and the others to settle; a page
// whose cells or control take longer is not measured, not failed.
// WebKit beside the other lane in CI once took more than 10 s to show a
// page's control: the waits are on conditions, so a long bound costs a
// fast machine nothing.
const EMBED_DECIDE_MS = 30000;
const EMBED_SHOW_MS = 30000;
const EMBED_SETTLE_MS = 1500;
const EMBED_TIMEOUT = 600000;

// What each <embed> of the page shows, by the path its frame is at (a
// judged cell's frame ends at the tokenized URL): {path: {href, pdf}}.
async function embedFrames(page) {
  const out = {};
  let frames = [];
  try {
    frames = await withTimeout(Promise.resolve(framesOf(page)), 5000, 'listing frames');
  } catch {
    return out;
  }
  for (const f of frames) {
    if (f === page.mainFrame()) continue;
    const u = f.url();
    let p;
    try { p = new URL(u).pathname; } catch { continue; }
    if (B === 'chromium' && u.startsWith(CHROME_PDF_EXTENSION)) {
      // Chromium's viewer: an extension frame inside the embed's frame
      const parent = f.parentFrame() && f.parentFrame().url();
      if (parent) {
        try {
          const q = new URL(parent).pathname;
          out[q] = { href: parent, pdf: true };
        } catch { /* not a cell's */ }
      }
      continue;
    }
    if (out[p] && out[p].pdf) continue;
    try {
      // Firefox's pdf.js keeps an octet-stream's type: the viewer tells;
      // WebKit's pdf.js is an iframe inside the PDF's document
      const s = await withTimeout(f.evaluate(() => ({
        href: location.href, type: document.contentType,
        pdfjs: !!window.PDFViewerApplication ||
          !!document.querySelector('iframe[src^="webkit-pdfjs-viewer:"]'),
      })), 3000, 'evaluating in the frame');
      out[p] = { href: s.href, pdf: s.type === 'application/pdf' || s.pdfjs };
    } catch {
      out[p] = out[p] || { href: u, pdf: false };
    }
  }
  return out;
}

// m3 (t/browser/matrix.py, embed_pages): every cell of the protected
// scope in a same-site page's <embed>, at #FDF=javascript:...  An embed
// may show a PDF only after the token step (a pass in the access log,
// the tokenized URL) and with an empty fragment; each page's control, the
// unprotected application/pdf cell, must show with the attacker's
// fragment, or the measurement could not see one.
async function caseEmbedded(ctx) {
  await runCase('m3', async (r) => {
    const t0 = Date.now();
    let shown = 0, hidden = 0, late = 0;
    for (const pg of cfg.matrix.m3) {
      const page = await newPage(ctx, r);
      try {
        const since = readLog().length;
        startGoto(page, pg.url);
        // cells without a final entry (a verdict, untouched, an error) yet
        const open = (log) => pg.cells.filter((c) => !log.some((e) => e.path === c.path &&
          (TERMINAL.has(e.tag) || e.tag === '-' || e.status >= 400)));
        const decided = () => open(readLog().slice(since)).length === 0;
        let seen = {};
        const controlShown = () => seen[pg.control] && seen[pg.control].pdf;
        try {
          await waitFor(decided, EMBED_DECIDE_MS, 'a decision for every cell');
          await waitFor(async () => { seen = await embedFrames(page); return controlShown(); },
                        EMBED_SHOW_MS, 'the control');
        } catch (e) {
          const log = readLog().slice(since);
          const left = open(log);
          r.notes.push(`${pg.url}: ${e.message}` + (left.length ? ` (${left.map((c) =>
            `${c.id} [${log.filter((x) => x.path === c.path).map((x) => x.tag).join(',')}]`).join(' ')})` : ''));
          late++;
          continue;
        }
        const log = readLog().slice(since);
        const passed = (c) => log.some((e) => e.path === c.path && e.tag === 'pass' && e.cookieMatch);
        // The control has shown: the others have had as long.  Read until
        // two readings a second apart agree (a pass that shows nothing is
        // no failure; a PDF shown without one is).
        const count = () => Object.values(seen).filter((f) => f.pdf).length;
        let before = -1;
        try {
          await waitFor(async () => {
            before = count();
            await sleep(EMBED_SETTLE_MS);
            seen = await embedFrames(page);
            return count() === before;
          }, EMBED_SHOW_MS, 'the embeds to settle');
        } catch { /* read as they are */ }
        const cf = fragmentOf(seen[pg.control].href);
        check(r, cf && cf.includes('FDF'),
              `control ${pg.control} shown at ${seen[pg.control].href}: the fragment is not read`);
        for (const c of pg.cells) {
          const f = seen[c.path];
          if (!f || !f.pdf) {
            hidden++;
            continue;
          }
          const frag = fragmentOf(f.href);
          const step = check(r, passed(c) && queryToken(f.href) !== null,
                             `${c.id}: shown in an <embed> without the token step, at ${f.href}`);
          if (check(r, !frag, `${c.id}: shown in an <embed> at ${f.href}`) && step) shown++;
        }
      } finally {
        await page.close().catch(() => {});
      }
    }
    if (late) notMeasured(r, `${late} of ${cfg.matrix.m3.length} pages not decided in time`);
    r.outcome = `${shown} cells shown after the token step, empty fragment; ${hidden} not shown; ` +
      `control shown with #FDF= on ${cfg.matrix.m3.length - late} pages, in ` +
      `${((Date.now() - t0) / 1000).toFixed(0)} s`;
  }, EMBED_TIMEOUT);
}

export async function caseMatrix() {
  const m = cfg.matrix;
  if (!m || (cfg.only && !['m1', 'm2', 'm3'].some((id) => cfg.only.includes(id)))) return;
  // A browser of its own: hundreds of downloads, and no case after it
  // whose "nothing was downloaded" they could spoil.
  const ctx = await launch('matrix', { downloadEvents: true, sessions: m.workers });
  try {
    for (const scope of ['m1', 'm2']) {
      const run = { cancelled: false, measuring: null };
      await runCase(scope, async (r) => {
        const t0 = Date.now();
        run.measuring = measureAll(ctx, r, m[scope], scope, m.workers, t0 + m.budget, run);
        r.cells = await run.measuring;
        const late = r.cells.filter((x) => x.notMeasured);
        for (const c of r.cells.filter((x) => !x.outcome && !x.notMeasured)) {
          r.failures.push(`${c.id}: no outcome (${c.notes.join('; ')})`);
        }
        if (late.length) {
          notMeasured(r, `${late.length} of ${r.cells.length} cells not reached in the ` +
                         `${(m.budget / 1000).toFixed(0)} s budget (${late[0].id} and on)`);
        }
        const opened = r.cells.filter((c) => c.notes.some((n) => n.startsWith('opened from disk'))).length;
        r.outcome = `${matrixCounts(r.cells)}` + (opened ? ` (${opened} opened from disk)` : '') +
          ` in ${((Date.now() - t0) / 1000).toFixed(0)} s, ${m.workers} tabs`;
      }, m.budget + MATRIX_CASE_GRACE);
      // After a timeout its workers would go on in this browser, closing
      // the next scope's tabs as strays: stop them first.
      run.cancelled = true;
      if (run.measuring) await run.measuring.catch(() => {});
    }
    await caseEmbedded(ctx);
  } finally {
    await closeBrowser(ctx);
  }
}
