// Licensed under the Apache License, Version 2.0; see LICENSE.
//
// Screenshots: does the tab show a rendered page?

import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { B, cfg } from './config.mjs';
import { sleep } from './wait.mjs';

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
export async function screenshot(page, name) {
  const buf = Buffer.from(await page.screenshot({ type: 'png' }));
  if (cfg.shots) {
    fs.mkdirSync(cfg.shots, { recursive: true });
    shotNo += 1;
    fs.writeFileSync(path.join(cfg.shots, `${B}-${String(shotNo).padStart(2, '0')}-${name}.png`), buf);
  }
  return pngStats(buf);
}

// Poll screenshots until one shows a rendered page (viewers paint late).
export async function renderedShot(page, name, timeout = 8000) {
  let stats;
  const deadline = Date.now() + timeout;
  do {
    stats = await screenshot(page, name);
    if (stats.rendered) return stats;
    await sleep(300);
  } while (Date.now() < deadline);
  return stats;
}
