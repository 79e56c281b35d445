"""Payloads that are not HTML: PDFs, JSON API answers, feeds, plain text and robots.txt.

A correct pipeline drops them by content type; they are here so that one that sniffs or ignores the type
shows it.
"""
from __future__ import annotations

import json
from datetime import datetime
from xml.sax.saxutils import escape

PDF_LINE_CHARS = 90
PDF_LINES_PER_PAGE = 50


def pdf_document(title: str, paragraphs: list[str]) -> bytes:
    """A valid one-page PDF (Helvetica, WinAnsi text) with its object offsets in the xref table."""
    lines = [title, ""] + [line for paragraph in paragraphs for line in (*_wrapped(paragraph), "")]
    text_ops = ["BT", "/F1 10 Tf", "12 TL", "50 800 Td"]
    for line in lines[:PDF_LINES_PER_PAGE]:
        escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        text_ops.append(f"({escaped}) Tj T*")
    text_ops.append("ET")
    stream = "\n".join(text_ops).encode("cp1252", "replace")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    document = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(document))
        document += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(document)
    document += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    document += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    document += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(document)


def json_post(post_id: int, title: str, url: str, published: datetime, excerpt: str) -> bytes:
    """A WordPress REST API post object, the kind crawlers pick up from <link rel="alternate"> tags."""
    post = {"id": post_id, "date_gmt": published.strftime("%Y-%m-%dT%H:%M:%S"), "link": url,
            "status": "publish", "type": "post", "title": {"rendered": title},
            "excerpt": {"rendered": f"<p>{excerpt}</p>\n", "protected": False}}
    return json.dumps(post, ensure_ascii=False).encode("utf-8")


def rss_feed(host: str, items: list[tuple[str, str, str]], built: datetime) -> bytes:
    entries = "".join(f"<item><title>{escape(title)}</title><link>{escape(link)}</link>"
                      f"<description>{escape(description)}</description></item>"
                      for title, link, description in items)
    return (f'<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>{escape(host)}</title>'
            f"<link>https://{escape(host)}/</link><lastBuildDate>{built.strftime('%a, %d %b %Y %H:%M:%S +0000')}"
            f"</lastBuildDate>{entries}</channel></rss>").encode("utf-8")


def robots_txt(host: str) -> bytes:
    return (f"User-agent: *\nDisallow: /wp-admin/\nDisallow: /search\nAllow: /wp-admin/admin-ajax.php\n\n"
            f"User-agent: GPTBot\nDisallow: /\n\nSitemap: https://{host}/sitemap.xml\n").encode("ascii")


def plain_text(title: str, paragraphs: list[str]) -> bytes:
    return (title + "\n\n" + "\n\n".join(paragraphs) + "\n").encode("utf-8")


def _wrapped(paragraph: str) -> list[str]:
    lines, current = [], ""
    for word in paragraph.split():
        if current and len(current) + 1 + len(word) > PDF_LINE_CHARS:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}".strip()
    return lines + [current] if current else lines
