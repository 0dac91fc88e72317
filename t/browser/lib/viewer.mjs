// Licensed under the Apache License, Version 2.0; see LICENSE.
//
// The browsers' PDF viewers: which document and page they show.

import { VIEWER_PREFIX } from '../webkit.mjs';
import { B } from './config.mjs';
import { waitFor, withTimeout } from './wait.mjs';

export const CHROME_PDF_EXTENSION = 'chrome-extension://mhjfbmdgcfjbbpaeojofohoefgiehjai/';

// What the frame shows: its URL as the page sees it, its content type, and
// the state of the browser's PDF viewer, if any (title is the PDF's /Title
// once the viewer has parsed the document; page is the current page).
export async function viewerState(page, frameOrGetter) {
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
      // pdf.js's load() hands the document to its viewer in the same
      // synchronous step that sets app.pdfDocument, so a document the viewer
      // lacks (or no viewer at all) means that step threw: the document
      // was parsed but will never be shown (see waitForViewer): pageless.
      const viewer = await withTimeout(page._inFrame([...frame.path, idx], (d) => d.executeScript(`
        const app = window.PDFViewerApplication;
        if (!app || !app.pdfDocument) return { title: null, page: null, pages: null };
        const pageless = !app.pdfViewer || app.pdfViewer.pdfDocument !== app.pdfDocument;
        return { title: (app.documentInfo && app.documentInfo.Title) || null,
                 page: pageless ? null : app.page, pages: app.pagesCount, pageless };`)),
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

// Wait until the frame's viewer shows the PDF labelled `label`.  With
// `stalled` (a URL prefix), a WebKit viewer that parsed the PDF of that URL
// inline but will never show it (see viewerState) is returned at once,
// marked stalled, instead of failing.  The cause is WebKit's own: its content
// script (extras/content-script.js in libwebkit2gtk's resources) calls
// PDFViewerApplication.open() when the PDF's bytes arrive without waiting
// for pdf.js's initializedPromise, so on a loaded machine load() can run
// before the viewer exists.  Seen in single and in concurrent views.
export async function waitForViewer(page, frameOrGetter, label, timeout = 15000,
                                    stalled = null) {
  let last = null;
  try {
    return await waitFor(async () => {
      const s = last = await viewerState(page, frameOrGetter);
      if (stalled && isStalled(s, stalled)) return { ...s, stalled: true };
      return s.contentType === 'application/pdf' && s.title &&
        s.title.startsWith(label) && (s.page >= 1 || s.pageless) ? s : null;
    }, timeout, `the PDF viewer to show "${label}"`);
  } catch (e) {
    throw new Error(`${e.message}; last seen ${JSON.stringify(last)}`);
  }
}

// The limit a case states for a stalled WebKit viewer.
export const STALLED_VIEWER = ['stalled WebKit viewer',
  'WebKit\'s pdf.js received the PDF inline (application/pdf, its pages ' +
  'counted) but did not set up its viewer: WebKit opens the document before ' +
  'pdf.js has initialized, a race it loses on a loaded machine; the module\'s ' +
  'part (redirect, pass with its own cookie, final URL) is checked in the ' +
  'access log'];

// Whether a WebKit viewer state is the stall above, at a URL under prefix.
export function isStalled(s, prefix) {
  return Boolean(s && s.pageless && s.contentType === 'application/pdf' && s.pages >= 1 &&
                 s.href.startsWith(prefix));
}
