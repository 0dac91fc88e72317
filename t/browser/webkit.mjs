// Licensed under the Apache License, Version 2.0; see LICENSE.
//
// WebKit for t/browser/cases.mjs: Debian's WebKitGTK (MiniBrowser) driven
// through WebKitWebDriver, a W3C WebDriver (classic) server, with
// selenium-webdriver as the client.  This file gives the cases the small
// part of puppeteer's Browser/Page/Frame interface they use, so that one
// case runs the same in all three engines:
//
//   browser  version() newPage() pages() close() process()
//   page     goto() click() clickAt() evaluate() mainFrame() frames() url() currentUrl()
//            screenshot() close() bringToFront() on('dialog') flushDialogs()
//   frame    evaluate() url() parentFrame()
//
// WebDriver classic drives one window (tab) at a time per session, so every
// command of a session runs under one lock, after switching to its page's
// window and frame.  A browser is one WebKitWebDriver process with one
// session (one MiniBrowser, its own cookies and download directory).
//
// Pages load with pageLoadStrategy "none": a navigation returns at once and
// goto() then waits for a new document to be complete, the way a download
// (no new document) or two tabs loading at once can be observed at all.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { Builder, By, Origin, error as wdError } from 'selenium-webdriver';

export const MINIBROWSER = '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';
export const VIEWER_PREFIX = 'webkit-pdfjs-viewer:';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function waitForDriver(port, child, timeout) {
  const deadline = Date.now() + timeout;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`WebKitWebDriver exited with ${child.exitCode}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/status`);
      if (res.ok) return;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) throw new Error('WebKitWebDriver did not start');
    await sleep(100);
  }
}

// A dialog as puppeteer hands it to page.on('dialog').
function dialogOf(text) {
  return { type: () => 'alert', message: () => text, dismiss: async () => {} };
}

class WebKitFrame {
  constructor(page, framePath, url = null, parent = null) {
    this._page = page;
    this.path = framePath;
    this._url = url;
    this._parent = parent;
  }

  url() { return this._url; }

  parentFrame() { return this._parent; }

  page() { return this._page; }

  evaluate(fn, ...args) {
    return this._page._inFrame(this.path, (d) => d.executeScript(
      `return (${fn}).apply(null, arguments);`, ...args));
  }
}

class WebKitPage {
  constructor(browser, handle) {
    this._browser = browser;
    this.handle = handle;
    this._url = 'about:blank';
    this._dialog = [];
    this._main = new WebKitFrame(this, []);
    this.closed = false;
  }

  on(event, fn) {
    if (event !== 'dialog') throw new Error(`webkit page: no '${event}' events`);
    this._dialog.push(fn);
  }

  // Run fn(driver) in this page's window, under the session's lock.  An
  // open alert() fails every command: it is handed to the 'dialog'
  // listeners, dismissed, and the command runs again.
  _run(fn) {
    const dbg = process.env.PDFTOKEN_WEBKIT_DEBUG ? `${this.handle.slice(5, 13)} ${String(fn).replace(/\s+/g, ' ').slice(0, 90)}` : null;
    const t0 = Date.now();
    return this._browser._locked(async (d) => {
      if (dbg) console.log(`[webkit] +${Date.now() - t0} start ${dbg}`);
      try {
        return await this._runIn(d, fn);
      } finally {
        if (dbg) console.log(`[webkit] +${Date.now() - t0} end ${dbg}`);
      }
    });
  }

  async _runIn(d, fn) {
    {
      await this._browser._switch(this.handle);
      for (let tries = 0; ; tries++) {
        try {
          return await fn(d);
        } catch (e) {
          if (!(e instanceof wdError.UnexpectedAlertOpenError) || tries > 5) throw e;
          let text = '';
          try {
            const a = await d.switchTo().alert();
            text = await a.getText();
            await a.dismiss();
          } catch { /* gone meanwhile */ }
          for (const h of this._dialog) h(dialogOf(text));
        }
      }
    }
  }

  _inFrame(framePath, fn) {
    return this._run(async (d) => {
      await d.switchTo().defaultContent();
      try {
        for (const i of framePath) await d.switchTo().frame(i);
        return await fn(d);
      } finally {
        await d.switchTo().defaultContent().catch(() => {});
      }
    });
  }

  mainFrame() { return this._main; }

  url() { return this._url; }

  // The tab's URL now (puppeteer's url() is synchronous; WebDriver asks).
  async currentUrl() {
    this._url = await this._run((d) => d.getCurrentUrl());
    return this._url;
  }

  evaluate(fn, ...args) { return this._main.evaluate(fn, ...args); }

  // The iframes of the main document, each with its URL as its own
  // document sees it (cross-origin ones too: WebDriver switches into them).
  async frames() {
    const n = await this.evaluate(() => window.frames.length);
    const out = [this._main];
    for (let i = 0; i < n; i++) {
      let url = null;
      try {
        url = await this._inFrame([i], (d) => d.executeScript('return location.href;'));
      } catch { /* navigating */ }
      out.push(new WebKitFrame(this, [i], url, this._main));
    }
    return out;
  }

  // Start a navigation and wait until a new document at any URL is
  // complete (redirects included), or is a PDF: WebKit's PDF document
  // never leaves readyState "loading".  A download leaves the old document in
  // place: that times out, as an aborted navigation fails in puppeteer.
  async goto(url, { timeout = 30000 } = {}) {
    const mark = `n${Date.now()}${Math.random()}`;
    await this._run(async (d) => {
      await d.executeScript('window.__pdftokenNav = arguments[0];', mark).catch(() => {});
      await d.get(url);
    });
    const deadline = Date.now() + timeout;
    for (;;) {
      try {
        const s = await this.evaluate(() => [window.__pdftokenNav || null,
                                             document.readyState, location.href,
                                             document.contentType]);
        this._url = s[2];
        // WebKit's PDF document stays in readyState "loading"
        if (s[0] !== mark && (s[1] === 'complete' || s[3] === 'application/pdf')) return null;
      } catch (e) {
        if (e instanceof wdError.NoSuchWindowError) throw e;
      }
      if (Date.now() > deadline) {
        throw new Error(`webkit: navigation to ${url} did not load a document in ${timeout} ms`);
      }
      await sleep(100);
    }
  }

  click(selector) {
    return this._run(async (d) => (await d.findElement(By.css(selector))).click());
  }

  // A mouse click at (x, y) of the window's viewport, as puppeteer's
  // page.mouse.click(x, y): a click inside the PDF viewer (c10).
  clickAt(x, y) {
    return this._run((d) => d.actions().move({ x, y, origin: Origin.VIEWPORT }).click().perform());
  }

  async screenshot() {
    return Buffer.from(await this._run((d) => d.takeScreenshot()), 'base64');
  }

  bringToFront() { return this._run(async () => {}); }

  // A command in this window, so that an alert() that opened since shows.
  flushDialogs() { return this._run((d) => d.executeScript('return 1;')).catch(() => {}); }

  async close() {
    if (this.closed) return;
    await this.flushDialogs();
    await this._browser._closePage(this);
  }
}

class WebKitBrowser {
  constructor(driver, child, home, caps) {
    this._driver = driver;
    this._child = child;
    this._home = home;        // the session's first window: never closed
    this._current = home;
    this._chain = Promise.resolve();
    this._pages = new Map();  // handle -> WebKitPage
    this._caps = caps;
  }

  _locked(fn) {
    const run = this._chain.then(() => fn(this._driver));
    this._chain = run.catch(() => {});
    return run;
  }

  async _switch(handle) {
    if (this._current !== handle) {
      await this._driver.switchTo().window(handle);
      this._current = handle;
    }
  }

  async version() {
    return `WebKitGTK ${this._caps.get('browserVersion')} (MiniBrowser, WebKitWebDriver)`;
  }

  process() { return this._child; }

  async newPage() {
    const handle = await this._locked(async (d) => {
      await this._switch(this._home);
      await d.switchTo().newWindow('window');
      const h = await d.getWindowHandle();
      this._current = h;
      return h;
    });
    const p = new WebKitPage(this, handle);
    this._pages.set(handle, p);
    return p;
  }

  // Every tab but the session's first (puppeteer's pages() lists the tabs
  // a browser opened by itself too).
  // Their url() is read here, as puppeteer's is current.
  async pages() {
    return this._locked(async (d) => {
      const out = [];
      for (const h of await d.getAllWindowHandles()) {
        if (h === this._home || (this._jar && h === this._jar.handle)) continue;
        if (!this._pages.has(h)) this._pages.set(h, new WebKitPage(this, h));
        const p = this._pages.get(h);
        try {
          await this._switch(h);
          p._url = await d.getCurrentUrl();
        } catch { /* closing */ }
        out.push(p);
      }
      return out;
    });
  }

  // The cookies of the jar that `urls` would carry (WebDriver classic
  // lists the cookies of the current document only): a window of its own
  // loads each URL and lists them, in puppeteer's shape.
  async cookies(urls = []) {
    if (!this._jar) this._jar = await this.newPage();
    const seen = new Map();
    for (const url of urls) {
      await this._jar.goto(url, { timeout: 10000 }).catch(() => {});
      for (const k of await this._jar._run((d) => d.manage().getCookies())) {
        const c = { name: k.name, value: k.value, domain: k.domain, path: k.path,
                    secure: !!k.secure, httpOnly: !!k.httpOnly, sameSite: k.sameSite,
                    expires: k.expiry === undefined ? -1 : k.expiry };
        seen.set(`${c.name} ${c.domain} ${c.path}`, c);
      }
    }
    return [...seen.values()];
  }

  async _closePage(page) {
    await this._locked(async (d) => {
      if (page.closed) return;
      page.closed = true;
      this._pages.delete(page.handle);
      try {
        await this._switch(page.handle);
        await d.close();
      } finally {
        this._current = null;
        await this._switch(this._home).catch(() => {});
      }
    });
  }

  async close() {
    try {
      await this._driver.quit();
    } finally {
      this._child.kill('SIGTERM');
      if (this.proxy) await this.proxy.stop();
    }
  }
}

// Start WebKitWebDriver and a MiniBrowser session.  `dir` holds the
// browser's HOME and settings; downloads land in `downloads`; `args` are
// more MiniBrowser options (--cookies-policy=never, --enable-javascript=
// false); `certificates` are WebKit's [{host, certificateFile}] to trust.
export async function launchWebKit({ dir, downloads, sinkPort, args = [], certificates = [],
                                     hosts = [], onSpawn = null }) {
  const home = path.join(dir, 'home');
  const config = path.join(home, '.config');
  fs.mkdirSync(config, { recursive: true });
  // GLib's download directory (MiniBrowser saves there without asking).
  fs.writeFileSync(path.join(config, 'user-dirs.dirs'), `XDG_DOWNLOAD_DIR="${downloads}"\n`);
  const port = await freePort();
  const env = { ...process.env, HOME: home, XDG_CONFIG_HOME: config,
                XDG_CACHE_HOME: path.join(home, '.cache'),
                XDG_DATA_HOME: path.join(home, '.local', 'share') };
  const child = spawn('WebKitWebDriver', [`--port=${port}`, '--host=local'], {
    env, detached: true, stdio: ['ignore', 'ignore', 'pipe'],
  });
  // the caller records the PID at once: a case that times out while this
  // launch runs must not leave the driver behind
  if (onSpawn && child.pid) onSpawn(child.pid);
  let stderr = '';
  child.stderr.on('data', (b) => { stderr = (stderr + b.toString()).slice(-4000); });
  const dbg = (m) => { if (process.env.PDFTOKEN_WEBKIT_DEBUG) console.log(`[webkit] launch ${dir}: ${m}`); };
  dbg(`WebKitWebDriver pid ${child.pid} port ${port}`);
  try {
    await waitForDriver(port, child, 15000);
    dbg('driver up');
    // Every request goes through a proxy of this session (LoopbackProxy):
    // loopback and the run's host names to 127.0.0.1, anything else to
    // the run's sink, like the other two engines (the network namespace
    // stops it anyway).
    const proxy = new LoopbackProxy({ hosts, sinkPort });
    const proxyPort = await proxy.start();
    const building = new Builder().usingServer(`http://127.0.0.1:${port}`).withCapabilities({
      browserName: 'MiniBrowser',
      pageLoadStrategy: 'none',
      unhandledPromptBehavior: 'ignore',

      'webkitgtk:browserOptions': {
        binary: MINIBROWSER,
        // MiniBrowser's --proxy: one proxy for every scheme (WebDriver's
        // sslProxy makes WebKitWebDriver speak TLS to the proxy itself)
        args: ['--automation', `--proxy=http://127.0.0.1:${proxyPort}`, ...args],
        certificates,
      },
    }).build();
    // a session that never starts must fail this launch, not hang the run
    let timer;
    const driver = await Promise.race([building, new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error('no WebDriver session in 60 s')), 60000);
    })]).finally(() => clearTimeout(timer));
    dbg('session');
    const caps = await driver.getCapabilities();
    await driver.manage().window().setRect({ width: 900, height: 780 }).catch(() => {});
    const first = await driver.getWindowHandle();
    const browser = new WebKitBrowser(driver, child, first, caps);
    browser.proxy = proxy;
    // what WebKitWebDriver (and the MiniBrowser it started) last said on
    // stderr: the only trace when a session dies under a case
    browser.driverLog = () => stderr.trim();
    return browser;
  } catch (e) {
    child.kill('SIGKILL');
    throw new Error(`${e.message}; WebKitWebDriver said: ${stderr.trim().slice(-500)}`);
  }
}

// The forward proxy on loopback of one WebKit session.  WebKit has no
// host-resolver switch like Chromium's or Firefox's, so the run's host
// names (pdf.site.test, ...) reach 127.0.0.1 through this: plain requests
// are forwarded, CONNECT is a tunnel (TLS stays end to end, checked by
// WebKit against the certificate it was given).  Loopback is forwarded
// too; anything else is relayed to the run's sink, which records and
// refuses it.  And it can hold requests: WebDriver classic cannot
// intercept one the way puppeteer's setRequestInterception does, which the
// two-visit cases (c6a, c6b) need.
export class LoopbackProxy {
  constructor({ hosts = [], sinkPort }) {
    this.rule = null;
    this.local = new Set(['127.0.0.1', 'localhost', ...hosts]);
    this.sinkPort = sinkPort;
    this.server = http.createServer((req, res) => this._handle(req, res));
    this.server.on('connect', (req, sock, head) => this._connect(req, sock, head));
  }

  _connect(req, sock, head) {
    const [host, port] = req.url.split(':');
    const local = this.local.has(host);
    if (process.env.PDFTOKEN_WEBKIT_DEBUG) console.log(`[webkit] proxy CONNECT ${req.url} local=${local}`);
    const up = net.connect(local ? Number(port) : this.sinkPort, '127.0.0.1', () => {
      if (local) {
        sock.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      } else {
        up.write(`CONNECT ${req.url} HTTP/1.1\r\nHost: ${req.url}\r\n\r\n`);
      }
      if (head && head.length) up.write(head);
      up.pipe(sock);
      sock.pipe(up);
    });
    const end = () => { up.destroy(); sock.destroy(); };
    up.on('error', end);
    sock.on('error', end);
  }

  start() {
    return new Promise((resolve) => {
      this.server.listen(0, '127.0.0.1', () => {
        this.port = this.server.address().port;
        resolve(this.port);
      });
    });
  }

  stop() {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  // Hold every request for a URL that starts with `prefix` and carries a
  // pdftoken until `n` of them wait, then let them go; { done } resolves
  // to 'all held', or to 'timeout' after 10 s (then it lets them go too).
  hold(prefix, n) {
    let release;
    const gate = new Promise((res) => { release = res; });
    const timer = setTimeout(() => release('timeout'), 10000);
    this.rule = { prefix, n, held: 0, release, gate };
    return { done: gate.finally(() => { clearTimeout(timer); }) };
  }

  async _handle(req, res) {
    let u;
    try {
      u = new URL(req.url);
    } catch {
      res.writeHead(400).end();
      return;
    }
    const local = u.protocol === 'http:' && this.local.has(u.hostname);
    if (process.env.PDFTOKEN_WEBKIT_DEBUG) console.log(`[webkit] proxy ${req.method} ${req.url} local=${local}`);
    const rule = this.rule;
    if (local && rule && req.url.startsWith(rule.prefix) && u.searchParams.has('pdftoken')) {
      rule.held += 1;
      if (rule.held === rule.n) rule.release('all held');
      await rule.gate;
    }
    const headers = { ...req.headers };
    delete headers['proxy-connection'];
    const up = http.request(local ? {
      host: '127.0.0.1', port: u.port || 80, method: req.method,
      path: u.pathname + u.search, headers,
    } : { host: '127.0.0.1', port: this.sinkPort, method: req.method, path: req.url, headers },
    (ur) => {
      res.writeHead(ur.statusCode, ur.statusMessage, ur.rawHeaders);
      ur.pipe(res);
    });
    up.on('error', () => { try { res.writeHead(502).end(); } catch { /* sent */ } });
    req.pipe(up);
  }
}

// Several sessions behind one browser interface, for the render matrix:
// WebDriver runs one command at a time per session, so tabs that measure
// at once need sessions of their own.  New pages go round the sessions.
class WebKitPool {
  constructor(browsers) {
    this.browsers = browsers;
    this.next = 0;
  }

  version() { return this.browsers[0].version(); }

  process() { return this.browsers[0].process(); }

  processes() { return this.browsers.map((b) => b.process()); }

  newPage() {
    const b = this.browsers[this.next++ % this.browsers.length];
    return b.newPage();
  }

  async pages() {
    return (await Promise.all(this.browsers.map((b) => b.pages()))).flat();
  }

  async close() {
    await Promise.all(this.browsers.map((b) => b.close().catch(() => {})));
  }
}

// `sessions` MiniBrowsers (launchWebKit's options, each its own HOME under
// dir/s<i>, each saving downloads to downloads/s<i>).  One directory each:
// WebKit does not save a download over a file of the same name, so two
// sessions saving x.pdf at once into one directory lost one of them.
export async function launchWebKitPool(sessions, opts) {
  const browsers = [];
  try {
    for (let i = 0; i < sessions; i++) {
      const downloads = path.join(opts.downloads, `s${i}`);
      fs.mkdirSync(downloads, { recursive: true });
      browsers.push(await launchWebKit({ ...opts, downloads, dir: path.join(opts.dir, `s${i}`) }));
    }
  } catch (e) {
    await Promise.all(browsers.map((b) => b.close().catch(() => {})));
    throw e;
  }
  return new WebKitPool(browsers);
}
