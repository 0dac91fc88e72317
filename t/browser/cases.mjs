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
import path from 'node:path';
import zlib from 'node:zlib';
import puppeteer from 'puppeteer-core';
import { launchWebKit, launchWebKitPool, VIEWER_PREFIX } from './webkit.mjs';

const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const B = cfg.browser;
const CASE_TIMEOUT = 45000;
const CHROME_PDF_EXTENSION = 'chrome-extension://mhjfbmdgcfjbbpaeojofohoefgiehjai/';

const CHROMIUM_FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
  '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync',
];

// Chromium reads the last --disable-features only: puppeteer's own list,
// plus the network time queries (clients2.google.com) that the flags above
// leave on.
function chromiumArgs() {
  const own = puppeteer.defaultArgs({ headless: true })
    .find((a) => a.startsWith('--disable-features='));
  const features = new Set(own ? own.slice('--disable-features='.length).split(',') : []);
  features.add('NetworkTimeServiceQuerying');
  return [...CHROMIUM_FLAGS, `--disable-features=${[...features].join(',')}`,
          `--proxy-server=http://127.0.0.1:${cfg.sinkPort}`, ...chromiumHostArgs()];
}

// The HTTPS cases' host names: 127.0.0.1 for these names only, and no
// proxy for them (everything else still goes to the sink).  The test CA is
// trusted through the NSS database run.py puts under $HOME/.pki/nssdb.
function chromiumHostArgs() {
  if (!cfg.https) return [];
  return [`--host-resolver-rules=${cfg.https.hosts.map((h) => `MAP ${h} 127.0.0.1`).join(', ')}`,
          `--proxy-bypass-list=${cfg.https.hosts.join(';')}`];
}

// The same for Firefox: network.dns.localDomains resolves the names to
// loopback, and the proxy leaves them alone.
function firefoxHostPrefs() {
  if (!cfg.https) return {};
  return {
    'network.dns.localDomains': cfg.https.hosts.join(','),
    'network.proxy.no_proxies_on': cfg.https.hosts.join(','),
  };
}

// Firefox trusts what its profile's certificate database says: a copy of
// run.py's, which holds the run's test CA and nothing else.
function firefoxTrustTestCA(profile) {
  if (!cfg.https) return;
  for (const f of fs.readdirSync(cfg.https.nssdb)) {
    fs.copyFileSync(path.join(cfg.https.nssdb, f), path.join(profile, f));
  }
}

// Firefox: a fresh profile that does not talk to the network by itself.
function firefoxPrefs(downloads, blockCookies) {
  return {
    // downloads go to our directory, without asking
    'browser.download.folderList': 2,
    'browser.download.dir': downloads,
    'browser.download.useDownloadDir': true,
    'browser.download.always_ask_before_handling_new_types': false,
    'browser.download.start_downloads_in_tmp_dir': false,
    'browser.download.alwaysOpenPanel': false,
    // cookies: Firefox's default (5, Total Cookie Protection; puppeteer's
    // profile would otherwise say 0), or 2 (block all)
    'network.cookie.cookieBehavior': blockCookies ? 2 : 5,
    // updates
    'app.update.auto': false,
    'app.update.disabledForTesting': true,
    'app.update.checkInstallTime': false,
    'extensions.update.enabled': false,
    'extensions.systemAddon.update.enabled': false,
    'extensions.getAddons.cache.enabled': false,
    'extensions.blocklist.enabled': false,
    'browser.search.update': false,
    'media.gmp-manager.updateEnabled': false,
    // telemetry, studies, health reports
    'toolkit.telemetry.enabled': false,
    'toolkit.telemetry.unified': false,
    'toolkit.telemetry.archive.enabled': false,
    'toolkit.telemetry.server': '',
    'toolkit.telemetry.newProfilePing.enabled': false,
    'toolkit.telemetry.shutdownPingSender.enabled': false,
    'toolkit.telemetry.firstShutdownPing.enabled': false,
    'toolkit.telemetry.updatePing.enabled': false,
    'toolkit.telemetry.bhrPing.enabled': false,
    'datareporting.healthreport.uploadEnabled': false,
    'datareporting.policy.dataSubmissionEnabled': false,
    'app.normandy.enabled': false,
    'app.normandy.api_url': '',
    'app.shield.optoutstudies.enabled': false,
    'browser.ping-centre.telemetry': false,
    'browser.newtabpage.activity-stream.feeds.telemetry': false,
    'browser.newtabpage.activity-stream.telemetry': false,
    'browser.newtabpage.enabled': false,
    'browser.topsites.contile.enabled': false,
    'browser.discovery.enabled': false,
    // captive portal and connectivity checks
    'network.captive-portal-service.enabled': false,
    'network.connectivity-service.enabled': false,
    'captivedetect.canonicalURL': '',
    // safe browsing
    'browser.safebrowsing.malware.enabled': false,
    'browser.safebrowsing.phishing.enabled': false,
    'browser.safebrowsing.downloads.enabled': false,
    'browser.safebrowsing.downloads.remote.enabled': false,
    'browser.safebrowsing.blockedURIs.enabled': false,
    'browser.safebrowsing.provider.google.updateURL': '',
    'browser.safebrowsing.provider.google4.updateURL': '',
    'browser.safebrowsing.provider.mozilla.updateURL': '',
    // remote settings: puppeteer's profile points the server at
    // http://dummy.test/ (a reserved name that never resolves); keep that,
    // and turn off the certificate lists that ride on it
    'security.remote_settings.crlite_filters.enabled': false,
    'security.remote_settings.intermediates.enabled': false,
    // prefetching, DNS over HTTPS, push, region and geolocation look-ups
    'network.dns.disablePrefetch': true,
    'network.prefetch-next': false,
    'network.predictor.enabled': false,
    'network.http.speculative-parallel-limit': 0,
    'network.trr.mode': 5,
    'dom.push.connection.enabled': false,
    'browser.region.update.enabled': false,
    'browser.region.network.url': '',
    'geo.provider.network.url': '',
    // everything that is not loopback goes to the run's sink (loopback
    // never uses a proxy: network.proxy.allow_hijacking_localhost=false)
    'network.proxy.type': 1,
    'network.proxy.http': '127.0.0.1',
    'network.proxy.http_port': cfg.sinkPort,
    'network.proxy.ssl': '127.0.0.1',
    'network.proxy.ssl_port': cfg.sinkPort,
    'network.proxy.allow_hijacking_localhost': false,
    ...firefoxHostPrefs(),
  };
}

// ------------------------------------------------------------- helpers

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(fn, timeout, what) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeout} ms waiting for ${what}` +
                      (last instanceof Error ? ` (${last.message})` : ''));
    }
    await sleep(100);
  }
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

// The URL of a tab now: puppeteer knows it, WebDriver (WebKit) is asked.
async function urlOf(page) {
  return B === 'webkit' ? page.currentUrl() : page.url();
}

// The frames of a page (puppeteer's frames(); WebKit's adapter asks).
async function framesOf(page) {
  return page.frames();
}

// The fragment of a URL: null when there is no '#', '' when it is empty.
function fragmentOf(url) {
  const i = url.indexOf('#');
  return i < 0 ? null : url.slice(i + 1);
}

function queryToken(url) {
  const u = new URL(url);
  const all = u.searchParams.getAll('pdftoken');
  return all.length === 1 ? all[0] : null;
}

function tokenExpiry(token) {
  const raw = Buffer.from(token, 'base64url');
  return Number(raw.readBigUInt64BE(1));
}

// ----------------------------------------------------------- access log

// %{usec}t %>s %{PDFTOKEN}e "%r" "%{Cookie}i" %{Sec-Fetch-Site}i
// %{Sec-Fetch-Dest}i "%{Content-Disposition}o" %{local}p %H
// httpd writes a line when a request ends, so a redirect can be logged
// after the request that followed it: entries are sorted by the time each
// request arrived (microseconds).
const LOG_RE = /^(\d+) (\d{3}) (\S+) "(\S+) (\S+) (\S+)" "(.*)" (\S+) (\S+) "(.*)"(?: (\d+) (\S+))?$/;

function readLog() {
  let text = '';
  try {
    text = fs.readFileSync(cfg.log, 'latin1');
  } catch {
    return [];
  }
  const out = [];
  for (const line of text.split('\n')) {
    const m = LOG_RE.exec(line);
    if (!m) continue;
    const target = m[5];
    const [p, query = ''] = target.split('?');
    const params = new URLSearchParams(query);
    const q = params.getAll('pdftoken');
    const cookies = new Map();
    if (m[7] !== '-') {
      for (const part of m[7].split(';')) {
        const eq = part.indexOf('=');
        if (eq > 0) cookies.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
      }
    }
    const token = q.length === 1 ? q[0] : null;
    // Over HTTPS only the __Host- name is the module's (SPEC section 4).
    const https = !!cfg.https && Number(m[11]) === cfg.https.port;
    const prefix = https ? '__Host-pdftoken_' : 'pdftoken_';
    out.push({
      line, status: Number(m[2]), tag: m[3], method: m[4], target, path: p,
      params, token, cookies,
      cookieMatch: token !== null && [...cookies.entries()].some(
        ([n, v]) => n.startsWith(prefix) && v === token),
      site: m[8], dest: m[9], disposition: m[10], usec: BigInt(m[1]),
      https, protocol: m[12] || null, cookieHeader: m[7] === '-' ? '' : m[7],
    });
  }
  return out.sort((a, b) => (a.usec < b.usec ? -1 : a.usec > b.usec ? 1 : 0));
}

const logFor = (p) => readLog().filter((e) => e.path === p);
const decisions = (entries) => entries.filter((e) => e.tag !== 'range').map((e) => e.tag);
const TERMINAL = new Set(['pass', 'fallback', 'deny']);

// ------------------------------------------------------------ screenshots

// Decode an 8-bit RGB/RGBA non-interlaced PNG (what browsers produce) and
// say whether it shows a rendered page: many colours, a white page area,
// and dark pixels (the text).
function pngStats(buf) {
  let pos = 8;
  let width = 0, height = 0, ctype = 0, depth = 0, interlace = 0;
  const idat = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos);
    const type = buf.toString('latin1', pos + 4, pos + 8);
    const data = buf.subarray(pos + 8, pos + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      depth = data[8];
      ctype = data[9];
      interlace = data[12];
    } else if (type === 'IDAT') {
      idat.push(data);
    } else if (type === 'IEND') {
      break;
    }
    pos += 12 + len;
  }
  if (depth !== 8 || (ctype !== 2 && ctype !== 6) || interlace !== 0) {
    throw new Error(`unsupported PNG (depth ${depth}, colour type ${ctype})`);
  }
  const bpp = ctype === 6 ? 4 : 3;
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * bpp;
  const px = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)];
    const src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const cur = px.subarray(y * stride, (y + 1) * stride);
    const prev = y ? px.subarray((y - 1) * stride, y * stride) : null;
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? cur[x - bpp] : 0;
      const b = prev ? prev[x] : 0;
      const c = prev && x >= bpp ? prev[x - bpp] : 0;
      let v = src[x];
      if (f === 1) v += a;
      else if (f === 2) v += b;
      else if (f === 3) v += (a + b) >> 1;
      else if (f === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      cur[x] = v & 255;
    }
  }
  const colours = new Set();
  let white = 0, dark = 0;
  const n = width * height;
  for (let i = 0; i < n; i++) {
    const r = px[i * bpp], g = px[i * bpp + 1], b = px[i * bpp + 2];
    colours.add((r << 16) | (g << 8) | b);
    if (r > 245 && g > 245 && b > 245) white++;
    if (r < 60 && g < 60 && b < 60) dark++;
  }
  const stats = {
    width, height, colours: colours.size,
    white: +(white / n).toFixed(4), dark: +(dark / n).toFixed(4),
  };
  stats.rendered = stats.colours >= 16 && stats.white >= 0.05 && dark >= 50;
  return stats;
}

let shotNo = 0;
async function screenshot(page, name) {
  const buf = Buffer.from(await page.screenshot({ type: 'png' }));
  if (cfg.shots) {
    fs.mkdirSync(cfg.shots, { recursive: true });
    shotNo += 1;
    fs.writeFileSync(path.join(cfg.shots, `${B}-${String(shotNo).padStart(2, '0')}-${name}.png`), buf);
  }
  return pngStats(buf);
}

// Poll screenshots until one shows a rendered page (viewers paint late).
async function renderedShot(page, name, timeout = 8000) {
  let stats;
  const deadline = Date.now() + timeout;
  do {
    stats = await screenshot(page, name);
    if (stats.rendered) return stats;
    await sleep(300);
  } while (Date.now() < deadline);
  return stats;
}

// ---------------------------------------------------------------- viewer

// What the frame shows: its URL as the page sees it, its content type, and
// the state of the browser's PDF viewer, if any (title is the PDF's /Title
// once the viewer has parsed the document; page is the current page).
async function viewerState(page, frameOrGetter) {
  const frame = typeof frameOrGetter === 'function' ? await frameOrGetter() : frameOrGetter;
  if (!frame) throw new Error('no such frame (yet)');
  const doc = await withTimeout(frame.evaluate(() => {
    const app = window.PDFViewerApplication; // Firefox's pdf.js
    return {
      href: location.href,
      hash: location.hash,
      contentType: document.contentType,
      // the PDF's /Title (document.title carries it only at top level)
      title: app && app.pdfDocument
        ? (app.documentInfo && app.documentInfo.Title) || document.title : null,
      page: app && app.pdfDocument ? app.page : null,
      pages: app && app.pdfDocument ? app.pagesCount : null,
    };
  }), 3000, 'evaluating in the frame');
  if (B === 'webkit' && doc.contentType === 'application/pdf') {
    // WebKit's built-in pdf.js runs in an iframe of the PDF's document
    // (webkit-pdfjs-viewer://pdfjs/web/viewer.html); its /Title and page
    // are read there, as in Firefox.
    doc.title = null;
    doc.page = null;
    const idx = await withTimeout(frame.evaluate((prefix) => [...document.querySelectorAll('iframe')]
      .findIndex((f) => (f.getAttribute('src') || '').startsWith(prefix)), VIEWER_PREFIX),
                                  3000, 'finding the PDF viewer');
    if (idx >= 0) {
      const viewer = await withTimeout(page._inFrame([...frame.path, idx], (d) => d.executeScript(`
        const app = window.PDFViewerApplication;
        return app && app.pdfDocument ? {
          title: (app.documentInfo && app.documentInfo.Title) || null,
          page: app.page, pages: app.pagesCount } : { title: null, page: null, pages: null };`)),
                                       3000, 'evaluating in the PDF viewer');
      Object.assign(doc, viewer);
    }
  }
  if (B === 'chromium' && doc.contentType === 'application/pdf') {
    // Chromium's viewer is an extension frame inside the PDF's frame.
    const ext = page.frames().find((f) => f.parentFrame() === frame &&
                                   f.url().startsWith(CHROME_PDF_EXTENSION));
    doc.title = null;
    doc.page = null;
    if (ext) {
      Object.assign(doc, await withTimeout(evaluateInViewer(ext, () => {
        const v = document.querySelector('pdf-viewer');
        const tb = v && v.shadowRoot && v.shadowRoot.querySelector('viewer-toolbar');
        const sel = tb && tb.shadowRoot && tb.shadowRoot.querySelector('viewer-page-selector');
        const input = sel && sel.shadowRoot && sel.shadowRoot.querySelector('input');
        const title = tb && tb.shadowRoot && tb.shadowRoot.querySelector('#title');
        return {
          title: title ? title.textContent.trim() : null,
          page: input ? Number(input.value) : null,
          pages: sel ? Number(sel.docLength) || null : null,
        };
      }), 3000, 'evaluating in the PDF viewer'));
    }
  }
  return doc;
}

// Evaluate fn in a Chromium PDF viewer's extension frame.  That frame is
// out of process, so it is a CDP target of its own whose id is the frame's
// id; a session of our own on it evaluates reliably, where puppeteer's
// frame.evaluate() loses the second of two viewers on one page.
async function evaluateInViewer(frame, fn) {
  const target = frame.page().browser().targets().find((t) => t._targetId === frame._id);
  if (!target) throw new Error('the PDF viewer frame has no target (yet)');
  const session = await target.createCDPSession();
  try {
    const { result, exceptionDetails } = await session.send('Runtime.evaluate', {
      expression: `(${fn})()`, returnByValue: true,
    });
    if (exceptionDetails) throw new Error(`in the PDF viewer: ${exceptionDetails.text}`);
    return result.value;
  } finally {
    await session.detach().catch(() => {});
  }
}

// Wait until the frame's viewer shows the PDF labelled `label`.
async function waitForViewer(page, frameOrGetter, label, timeout = 15000) {
  let last = null;
  try {
    return await waitFor(async () => {
      const s = last = await viewerState(page, frameOrGetter);
      return s.contentType === 'application/pdf' && s.title &&
        s.title.startsWith(label) && s.page >= 1 ? s : null;
    }, timeout, `the PDF viewer to show "${label}"`);
  } catch (e) {
    throw new Error(`${e.message}; last seen ${JSON.stringify(last)}`);
  }
}

// ------------------------------------------------------------- browsers

async function launch(name, { blockCookies = false, noScript = false, downloadEvents = false,
                               sessions = 1 } = {}) {
  const dir = path.join(cfg.workdir, name);
  const profile = path.join(dir, 'profile');
  const downloads = path.join(dir, 'downloads');
  fs.mkdirSync(downloads, { recursive: true });
  fs.mkdirSync(profile, { recursive: true });
  const events = [];
  let browser;
  if (B === 'webkit') {
    // MiniBrowser's own options: its cookie policy (the default,
    // no-third-party, like Safari's; "never" blocks all) and WebKit's
    // enable-javascript setting.  Downloads are saved without asking in
    // GLib's download directory, set to ours; they raise no event.
    const opts = {
      dir, downloads, sinkPort: cfg.sinkPort,
      args: [...(blockCookies ? ['--cookies-policy=never'] : []),
             ...(noScript ? ['--enable-javascript=false'] : [])],
      // WebKit trusts the HTTPS site's certificate for its host names
      // (webkitgtk:browserOptions certificates), not every certificate
      certificates: cfg.https ? cfg.https.hosts.map((host) => ({
        host, certificateFile: cfg.https.serverCert })) : [],
      hosts: cfg.https ? cfg.https.hosts : [],
      onSpawn: (pid) => fs.appendFileSync(cfg.pidfile, `${pid}\n`),
    };
    // `sessions` > 1: MiniBrowsers that measure at once (the matrix)
    browser = sessions > 1 ? await launchWebKitPool(sessions, opts) : await launchWebKit(opts);
  } else if (B === 'chromium') {
    if (blockCookies) {
      // The content setting behind chrome://settings/cookies "Block all".
      fs.mkdirSync(path.join(profile, 'Default'), { recursive: true });
      fs.writeFileSync(path.join(profile, 'Default', 'Preferences'), JSON.stringify({
        profile: { default_content_setting_values: { cookies: 2 } },
      }));
    }
    browser = await puppeteer.launch({
      executablePath: cfg.executable,
      headless: true,
      userDataDir: profile,
      args: chromiumArgs(),
      timeout: 30000,
      protocolTimeout: 30000,
      handleSIGHUP: true, handleSIGINT: true, handleSIGTERM: true,
    });
    const cdp = await browser.target().createCDPSession();
    await cdp.send('Browser.setDownloadBehavior', {
      behavior: 'allow', downloadPath: downloads, eventsEnabled: true,
    });
    cdp.on('Browser.downloadWillBegin', (e) => events.push(e.url));
  } else {
    firefoxTrustTestCA(profile);
    browser = await puppeteer.launch({
      browser: 'firefox',
      protocol: 'webDriverBiDi',
      executablePath: cfg.executable,
      headless: true,
      userDataDir: profile,
      extraPrefsFirefox: {
        ...firefoxPrefs(downloads, blockCookies),
        ...(noScript ? { 'javascript.enabled': false } : {}),
      },
      timeout: 60000,
      protocolTimeout: 30000,
      handleSIGHUP: true, handleSIGINT: true, handleSIGTERM: true,
    });
  }
  if (B === 'firefox' && downloadEvents) {
    // WebDriver BiDi's download event; puppeteer subscribes to every
    // browsingContext event but has no API for this one.
    browser.connection.on('browsingContext.downloadWillBegin', (e) => events.push(e.url));
  }
  // run.py kills whatever of it survives us, by these PIDs (their groups)
  for (const p of browser.processes ? browser.processes() : [browser.process()]) {
    if (p && p.pid) fs.appendFileSync(cfg.pidfile, `${p.pid}\n`);
  }
  return { browser, downloads, events };
}

// Files in the download directory (finished or not).
// Files in the download directory; a WebKit pool's sessions save into
// s<i>/ of their own (named "s<i>/file").
function downloadsIn(ctx) {
  const out = [];
  for (const f of fs.readdirSync(ctx.downloads)) {
    const full = path.join(ctx.downloads, f);
    if (/^s\d+$/.test(f) && fs.statSync(full).isDirectory()) {
      for (const g of fs.readdirSync(full)) out.push(`${f}/${g}`);
    } else {
      out.push(f);
    }
  }
  return out.sort();
}

async function newPage(ctx, r) {
  const page = await ctx.browser.newPage();
  if (B !== 'webkit') await page.setViewport({ width: 900, height: 700 });
  page.on('dialog', (d) => {
    r.dialogs.push(`${d.type()}: ${d.message()}`);
    d.dismiss().catch(() => {});
  });
  return page;
}

// Start a navigation without waiting for it: a download never loads.
function startGoto(page, url) {
  page.goto(url, { waitUntil: 'load', timeout: 20000 }).catch(() => {});
}

// ----------------------------------------------------------------- cases

const results = [];

async function runCase(id, fn, timeout = CASE_TIMEOUT) {
  if (cfg.only && !cfg.only.includes(id)) return;
  const r = { id, browser: B, ok: false, outcome: '', notes: [], failures: [], dialogs: [],
              limits: [] };
  const t0 = Date.now();
  try {
    await withTimeout(fn(r), timeout, `case ${id}`);
  } catch (e) {
    r.failures.push(`error: ${e.message.split('\n')[0]}`);
  }
  // Any alert() from a page under test means the attacker's script ran
  // (the c4 control moves its expected alert out of r.dialogs).
  if (r.dialogs.length) {
    r.failures.push(`script ran: dialog(s) ${JSON.stringify(r.dialogs)}`);
  }
  r.ok = r.failures.length === 0;
  r.seconds = +((Date.now() - t0) / 1000).toFixed(1);
  const word = !r.ok ? 'FAIL' : r.limits.length ? 'LIMIT' : 'ok';
  console.log(`[${B}] ${id} ${word} (${r.seconds} s): ${r.outcome}` +
              (r.failures.length ? `\n    ${r.failures.join('\n    ')}` : '') +
              (r.limits.length ? `\n    limit: ${r.limits.join('; ')}` : '') +
              (r.notes.length ? `\n    notes: ${r.notes.join('; ')}` : ''));
  results.push(r);
  writeResults();
}

// What an engine cannot do, measured in this run (never assumed): the
// check it stands for is not made, the rest of the case still is, and
// run.py prints the reason in the table instead of "ok".
// `tag` is the few words the table cell shows, `reason` the full line
// printed under the table.
function limit(r, [tag, reason]) {
  if (!r.limits.includes(reason)) {
    r.limits.push(reason);
    r.limitTags = [...(r.limitTags || []), tag];
  }
}

// WebKit's built-in pdf.js opens every PDF on page 1: its viewer frame is
// viewer.html?file= without the document's fragment.  Measured once per
// run on the unprotected control document (c3's): does #page=2 show page 2?
let pageFragmentShown = null;
const NO_PAGE_FRAGMENT = ['viewer ignores #page', 'WebKit\'s PDF viewer ignores #page=N ' +
  '(measured: the unprotected control doc.pdf#page=2 opens on page 1), so the page shown ' +
  'cannot tell a kept fragment; the URL and location.hash still do'];
async function viewerShowsPageFragment(ctx, r) {
  if (pageFragmentShown === null) {
    const c = cfg.cases.c3.control;
    const ctl = await newPage(ctx, r);
    try {
      startGoto(ctl, c.pageUrl);
      await waitForViewer(ctl, () => ctl.mainFrame(), c.label);
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

function check(r, cond, msg) {
  if (!cond) r.failures.push(msg);
  return cond;
}

let version = 'unknown';
function writeResults() {
  fs.writeFileSync(cfg.results, JSON.stringify({ browser: B, version, results }, null, 1));
}

// The common ending of a visit that must end inline: the log shows
// `redirect` (a 302, or with PdfTokenFragment safe the 200 fragment page:
// redirectStatus) then `pass` with the matching cookie, the page is on the
// tokenized URL with an empty fragment (or exactly `fragment`, without
// its '#', when given), the viewer shows the document, a screenshot is not
// blank, nothing was downloaded.  `since` skips log entries of earlier
// visits to the same path.
async function expectInline(r, ctx, page, c, { since = 0, downloadsBefore = [], shot = c.label,
                                               fragment, redirectStatus = 302, noViewer = null } = {}) {
  await waitFor(() => logFor(c.path).slice(since).some((e) => TERMINAL.has(e.tag)),
                15000, `a pass/fallback line for ${c.path} in the access log`);
  let view = null;
  let blank = false;
  try {
    view = await waitForViewer(page, () => page.mainFrame(), c.label);
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
  check(r, stats.rendered || blank, `screenshot looks blank: ${JSON.stringify(stats)}`);
  const downloads = downloadsIn(ctx).filter((f) => !downloadsBefore.includes(f));
  check(r, downloads.length === 0 && ctx.events.length === 0,
        `a download happened: ${JSON.stringify(downloads.concat(ctx.events))}`);
  r.notes.push(`log ${seq.join(',')}; sec-fetch-site ${entries[0] ? entries[0].site : '?'}`);
  return { view, url, entries, stats, pass };
}

async function caseLinkClick(ctx) {
  await runCase('c1', async (r) => {
    const c = cfg.cases.c1;
    const page = await newPage(ctx, r);
    await page.goto(c.attacker, { waitUntil: 'load', timeout: 15000 });
    await page.click('#go');
    const { view } = await expectInline(r, ctx, page, c);
    r.outcome = view ? `inline, viewer p.${view.page}/${view.pages || '?'}` : 'not inline';
    await page.close();
  });
}

// d1-d3: a PDF made by PHP-FPM, a proxied application, a CGI script, at
// a URL without .pdf (judged after the handler): a cross-site link with the
// attacker's fragment, like c1, must end inline after one 302.  run.py
// checks afterwards what query each back end received.
async function caseDynamic(ctx) {
  for (const id of ['d1', 'd2', 'd3']) {
    await runCase(id, async (r) => {
      const c = cfg.cases[id];
      const page = await newPage(ctx, r);
      await page.goto(c.attacker, { waitUntil: 'load', timeout: 15000 });
      await page.click('#go');
      const { view } = await expectInline(r, ctx, page, c);
      r.outcome = view ? `inline, viewer p.${view.page}/${view.pages || '?'}` : 'not inline';
      await page.close();
    });
  }
}

async function caseScript(ctx) {
  await runCase('c2a', async (r) => {
    const c = cfg.cases.c2a;
    const page = await newPage(ctx, r);
    startGoto(page, c.attacker); // its script navigates away after 300 ms
    const { view } = await expectInline(r, ctx, page, c);
    r.outcome = view ? 'inline' : 'not inline';
    await page.close();
  });
  await runCase('c2b', async (r) => {
    const c = cfg.cases.c2b;
    const page = await newPage(ctx, r);
    startGoto(page, c.attackUrl);
    const { view } = await expectInline(r, ctx, page, c);
    r.outcome = view ? 'inline' : 'not inline';
    await page.close();
  });
}

async function casePage2(ctx) {
  await runCase('c3', async (r) => {
    const c = cfg.cases.c3;
    // Control: without the module the viewer honours #page=2.
    const ctl = await newPage(ctx, r);
    startGoto(ctl, c.control.pageUrl);
    const cv = await waitForViewer(ctl, () => ctl.mainFrame(), c.control.label);
    await sleep(300);
    const cview = await viewerState(ctl, ctl.mainFrame());
    if (B === 'webkit' && cview.page === 1) {
      pageFragmentShown = false;
      limit(r, NO_PAGE_FRAGMENT);
    } else {
      check(r, cview.page === 2,
            `control: unprotected doc.pdf#page=2 opened on page ${cview.page}, so the ` +
            'viewer\'s page cannot be measured');
    }
    const ctlUrl = await urlOf(ctl);
    check(r, fragmentOf(ctlUrl) === 'page=2', `control: URL ${ctlUrl}`);
    await ctl.close();
    // Protected: the redirect drops #page=2 like any fragment.
    const page = await newPage(ctx, r);
    startGoto(page, c.pageUrl);
    const { view } = await expectInline(r, ctx, page, c);
    await sleep(300);
    const after = await viewerState(page, page.mainFrame());
    check(r, after.page === 1, `protected doc opened on page ${after.page}, expected 1`);
    r.outcome = view ? `inline, page ${after.page} (control: page ${cview.page || cv.page})` : 'not inline';
    await page.close();
  });
}

async function caseProbe(ctx) {
  await runCase('c4', async (r) => {
    const c = cfg.cases.c4;
    const reported = {};
    for (const name of ['c4-control', 'c4']) {
      const p = c[name];
      const page = await newPage(ctx, r);
      await page.goto(p.attacker, { waitUntil: 'load', timeout: 15000 });
      await page.click('#go');
      const rep = await waitFor(() => logFor(p.report)[0], 15000,
                                `${name}: the probe's report in the access log`);
      reported[name] = rep.params.get('hash');
      await waitFor(async () => (await urlOf(page)).includes('/probe.html'), 5000, 'the probe page');
      const shown = await waitFor(
        () => page.evaluate(() => document.getElementById('hash') &&
                            document.getElementById('hash').textContent),
        5000, 'the probe to show the hash');
      await sleep(400); // the probe's eval runs on a timer
      if (B === 'webkit') await page.flushDialogs(); // WebDriver sees an alert on a command
      const finalUrl = await urlOf(page);
      const seq = decisions(logFor(p.path));
      if (name === 'c4') {
        check(r, reported[name] === '', `probe reported hash ${JSON.stringify(reported[name])}`);
        check(r, shown === '""', `probe page shows hash ${shown}`);
        check(r, fragmentOf(finalUrl) === '' || fragmentOf(finalUrl) === null,
              `final URL ${finalUrl}`);
        check(r, JSON.stringify(seq) === JSON.stringify(['redirect', 'pass']),
              `access log: expected [redirect, pass], got ${JSON.stringify(seq)}`);
        const pass = logFor(p.path).find((e) => e.tag === 'pass');
        check(r, pass && pass.cookieMatch, 'the pass request did not carry the matching cookie');
        check(r, r.dialogs.length === 0, `the probe ran the fragment's script: ${r.dialogs}`);
      } else {
        // The control proves the probe works: it sees the fragment and the
        // "vulnerable" page runs it.
        check(r, reported[name] === c.expectedControlHash,
              `control probe reported ${JSON.stringify(reported[name])}, expected ` +
              `${JSON.stringify(c.expectedControlHash)}`);
        check(r, r.dialogs.length === 1, `control probe: dialogs ${JSON.stringify(r.dialogs)}`);
        r.controlDialogs = r.dialogs.splice(0);
      }
      await page.close();
    }
    r.outcome = `hash ${JSON.stringify(reported.c4)} (control: ` +
      `${JSON.stringify(reported['c4-control'])}, ${r.controlDialogs.length} alert)`;
  });
}

// Hold every follow-up request (the one that carries the token) for a
// document until `n` of them are waiting, then let them all go: each visit
// has had its redirect and its cookie before any sends its cookie back,
// the order that breaks if one visit's cookie overwrites another's.
// Returns { done }: a promise of 'all held', or of 'timeout' (then it
// releases what it holds).
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


async function caseTwoTabs(ctx) {
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
        views.push(await waitForViewer(page, () => page.mainFrame(), c.label));
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
      check(r, stats.rendered, `tab ${i + 1}: screenshot looks blank ${JSON.stringify(stats)}`);
    }
    check(r, downloadsIn(ctx).length === 0 && ctx.events.length === 0, 'a download happened');
    r.notes.push(`log ${seq.join(',')}; cookies sent with the passes: ` +
                 passes.map((e) => e.cookies.size).join(','));
    r.outcome = views.every(Boolean) ? 'both inline (R,R,P,P)' : 'not both inline';
    for (const page of pages) await page.close();
  });
}

async function caseTwoIframes(ctx) {
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
                                       c.label));
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
    check(r, stats.rendered, `screenshot looks blank ${JSON.stringify(stats)}`);
    check(r, downloadsIn(ctx).length === 0 && ctx.events.length === 0, 'a download happened');
    check(r, JSON.stringify(seq.slice(0, 2)) === '["redirect","redirect"]',
          `the two visits did not overlap: ${JSON.stringify(seq)}`);
    r.notes.push(`log ${seq.join(',')}; sec-fetch-dest ${entries.map((e) => e.dest).join(',')}; ` +
                 `cookies sent with the passes: ${passes.map((e) => e.cookies.size).join(',')}`);
    r.outcome = views.every(Boolean) ? 'both inline (R,R,P,P)' : 'not both inline';
    await page.close();
  });
}

async function caseStale(ctx) {
  await runCase('c7a', async (r) => {
    const c = cfg.cases.c7a;
    const first = await newPage(ctx, r);
    startGoto(first, c.url);
    const a = await expectInline(r, ctx, first, c, { shot: 'c7a-first' });
    const stale = a.url.split('#')[0];
    const t1 = queryToken(stale);
    await first.close();
    // Wait until the token (and its cookie, Max-Age = timeout) is past.
    const wait = tokenExpiry(t1) * 1000 + 1200 - Date.now();
    if (wait > 0) await sleep(wait);
    const since = logFor(c.path).length;
    const page = await newPage(ctx, r);
    const attackUrl = stale + '#x=javascript:alert(document.domain)';
    startGoto(page, attackUrl);
    // The contract (R4): the stale token reaches the server and heals.  A
    // browser that shows its cached copy instead never asks the server,
    // and keeps whatever fragment the link carried.
    const seen = await waitFor(async () => {
      if (logFor(c.path).length > since) return 'server';
      try {
        const v = await viewerState(page, () => page.mainFrame());
        if (v.contentType === 'application/pdf' && v.title && v.title.startsWith(c.label)) {
          return 'cache';
        }
      } catch { /* not there yet */ }
      return null;
    }, 15000, 'a request to the server or a rendered page');
    if (seen === 'cache') {
      await sleep(1500);
      if (logFor(c.path).length === since) {
        const v = await viewerState(page, () => page.mainFrame());
        const shot = await renderedShot(page, 'c7a-stale-from-cache');
        r.failures.push('the stale tokenized URL was shown from the browser cache without any ' +
                        `request to the server (R2 sends Cache-Control: private, no max-age; the ` +
                        `document has Last-Modified 30 days ago): page on ${await urlOf(page)}, ` +
                        `location.hash ${JSON.stringify(v.hash)}, viewer on "${v.title}", ` +
                        `screenshot ${shot.rendered ? 'rendered' : 'blank'}`);
        r.outcome = `NOT healed: served from browser cache, hash ${JSON.stringify(v.hash)}`;
        await page.close();
        return;
      }
    }
    const b = await expectInline(r, ctx, page, c, { since, shot: 'c7a-stale' });
    const entries = logFor(c.path).slice(since);
    check(r, entries[0] && entries[0].token === t1,
          'the first request of the second visit did not carry the stale token');
    const t2 = queryToken(b.url);
    check(r, t2 && t2 !== t1, 'the healed URL did not get a fresh token');
    r.outcome = b.view ? 'healed: 1 redirect, inline' : 'not inline';
    await page.close();
  });
}

async function caseStaleLink(ctx) {
  await runCase('c7b', async (r) => {
    const c = cfg.cases.c7b;
    const page = await newPage(ctx, r);
    await page.goto(c.attacker, { waitUntil: 'load', timeout: 15000 });
    await page.click('#go');
    const { url, entries, view } = await expectInline(r, ctx, page, c);
    check(r, entries[0] && entries[0].token === c.staleToken,
          'the first request did not carry the stale token');
    check(r, queryToken(url) !== c.staleToken, 'the final URL still has the stale token');
    r.outcome = view ? 'healed: 1 redirect, inline' : 'not inline';
    await page.close();
  });
}

async function caseCrossSiteIframe(ctx) {
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

async function caseNoCookies() {
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

// ------------------------------------------------ PdfTokenFragment safe

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

async function caseFragmentTable(ctx) {
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

async function caseSafePage(ctx) {
  await runCase('f2', async (r) => {
    const c = cfg.cases.f2;
    const page = await newPage(ctx, r);
    startGoto(page, c.pageUrl);
    const { view } = await expectInline(r, ctx, page, c, { fragment: 'page=3', redirectStatus: 200 });
    const after = await viewerOnPage(page, 3);
    if (B === 'webkit' && after && after.page === 1 && !await viewerShowsPageFragment(ctx, r)) {
      limit(r, NO_PAGE_FRAGMENT);
    } else {
      check(r, after && after.page === 3, `the viewer is on page ${after && after.page}, expected 3`);
    }
    r.outcome = view ? `inline, #page=3 kept, viewer p.${after && after.page}/${after && after.pages}` : 'not inline';
    await page.close();
  });
}

async function caseSafeLinks(ctx) {
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
        check(r, after && after.page === wantPage,
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
async function caseNoScript(mainCtx) {
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
        check(r, after && after.page === 1, `the viewer is on page ${after && after.page}, expected 1`);
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

async function caseStripScope(ctx) {
  await runCase('f6', async (r) => {
    const c = cfg.cases.f6;
    const page = await newPage(ctx, r);
    startGoto(page, c.pageUrl);
    const { view } = await expectInline(r, ctx, page, c, { fragment: '', redirectStatus: 302 });
    await sleep(300);
    const after = await viewerState(page, page.mainFrame());
    check(r, after.page === 1, `the viewer is on page ${after.page}, expected 1`);
    r.outcome = view ? `inline, 302, empty fragment, p.${after.page}` : 'not inline';
    await page.close();
  });
}

// ------------------------------------------- HTTPS, h2, __Host- (issue 13)

// Cookies of the whole jar, through the automation API (CDP's
// Storage.getCookies, WebDriver BiDi's storage.getCookies).
// WebKit (WebDriver classic) lists the cookies a document's URL would
// carry: the site's roots over HTTPS and HTTP, and below each document of
// ctx.jarPaths (a path under it that is no PDF: the module's HTTP cookies
// have the document's path).
async function jarCookies(ctx) {
  if (B !== 'webkit') return ctx.browser.cookies();
  const http = `http://${cfg.https.site}:${new URL(cfg.server).port}`;
  // a document never requested holds none of the module's cookies
  const asked = new Set(readLog().map((e) => e.path));
  return ctx.browser.cookies([`https://${cfg.https.site}:${cfg.https.port}/`, `${http}/`,
                              ...(ctx.jarPaths || []).filter((p) => asked.has(p))
                                .map((p) => `${http}${p}/`)]);
}
const isModuleCookie = (k) => /^(__Host-)?pdftoken_/.test(k.name);
const cookieNameFor = (token, https) => `${https ? '__Host-' : ''}pdftoken_${token.slice(12, 20)}`;
const protocolsOf = (entries) => [...new Set(entries.map((e) => e.protocol || '?'))].join(',');

// h1, h2: the main flows over HTTPS with h2: a cross-site link with the
// attacker's fragment ends inline after one 302, with the __Host- cookie.
async function caseHttps(ctx) {
  for (const id of ['h1', 'h2']) {
    await runCase(id, async (r) => {
      const c = cfg.cases[id];
      const page = await newPage(ctx, r);
      await page.goto(c.attacker, { waitUntil: 'load', timeout: 15000 });
      await page.click('#go');
      const { view, entries, pass } = await expectInline(r, ctx, page, c);
      check(r, entries.length > 0 && entries.every((e) => e.https),
            `not every request went to the HTTPS port: ${entries.map((e) => e.line).join(' | ')}`);
      const protocols = protocolsOf(entries);
      if (B === 'webkit' && protocols === 'HTTP/1.1') {
        // WebKit reaches the run's host names only through its session's
        // proxy (webkit.mjs), over a CONNECT tunnel; libsoup then speaks
        // HTTP/1.1 to httpd, which offers h2 by ALPN.
        limit(r, ['HTTP/1.1, not h2', 'WebKitGTK (libsoup) used HTTP/1.1 to the TLS site, ' +
          'reached through the CONNECT tunnel of the suite\'s host-name proxy (WebKit has no ' +
          'host-resolver switch); whether it would use h2 without the tunnel is not measured']);
      } else {
        check(r, protocols === 'HTTP/2.0', `protocol ${protocols}, expected HTTP/2.0 (h2 by ALPN)`);
      }
      let cookie = null;
      if (pass) {
        const name = cookieNameFor(pass.token, true);
        cookie = (await jarCookies(ctx)).find((k) => k.name === name);
        check(r, pass.cookies.get(name) === pass.token, `the pass did not carry ${name}`);
        check(r, cookie && cookie.value === pass.token, `no ${name} in the jar`);
        if (cookie) {
          check(r, cookie.secure && cookie.httpOnly && cookie.path === '/' &&
                cookie.sameSite === 'Lax' && cookie.domain === cfg.https.site,
                `cookie attributes: ${JSON.stringify(cookie)}`);
          const left = cookie.expires - Date.now() / 1000;
          check(r, left > 0 && left <= c.timeout + 1,
                `cookie expires in ${left.toFixed(1)} s, expected Max-Age ${c.timeout}`);
        }
      }
      r.outcome = view ? `inline, ${protocols}, ${cookie ? `${cookie.name.slice(0, 16)}<8> ` +
        `Secure HttpOnly Lax Path=/` : 'no cookie'}` : 'not inline';
      await page.close();
    });
  }
}

// Click the planter's link to the tokenized URL; returns what the access
// log holds for the document from the click to its final decision.
async function followPlant(page, c) {
  const since = logFor(c.path).length;
  await page.click('#go');
  await waitFor(() => logFor(c.path).slice(since).some((e) => TERMINAL.has(e.tag) || e.status >= 400),
                15000, 'a final decision for the planted URL in the access log');
  await sleep(2500); // time for a download to land, or a viewer to show
  return logFor(c.path).slice(since);
}

// h3-h6: someone else plants a cookie whose value is a real token for the
// document (the planter fetched it from the site a moment before, with the
// victim's User-Agent), under the module's HTTPS name and its HTTP name, by
// Set-Cookie and by document.cookie; then navigates to the tokenized URL
// with the attacker's fragment.  h3 and h5 from a sibling host
// (Domain=site.test), h4 and h6 from the same name over plain HTTP.
// Nothing may be inline: the module answers the planted token with the
// fallback, because the browser refused the __Host- cookie (the other one
// counts for nothing over HTTPS) or, in h3/h4's default scope
// (PdfTokenBindAddress auto), because an engine that ignores the prefix
// gets tokens bound to its address and the planter's came from 127.0.0.2.
// A jar that takes the planted __Host- cookie is a LIMIT there and a
// failure in h5/h6 (Off, SPEC's bare token), where run.py's KNOWN_HOLES
// records WebKitGTK's.
const JAR_TAKES_HOST = ['jar takes planted __Host-',
  "the engine's cookie jar stored and sent a __Host- cookie that a sibling host or plain HTTP " +
  'set; PdfTokenBindAddress auto bound its tokens to its address, so the planted token got the ' +
  'download'];

async function casePlanted(ctx) {
  for (const id of ['h3', 'h4', 'h5', 'h6']) {
    await runCase(id, async (r) => {
      const c = cfg.cases[id];
      const before = downloadsIn(ctx);
      const eventsBefore = ctx.events.length;
      const page = await newPage(ctx, r);
      await page.goto(c.planter, { waitUntil: 'load', timeout: 15000 });
      const plant = await page.evaluate(() => window.pdftokenPlant);
      const names = [cookieNameFor(plant.token, true), cookieNameFor(plant.token, false)];
      const inDoc = (text, n) => text.split(';').some((p) => p.trim() === `${n}=${plant.token}`);
      const jar = (await jarCookies(ctx)).filter((k) => names.includes(k.name));
      const entries = await followPlant(page, c);
      const seq = decisions(entries);
      const req = entries.find((e) => e.token === plant.token);
      check(r, !!req, 'the tokenized request never reached the server');
      check(r, JSON.stringify(seq) === JSON.stringify(['fallback']),
            `access log: expected [fallback], got ${JSON.stringify(seq)}`);
      const fb = entries.find((e) => e.tag === 'fallback');
      check(r, fb && /^attachment/.test(fb.disposition), `fallback disposition ${fb && fb.disposition}`);
      check(r, !req || req.https, 'the planted token was not sent over HTTPS');
      let view = null;
      try {
        view = await viewerState(page, page.mainFrame());
      } catch { /* navigating */ }
      check(r, !view || view.contentType !== 'application/pdf', `the PDF is shown inline at ${page.url()}`);
      const what = names.map((n) => {
        const stored = jar.filter((k) => k.name === n && k.value === plant.token);
        const sent = req ? req.cookies.get(n) === plant.token : false;
        const how = `header ${inDoc(plant.afterHeaders, n) ? 'stored' : 'refused'}, ` +
          `script ${inDoc(plant.afterScript, n) ? 'stored' : 'refused'}`;
        return { n, stored, sent, how };
      });
      const host = what[0];
      const jarFails = [];
      if (host.stored.length) jarFails.push(`the browser stored the planted ${names[0]}: ${JSON.stringify(host.stored)}`);
      if (host.sent) jarFails.push(`the browser sent the planted ${names[0]}`);
      if (inDoc(plant.afterHeaders, names[0]) || inDoc(plant.afterScript, names[0])) {
        jarFails.push(`the planter's page sees its ${names[0]}`);
      }
      if (c.bind === 'auto' && jarFails.length && r.failures.length === 0) {
        limit(r, JAR_TAKES_HOST);
        r.notes.push(...jarFails);
      } else {
        r.failures.push(...jarFails);
      }
      const downloaded = downloadsIn(ctx).filter((f) => !before.includes(f));
      const events = ctx.events.slice(eventsBefore);
      r.outcome = `fallback (${fb ? fb.disposition.split(';')[0] : '?'}, ${downloaded.length || events.length
        ? 'downloaded' : 'no download seen'}); ` + what.map((w) =>
        `${w.n.startsWith('__Host-') ? '__Host-' : ''}pdftoken_<8>: ` +
        `${w.stored.length ? `stored (${w.stored.map((k) => `${k.domain}${k.path}${k.secure ? ' Secure' : ''}`).join(',')})`
          : 'refused'} [${w.how}], ${w.sent ? 'sent' : 'not sent'}`).join('; ') +
        `; ${req ? req.protocol : '?'}`;
      await page.close();
    });
  }
}

// ------------------------------------------------------- pile-up (issue 13)

// Run one flood page: a click (a user gesture, as a real attacker gets
// one) starts it; returns what the page sent and how long it took.
async function runFlood(ctx, r, url) {
  const own = new Set(await ctx.browser.pages());
  const page = await newPage(ctx, r);
  own.add(page);
  await page.goto(url, { waitUntil: 'load', timeout: 15000 });
  const t0 = Date.now();
  await page.click('#go');
  // The page that runs the flood: this one, or (opener) the popup it
  // opened, which then drives this page's window.
  let windows = 0;
  const state = await waitFor(async () => {
    const s = await withTimeout(page.evaluate(() => window.floodState), 2000, 'reading the flood')
      .catch(() => null);
    if (s && s.windows) windows = s.windows;
    if (s && s.done && !s.handedOver) return s;
    for (const p of await ctx.browser.pages()) {
      if (!p.url().includes('driver=1')) continue;
      const d = await withTimeout(p.evaluate(() => window.floodState), 2000, 'reading the driver')
        .catch(() => null);
      if (d && d.done) return { ...d, windows };
    }
    return null;
  }, 90000, 'the flood to end'); // Firefox's reopen took 35 s on a loaded machine
  const ms = Date.now() - t0;
  await sleep(800); // the last answers and their cookies
  const jar = await jarCookies(ctx);
  // close the flood's windows and iframes
  for (const p of await ctx.browser.pages()) {
    if (!own.has(p)) await withTimeout(p.close(), 5000, 'closing a popup').catch(() => {});
  }
  await page.close().catch(() => {});
  return { state, ms, jar };
}

// The module's cookies on the site's host: per document (path) and in all.
// Firefox's jar (WebDriver BiDi storage.getCookies) still lists a cookie
// for a while after its Max-Age ran out; it is never sent again, so only
// unexpired ones count.
// `setAfter` (seconds): count only cookies set since then (their expiry is
// Max-Age later): WebKit's jar outlives a session, so p0's later methods
// would otherwise count what the earlier ones stored.
function countModuleCookies(jar, https, setAfter = 0) {
  const now = Date.now() / 1000;
  const mine = jar.filter((k) => isModuleCookie(k) && k.domain === cfg.https.site &&
                          k.name.startsWith('__Host-') === https && !(k.expires > 0 && k.expires <= now) &&
                          !(setAfter && k.expires > 0 && k.expires < setAfter + PILE_MAX_AGE - 1));
  const perPath = new Map();
  for (const k of mine) perPath.set(k.path, (perPath.get(k.path) || 0) + 1);
  return { total: mine.length, perPathMax: Math.max(0, ...perPath.values()), paths: perPath.size };
}

// The module's cookie Max-Age in the pile-up scopes (the default timeout).
const PILE_MAX_AGE = 10;

// What p0 measured to store the most (p1-p3 use it).
let floodMethod = null;

async function caseFloodMethods() {
  await runCase('p0', async (r) => {
    const c = cfg.cases.p0;
    const got = {};
    for (const [m, { url, count }] of Object.entries(c.methods)) {
      const ctx = await launch(`p0-${m}`);
      ctx.jarPaths = c.paths; // WebKit reads the jar per document
      const since = readLog().length;
      try {
        const started = Date.now() / 1000;
        const f = await runFlood(ctx, r, url);
        const n = countModuleCookies(f.jar, false, started);
        const entries = readLog().slice(since).filter((e) => c.paths.includes(e.path));
        // the most module cookies one of its requests carried back
        const carried = Math.max(0, ...entries.map((e) => [...e.cookies.keys()].filter(
          (k) => k.startsWith('pdftoken_')).length));
        got[m] = { stored: n.total, requests: entries.filter((e) => !e.token).length, carried,
                   ms: f.ms, windows: f.state.windows, count };
      } catch (e) {
        // A method whose flood never ended (once WebKit's, on a loaded
        // machine) measured nothing: it stores none, the others still count.
        const requests = readLog().slice(since).filter((x) => c.paths.includes(x.path) && !x.token).length;
        got[m] = { stored: 0, requests, count, error: e.message.split('\n')[0] };
        r.notes.push(`${m}: ${got[m].error}`);
      } finally {
        await closeBrowser(ctx);
      }
    }
    // the most stored, counting no more than the method's own first
    // requests (WebKit's jar still held the cookies of the methods before,
    // which once made a method that sent 18 look as if it stored 34); a
    // tie goes to the earlier method in run.py's list.  Only a method whose
    // requests carried the cookies back can be p1-p3's: they check the
    // bound in what a request carries, and WebKit's cross-site images
    // stored 24 cookies and carried none (CI picked them once, and p1-p3
    // measured nothing).
    const score = (g) => Math.min(g.stored, g.requests);
    const carrying = Object.entries(got).filter(([, g]) => g.carried > 0);
    const best = (carrying.length ? carrying : Object.entries(got))
      .sort((a, b) => score(b[1]) - score(a[1]))[0];
    floodMethod = best[0];
    check(r, score(best[1]) >= c.count / 3,
          `no method stored a third of ${c.count} cookies: ${JSON.stringify(got)}`);
    r.outcome = 'stored/sent/forced: ' + Object.entries(got).map(([m, g]) =>
      `${m} ${g.error ? 'no end' : `${g.stored}/${g.requests}/${g.count}`}` +
      (g.windows ? ` (${g.windows} win)` : '') + (!g.error && !g.carried ? ' (none carried)' : '')).join(', ') +
      ` -> ${floodMethod}`;
    r.measured = got;
  }, B === 'webkit' ? 300000 : 150000); // WebKit: a WebDriver session per method, slower
}

// p1-p3: the site sets its own session cookie; an attacker page forces
// 300 first requests; then at most 8 module cookies for one document
// (HTTP) or the host (HTTPS), the Cookie header under httpd's 8190 bytes,
// the session cookie kept and sent, and the next cross-site link inline.
async function casePileUp(id) {
  await runCase(id, async (r) => {
    const c = cfg.cases[id];
    const https = c.scheme === 'https';
    // p0's pick; without it (p0 not run, or failed) what p0 measured to
    // store the most in each engine
    const method = floodMethod || { chromium: 'popups', firefox: 'reopen', webkit: 'popups' }[B];
    const ctx = await launch(id);
    // WebKit reads the jar one document at a time (a page load each): over
    // HTTP, where each of p2's 300 documents has a jar of its own, it reads
    // 30 of them, evenly spread, and says so
    const every = B === 'webkit' ? Math.ceil(c.paths.length / 30) : 1;
    ctx.jarPaths = https ? [] : c.paths.filter((_, i) => i % every === 0);
    if (!https && every > 1) r.notes.push(`jar read for ${ctx.jarPaths.length} of ${c.paths.length} documents`);
    try {
      const sp = await newPage(ctx, r);
      await sp.goto(c.session.url, { waitUntil: 'load', timeout: 15000 });
      await sp.close();
      const hasSession = (jar) => jar.some((k) => k.name === 'session' && k.value === c.session.value);
      check(r, hasSession(await jarCookies(ctx)), 'the site\'s session cookie was not set');
      const since = readLog().length;
      const f = await runFlood(ctx, r, c.floodPages[method]);
      const n = countModuleCookies(f.jar, https);
      const kept = hasSession(f.jar);
      const entries = readLog().slice(since).filter((e) => c.paths.includes(e.path));
      const firsts = entries.filter((e) => !e.token).length;
      const maxHeader = Math.max(0, ...entries.map((e) => e.cookieHeader.length));
      const bad = entries.filter((e) => e.status === 400 || e.status === 431);
      const withSession = entries.filter((e) => e.cookies.get('session') === c.session.value).length;
      // the most module cookies one request carried: the bound was reached
      const perRequest = Math.max(0, ...entries.map((e) => [...e.cookies.keys()].filter(
        (k) => k.startsWith(https ? '__Host-pdftoken_' : 'pdftoken_')).length));
      const protocols = protocolsOf(entries);
      // A loaded machine sends fewer in time; a third still piles up far
      // beyond the bound (and, for p2, near the browser's per-host cap).
      check(r, firsts >= c.count / 3, `only ${firsts} of ${c.count} first requests reached the server`);
      if (id !== 'p2') {
        check(r, perRequest >= 8, `no request carried 8 module cookies (at most ${perRequest}): ` +
              'the flood did not reach the bound');
      }
      // Right after the flood the jar may hold 7 + the first requests that
      // were in flight together (each answer adds one, and expires only
      // what its request carried); the next request to the document
      // (HTTP) or host (HTTPS) carries them all and its answer expires
      // the surplus: the bound is checked after the next link below.
      check(r, maxHeader < 8190 && bad.length === 0,
            `Cookie header up to ${maxHeader} bytes, ${bad.length} answers 400/431`);
      if (id !== 'p2') {
        check(r, kept, 'the site\'s session cookie is gone from the jar');
        check(r, withSession === entries.length, `the session cookie went with ${withSession} of ${entries.length} requests`);
      }
      // the next reader's link
      ctx.events.splice(0);
      const nx = c.next;
      const nsince = logFor(nx.path).length;
      const page = await newPage(ctx, r);
      await page.goto(nx.attacker, { waitUntil: 'load', timeout: 15000 });
      await page.click('#go');
      const { view, pass } = await expectInline(r, ctx, page, nx, { since: nsince, downloadsBefore: downloadsIn(ctx) });
      const sentAfter = !!pass && pass.cookies.get('session') === c.session.value;
      if (id !== 'p2') check(r, sentAfter, 'the next PDF\'s request did not carry the session cookie');
      const jarAfter = await jarCookies(ctx);
      const m = countModuleCookies(jarAfter, https);
      if (!check(r, https ? m.total <= 8 : m.perPathMax <= 8,
                 `after the next link: ${https ? `${m.total} module cookies for the host`
                   : `${m.perPathMax} module cookies for one document`}, expected at most 8`)) {
        const now = Date.now() / 1000;
        r.notes.push('jar: ' + jarAfter.filter(isModuleCookie).map((k) =>
          `${k.name.slice(-8)} ${(k.expires - now).toFixed(1)}s ${k.path} ${JSON.stringify(k.partitionKey || null)}`).join(', '));
        r.notes.push(`next link's requests carried: ${logFor(nx.path).slice(nsince).map((e) =>
          [...e.cookies.keys()].filter((k) => k.startsWith('__Host-') || k.startsWith('pdftoken_'))
            .map((k) => k.slice(-8)).join(' ')).join(' | ')}`);
      }
      r.measured = { method, firsts, ms: f.ms, ...n, perRequest, after: m, maxHeader, sessionKept: kept, withSession,
                     requests: entries.length, sessionSentAfter: sentAfter,
                     siteCookies: f.jar.filter((k) => k.domain.endsWith(cfg.https.domain)).length };
      r.outcome = `${method}: ${firsts} firsts in ${(f.ms / 1000).toFixed(1)} s (${protocols}); jar: ` +
        (https ? `${n.total} for the host` : `max ${n.perPathMax}/doc, ${n.total} in ${n.paths} docs`) +
        `, <= ${perRequest}/request; after next link ${https ? m.total : m.perPathMax}` +
        `; Cookie <= ${maxHeader} B; session ${kept ? 'kept' : 'EVICTED'}, sent ${withSession}/${entries.length}` +
        `${sentAfter ? ' +next' : ''}; next link ${view ? 'inline' : 'NOT inline'}` +
        (hasSession(jarAfter) ? '' : ' (no session after)');
      await page.close();
    } finally {
      await closeBrowser(ctx);
    }
  }, B === 'webkit' ? 300000 : 150000); // WebKit reads the jar document by document
}

// HTTPS and the pile-up: h1-h4 in a browser of their own (their
// downloads must not count against other cases), p0-p3 each in fresh ones.
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

// ---------------------------------------------------------- render matrix

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
//             saved
// This file only observes; run.py compares m1 with the recording and
// judges m2, which needs both engines' results.
const MATRIX_CELL_TIMEOUT = 12000;
// After a navigation is aborted (what a download does to it), how long a
// download still has to show up before the abort counts as the outcome.
// Both engines announce a download as the navigation ends, and the file
// follows within a second.
const MATRIX_ABORT_GRACE = 3000;
// Tries per cell: in one CI run Firefox showed nothing for m2's c265 (a
// 404 that the module answers with an attachment) in two tries of 12 s,
// without a navigation error; every earlier run measured it.  The cause
// is unknown, so a third try, and the access log in the failure.
const MATRIX_TRIES = 3;
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
// `parse` also waits (up to 8 s) for the viewer to show the document.
async function measureCell(ctx, page, cell, scope, dl, parse) {
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
  const deadline = t0 + MATRIX_CELL_TIMEOUT;
  while (Date.now() < deadline && !obs.outcome) {
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
    if (B === 'webkit' && !answeredAt) {
      const e = logFor(cell.path).slice(logBefore).find((x) => x.status >= 400);
      if (e) answeredAt = Date.now();
    }
    if (B === 'webkit' && answeredAt && Date.now() - answeredAt > MATRIX_ABORT_GRACE &&
        !(st && samePath(st.href, cell.path))) {
      obs.outcome = 'error';
      obs.notes.push('WebKit dropped the error answer: no document, no download');
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
      // A page once loaded, twice 150 ms apart in the same state: a viewer
      // that started as some other page would have changed by then.
      const sig = `${st.href} ${st.contentType} ${st.ready}`;
      if (st.ready === 'complete' && pageSeen === sig) {
        obs.outcome = 'page';
        obs.notes.push(st.contentType);
        break;
      }
      pageSeen = sig;
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
// on their cell.  No cell starts after `until` (ms since the epoch).
async function measureAll(ctx, r, cells, scope, workers, until) {
  const dl = matrixDownloads(ctx, cfg.server);
  const out = new Map();
  const queue = cells.map((c) => ({ cell: c, tries: 0 }));
  const own = new Set(await ctx.browser.pages());
  let opening = 0;
  const opened = new Map(); // 'm1 c001' -> URL of a tab the browser opened
  const fresh = async (old) => {
    if (old) {
      own.delete(old);
      await withTimeout(old.close(), 5000, 'closing a tab').catch(() => {});
    }
    opening += 1;
    try {
      const p = await newPage(ctx, r);
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
      for (const p of await ctx.browser.pages()) {
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
  await Promise.all(Array.from({ length: Math.min(workers, cells.length) }, async () => {
    let page = await fresh(null);
    for (let job = queue.shift(); job; job = queue.shift()) {
      if (Date.now() > until) {
        out.set(job.cell.id, { id: job.cell.id, outcome: null, notes: ['not measured: out of time'] });
        continue;
      }
      let obs;
      try {
        obs = await measureCell(ctx, page, job.cell, scope, dl,
                                cfg.matrix.parse && scope === 'm1' && job.cell.body !== 'html');
      } catch (e) {
        obs = { id: job.cell.id, outcome: null, notes: [`error: ${e.message.split('\n')[0]}`] };
      }
      if (!obs.outcome && job.tries < MATRIX_TRIES - 1) {
        queue.push({ cell: job.cell, tries: job.tries + 1 });
        page = await fresh(page);
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
    own.delete(page);
    await withTimeout(page.close(), 5000, 'closing a tab').catch(() => {});
  }));
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
  for (const c of cells) n[c.outcome || 'none'] = (n[c.outcome || 'none'] || 0) + 1;
  return ['pdf', 'download', 'page', 'error', 'none'].filter((k) => n[k])
    .map((k) => `${k} ${n[k]}`).join(', ');
}

async function caseMatrix() {
  const m = cfg.matrix;
  if (!m || (cfg.only && !cfg.only.includes('m1') && !cfg.only.includes('m2'))) return;
  // A browser of its own: hundreds of downloads, and no case after it
  // whose "nothing was downloaded" they could spoil.
  const ctx = await launch('matrix', { downloadEvents: true, sessions: m.workers });
  try {
    for (const scope of ['m1', 'm2']) {
      await runCase(scope, async (r) => {
        const t0 = Date.now();
        r.cells = await measureAll(ctx, r, m[scope], scope, m.workers, t0 + m.caseTimeout - 20000);
        for (const c of r.cells.filter((x) => !x.outcome)) {
          r.failures.push(`${c.id}: no outcome (${c.notes.join('; ')})`);
        }
        const opened = r.cells.filter((c) => c.notes.some((n) => n.startsWith('opened from disk'))).length;
        r.outcome = `${matrixCounts(r.cells)}` + (opened ? ` (${opened} opened from disk)` : '') +
          ` in ${((Date.now() - t0) / 1000).toFixed(0)} s, ${m.workers} tabs`;
      }, m.caseTimeout);
    }
  } finally {
    await closeBrowser(ctx);
  }
}

async function closeBrowser(ctx) {
  try {
    await withTimeout(ctx.browser.close(), 20000, 'closing the browser');
  } catch (e) {
    const p = ctx.browser.process();
    if (p) p.kill('SIGKILL');
  }
}

// ------------------------------------------------------------------ main

async function main() {
  fs.mkdirSync(cfg.workdir, { recursive: true });
  writeResults();
  const ctx = await launch('main');
  try {
    version = await ctx.browser.version();
    console.log(`[${B}] ${version} (${cfg.executable})`);
    writeResults();
    await caseLinkClick(ctx);
    await caseScript(ctx);
    await casePage2(ctx);
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
  await caseHttpsAll();
  await caseMatrix();
  writeResults();
}

main().then(() => process.exit(0), (e) => {
  console.error(`[${B}] fatal: ${e.stack || e}`);
  writeResults();
  process.exit(1);
});
