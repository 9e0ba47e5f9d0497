#!/usr/bin/env python3
"""scripts/long_functions_test.py: checks scripts/long_functions.py on a
small tree made here (scripts/test.sh runs it before the script checks the
project), so the scan's rules cannot silently stop finding functions."""

import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "long_functions.py")


def body(n):
    # Lines that would confuse a scan that did not skip literals (raw
    # strings and digit separators too) and comments: an opening brace in
    # each that does not open anything.
    kinds = ['  s += "{";', "  c = '{';", "  // {", "  /* { */", '  r = R"x(" {)x";', "  if (n > 1'000) { m = '{'; }"]
    return "\n".join(kinds[i % len(kinds)] for i in range(n))


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def run(root, *args):
    p = subprocess.run([sys.executable, SCRIPT, root, *args], capture_output=True, text=True)
    return p.returncode, p.stdout


def main():
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as root:
        write(root, "lib/a.cc", f"""#include <x>
#define MACRO(x) do {{ x; }} while (0)
namespace n {{
class C {{
 public:
  int Member() {{
{body(10)}
  }}
}};
int kTable[] = {{1, 2, 3}};
// long-function: a table that reads best whole
int Exempt() {{
{body(10)}
}}
int Long(int x) {{
  auto lambda = [&] {{
{body(10)}
  }};
  return x;
}}
}}  // namespace n
""")
        write(root, "tests/t.cc", f"TEST(Suite, Name) {{\n{body(20)}\n}}\n")
        write(root, "build-x/b.cc", f"int Built() {{\n{body(40)}\n}}\n")
        write(root, "fuzz/corpus/c.cc", f"int Corpus() {{\n{body(40)}\n}}\n")

        rc, out = run(root, "--max", "8")
        lines = out.splitlines()
        expect(rc == 1, f"exit 1 on a long non-exempt function (got {rc})")
        expect("    15  lib/a.cc:33  Long" in lines, "Long: 15 lines from its signature, lambda included")
        expect("    12  lib/a.cc:6  C::Member" in lines or "    12  lib/a.cc:6  Member" in lines,
               "a member defined in its class is measured")
        expect(any("Exempt  (exempt: a table that reads best whole)" in l for l in lines), "the reason is shown")
        expect("    22  tests/t.cc:1  TEST(Suite, Name)" in lines, "tests are reported")
        expect(lines.index("    22  tests/t.cc:1  TEST(Suite, Name)") > lines.index("    15  lib/a.cc:33  Long")
               if "    22  tests/t.cc:1  TEST(Suite, Name)" in lines and "    15  lib/a.cc:33  Long" in lines
               else False, "tests come in their own list, after the library's")
        expect("Built" not in out and "Corpus" not in out, "build*/ and fuzz/corpus are skipped")
        expect("kTable" not in out and "MACRO" not in out and " n\n" not in out, "no scope or initializer listed")
        expect(lines.index("    15  lib/a.cc:33  Long") < [i for i, l in enumerate(lines) if "Member" in l][0]
               if "    15  lib/a.cc:33  Long" in lines and any("Member" in l for l in lines) else False,
               "longest first")

        rc, out = run(root, "--max", "15")
        expect(rc == 0, f"exit 0 when only tests and exempt functions are long (got {rc}): {out}")

    if failures:
        for f in failures:
            print("long_functions_test: FAILED:", f, file=sys.stderr)
        return 1
    print("long_functions_test: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
