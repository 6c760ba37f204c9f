"""What every benchmark script shares when it writes docs/PERFORMANCE.md:
the machine's CPU name, and replacing the script's own generated block
(between its BEGIN and END markers) so each script owns one section and
rerunning it replaces that section, not the others."""

import os
import platform


def cpu_name():
    """The CPU's model name from /proc/cpuinfo (the architecture where
    that is unreadable)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def replace_block(path, begin, end, lines):
    """Writes lines (which start with begin and end with end) into path in
    place of the text between the markers, or appends them when the file
    has no such block yet (a missing file is created)."""
    text = ""
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
    block = "\n".join(lines) + "\n"
    if begin in text and end in text:
        pre = text[:text.index(begin)]
        post = text[text.index(end) + len(end):].lstrip("\n")
        text = pre + block + ("\n" + post if post else "")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    with open(path, "w") as f:
        f.write(text)
