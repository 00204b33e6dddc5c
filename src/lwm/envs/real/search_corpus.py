"""Real document collections from Debian packages, for the local search engine.

Each source yields documents with the page's canonical public URL where one exists: each Sphinx-built
documentation set of ``lwm.envs.real.docsets`` (the Python docs, Flask, pytest, ...) at its public address,
one source each so that ``lwm data split --by source`` can hold a corpus out; the Linux man-pages project
(``manpages``, ``manpages-dev``: sections 2-7) as man7.org pages; and dictd databases (``dict-foldoc``,
``dict-jargon``, ``dict-wn``, ``dict-gcide``) as dict.org lookups. The text kept for indexing is plain;
``markdown`` renders one page for ``web_extractor`` on demand.
"""

from __future__ import annotations

import gzip
import html
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from lwm.envs.real.docsets import DOC_SETS

MAN_ROOT = Path("/usr/share/man")
DICT_ROOT = Path("/usr/share/dictd")
DICT_URL = "https://www.dict.org/bin/Dict?Form=Dict2&Database={db}&Query={word}"
SPHINX_SETS = tuple(name for name, docset in DOC_SETS.items() if docset.sphinx)
SOURCES = (*SPHINX_SETS, "man", "foldoc", "jargon", "wn", "gcide")


@dataclass(frozen=True)
class Document:
    url: str
    title: str
    text: str
    source: str
    path: str = ""
    date: str | None = None


_MAIN = (re.compile(r'<div class="body" role="main">(.*?)<div class="(?:sphinxsidebar|footer)"', re.S),  # classic
         # theme: the sidebar follows the body, or (Pygments, Sphinx's own) precedes it and the footer follows
         re.compile(r'<div itemprop="articleBody">(.*?)<footer', re.S))  # Read the Docs theme
_TITLE = re.compile(r"<title>(.*?)</title>", re.S)
_TAG = re.compile(r"<(script|style)\b.*?</\1>|<[^>]+>", re.S)


def main_html(page: str) -> str:
    """The main body of a Sphinx HTML page (the whole page when no theme we know marks it)."""
    main = next((m for pattern in _MAIN if (m := pattern.search(page))), None)
    return main.group(1) if main else page


def page_text(page: str) -> tuple[str, str]:
    """(title, visible text of the main body) of a Sphinx HTML page."""
    title = html.unescape(_TITLE.search(page).group(1)) if _TITLE.search(page) else ""
    text = html.unescape(_TAG.sub(" ", main_html(page)))
    return title, re.sub(r"\s+", " ", text).strip()


def sphinx_docs(name: str, limit: int | None = None) -> Iterator[Document]:
    """The pages of a Sphinx-built documentation set (lwm.envs.real.docsets), at their public URLs."""
    docset = DOC_SETS[name]
    pages = sorted(p for p in docset.root.rglob("*.html")
                   if not {"_static", "_sources", "_modules"} & set(p.parts))
    for path in pages[:limit]:
        title, text = page_text(path.read_text(errors="replace"))
        title = re.sub(r"\s+—\s+[^—]*$", "", title).strip() or path.stem  # " — Python 3.11 documentation"
        yield Document(docset.url + path.relative_to(docset.root).as_posix(), title, text, name, str(path))


_ROFF_FONT = re.compile(r"\\f(\[[^\]]*\]|\(..|.)")


def roff_text(source: str) -> tuple[str, str]:
    """(title line, readable text) of a man page's roff source, without running man."""
    lines, name = [], ""
    for raw in source.splitlines():
        line = _ROFF_FONT.sub("", raw).replace("\\-", "-").replace("\\(em", "—").replace("\\e", "\\")
        line = re.sub(r"\\[&|^/,]", "", line)
        if line.startswith((".SH", ".SS")):
            lines.append("\n" + line[3:].strip().strip('"').upper() + "\n")
        elif line.startswith((".B ", ".I ", ".BR ", ".IR ", ".BI ", ".IB ", ".RB ")):
            lines.append(line.split(" ", 1)[1].replace('"', ""))
        elif line.startswith((".PP", ".TP", ".P", ".LP", ".IP", ".br", ".sp")):
            lines.append("")
        elif line.startswith((".", "'")):
            continue
        else:
            lines.append(line)
        if not name and lines and lines[-1].strip() and "NAME" in "".join(lines[-3:-1]):
            name = lines[-1].strip()
    paragraphs = re.split(r"\n\s*\n", "\n".join(lines))  # reflow: roff breaks lines anywhere
    text = "\n\n".join(" ".join(p.split()) if not p.strip().isupper() else p.strip() for p in paragraphs)
    return name, text.strip()


def man_pages(root: Path = MAN_ROOT, sections: tuple[str, ...] = ("2", "3", "4", "5", "7"), limit: int | None = None
              ) -> Iterator[Document]:
    count = 0
    for section in sections:
        for path in sorted((root / f"man{section}").glob("*.gz")):
            if path.is_symlink():
                continue
            try:
                source = gzip.decompress(path.read_bytes()).decode(errors="replace")
            except (OSError, EOFError):
                continue
            if source.lstrip().startswith(".so "):  # an alias of another page
                continue
            page = path.name.removesuffix(".gz")
            title, text = roff_text(source)
            name, _, sec = page.rpartition(".")
            url = f"https://man7.org/linux/man-pages/man{section}/{quote(name)}.{sec}.html"
            yield Document(url, f"{name}({sec}) — {title.split(' - ', 1)[-1]}" if title else f"{name}({sec})",
                           text, "man", str(path))
            count += 1
            if limit is not None and count >= limit:
                return


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _b64(text: str) -> int:
    value = 0
    for char in text:
        value = value * 64 + _B64.index(char)
    return value


def dict_entries(db: str, root: Path = DICT_ROOT, limit: int | None = None) -> Iterator[Document]:
    """Entries of a dictd database (``<db>.index`` + ``<db>.dict.dz``, dictzip is gzip-compatible)."""
    index, data_path = root / f"{db}.index", root / f"{db}.dict.dz"
    if not index.exists() or not data_path.exists():
        return
    data = gzip.decompress(data_path.read_bytes())
    seen: set[tuple[int, int]] = set()
    count = 0
    for line in index.read_text(errors="replace").splitlines():
        parts = line.split("\t")
        if len(parts) < 3 or parts[0].startswith("00database"):
            continue
        span = (_b64(parts[1]), _b64(parts[2]))
        if span in seen:
            continue
        seen.add(span)
        text = data[span[0]: span[0] + span[1]].decode(errors="replace").strip()
        yield Document(DICT_URL.format(db=db, word=quote(parts[0])), parts[0], text, db)
        count += 1
        if limit is not None and count >= limit:
            return


def load_sources(sources: tuple[str, ...], limit_per_source: int | None = None) -> list[Document]:
    docs: list[Document] = []
    for source in sources:
        if source in SPHINX_SETS:
            docs += sphinx_docs(source, limit_per_source) if DOC_SETS[source].root.exists() else []
        elif source == "man":
            docs += man_pages(limit=limit_per_source)
        elif source in ("foldoc", "jargon", "wn", "gcide"):
            docs += dict_entries(source, limit=limit_per_source)
        else:
            raise ValueError(f"unknown search source {source!r}; known: {', '.join(SOURCES)}")
    return docs


def markdown(doc: Document) -> str:
    """The page as Markdown, as a web extractor would return it."""
    if doc.source in SPHINX_SETS and doc.path:
        from markdownify import markdownify

        text = markdownify(main_html(Path(doc.path).read_text(errors="replace")), heading_style="ATX", strip=["a"])
        return f"# {doc.title}\n\n" + re.sub(r"\n{3,}", "\n\n", html.unescape(text)).strip()
    return f"# {doc.title}\n\n{doc.text}"
