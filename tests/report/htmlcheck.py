"""Structure checks for the HTML report, python3 standard library only.

parse(text) builds a small element tree with html.parser and fails on
anything that is not well formed: an end tag that closes nothing open, an
element left open, a second <html>/<head>/<body>/<title>. no_external(text)
fails on any reference outside the file (a URL, "//", src=, href= other
than a fragment, CSS url() other than a fragment, @import). Both raise
CheckError with the offending place."""

import re
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link",
        "meta", "source", "track", "wbr"}
# What the SVG namespace declaration of a standalone SVG file may contain.
SVG_NS = 'xmlns="http://www.w3.org/2000/svg"'


class CheckError(Exception):
    pass


class Element:
    __slots__ = ("tag", "attrs", "children", "text", "parent", "line")

    def __init__(self, tag, attrs, parent, line):
        self.tag = tag
        self.attrs = dict(attrs)
        self.children = []
        self.text = []
        self.parent = parent
        self.line = line

    def get(self, key, default=None):
        return self.attrs.get(key, default)

    def classes(self):
        return (self.attrs.get("class") or "").split()

    def iter(self):
        stack = [self]
        while stack:
            e = stack.pop()
            yield e
            stack.extend(reversed(e.children))

    def find_all(self, tag=None, cls=None, **attrs):
        out = []
        for e in self.iter():
            if tag and e.tag != tag:
                continue
            if cls and cls not in e.classes():
                continue
            if any(e.attrs.get(k.replace("_", "-")) != v
                   for k, v in attrs.items()):
                continue
            out.append(e)
        return out

    def find(self, tag=None, cls=None, **attrs):
        r = self.find_all(tag, cls, **attrs)
        return r[0] if r else None

    def by_id(self, ident):
        for e in self.iter():
            if e.attrs.get("id") == ident:
                return e
        return None

    def all_text(self):
        return "".join(t for e in self.iter() for t in e.text)


class _Builder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {}, None, 0)
        self.cur = self.root
        self.doctype = None
        self.counts = {}

    def handle_decl(self, decl):
        self.doctype = decl

    def handle_starttag(self, tag, attrs):
        line = self.getpos()[0]
        e = Element(tag, attrs, self.cur, line)
        self.cur.children.append(e)
        self.counts[tag] = self.counts.get(tag, 0) + 1
        if tag not in VOID:
            self.cur = e

    def handle_startendtag(self, tag, attrs):
        e = Element(tag, attrs, self.cur, self.getpos()[0])
        self.cur.children.append(e)
        self.counts[tag] = self.counts.get(tag, 0) + 1

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if self.cur.tag != tag:
            raise CheckError("line %d: </%s> closes <%s> (opened line %d)" %
                             (self.getpos()[0], tag, self.cur.tag,
                              self.cur.line))
        self.cur = self.cur.parent

    def handle_data(self, data):
        self.cur.text.append(data)


def parse(text, html=True):
    """The element tree of a page; raises CheckError when malformed."""
    b = _Builder()
    b.feed(text)
    b.close()
    if b.cur is not b.root:
        raise CheckError("<%s> opened line %d is never closed" %
                         (b.cur.tag, b.cur.line))
    if html:
        if not b.doctype or b.doctype.lower() != "doctype html":
            raise CheckError("no <!DOCTYPE html> (got %r)" % b.doctype)
        for tag in ("html", "head", "body", "title"):
            if b.counts.get(tag, 0) != 1:
                raise CheckError("%d <%s> elements, want 1" %
                                 (b.counts.get(tag, 0), tag))
        metas = [e for e in b.root.iter() if e.tag == "meta"]
        if not any(e.get("charset", "").lower() == "utf-8" for e in metas):
            raise CheckError("no <meta charset=\"utf-8\">")
    return b.root


def no_external(text, standalone_svg=False):
    """Raises CheckError if the text refers to anything outside itself."""
    scrub = text
    if standalone_svg:
        if scrub.count(SVG_NS) != 1:
            raise CheckError("a standalone SVG declares its namespace once")
        scrub = scrub.replace(SVG_NS, "")
    for pat, what in ((r"https?://", "a URL"), (r"//", "'//'"),
                      (r"\bsrc\s*=", "a src attribute"),
                      (r"\bhref\s*=\s*[\"']?(?!#)", "an href to elsewhere"),
                      (r"url\(\s*(?!#)", "a CSS url() to elsewhere"),
                      (r"@import", "a CSS @import"),
                      (r"\bfetch\(|XMLHttpRequest|WebSocket|EventSource",
                       "a network API")):
        m = re.search(pat, scrub)
        if m:
            a = max(0, m.start() - 60)
            raise CheckError("%s at offset %d: ...%s..." %
                             (what, m.start(), scrub[a:m.end() + 60]))


def data_block(root):
    """The JSON data block's text."""
    for e in root.iter():
        if e.tag == "script" and e.get("id") == "cs-data":
            return "".join(e.text)
    raise CheckError("no <script id=\"cs-data\"> data block")


def bars(root, run, layer="static"):
    """data-node of every bar of `run` in the timeline's `layer` group."""
    tl = root.by_id("cs-tl")
    if tl is None:
        raise CheckError("no timeline <svg id=\"cs-tl\">")
    groups = [g for g in tl.children if g.tag == "g" and layer in g.classes()]
    if len(groups) != 1:
        raise CheckError("timeline has %d %r groups" % (len(groups), layer))
    return [int(e.get("data-node")) for e in groups[0].iter()
            if e.tag == "rect" and "bar" in e.classes()
            and e.get("data-run") == run]


def summary(root):
    """{(run, key): float} from the summary table's data attributes."""
    tab = root.by_id("cs-summary")
    if tab is None:
        raise CheckError("no summary table")
    out = {}
    for td in tab.find_all("td"):
        if td.get("data-run") and td.get("data-key"):
            out[(td.get("data-run"), td.get("data-key"))] = float(
                td.get("data-value"))
    return out


# simulate --format json keys for each summary key.
SIM_KEYS = {
    "makespan_ns": ("totals", "makespan_ns"),
    "lower_bound_ns": ("totals", "lower_bound_ns"),
    "efficiency": ("totals", "efficiency"),
    "compute_ns": ("totals", "compute_ns"),
    "comm_ns": ("totals", "comm_ns"),
    "exposed_ns": ("totals", "exposed_ns"),
    "overlap": ("totals", "overlap"),
    "peak_simulated": ("memory", "peak_simulated"),
    "peak_per_step": ("memory", "peak_per_step"),
}


def compare_summary(fig, run, sim):
    """Raises CheckError unless every summary figure of `run` equals the
    simulation report `sim` (12 significant digits, as the JSON prints)."""
    for key, (obj, field) in SIM_KEYS.items():
        if (run, key) not in fig:
            raise CheckError("summary lacks %s for %s" % (key, run))
        want = float(sim[obj][field])
        got = fig[(run, key)]
        if abs(got - want) > 1e-9 * max(1.0, abs(want)):
            raise CheckError("%s %s: page %r, simulate %r" %
                             (run, key, got, want))
