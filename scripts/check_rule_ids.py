#!/usr/bin/env python3
"""scripts/check_rule_ids.py [ROOT] [--list]: the spec's rule ids and who cites them.

Every normative rule of spec/*.md starts with a bold id such as **[C-3.2.2]**
(spec/README.md gives the scheme). This script collects

  defined  the ids the spec defines (one **[ID]** tag each);
  code     the ids cited in the library and tools (format/ common/ codecs/
           io/ capi/ tools/ include/: a comment // [C-6.9.3] at the check, or
           the id in an error message, "(spec C-9.8)");
  vectors  the ids the golden vectors cite (the rule: lines of
           spec/vectors/invalid/*.expected_error.txt, spec/vectors/codecs/invalid/
           and the generators make_vectors.cc, make_codec_vectors.cc).

It fails (exit 1) when an id is defined twice or when code or a vector cites
an id the spec does not define: a typo, or a rule that was removed (ids are
never reused, so such a citation is always wrong). It lists, without
failing, the ids no check cites: rules that hold by construction, writer-side
rules, rules a vector covers but no comment marks yet, informative rules.
The list is the to-do of issue 16 item 6, not a gate: turning it into one
would reward tagging comments over real checks.

--list prints every defined id with the files that cite it.
"""
import pathlib
import re
import signal
import sys

DEFINED_TAG = re.compile(r"\*\*\[([A-Z]-\d+[a-z]?(?:\.\d+)+)\]\*\*")
CODE_DIRS = ("format", "common", "codecs", "io", "capi", "tools", "include")
CODE_SUFFIXES = {".cc", ".h", ".c"}


def cited_pattern(letters):
    """An id in running text: LETTER-N.N..., not part of a longer word."""
    return re.compile(r"(?<![\w.-])([" + "".join(sorted(letters)) + r"]-\d+[a-z]?(?:\.\d+)+)(?![\w-])")


def defined_ids(root):
    defined, duplicates = {}, []
    for md in sorted((root / "spec").glob("*.md")):
        if md.name == "README.md":
            continue  # it explains the scheme with examples; it defines nothing
        for n, line in enumerate(md.read_text(encoding="utf-8").splitlines(), 1):
            for rid in DEFINED_TAG.findall(line):
                if rid in defined:
                    duplicates.append(f"{md.name}:{n}: {rid} (first at {defined[rid]})")
                else:
                    defined[rid] = f"{md.name}:{n}"
    return defined, duplicates


def cite(pattern, path, root, text, into):
    for n, line in enumerate(text.splitlines(), 1):
        for rid in pattern.findall(line):
            into.setdefault(rid, []).append(f"{path.relative_to(root)}:{n}")


def code_citations(root, pattern):
    cited = {}
    for d in CODE_DIRS:
        for path in sorted((root / d).rglob("*")):
            if path.suffix in CODE_SUFFIXES and path.is_file():
                cite(pattern, path, root, path.read_text(encoding="utf-8", errors="replace"), cited)
    return cited


def vector_citations(root, pattern):
    cited = {}
    vectors = root / "spec" / "vectors"
    for path in sorted(list((vectors / "invalid").glob("*.expected_error.txt")) +
                       list((vectors / "codecs" / "invalid").glob("*.expected_error.txt"))):
        rules = [l for l in path.read_text(encoding="utf-8").splitlines() if l.startswith("rule:")]
        cite(pattern, path, root, "\n".join(rules), cited)
    for generator in (vectors / "make_vectors.cc", vectors / "make_codec_vectors.cc"):
        if generator.exists():
            cite(pattern, generator, root, generator.read_text(encoding="utf-8"), cited)
    return cited


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the listing quietly
    args = [a for a in argv[1:] if not a.startswith("--")]
    root = pathlib.Path(args[0] if args else pathlib.Path(__file__).resolve().parent.parent).resolve()
    defined, duplicates = defined_ids(root)
    if not defined:
        print(f"check_rule_ids: no **[ID]** tags in {root}/spec/*.md", file=sys.stderr)
        return 1
    pattern = cited_pattern({rid[0] for rid in defined})
    code = code_citations(root, pattern)
    vectors = vector_citations(root, pattern)

    undefined = sorted(
        (rid, where) for cited in (code, vectors) for rid, places in cited.items() if rid not in defined
        for where in places)
    by_code = [r for r in defined if r in code]
    only_vectors = [r for r in defined if r in vectors and r not in code]
    by_nothing = [r for r in defined if r not in code and r not in vectors]

    if "--list" in argv:
        for rid, where in defined.items():
            places = code.get(rid, []) + vectors.get(rid, [])
            print(f"{rid:14} {where:28} {' '.join(places) if places else '-'}")
    print(f"rule ids: {len(defined)} defined, {len(by_code)} cited by code, "
          f"{len(only_vectors)} cited only by vectors, {len(by_nothing)} cited by nothing")
    if by_nothing:
        print("ids no check or vector cites (not an error):")
        for rid in by_nothing:
            print(f"  {rid:14} {defined[rid]}")
    for d in duplicates:
        print(f"error: id defined twice: {d}", file=sys.stderr)
    for rid, where in undefined:
        print(f"error: {where}: cites {rid}, which no spec/*.md defines", file=sys.stderr)
    return 1 if duplicates or undefined else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
