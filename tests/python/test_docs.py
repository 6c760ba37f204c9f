"""docs/API.md's Python example runs and prints exactly the output the page
shows. The example is the fenced block after `<!-- example: api_example.py
-->`, its output the block after `<!-- output: api_example.py -->`.

usage: test_docs.py docs/API.md   (COMMSCHED_LIBRARY, PYTHONPATH set)"""

import os
import re
import subprocess
import sys
import tempfile


def block(text, marker):
    m = re.search(r"<!-- %s -->\n```[a-z]*\n(.*?)```" % re.escape(marker),
                  text, re.S)
    if not m:
        sys.exit("%s: no fenced block after <!-- %s -->" % (sys.argv[1],
                                                            marker))
    return m.group(1)


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    code = block(text, "example: api_example.py")
    want = block(text, "output: api_example.py")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "api_example.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(code)
        p = subprocess.run([sys.executable, path], capture_output=True,
                           text=True, cwd=d)
    if p.returncode != 0 or p.stdout != want:
        sys.stderr.write("API.md's Python example: exit %d\n--- stderr\n%s"
                         "--- got\n%s--- want\n%s" % (p.returncode, p.stderr,
                                                      p.stdout, want))
        return 1
    print("docs/API.md Python example: output as documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
