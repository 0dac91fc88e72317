# Licensed under the Apache License, Version 2.0; see LICENSE.
"""Small, valid, multi-page PDF documents for the integration fixtures.

Every document carries its own label in each page's text and in its
/Info dictionary, so that a test can tell which file the server sent (for
example index.pdf behind a DirectoryIndex versus doc.pdf).  The cross
reference table is computed from the real byte offsets, so the result opens
in any viewer; the optional padding makes documents big enough for
meaningful byte-range requests.
"""


def _escape_pdf_string(text):
    return (text.replace("\\", "\\\\").replace("(", "\\(")
            .replace(")", "\\)"))


def make_pdf(label="sample", pages=3, padding=4096, link=None):
    """Return the bytes of a PDF 1.4 document with `pages` pages.

    label   -- ASCII text written on every page and into /Title
    pages   -- number of pages (at least 1)
    padding -- bytes of comment lines in each page's content stream, so
               that the file is large enough for Range tests
    link    -- an ASCII URL: every page is then one link to it (a /Link
               annotation over the whole page), for a click in the viewer
    """
    if pages < 1:
        raise ValueError("a PDF needs at least one page")
    label = _escape_pdf_string(label)
    objects = []  # objects[i] is the body of object number i + 1

    def add(body):
        objects.append(body)
        return len(objects)

    catalog = add(None)        # 1, filled in below
    page_tree = add(None)      # 2, filled in below
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    info = add(("<< /Title (%s) /Producer (mod_pdftoken tests) >>"
                % label).encode("ascii"))
    annots = ""
    if link is not None:
        annot = add(("<< /Type /Annot /Subtype /Link /Rect [0 0 612 792] "
                     "/Border [0 0 0] /A << /S /URI /URI (%s) >> >>"
                     % _escape_pdf_string(link)).encode("ascii"))
        annots = " /Annots [%d 0 R]" % annot
    page_ids = []
    for n in range(1, pages + 1):
        lines = ["BT /F1 24 Tf 72 720 Td (%s: page %d of %d) Tj ET"
                 % (label, n, pages)]
        # Comment lines: ignored by viewers, distinct per page and label so
        # that every byte range of the file is different.
        filler = []
        size = 0
        i = 0
        while size < padding:
            line = "%% %s p%d filler line %06d" % (label, n, i)
            filler.append(line)
            size += len(line) + 1
            i += 1
        stream = ("\n".join(filler + lines) + "\n").encode("ascii")
        content = add(b"<< /Length %d >>\nstream\n" % len(stream)
                      + stream + b"endstream")
        page_ids.append(add(
            ("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] "
             "/Resources << /Font << /F1 %d 0 R >> >> /Contents %d 0 R%s >>"
             % (page_tree, font, content, annots)).encode("ascii")))
    objects[catalog - 1] = (b"<< /Type /Catalog /Pages %d 0 R >>"
                            % page_tree)
    kids = " ".join("%d 0 R" % p for p in page_ids)
    objects[page_tree - 1] = ("<< /Type /Pages /Kids [%s] /Count %d >>"
                              % (kids, len(page_ids))).encode("ascii")

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref_at = len(out)
    out += b"xref\n0 %d\n" % (len(objects) + 1)
    out += b"0000000000 65535 f \n"
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += (b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\n"
            b"startxref\n%d\n%%%%EOF\n"
            % (len(objects) + 1, catalog, info, xref_at))
    return bytes(out)


if __name__ == "__main__":
    import sys
    sys.stdout.buffer.write(make_pdf(*(sys.argv[1:2] or ["sample"])))
