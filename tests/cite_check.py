"""Are the conformance suite's citations the vendors' documentation text?  (issue 38, item 3)

Every *runtime* case's ``cite=`` is one or more citations, each ``<document>[ <version>],
<where>: <text>``, joined by ``"; "``.  The document is the first words of a citation (the
prefix convention the cases already follow):

- ``CUDA Runtime API <ver>`` (``cuda_runtime_api.h`` + ``driver_types.h``), ``CUDA Driver API
  <ver>`` (``cuda.h``) and ``HIP Runtime API [<ver>]`` (``hip/hip_runtime_api.h`` +
  ``hip/driver_types.h``) are **checkable offline**: the pinned headers carry that documentation
  as doxygen comments (``bindgen/headersets.py`` says where each set comes from);
- ``CUDA Programming Guide`` (and any document in :data:`OFFLINE`) is not in any header: listed,
  counted by document, not checked.

The *quote* of a checkable citation is the text in double quotes ("...") where the text has
any -- words outside the quotes are the case author's gloss -- and otherwise the whole text.
A quote may elide with ``...``; each fragment must then be found, in order.  Quote and
documentation are compared normalized: doxygen markup (``\\p``, ``\\e``, ``\\ref``,
``\\param``, ``\\return`` ...), ``::``, HTML tags, comment stars and whitespace runs dropped,
case folded.  Where a quote must be found: in the doc comment of an API the case claims
(``apis=``) or a function the citation's ``<where>`` names; a citation whose ``<where>`` names
no function (``Data types``, ``Graph Management`` overview, an enum) is looked up in the whole
header set's documentation.  The header set is the one of the version the citation names
(``13.5`` -> ``.cache/headers/nvidia-cuda-runtime``, ``13.0`` -> ``nvidia-cuda-runtime@13.0.96``,
``12.9`` -> ``nvidia-cuda-runtime-cu12``; HIP: ``7.1`` (default) -> ``triton``, ``6.2`` ->
``triton@3.5.1``).

A vendor error code a citation names (quote or gloss) must be listed by the documentation it was
looked up in, or by a deviation entry of the case; an outcome no document states cites ``Observed,
<function>: ...`` and has an entry in ``pygraphrt.conformance.deviations.OBSERVATIONS``.

``python -m tests.cite_check`` prints the report; ``tests/test_citations.py`` holds it to zero
unfound quotes (CI, ``headers`` marker).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

#: Checkable documents: the prefix -> (vendor, headers under <include>, {version: cache key}, default version).
CHECKABLE: dict[str, tuple[str, tuple[str, ...], dict[str, str], str]] = {
    "CUDA Runtime API": ("cuda", ("cuda_runtime_api.h", "driver_types.h"),
                         {"13.5": "nvidia-cuda-runtime", "13.0": "nvidia-cuda-runtime@13.0.96",
                          "13.1": "nvidia-cuda-runtime@13.1.80", "13.2": "nvidia-cuda-runtime@13.2.86",
                          "13.3": "nvidia-cuda-runtime@13.3.29", "13.4": "nvidia-cuda-runtime@13.4.92",
                          "12.9": "nvidia-cuda-runtime-cu12"}, "13.5"),
    "CUDA Driver API": ("cuda", ("cuda.h",),
                        {"13.5": "nvidia-cuda-runtime", "13.0": "nvidia-cuda-runtime@13.0.96",
                         "12.9": "nvidia-cuda-runtime-cu12"}, "13.5"),
    "HIP Runtime API": ("hip", ("hip/hip_runtime_api.h", "hip/driver_types.h"),
                        {"7.1": "triton", "6.2": "triton@3.5.1"}, "7.1"),
}
#: Documents no pinned header carries: their citations are listed, not checked.
OFFLINE = ("CUDA Programming Guide", "NCCL documentation", "HIP Programming Guide")
#: Not documentation: an outcome seen on real runtimes that no document states.  Such a citation needs
#: an entry in ``pygraphrt.conformance.deviations.OBSERVATIONS`` (what was seen, on which versions).
OBSERVED = "Observed"

_DOCUMENTS = (*CHECKABLE, *OFFLINE, OBSERVED)
_SOURCE = re.compile(r"(?:^|;\s+)(?=(?:" + "|".join(re.escape(s) for s in _DOCUMENTS)
                     + r")\b)")
_VERSION = re.compile(r"^\s*(\d+\.\d+)\b")
_FUNC = re.compile(r"\b(?:cuda|cu|hip)[A-Z]\w*")


@dataclass
class Citation:
    document: str
    version: str | None
    where: str
    text: str

    @property
    def checkable(self) -> bool:
        return self.document in CHECKABLE

    def quotes(self) -> list[str]:
        """The quoted words: the "..." segments, or the whole text where it has none."""
        segments = re.findall(r'"([^"]+)"', self.text)
        return segments if segments else [self.text]


@dataclass
class Finding:
    case_id: str
    citation: Citation | None
    status: str          # found | not-found | offline | malformed | no-headers
    detail: str = ""
    missing: list[str] = field(default_factory=list)


def parse_cite(cite: str) -> list[Citation] | str:
    """The citations of a ``cite=`` string, or why it cannot be parsed."""
    parts = [p for p in _SOURCE.split(cite.strip()) if p.strip()]
    if not parts or not any(cite.strip().startswith(s) for s in _DOCUMENTS):
        return (f"does not start with a known document ({', '.join(_DOCUMENTS)}): "
                f"{cite[:80]!r}")
    out: list[Citation] = []
    for p in parts:
        p = p.strip().rstrip(";").strip()
        doc = next(s for s in _DOCUMENTS if p.startswith(s))
        rest = p[len(doc):]
        m = _VERSION.match(rest)
        version = m.group(1) if m else None
        rest = rest[m.end():] if m else rest
        rest = rest.lstrip(" ,")
        if ": " not in rest:
            return f"citation {p[:80]!r}: no '<where>: <text>'"
        where, text = rest.split(": ", 1)
        if len(where) > 120 or '"' in where:
            # a <where> this long is a sentence: the citation lacks its "<where>: " (the text would be read
            # as the location and never checked)
            return f"citation {p[:80]!r}: '<where>' of {len(where)} characters -- no '<where>: <text>'"
        out.append(Citation(doc, version, where.strip(), text.strip()))
    return out


# ----------------------------------------------------------------------------- the documentation
_COMMAND = re.compile(r"[\\@](?:param|tparam|retval|returns?|ref|link|endlink|brief|details|note|sa|see"
                      r"|deprecated|warning|p|e|em|b|c|a|n|li|code|endcode|verbatim|endverbatim|"
                      r"since|struct|enum|defgroup|ingroup|addtogroup|\{|\}|[a-zA-Z_]+)(?:\[[^\]]*\])?")
_TAG = re.compile(r"</?[a-zA-Z][a-zA-Z0-9]*(?:\s[^<>]*)?/?>")


def normalize(text: str) -> str:
    """Doxygen markup, ``::``, HTML tags, punctuation spacing and whitespace runs dropped; case folded."""
    t = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    t = t.replace("\u2013", "-").replace("\u2014", "-")
    t = _TAG.sub(" ", t)
    t = _COMMAND.sub(" ", t)
    t = t.replace("::", "").replace("#", "")
    t = re.sub(r"\s+", " ", t).strip().lower()
    t = re.sub(r"\s+([,.;:)])", r"\1", t)
    t = re.sub(r"\(\s+", "(", t)
    return t


_BLOCK = re.compile(r"/\*\*(?!<)(.*?)\*/", re.S)
_TRAILING = re.compile(r"/\*\*<(.*?)\*/|///<([^\n]*)|//!<([^\n]*)", re.S)
_LINE_DOC = re.compile(r"(?:^[ \t]*///(?!<)[^\n]*\n)+", re.M)


def _strip_comment(body: str) -> str:
    lines = [re.sub(r"^\s*(?:\*+|///|//!)\s?", "", ln) for ln in body.splitlines()]
    return "\n".join(lines)


@dataclass
class HeaderDocs:
    by_function: dict[str, list[str]]   # function name (and its name without _v2 / _ptsz) -> normalized docs
    whole: str                          # every doc comment of the set, normalized, joined


def _base_name(name: str) -> str:
    return re.sub(r"(?:_v\d+|_ptsz|_ptds|_spt)+$", "", name)


def _parse(text: str, docs: dict[str, list[str]], pieces: list[str]) -> None:
    text = re.sub(r"\n[ \t]*///<", " ", text)   # a ``///<`` line alone continues the one above (HIP)
    blocks = [(m.end(), m.group(1)) for m in _BLOCK.finditer(text)]
    blocks += [(m.end(), m.group(0).replace("///", "")) for m in _LINE_DOC.finditer(text)]
    for end, body in blocks:
        norm = normalize(_strip_comment(body))
        pieces.append(norm)
        # the declaration the comment documents: the first function name called within the next
        # statement (a prototype ``... cudaX(`` or a HIP ``hipError_t hipX(``)
        tail = text[end:end + 600]
        stop = min([i for i in (tail.find(";"), tail.find("/**"), tail.find("{")) if i >= 0] or [len(tail)])
        enumerator = re.match(r"\s*,?\s*((?:cuda|hip|CU|HIP)[A-Za-z0-9_]+)\s*=", tail)
        if enumerator:  # an enumerator's doc block: its name labels it (``cudaErrorCapturedEvent: The ...``)
            pieces[-1] = normalize(enumerator.group(1)) + ": " + norm
        m = re.search(r"\b((?:cuda|cu|hip)[A-Za-z0-9_]+)\s*\(", tail[:stop + 1])
        if m:
            name = m.group(1)
            for key in {name, _base_name(name)}:
                docs.setdefault(key, []).append(norm)
    for m in _TRAILING.finditer(text):
        doc = normalize(_strip_comment(next(g for g in m.groups() if g is not None)))
        before = re.search(r"((?:cuda|hip|CU|HIP)[A-Za-z0-9_]+)\s*=[^,;\n]*,?\s*$", text[max(0, m.start() - 160):m.start()])
        pieces.append((normalize(before.group(1)) + ": " if before else "") + doc)


class MissingHeaders(RuntimeError):
    pass


@lru_cache(maxsize=None)
def header_docs(document: str, version: str) -> HeaderDocs:
    """The documentation of ``document`` at ``version`` from the pinned headers."""
    from bindgen.headersets import cache_dir

    _vendor, files, keys, _default = CHECKABLE[document]
    if version not in keys:
        raise MissingHeaders(f"{document} {version}: no pinned header set (have {', '.join(sorted(keys))})")
    include = cache_dir() / keys[version] / "include"
    docs: dict[str, list[str]] = {}
    pieces: list[str] = []
    for rel in files:
        path = include / rel
        if not path.exists():
            raise MissingHeaders(f"{path} is missing: run `python -m bindgen fetch`")
        _parse(path.read_text(errors="replace"), docs, pieces)
    return HeaderDocs(docs, "\n".join(pieces))


def _fragments_in(quote: str, haystack: str) -> bool:
    pos = 0
    for frag in re.split(r"\.\.\.|\u2026", quote):
        f = normalize(frag).strip(" ,.;:")
        if not f:
            continue
        i = haystack.find(f, pos)
        if i < 0:
            return False
        pos = i + len(f)
    return True


def check_citation(case_id: str, apis: tuple[str, ...], cit: Citation) -> Finding:
    if cit.document == OBSERVED:
        from pygraphrt.conformance.deviations import OBSERVATIONS

        seen = [o for o in OBSERVATIONS if o.case == case_id]
        if not seen:
            return Finding(case_id, cit, "not-found", "an 'Observed' citation without an entry in "
                           "pygraphrt.conformance.deviations.OBSERVATIONS")
        return Finding(case_id, cit, "observation", "; ".join(f"{o.vendor} runtime {o.runtime}, driver "
                                                             f"{o.driver}" for o in seen))
    if not cit.checkable:
        return Finding(case_id, cit, "offline", cit.document)
    _vendor, _files, _keys, default = CHECKABLE[cit.document]
    # the version the citation names, and the current documentation: a quote the current
    # headers no longer carry is stale (the 2-D memset wording was one)
    last = Finding(case_id, cit, "found")
    for version in dict.fromkeys([cit.version or default, default]):
        try:
            docs = header_docs(cit.document, version)
        except MissingHeaders as exc:
            return Finding(case_id, cit, "no-headers", str(exc))
        last = _check_in(case_id, apis, cit, docs, version)
        if last.status != "found":
            return last
    return last


def _check_in(case_id: str, apis: tuple[str, ...], cit: Citation, docs: HeaderDocs, version: str) -> Finding:
    vendor = CHECKABLE[cit.document][0]
    prefix = "cuda" if vendor == "cuda" else "hip"
    if cit.document == "CUDA Driver API":
        prefix = "cu"
    idents = _FUNC.findall(cit.where)
    named = [n for n in idents if n in docs.by_function or _base_name(n) in docs.by_function]
    # a <where> that names a type, an enum or a section besides (or instead of) a function is
    # looked up in the whole set's documentation: those are documented where they are declared
    if named and len(named) == len(idents):
        texts = [d for n in named for d in docs.by_function.get(n, docs.by_function.get(_base_name(n), []))]
        texts += [d for a in apis for d in docs.by_function.get(prefix + a, [])]
        where = "the doc comments of " + ", ".join(dict.fromkeys(named + [prefix + a for a in apis]))
    else:
        texts = [docs.whole]
        where = f"the {cit.document} {version} headers"
    missing = [q for q in cit.quotes() if not any(_fragments_in(q, t) for t in texts)]
    if missing:
        return Finding(case_id, cit, "not-found", f"not in {where} ({cit.document} {version})", missing)
    return Finding(case_id, cit, "found", where)


_CODE = re.compile(r"\b(?:cuda|hip)Error[A-Za-z]+\b")


def _searched(apis: tuple[str, ...], cit: Citation) -> list[str]:
    """The documentation a citation's quote is looked up in (current version)."""
    _vendor, _files, _keys, default = CHECKABLE[cit.document]
    try:
        docs = header_docs(cit.document, default)
    except MissingHeaders:
        return []
    prefix = {"CUDA Runtime API": "cuda", "CUDA Driver API": "cu", "HIP Runtime API": "hip"}[cit.document]
    idents = _FUNC.findall(cit.where)
    named = [n for n in idents if n in docs.by_function or _base_name(n) in docs.by_function]
    if named and len(named) == len(idents):
        return [d for n in named + [prefix + a for a in apis]
                for d in docs.by_function.get(n, docs.by_function.get(_base_name(n), []))]
    return [docs.whole]


def undocumented_codes(c, citations: list[Citation]) -> list[str]:
    """Error names a case's citations claim (in their quotes or glosses) that none of the documentation
    its checkable citations were looked up in mentions, and no deviation entry of the case accounts for:
    an error code the documentation does not list is an observation, not a citation."""
    from pygraphrt.conformance.deviations import DEVIATIONS

    checkable = [cit for cit in citations if cit.checkable]
    if not checkable:
        return []
    texts = [t for cit in checkable for t in _searched(c.apis, cit)]
    known = {d.code for d in DEVIATIONS if d.case == c.id and d.code}
    claimed = dict.fromkeys(code for cit in checkable for code in _CODE.findall(cit.text))
    return [code for code in claimed
            if code not in known and not any(normalize(code) in t for t in texts)]


def check_case(c) -> list[Finding]:
    parsed = parse_cite(c.cite)
    if isinstance(parsed, str):
        return [Finding(c.id, None, "malformed", parsed)]
    findings = [check_citation(c.id, c.apis, cit) for cit in parsed]
    codes = undocumented_codes(c, parsed)
    if codes and not any(f.status == "observation" for f in findings):
        findings.append(Finding(c.id, None, "not-found",
                                "error code(s) the cited documentation does not list -- cite it as "
                                "'Observed' with an OBSERVATIONS entry, or quote where it is documented",
                                codes))
    return findings


def runtime_cases() -> list:
    from pygraphrt.conformance import load_cases

    return [c for c in load_cases().values() if c.kind == "runtime"]


def report(cases=None) -> dict:
    """Per runtime case: its findings; totals by status and offline cases by document."""
    cases = runtime_cases() if cases is None else cases
    by_case = {c.id: check_case(c) for c in cases}
    summary = {"runtime_cases": len(by_case),
               "citations": sum(1 for v in by_case.values() for f in v if f.citation is not None)}
    case_status: dict[str, str] = {}
    for cid, fs in by_case.items():
        states = {f.status for f in fs}
        if states & {"malformed", "not-found", "no-headers"}:
            case_status[cid] = "unfound"
        elif "observation" in states:
            case_status[cid] = "observation"
        elif "found" in states:
            case_status[cid] = "found"      # every checkable citation found (offline ones beside it)
        else:
            case_status[cid] = "offline"
    offline_docs: dict[str, int] = {}
    for cid, fs in by_case.items():
        if case_status[cid] == "offline":
            for doc in sorted({f.citation.document for f in fs if f.citation}):
                offline_docs[doc] = offline_docs.get(doc, 0) + 1
    summary.update({k: sum(1 for s in case_status.values() if s == k) for k in ("found", "unfound", "offline", "observation")})
    summary["offline_by_document"] = offline_docs
    return {"summary": summary, "cases": by_case, "case_status": case_status}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    r = report()
    s = r["summary"]
    for cid, fs in r["cases"].items():
        for f in fs:
            if f.status in ("not-found", "malformed", "no-headers"):
                print(f"UNFOUND {cid}: {f.status}: {f.detail}")
                for q in f.missing:
                    print(f"    quote: {q!r}")
            elif f.status == "offline" and "-v" in argv:
                print(f"offline {cid}: {f.citation.document if f.citation else ''}")
    print(f"{s['runtime_cases']} runtime cases ({s['citations']} citations): {s['found']} found in the "
          f"headers, {s['unfound']} not found, {s['observation']} observations without documentation, "
          f"{s['offline']} not checkable offline "
          + ", ".join(f"({d}: {n})" for d, n in s["offline_by_document"].items()))
    return 1 if s["unfound"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
