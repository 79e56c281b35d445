"""The ground-truth line written to labels.jsonl for every response record.

Fields:
    warc_file, offset, record_id  shard name, byte offset of the response's gzip member, its WARC-Record-ID
    url, warc_date                WARC-Target-URI and WARC-Date
    kind                          original | exact_dup | near_dup | spam | boilerplate_heavy | bad_charset |
                                  non_html | redirect | not_found | server_error | real_cc | truncated
    variant                       how the kind was made (e.g. "transplanted_article", "word_edits/amp_page",
                                  "http_says_utf8_bytes_windows-1252", "link_farm", "maintenance_503")
    source_page                   the page it derives from: a path under the data set's html/ folder, or
                                  "<real warc>#<record id>" for real records and their images
    body_source                   the reference text written into a page template (transplanted articles)
    dup_cluster                   shared by an original and all its exact and near copies ("dup-NNNNN"), and by
                                  real records whose extracted texts are near-identical, 5-word-shingle Jaccard
                                  >= 0.5 as the lowest generated near-copy ("real-NNNNN"); else null
    target_jaccard, measured_jaccard  5-word-shingle Jaccard of the main text against the cluster's original
                                  (1.0 for exact copies, null for everything else)
    lang                          expected language of the main text (fastText label of the source page, "en"
                                  for reference text); null where unknown
    http_status, content_type     status code and MIME type the server sent (content_type null: no header)
    charset_declared_http/meta    charset in the Content-Type header / in a <meta> tag, lower-cased, or null
    charset_actual, invalid_bytes the encoding the payload really is in, and whether it holds byte sequences
                                  invalid in that encoding
    expect_document               a correct extractor makes a document of it: a complete 200 HTML response
    truncated                     the response's gzip member is cut off (the last record of the last shard)
"""
from __future__ import annotations

from dev.corpus.captures import Capture
from dev.corpus.warc_writer import warc_date


def label(capture: Capture, warc_file: str, record_id: str, offset: int) -> dict:
    charset = capture.charset
    return {
        "warc_file": warc_file,
        "record_id": record_id,
        "url": capture.url,
        "offset": offset,
        "warc_date": warc_date(capture.date),
        "kind": capture.kind,
        "variant": capture.variant,
        "source_page": capture.source_page,
        "body_source": capture.body_source,
        "dup_cluster": capture.dup_cluster,
        "target_jaccard": capture.target_jaccard,
        "measured_jaccard": capture.measured_jaccard,
        "lang": capture.lang,
        "http_status": capture.status,
        "content_type": capture.content_type,
        "charset_declared_http": charset.http.lower() if charset.http else None,
        "charset_declared_meta": charset.meta,
        "charset_actual": charset.actual,
        "invalid_bytes": charset.invalid_bytes,
        "expect_document": capture.expect_document,
        "truncated": capture.truncated,
    }
