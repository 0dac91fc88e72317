// Licensed under the Apache License, Version 2.0; see LICENSE.
//
// The server's side of a visit: the run's access log (run.py's LOG_FORMAT).

import fs from 'node:fs';
import path from 'node:path';
import { cfg } from './config.mjs';

// %{usec}t %>s %{PDFTOKEN}e "%r" "%{Cookie}i" %{Sec-Fetch-Site}i
// %{Sec-Fetch-Dest}i "%{Content-Disposition}o" %{local}p %H
// httpd writes a line when a request ends, so a redirect can be logged
// after the request that followed it: entries are sorted by the time each
// request arrived (microseconds).
const LOG_RE = /^(\d+) (\d{3}) (\S+) "(\S+) (\S+) (\S+)" "(.*)" (\S+) (\S+) "(.*)"(?: (\d+) (\S+))?$/;

export function readLog() {
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

export const logFor = (p) => readLog().filter((e) => e.path === p);
export const decisions = (entries) => entries.filter((e) => e.tag !== 'range').map((e) => e.tag);
export const TERMINAL = new Set(['pass', 'fallback', 'deny']);
