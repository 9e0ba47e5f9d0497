#!/usr/bin/env python3
"""scripts/check_rule_ids_test.py: checks scripts/check_rule_ids.py on small
trees made here (scripts/test.sh runs it before the script checks the
project), so the check cannot silently stop finding ids or typos."""

import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_rule_ids.py")
SPEC = ("# Doc\n\n## 3. Header\n\n1. **[C-3.2.1]** The file is at least 64 bytes.\n"
        "2. **[C-3.2.2]** The magic matches.\n\n**[C-9.2]** Manifest size | 256 MiB |\n")


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def run(root):
    p = subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def tree(root, code, vector_rule, spec=SPEC):
    write(root, "spec/container.md", spec)
    write(root, "spec/README.md", "Examples: **[C-1.1]** is not a definition.\n")
    write(root, "format/layout.cc", code)
    write(root, "spec/vectors/invalid/bad_magic.expected_error.txt",
          f"stage: open\nclass: INVALID_ARGUMENT\nmessage: bad magic\nrule: {vector_rule}\n")


def main():
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as root:
        tree(root, "  // [C-3.2.1]\n  return Error(\"limit (spec C-9.2)\");\n", "C-3.2.2")
        rc, out = run(root)
        expect(rc == 0, f"exit 0 when every cited id is defined (got {rc}): {out}")
        expect("3 defined, 2 cited by code, 1 cited only by vectors, 0 cited by nothing" in out, f"counts: {out}")

        tree(root, "  // [C-3.2.1]\n", "C-3.2.2")
        rc, out = run(root)
        expect(rc == 0, f"an id no one cites does not fail (got {rc}): {out}")
        expect("C-9.2" in out and "container.md:" in out, f"the uncited id is listed with its place: {out}")

        tree(root, "  // [C-3.2.7]\n", "C-3.2.2")
        rc, out = run(root)
        expect(rc == 1, f"exit 1 when code cites an undefined id (got {rc})")
        expect("format/layout.cc:1: cites C-3.2.7" in out, f"the typo is named with its place: {out}")

        tree(root, "  // [C-3.2.1]\n", "C-3.2.2, E-2.9")
        rc, out = run(root)
        expect(rc == 0, f"a letter no document uses is not an id (got {rc}): {out}")

        tree(root, "  // [C-3.2.1]\n", "C-3.2.9")
        rc, out = run(root)
        expect(rc == 1 and "cites C-3.2.9" in out, f"exit 1 when a vector cites an undefined id (got {rc}): {out}")

        tree(root, "  // [C-3.2.1]\n", "C-3.2.2", SPEC + "\n- **[C-3.2.2]** Again.\n")
        rc, out = run(root)
        expect(rc == 1 and "defined twice" in out, f"exit 1 when an id is defined twice (got {rc}): {out}")

    if failures:
        for f in failures:
            print("check_rule_ids_test: FAILED:", f, file=sys.stderr)
        return 1
    print("check_rule_ids_test: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
