// Licensed under the Apache License, Version 2.0; see LICENSE.
//
// What a tab's URL says: its fragment, its token and the token's expiry.

import { B } from './config.mjs';

export async function urlOf(page) {
  return B === 'webkit' ? page.currentUrl() : page.url();
}

// The frames of a page (puppeteer's frames(); WebKit's adapter asks).
export async function framesOf(page) {
  return page.frames();
}

// The fragment of a URL: null when there is no '#', '' when it is empty.
export function fragmentOf(url) {
  const i = url.indexOf('#');
  return i < 0 ? null : url.slice(i + 1);
}

export function queryToken(url) {
  const u = new URL(url);
  const all = u.searchParams.getAll('pdftoken');
  return all.length === 1 ? all[0] : null;
}

// token.h, version 2: the expiry is stored XOR the nonce's first 8 bytes.
export function tokenExpiry(token) {
  const raw = Buffer.from(token, 'base64url');
  return Number(raw.readBigUInt64BE(1) ^ raw.readBigUInt64BE(9));
}
