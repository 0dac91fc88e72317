// Licensed under the Apache License, Version 2.0; see LICENSE.
//
// Waiting on conditions, never on fixed delays alone.

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(fn, timeout, what) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      // a WebDriver session that died never comes back
      if (e && e.name === 'NoSuchSessionError') throw e;
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeout} ms waiting for ${what}` +
                      (last instanceof Error ? ` (${last.message})` : ''));
    }
    await sleep(100);
  }
}

export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
