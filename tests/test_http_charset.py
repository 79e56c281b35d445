import gzip

import brotli
import pytest

from tasks.extract.charset import decode_html, meta_charset
from tasks.extract.http_response import HttpParseError, parse_http_response
from tasks.extract.url_filter import UrlFilter, load_blocklist

TEXT = ("Grüße aus Köln: Die Straßenbahn fährt über die Brücke, während die Bäckerei öffnet und "
        "die Müllabfuhr früh am Morgen durch die Gassen zieht – naïve Touristen bestellen Café.")


def _response(body: bytes, *headers: str) -> bytes:
    head = "\r\n".join(["HTTP/1.1 200 OK", *headers]).encode()
    return head + b"\r\n\r\n" + body


def test_parses_status_headers_and_charset():
    response = parse_http_response(_response(b"<p>x</p>", "Content-Type: text/html; charset=\"ISO-8859-1\""))
    assert response.status == 200 and response.mime_type == "text/html"
    assert response.declared_charset == "iso-8859-1" and response.body == b"<p>x</p>"


def test_decodes_chunked_gzip_and_brotli_bodies():
    body = b"<html><body>hello</body></html>"
    chunked = b"5\r\n" + body[:5] + b"\r\n" + hex(len(body) - 5)[2:].encode() + b"\r\n" + body[5:] + b"\r\n0\r\n\r\n"
    assert parse_http_response(_response(chunked, "Transfer-Encoding: chunked")).body == body
    assert parse_http_response(_response(gzip.compress(body), "Content-Encoding: gzip")).body == body
    assert parse_http_response(_response(brotli.compress(body), "Content-Encoding: br")).body == body
    # Common Crawl keeps the header but stores the decoded body
    assert parse_http_response(_response(body, "Content-Encoding: gzip")).body == body


def test_rejects_non_http_blocks():
    with pytest.raises(HttpParseError):
        parse_http_response(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    with pytest.raises(HttpParseError):
        parse_http_response(b"no header end")


@pytest.mark.parametrize("encoding", ["cp1252", "utf-8"])
def test_lying_http_charset_still_gives_readable_text(encoding):
    body = f"<html><body><p>{TEXT}</p></body></html>".encode(encoding)
    liar = "utf-8" if encoding == "cp1252" else "iso-8859-1"
    decoded = decode_html(body, liar)
    assert TEXT in decoded.text and not decoded.replaced


def test_meta_charset_and_detection():
    body = f'<html><head><meta charset="windows-1251"></head><body>{"Привет, как дела? " * 20}</body></html>'
    raw = body.encode("cp1251")
    assert meta_charset(raw) == "windows-1251"
    assert "Привет" in decode_html(raw, None).text
    undeclared = f"<html><body>{'Это длинный русский текст без объявленной кодировки. ' * 30}</body></html>"
    decoded = decode_html(undeclared.encode("koi8-r"), None)
    assert decoded.source == "detected" and "русский" in decoded.text


def test_invalid_bytes_are_replaced_never_raised():
    decoded = decode_html(b"<p>ok \xff\xfe\x80 broken \xc3</p>" * 3, "utf-8")
    assert "ok" in decoded.text and "broken" in decoded.text


def test_url_filter_blocks_domains_subdomains_and_words(tmp_path):
    rules = tmp_path / "list.txt.gz"
    rules.write_bytes(gzip.compress(b"! comment\n||ads.example.com^\nplain.org\n/banner/*\n"))
    domains = load_blocklist(str(rules))
    assert domains == {"ads.example.com", "plain.org"}
    url_filter = UrlFilter(domains, ["casino"])
    assert url_filter.blocked_reason("https://x.ads.example.com/a") == "url_blocked_domain"
    assert url_filter.blocked_reason("http://plain.org/") == "url_blocked_domain"
    assert url_filter.blocked_reason("http://example.com/casino-bonus") == "url_banned_word"
    assert url_filter.blocked_reason("http://example.com/") is None


def test_utf8_with_a_stray_legacy_byte_stays_utf8():
    body = f"<html><body><p>{TEXT}</p><p>price: 5\xa3</p></body></html>".encode("utf-8").replace(b"\xc2\xa3", b"\xa3")
    decoded = decode_html(body, None)
    assert TEXT in decoded.text and decoded.replaced and decoded.encoding == "utf-8"


def test_odd_status_digits_and_header_bytes_do_not_escape_as_crashes():
    with pytest.raises(HttpParseError):
        parse_http_response("HTTP/1.1 2²0 OK\r\n\r\n<p>x</p>".encode("iso-8859-1"))
    response = parse_http_response(b"HTTP/1.1 200 OK\r\nX-A: a\x85b\r\nContent-Type: text/html\r\n\r\n<p>x</p>")
    assert response.headers["x-a"] == "a\x85b" and response.mime_type == "text/html"


def test_malformed_urls_have_no_host_and_are_not_blocked():
    assert UrlFilter({"example.com"}, []).blocked_reason("http://[broken/x") is None


@pytest.mark.parametrize("encoding, compress", [("gzip", gzip.compress), ("br", brotli.compress)])
def test_decoded_bodies_are_capped(encoding, compress):
    from tasks.extract.http_response import BodyTooLarge

    bomb = compress(b"<p>" + b"a" * 2_000_000 + b"</p>")
    block = _response(bomb, f"Content-Encoding: {encoding}")
    assert len(parse_http_response(block).body) == 2_000_007
    with pytest.raises(BodyTooLarge):
        parse_http_response(block, max_body_bytes=100_000)
