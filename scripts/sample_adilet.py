"""Adilet-style pages of the bundled corpus (written by the zan team; abridged, paraphrased texts).

Each page has the real layout: page chrome, ``div.container_alpha.slogan`` with ``h1``, ``span.status`` and
the requisites line, the tabs block, then ``<article>`` with ``h3`` headings, ``<p><b>`` article headings,
``span.note`` editorial notes, and a browser-extension block after ``</article>`` (noise, as in real saves).
"""

from __future__ import annotations

from html import escape

CHROME_HEAD = """<!DOCTYPE html>
<!-- saved from url=(0046)https://adilet.zan.kz/{lang}/docs/{id} -->
<html><head><meta http-equiv="Content-Type" content="text/html; charset=UTF-8">
<title>{title} - ИПС "Әділет"</title>
<link rel="alternate" type="application/rss+xml" title="RSS 2.0" href="https://adilet.zan.kz/{lang}/docs/rss">
<script type="text/javascript">var _gaq = _gaq || []; _gaq.push(['_trackPageview']);</script>
</head><body>
<div class="main png_bg"><div class="inner_main">
<div class="container_gamma tabs clearfix in_one_fullscreen in_mobile_hidden"><ul>
<li><a href="https://adilet.zan.kz/{lang}">{home}</a></li></ul></div>
<div class="container_alpha slogan">
<h1>{title}</h1>
<span class="status status_upd">{status}</span>
<p>{requisites}</p>
</div>
<div id="tabs_container"><div class="container_gamma tabs clearfix"><ul class="clearfix">
<li class="selected"><a href="https://adilet.zan.kz/{lang}/docs/{id}"> {tab_text} </a></li>
<li><a href="https://adilet.zan.kz/{lang}/docs/{id}/info"> {tab_info} </a></li>
<li><a href="https://adilet.zan.kz/{lang}/docs/{id}/history"> {tab_history} </a></li>
<li><a href="https://adilet.zan.kz/{lang}/docs/{id}/download" class="fileicon icon_pdf">PDF</a></li>
</ul></div></div>
<div class="container_gamma text text_upd"><div class="gs_12">
<article>"""

CHROME_TAIL = """</article><veepn-lock-screen><template shadowrootmode="open"><style>html{box-sizing:border-box}</style>
<div class="lock"><p>Статья 999. VPN is locked</p><p>Upgrade to premium to unlock this page</p></div></template>
</veepn-lock-screen>
</div></div></div></div>
<div class="footer"><p>© 2012-2026 РГП на ПХВ «Институт законодательства и правовой информации РК»</p></div>
</body></html>
"""

UI = {
    "rus": {"home": "Главная", "tab_text": "Текст", "tab_info": "Информация", "tab_history": "История изменений"},
    "kaz": {"home": "Басты бет", "tab_text": "Мәтін", "tab_info": "Ақпарат", "tab_history": "Өзгерістер тарихы"},
}


def body_html(blocks: list[tuple[str, str]]) -> str:
    """Blocks → article HTML. Kinds: h3 (``|`` separates <br> lines), art, p, note, table."""
    out, z = [], 1
    for kind, text in blocks:
        z += 1
        if kind == "h3":
            out.append(f'<h3 id="z{z}"> ' + "<br>".join(escape(t) for t in text.split("|")) + "</h3>")
        elif kind in ("art", "bold"):
            out.append(f'<p><b><a name="z{z}"></a>{escape(text)}</b></p>')
        elif kind == "p":
            out.append(f'<p id="z{z}">\n&nbsp;&nbsp;&nbsp;&nbsp;&nbsp; {escape(text)}</p>')
        elif kind == "note":
            out.append(f'<span class="note">&nbsp;&nbsp;&nbsp;&nbsp;&nbsp; {escape(text)}</span><br>')
        elif kind == "pnote":
            out.append(f'<p class="note">&nbsp;&nbsp;&nbsp;&nbsp;&nbsp; {escape(text)}</p>')
        elif kind == "table":
            cells = "".join(f'<td align="left" width="300"><i>{escape(c)}</i></td>' for c in text.split("|"))
            out.append(f"<table><tbody><tr>{cells}</tr></tbody></table><p></p>")
    return "\n".join(out)


def adilet_page(
    adilet_id: str, lang: str, title: str, status: str, requisites: str, blocks: list[tuple[str, str]]
) -> str:
    head = CHROME_HEAD.format(
        id=adilet_id, lang=lang, title=escape(title), status=status, requisites=escape(requisites), **UI[lang]
    )
    return head + "\n" + body_html(blocks) + "\n" + CHROME_TAIL
