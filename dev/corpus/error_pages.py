"""Bodies of redirects and error responses, in the shapes real servers and CMSs send them.

A correct pipeline drops all of these by status code, but many carry enough HTML text (a themed "not found"
page has the whole site menu) that an extractor which ignores the status turns them into documents.
"""
from __future__ import annotations

import html
import random
from collections.abc import Sequence

from dev.corpus.html_edit import Paragraph, paragraph_html, replace_article, set_title
from dev.corpus.http_message import reason_phrase

NOT_FOUND_MESSAGES = {
    "en": ("Page not found", "Sorry, the page you are looking for does not exist or has been moved. "
           "Please check the address or use the search to find what you are looking for."),
    "de": ("Seite nicht gefunden", "Leider konnte die von Ihnen gesuchte Seite nicht gefunden werden. Bitte "
           "überprüfen Sie die Adresse oder nutzen Sie die Suche, um den gewünschten Inhalt zu finden."),
    "es": ("Página no encontrada", "Lo sentimos, la página que busca no existe o ha sido trasladada. "
           "Compruebe la dirección o utilice el buscador."),
    "fr": ("Page introuvable", "Désolé, la page que vous recherchez n'existe pas ou a été déplacée. "
           "Vérifiez l'adresse ou utilisez la recherche."),
}
APACHE_EXPLANATIONS = {
    404: "The requested URL was not found on this server.",
    410: "The requested resource is no longer available on this server and there is no forwarding address.",
    500: "The server encountered an internal error or misconfiguration and was unable to complete your request.",
}
MAINTENANCE = ("We'll be back soon!", "Sorry for the inconvenience. We are performing some scheduled "
               "maintenance at the moment and will be back online shortly. Thank you for your patience.")


def server_error_page(status: int, server: str, host: str) -> str:
    """The server's built-in error page (nginx, Apache or IIS style, after the Server header)."""
    title = f"{status} {reason_phrase(status)}"
    if server.startswith("Apache"):
        explanation = APACHE_EXPLANATIONS.get(status, APACHE_EXPLANATIONS[500])
        return (f'<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head>\n<title>{title}</title>\n'
                f"</head><body>\n<h1>{reason_phrase(status)}</h1>\n<p>{explanation}</p>\n<hr>\n"
                f"<address>{html.escape(server)} Server at {host} Port 443</address>\n</body></html>\n")
    if server.startswith("Microsoft-IIS"):
        return (f'<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" '
                f'"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\r\n<html><head><title>{title}</title>'
                f'</head><body><div id="header"><h1>Server Error</h1></div><div id="content"><fieldset>'
                f"<h2>{title}</h2><h3>There is a problem with the resource you are looking for, and it cannot be "
                "displayed.</h3></fieldset></div></body></html>\r\n")
    return (f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n<center><h1>{title}</h1></center>\r\n"
            f"<hr><center>{html.escape(server)}</center>\r\n</body>\r\n</html>\r\n")


def themed_not_found(page: str, article: Sequence[Paragraph], lang: str | None) -> str:
    """The site's own 404 page: full menu, header and footer around a short "not found" message."""
    title, message = NOT_FOUND_MESSAGES.get(lang or "en", NOT_FOUND_MESSAGES["en"])
    return set_title(replace_article(page, article, paragraph_html(article[0].attributes, message)), title)


def maintenance_page(host: str) -> str:
    title, message = MAINTENANCE
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{host} - Maintenance</title>'
            f"<style>body{{text-align:center;padding:150px;font:20px Helvetica,sans-serif}}</style></head>"
            f"<body><article><h1>{title}</h1><div><p>{message}</p><p>&mdash; The {host} Team</p></div></article>"
            "</body></html>")


def wordpress_critical_error() -> str:
    return ('<!DOCTYPE html>\n<html dir="ltr" lang="en-US">\n<head>\n\t<meta http-equiv="Content-Type" '
            'content="text/html; charset=utf-8" />\n\t<title>WordPress &rsaquo; Error</title>\n</head>\n'
            '<body id="error-page">\n\t<div class="wp-die-message"><p>There has been a critical error on this '
            'website.</p><p><a href="https://wordpress.org/documentation/article/faq-troubleshooting/">Learn more '
            "about troubleshooting WordPress.</a></p></div></body>\n</html>\n")


def cdn_error_page(status: int, host: str, rng: random.Random) -> str:
    """A CDN's page for an origin that is down (Cloudflare's 52x family)."""
    ray = f"{rng.getrandbits(64):016x}"
    return (f'<!DOCTYPE html><html lang="en-US"><head><title>{host} | {status}: {reason_phrase(status)}</title>'
            f'<meta charset="UTF-8" /></head><body><div id="cf-wrapper"><h1><span>{reason_phrase(status)}</span>'
            f"<span>Error code {status}</span></h1><p>Visit cloudflare.com for more information.</p>"
            f"<h2>What happened?</h2><p>The web server is not returning a connection. As a result, the web page "
            f"is not displaying.</p><p>Ray ID: {ray}</p></div></body></html>")


def redirect_body(status: int, location: str, server: str) -> str:
    """What servers put in a redirect's body: nginx's default page, Apache's link, or nothing at all."""
    title = f"{status} {reason_phrase(status)}"
    if server.startswith("Apache"):
        return (f'<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head>\n<title>{title}</title>\n'
                f'</head><body>\n<h1>{reason_phrase(status)}</h1>\n<p>The document has moved '
                f'<a href="{html.escape(location)}">here</a>.</p>\n</body></html>\n')
    if server.startswith(("nginx", "openresty", "cloudflare")):
        return (f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n<center><h1>{title}</h1></center>"
                f"\r\n<hr><center>{html.escape(server)}</center>\r\n</body>\r\n</html>\r\n")
    return ""
