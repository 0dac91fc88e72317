// Licensed under the Apache License, Version 2.0; see LICENSE.
//
// One case's result: its checks, its stated limits, and results.json.

import fs from 'node:fs';
import { B, cfg } from './config.mjs';
import { withTimeout } from './wait.mjs';

const CASE_TIMEOUT = 45000;

const results = [];

// An error's first line; WebDriver errors may come with an empty message
// (WebKitGTK's driver under load), then its name and where it was thrown.
export function describeError(e) {
  const line = String((e && e.message) || '').split('\n').find((l) => l.trim());
  if (line) return line;
  const at = String((e && e.stack) || '').split('\n').filter((l) => /^\s+at /.test(l))
    .slice(0, 4).map((l) => l.trim()).join(' < ');
  return `${(e && e.name) || typeof e} with no message${at ? ` ${at}` : ''}`;
}

export async function runCase(id, fn, timeout = CASE_TIMEOUT) {
  if (cfg.only && !cfg.only.includes(id)) return;
  const r = { id, browser: B, ok: false, outcome: '', notes: [], failures: [], dialogs: [],
              limits: [] };
  const t0 = Date.now();
  try {
    await withTimeout(fn(r), timeout, `case ${id}`);
  } catch (e) {
    r.failures.push(`error: ${describeError(e)}`);
  }
  // Any alert() from a page under test means the attacker's script ran
  // (the c4 control moves its expected alert out of r.dialogs).
  if (r.dialogs.length) {
    r.failures.push(`script ran: dialog(s) ${JSON.stringify(r.dialogs)}`);
  }
  r.ok = r.failures.length === 0;
  r.seconds = +((Date.now() - t0) / 1000).toFixed(1);
  const word = !r.ok ? 'FAIL' : r.notMeasured ? 'NOT MEASURED' : r.limits.length ? 'LIMIT' : 'ok';
  console.log(`[${B}] ${id} ${word} (${r.seconds} s): ${r.outcome}` +
              (r.failures.length ? `\n    ${r.failures.join('\n    ')}` : '') +
              (r.limits.length ? `\n    limit: ${r.limits.join('; ')}` : '') +
              (r.notMeasured ? `\n    not measured: ${r.notMeasured}` : '') +
              (r.notes.length ? `\n    notes: ${r.notes.join('; ')}` : ''));
  results.push(r);
  writeResults();
}

// What an engine cannot do, measured in this run (never assumed): the
// check it stands for is not made, the rest of the case still is, and
// run.py prints the reason in the table instead of "ok".
// `tag` is the few words the table cell shows, `reason` the full line
// printed under the table.
export function limit(r, [tag, reason]) {
  if (!r.limits.includes(reason)) {
    r.limits.push(reason);
    r.limitTags = [...(r.limitTags || []), tag];
  }
}

// A case whose measurement the machine was too busy to make (a flood
// that did not reach the bound): run.py shows NOT MEASURED and the reason,
// and counts it neither as passed nor as failed.  Its checks still count.
export function notMeasured(r, why) {
  r.notMeasured = why;
}

export function check(r, cond, msg) {
  if (!cond) r.failures.push(msg);
  return cond;
}

let version = 'unknown';

// The browser's version, as it says it, for results.json.
export function setVersion(v) {
  version = v;
}

export function writeResults() {
  fs.writeFileSync(cfg.results, JSON.stringify({ browser: B, version, results }, null, 1));
}
