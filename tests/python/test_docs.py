"""docs/API.md's Python examples run and print exactly the output the page
shows. An example NAME is the fenced block after `<!-- example: NAME -->`,
its output the block after `<!-- output: NAME -->`.

usage: test_docs.py docs/API.md [NAME]   (default api_example.py;
       COMMSCHED_LIBRARY set, and PYTHONPATH unless the binding is
       installed)"""

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
    name = sys.argv[2] if len(sys.argv) > 2 else "api_example.py"
    code = block(text, "example: " + name)
    want = block(text, "output: " + name)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(code)
        p = subprocess.run([sys.executable, path], capture_output=True,
                           text=True, cwd=d)
    if p.returncode != 0 or p.stdout != want:
        sys.stderr.write("API.md's %s: exit %d\n--- stderr\n%s"
                         "--- got\n%s--- want\n%s" % (name, p.returncode,
                                                      p.stderr, p.stdout,
                                                      want))
        return 1
    print("docs/API.md %s: output as documented" % name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
