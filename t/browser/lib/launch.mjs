// Licensed under the Apache License, Version 2.0; see LICENSE.
//
// Launching each engine with a profile that talks only to loopback.

import fs from 'node:fs';
import path from 'node:path';
import puppeteer from 'puppeteer-core';
import { launchWebKit, launchWebKitPool } from '../webkit.mjs';
import { B, cfg } from './config.mjs';
import { limit } from './results.mjs';
import { withTimeout } from './wait.mjs';

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
function firefoxPrefs(downloads, blockCookies, cookies) {
  return {
    // downloads go to our directory, without asking
    'browser.download.folderList': 2,
    'browser.download.dir': downloads,
    'browser.download.useDownloadDir': true,
    'browser.download.always_ask_before_handling_new_types': false,
    'browser.download.start_downloads_in_tmp_dir': false,
    'browser.download.alwaysOpenPanel': false,
    // cookies: Firefox's default (5, Total Cookie Protection; puppeteer's
    // profile would otherwise say 0), or 2 (block all), or the x cases'
    // setting cb<N> (crosssite.py)
    'network.cookie.cookieBehavior': blockCookies ? 2
      : /^cb\d$/.test(cookies || '') ? Number(cookies.slice(2)) : 5,
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

// ------------------------------------------------------------- browsers

// `cookies`: the x cases' third-party cookie setting (crosssite.py
// SETTINGS): shipped (the engine as it comes), Chromium's 3pc-blocked and
// 3pc-allowed (the profile's cookie controls), Firefox's cb5, cb1, cb0
// (network.cookie.cookieBehavior), WebKit's accept-all (MiniBrowser's
// --cookies-policy=always).
export async function launch(name, { blockCookies = false, noScript = false, downloadEvents = false,
                               sessions = 1, cookies = 'shipped' } = {}) {
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
             ...(cookies === 'accept-all' ? ['--cookies-policy=always'] : []),
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
    } else if (cookies === '3pc-blocked' || cookies === '3pc-allowed') {
      // chrome://settings/cookies: "Block third-party cookies" (1) or
      // "Allow third-party cookies" (0)
      const block = cookies === '3pc-blocked';
      fs.mkdirSync(path.join(profile, 'Default'), { recursive: true });
      fs.writeFileSync(path.join(profile, 'Default', 'Preferences'), JSON.stringify({
        profile: { cookie_controls_mode: block ? 1 : 0, block_third_party_cookies: block },
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
        ...firefoxPrefs(downloads, blockCookies, cookies),
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
export function downloadsIn(ctx) {
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

export async function newPage(ctx, r) {
  const page = await ctx.browser.newPage();
  if (B !== 'webkit') await page.setViewport({ width: 900, height: 700 });
  page.on('dialog', (d) => {
    r.dialogs.push(`${d.type()}: ${d.message()}`);
    d.dismiss().catch(() => {});
  });
  return page;
}

// Start a navigation without waiting for it: a download never loads.
export function startGoto(page, url) {
  page.goto(url, { waitUntil: 'load', timeout: 20000 }).catch(() => {});
}

export async function closeBrowser(ctx) {
  try {
    await withTimeout(ctx.browser.close(), 20000, 'closing the browser');
  } catch (e) {
    const p = ctx.browser.process();
    if (p) p.kill('SIGKILL');
  }
}
