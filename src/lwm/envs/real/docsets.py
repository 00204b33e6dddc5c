"""HTML documentation sets Debian ships, each at the public address it is read at.

One table for both domains that use them: the web environment serves each folder at its URL (a browser
walks the real pages), and the search environment indexes the Sphinx-built ones as corpora of their own
(``sources=["flask-docs"]``). ``lwm setup search`` installs the packages (or unpacks into lwm's data folder those whose
install would upgrade the system); a set whose folder is missing is simply not available.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lwm.provision import located


@dataclass(frozen=True)
class DocSet:
    url: str
    """The public address the folder is served at (ends with /)."""
    installed: Path
    """Where Debian's package puts the folder."""
    start: str = "index.html"
    """The page an episode starts on, relative to ``url``."""
    sphinx: bool = False
    """Built by Sphinx (classic or Read the Docs theme): search finds the main text and indexes these."""

    @property
    def root(self) -> Path:
        """The folder: installed, or unpacked into lwm's data folder where its package is held back."""
        return located(self.installed)


DOC = Path("/usr/share/doc")
DOC_SETS: dict[str, DocSet] = {
    "python-docs": DocSet("https://docs.python.org/3/", DOC / "python3/html", sphinx=True),
    "git-docs": DocSet("https://git-scm.com/docs/", DOC / "git-doc", "git.html"),
    "sqlite-docs": DocSet("https://www.sqlite.org/", DOC / "sqlite3"),
    "bash-manual": DocSet("https://www.gnu.org/software/bash/manual/", DOC / "bash", "bashref.html"),
    "debian-reference": DocSet("https://www.debian.org/doc/manuals/debian-reference/",
                               Path("/usr/share/debian-reference"), "index.en.html"),
    "flask-docs": DocSet("https://flask.palletsprojects.com/en/stable/", DOC / "python-flask-doc/html", sphinx=True),
    "jinja-docs": DocSet("https://jinja.palletsprojects.com/en/stable/", DOC / "python-jinja2-doc/html", sphinx=True),
    "click-docs": DocSet("https://click.palletsprojects.com/en/stable/", DOC / "python-click-doc/html", sphinx=True),
    "werkzeug-docs": DocSet("https://werkzeug.palletsprojects.com/en/stable/", DOC / "python-werkzeug-doc/html",
                            sphinx=True),
    "requests-docs": DocSet("https://requests.readthedocs.io/en/latest/", DOC / "python-requests-doc/html",
                            sphinx=True),
    "attrs-docs": DocSet("https://www.attrs.org/en/stable/", DOC / "python-attr-doc/html", sphinx=True),
    "pytest-docs": DocSet("https://docs.pytest.org/en/stable/", DOC / "python-pytest-doc/html", sphinx=True),
    "pygments-docs": DocSet("https://pygments.org/", DOC / "python-pygments-doc/html", sphinx=True),
    "markdown-docs": DocSet("https://python-markdown.github.io/", DOC / "python-markdown-doc/docs"),
    "apache-httpd-docs": DocSet("https://httpd.apache.org/docs/2.4/", DOC / "apache2-doc/manual/en"),
    "sphinx-docs": DocSet("https://www.sphinx-doc.org/en/master/", DOC / "sphinx-doc/html", sphinx=True),
    "cmake-docs": DocSet("https://cmake.org/cmake/help/latest/", DOC / "cmake-data/html", sphinx=True),
    "babel-docs": DocSet("https://babel.pocoo.org/en/latest/", DOC / "python-babel-doc/html", sphinx=True),
    "setuptools-docs": DocSet("https://setuptools.pypa.io/en/latest/", DOC / "python-setuptools-doc/html",
                              sphinx=True),
    "itsdangerous-docs": DocSet("https://itsdangerous.palletsprojects.com/en/stable/",
                                DOC / "python-itsdangerous-doc/html", sphinx=True),
    "webob-docs": DocSet("https://docs.pylonsproject.org/projects/webob/en/stable/", DOC / "python-webob-doc",
                         sphinx=True),
    "tornado-docs": DocSet("https://www.tornadoweb.org/en/stable/", DOC / "python-tornado-doc/html", sphinx=True),
    "cryptography-docs": DocSet("https://cryptography.io/en/latest/", DOC / "python-cryptography-doc/html",
                                sphinx=True),
    "scrapy-docs": DocSet("https://docs.scrapy.org/en/latest/", DOC / "python-scrapy-doc/html", sphinx=True),
    # Sphinx with a theme of its own (search would index navigation too): browsed only
    "django-docs": DocSet("https://docs.djangoproject.com/en/4.2/", DOC / "python-django-doc/html"),
    "sqlalchemy-docs": DocSet("https://docs.sqlalchemy.org/en/20/", DOC / "python-sqlalchemy-doc/html"),
    "lxml-docs": DocSet("https://lxml.de/", DOC / "python-lxml-doc/html"),
    "vim-docs": DocSet("https://vimdoc.sourceforge.net/htmldoc/", DOC / "vim/html"),
    "zsh-docs": DocSet("https://zsh.sourceforge.io/Doc/Release/", DOC / "zsh-common/html"),
}
