#!/usr/bin/env python3
"""scripts/long_functions.py ROOT [--max N]: the C/C++ functions over N lines.

Issue 16 item 5 ("functions of one job"): no function over about 150 lines
without a reason in a comment. This lists every function body in ROOT's
.cc/.h (and .c/.cpp/.hpp) files longer than N lines (default 150), longest
first, as "lines  file:line  name"; library, tool and harness code first,
then tests/ separately.

A function is exempt when the comment block right above its signature, or
its first body line, carries "long-function: <reason>"; exempt ones are
listed with their reason but do not fail. Exit status 1 when a non-exempt
function outside tests/ is over N lines (so CI stops a new one), else 0.

The scan matches braces after blanking comments, string, raw-string and
character literals and preprocessor lines (a macro's braces are not code
structure). A brace opened directly inside a namespace, class, struct,
union, extern "C" block or the file is a function body when what precedes
it looks like a signature (a top-level "(...)", no "=" outside parentheses);
namespace/class/struct/enum/union bodies are scopes, not functions, and
their own functions are measured. Everything inside a function body
(lambdas, local classes) counts toward that function, as the issue asks.
A function's lines run from the first line of its signature to its closing
brace.
"""

import argparse
import os
import re
import sys

SOURCE_SUFFIXES = (".cc", ".h", ".c", ".cpp", ".hpp", ".cu", ".cuh")
SCOPE_KEYWORDS = re.compile(r"^(?:template\s*<.*>\s*)?(?:namespace|class|struct|union|enum)\b|^extern$",
                            re.S)
ACCESS_LABEL = re.compile(r"\b(?:public|private|protected)\s*:(?!:)")
EXEMPT_MARK = "long-function:"


def blank_non_code(text):
    """Returns text with comments, literals and preprocessor lines replaced
    by spaces, keeping every newline so line numbers stay valid."""
    out = []
    i, n = 0, len(text)
    at_line_start = True

    def blank(chunk):
        out.append("".join(c if c == "\n" else " " for c in chunk))

    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            j = i
            while j < n and text[j] != "\n":
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    j += 2
                    continue
                if text.startswith("/*", j):  # a block comment may span lines
                    end = text.find("*/", j + 2)
                    j = n if end < 0 else end + 2
                    continue
                j += 1
            blank(text[i:j])
            i = j
            continue
        if c == "\n":
            out.append(c)
            at_line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            out.append(c)
            i += 1
            continue
        at_line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(text[i:j])
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(text[i:j])
            i = j
            continue
        raw = re.match(r'(?:u8|u|U|L)?R"([^()\\ \t\n]{0,16})\(', text[i:i + 40])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + raw.group(1) + '"'
            j = text.find(close, i + raw.end())
            j = n if j < 0 else j + len(close)
            blank(text[i:j])
            i = j
            continue
        if c == '"' or (c == "'" and not is_digit_separator(text, i)):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            blank(text[i:j])
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def is_digit_separator(text, i):
    """1'000'000: a quote between a number's digits is not a char literal."""
    if i == 0 or i + 1 >= len(text) or not text[i + 1].isalnum():
        return False
    j = i - 1
    while j >= 0 and (text[j].isalnum() or text[j] in "'_."):
        j -= 1
    return text[j + 1].isdigit()


def top_level_shape(header):
    """(has a top-level '(...)', has a top-level '=', text before the first
    top-level '(') for a would-be signature."""
    depth, has_parens, has_assign, first_paren = 0, False, False, -1
    for k, c in enumerate(header):
        if c in "([":
            if depth == 0 and c == "(":
                has_parens = True
                if first_paren < 0:
                    first_paren = k
            depth += 1
        elif c in ")]":
            depth = max(depth - 1, 0)
        elif c == "=" and depth == 0:
            prev = header[k - 1] if k else ""
            nxt = header[k + 1] if k + 1 < len(header) else ""
            if prev not in "=!<>+-*/%&|^" and nxt != "=" and "operator" not in header[max(0, k - 12):k]:
                has_assign = True
    before = header[:first_paren] if first_paren >= 0 else header
    return has_parens, has_assign, before


ATTRIBUTE = re.compile(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)|\[\[.*?\]\]", re.S)


def function_name(header):
    header = ATTRIBUTE.sub(" ", header)  # __attribute__((target(...))) is not the name
    _, _, before = top_level_shape(header)
    before = before.strip()
    macro = re.match(r"^(TEST(?:_F|_P)?|TYPED_TEST(?:_P)?)$", before.split()[-1] if before else "")
    if macro:  # a GoogleTest case is named by its arguments
        args = header[len(header[:header.find("(")]):]
        args = args[:args.find(")") + 1]
        return macro.group(1) + re.sub(r"\s+", " ", args)
    op = re.search(r"((?:[\w~]+::)*operator\s*[^\s(]*(?:\(\))?)\s*$", before)
    if op:
        return re.sub(r"\s+", "", op.group(1))
    ident = re.search(r"([\w~]+(?:\s*<[^<>]*>)?(?:\s*::\s*[\w~]+(?:\s*<[^<>]*>)?)*)\s*$", before)
    return re.sub(r"\s+", "", ident.group(1)) if ident else before or "?"


def is_function_header(header):
    h = header.strip()
    if not h or SCOPE_KEYWORDS.match(h):
        return False
    has_parens, has_assign, _ = top_level_shape(h)
    return has_parens and not has_assign


def scan_functions(text):
    """Yields (first line, last line, name, body-open line) per function."""
    code = blank_non_code(text)
    stack = []  # per open brace: "scope", "function" or "nested"
    header_start = 0
    line = 1
    open_info = []  # parallel to stack: (start line, name, open line) for functions
    paren_depth = 0
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
            continue
        in_scope = not stack or stack[-1] == "scope"
        if not in_scope:
            if c == "{":
                stack.append("nested")
                open_info.append(None)
            elif c == "}":
                kind = stack.pop()
                info = open_info.pop()
                if kind == "function":
                    yield info[0], line, info[1], info[2]
                    header_start = i + 1
            continue
        if c == "(":
            paren_depth += 1
        elif c == ")":
            paren_depth = max(paren_depth - 1, 0)
        elif c == ";" and paren_depth == 0:
            header_start = i + 1
        elif c == ":" and paren_depth == 0:
            label = ACCESS_LABEL.search(code, header_start, i + 1)
            if label and label.end() == i + 1:
                header_start = i + 1
        elif c == "{":
            header = code[header_start:i]
            if paren_depth > 0:
                kind = "nested"  # a braced argument at file scope
            elif is_function_header(header):
                kind = "function"
            elif SCOPE_KEYWORDS.match(header.strip()) or header.strip() == "":
                kind = "scope"
            else:
                kind = "nested"  # an initializer: int x{1}; kTable[] = {...}
            stripped = len(header) - len(header.lstrip())
            start_line = code.count("\n", 0, header_start + stripped) + 1
            stack.append(kind)
            open_info.append((start_line, function_name(header), line) if kind == "function" else None)
            if kind == "scope":
                header_start = i + 1
        elif c == "}":
            if stack:
                stack.pop()
                open_info.pop()
            header_start = i + 1
    return


def exemption(lines, first_line, open_line):
    """The reason after "long-function:" in the comment block right above
    the signature or on the first body line, or None."""
    candidates = []
    k = first_line - 2
    while k >= 0 and lines[k].strip().startswith(("//", "/*", "*")):
        candidates.append(lines[k])
        k -= 1
    for body_line in (open_line - 1, open_line):
        if 0 <= body_line < len(lines):
            candidates.append(lines[body_line])
    for text in candidates:
        at = text.find(EXEMPT_MARK)
        if at >= 0 and ("//" in text[:at] or "/*" in text[:at] or text.strip().startswith("*")):
            reason = text[at + len(EXEMPT_MARK):].strip().rstrip("*/").strip()
            if reason:
                return reason
    return None


def source_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = sorted(
            d for d in dirnames
            if not d.startswith(".") and not (rel_dir == "." and d.startswith("build"))
            and not (rel_dir == "." and d in ("out", "node_modules"))
            and os.path.join(rel_dir, d) != os.path.join("fuzz", "corpus"))
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.normpath(os.path.join(rel_dir, name))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root")
    parser.add_argument("--max", type=int, default=150, help="most lines a function may have")
    args = parser.parse_args()

    found = []  # (lines, file, line, name, reason, is_test)
    for rel in source_files(args.root):
        with open(os.path.join(args.root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        lines = text.split("\n")
        for first, last, name, open_line in scan_functions(text):
            length = last - first + 1
            if length > args.max:
                is_test = rel.split(os.sep)[0] == "tests"
                found.append((length, rel, first, name, exemption(lines, first, open_line), is_test))
    found.sort(key=lambda f: (-f[0], f[1], f[2]))

    failing = 0
    for title, want_test in (("library, tools, harnesses", False), ("tests/ (reported, not failing)", True)):
        group = [f for f in found if f[5] == want_test]
        print(f"== functions over {args.max} lines: {title}: {len(group)}")
        for length, rel, first, name, reason, is_test in group:
            note = f"  (exempt: {reason})" if reason else ""
            print(f"{length:6d}  {rel}:{first}  {name}{note}")
            if not reason and not is_test:
                failing += 1
    if failing:
        sys.stdout.flush()
        print(f"{failing} function(s) over {args.max} lines without a 'long-function:' reason: "
              "split them or say why in a comment", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
