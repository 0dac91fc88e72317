// Licensed under the Apache License, Version 2.0; see LICENSE.
//
// The browser's cookie jar, read through the automation API.

import { readLog } from './accesslog.mjs';
import { B, cfg } from './config.mjs';

// Cookies of the whole jar, through the automation API (CDP's
// Storage.getCookies, WebDriver BiDi's storage.getCookies).
// WebKit (WebDriver classic) lists the cookies a document's URL would
// carry: the site's roots over HTTPS and HTTP, and below each document of
// ctx.jarPaths (a path under it that is no PDF: the module's HTTP cookies
// have the document's path).
export async function jarCookies(ctx) {
  if (B !== 'webkit') return ctx.browser.cookies();
  const http = `http://${cfg.https.site}:${new URL(cfg.server).port}`;
  // a document never requested holds none of the module's cookies
  const asked = new Set(readLog().map((e) => e.path));
  return ctx.browser.cookies([`https://${cfg.https.site}:${cfg.https.port}/`, `${http}/`,
                              ...(ctx.jarPaths || []).filter((p) => asked.has(p))
                                .map((p) => `${http}${p}/`)]);
}
export const isModuleCookie = (k) => /^(__Host-)?pdftoken_/.test(k.name);
export const cookieNameFor = (token, https) => `${https ? '__Host-' : ''}pdftoken_${token.slice(12, 20)}`;
export const protocolsOf = (entries) => [...new Set(entries.map((e) => e.protocol || '?'))].join(',');
