#!/usr/bin/env python3
"""Progress lines and interrupted writes (issue 24; tools/cli/progress.c,
tools/cli/tmpfiles.c).

  progress_cli.py CLI SOURCE_DIR SCRATCH_DIR [SHARED_DATA_DIR]

A terminal is a pseudo-terminal the test owns. Nothing here depends on how
fast the machine is: the first frame of a stage is drawn when the stage
begins, and the interrupt test freezes the command's terminal output
(tcflow TCOOFF, as Ctrl-S does) as soon as it sees the write start, so the
command is held inside the write, its temporary file present, until the
signal comes.
"""
import fcntl
import os
import pty
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import threading
import time

CLI, SRC, SCRATCH = sys.argv[1], sys.argv[2], sys.argv[3]
DATA = sys.argv[4] if len(sys.argv) > 4 else os.path.join(SRC, "..", "shared",
                                                         "data")
FAILED = []


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what, file=sys.stderr)


def read_until(master, proc, needle, limit_s=600):
    """Reads the terminal until `needle` shows or the process ends."""
    buf = b""
    end = time.monotonic() + limit_s
    while needle not in buf and time.monotonic() < end:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer of the terminal is gone
                break
            if not chunk:
                break
            buf += chunk
        elif proc.poll() is not None:
            break
    return buf


def new_pty():
    master, slave = pty.openpty()
    # Wide enough for every frame whole (a line is cut to the width).
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    return master, slave


def on_terminal(args, stdout=subprocess.DEVNULL):
    """Runs the CLI with standard error on a terminal; returns (status,
    everything written to the terminal, stdout bytes or None)."""
    master, slave = new_pty()
    proc = subprocess.Popen([CLI] + args, stdin=subprocess.DEVNULL,
                            stdout=stdout, stderr=slave)
    os.close(slave)
    got = []
    reader = None
    if stdout == subprocess.PIPE:  # read beside the terminal: no deadlock
        reader = threading.Thread(target=lambda: got.append(proc.stdout.read()))
        reader.start()
    text = read_until(master, proc, b"\0never\0")
    os.close(master)
    if reader:
        reader.join()
    return proc.wait(), text, got[0] if got else None


def leftovers(d, stem):
    return sorted(f for f in os.listdir(d) if f.startswith(stem))


shutil.rmtree(SCRATCH, ignore_errors=True)
os.makedirs(SCRATCH)
tty_json = os.path.join(SCRATCH, "tty.json")
pipe_json = os.path.join(SCRATCH, "pipe.json")

# 1. generate on a terminal: every stage's line, then a blank line.
rc, text, _ = on_terminal(["generate", "chain", "--nodes", "300000",
                           "-o", tty_json])
check(rc == 0, f"generate on a terminal: exit {rc}")
check(b"\rcommsched generate: building [" in text and b" nodes" in text,
      "generate: no building line")
check(b"\rcommsched generate: writing tty.json" in text,
      "generate: no writing line")
check(b"\n" not in text, "generate: progress printed a new line")
last = text.rsplit(b"\r", 2)
check(len(last) == 3 and last[2] == b"" and last[1].strip(b" ") == b""
      and len(last[1]) > 0, f"generate: line not blanked at the end: "
      f"{text[-120:]!r}")

# 2. The same with standard error piped: nothing at all, the same bytes.
p = subprocess.run([CLI, "generate", "chain", "--nodes", "300000",
                    "-o", pipe_json], stdin=subprocess.DEVNULL,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
check(p.returncode == 0 and p.stdout == b"" and p.stderr == b"",
      f"generate piped: exit {p.returncode}, stderr {p.stderr[:200]!r}")
with open(tty_json, "rb") as a, open(pipe_json, "rb") as b:
    check(a.read() == b.read(), "generate: output differs with progress on")
os.unlink(tty_json)
os.unlink(pipe_json)

# 3. tune reports through the library's callback; its table on standard
# output stays clean.
graph = os.path.join(SRC, "graphs", "examples", "fsdp_2layer.json")
rc, text, out = on_terminal(["tune", graph], stdout=subprocess.PIPE)
check(rc == 0, f"tune on a terminal: exit {rc}")
check(b"\rcommsched tune: searching" in text, "tune: no progress line")
check(b"\r" not in out and b"searching" not in out,
      "tune: progress reached standard output")
p = subprocess.run([CLI, "tune", graph], stdin=subprocess.DEVNULL,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
# (The tables differ only in the candidates' wall times.)
check(p.returncode == 0 and p.stderr == b"" and
      p.stdout.count(b"\n") == out.count(b"\n"),
      f"tune piped: exit {p.returncode}, stderr {p.stderr[:200]!r}")

# 4. Importers draw the bytes read against the file's size: a gzip'd
# Kineto trace (the compressed offset) and a binary Chakra trace.
for fmt, trace in (("kineto", "kineto/sampled_rank-1.json.gz"),
                   ("chakra", "chakra-et/MLP_ModelParallel.0.et")):
    path = os.path.join(DATA, trace)
    if not os.path.exists(path):
        print(f"note: {path} absent, import {fmt} not checked")
        continue
    imported = os.path.join(SCRATCH, "imp.json")
    rc, text, _ = on_terminal(["import", fmt, path, "-o", imported])
    name = os.path.basename(trace).encode()
    check(rc == 0, f"import {fmt} on a terminal: exit {rc}")
    check(b"\rcommsched import: reading " + name + b" [" in text
          and b" MiB" in text, f"import {fmt}: no reading line")
    check(b"\rcommsched import: writing imp.json" in text,
          f"import {fmt}: no writing line")
    p = subprocess.run([CLI, "import", fmt, path, "-o", imported],
                       stdin=subprocess.DEVNULL, capture_output=True)
    check(p.returncode == 0 and b"\r" not in p.stderr
          and b"reading" not in p.stderr,
          f"import {fmt} piped: exit {p.returncode}, {p.stderr[:200]!r}")
    os.unlink(imported)

# 5. Ctrl-C (and SIGTERM) while the output is being written: the command
# ends killed by the signal (a shell reports 128 + 2 = 130) and leaves
# neither the output nor its temporary file.
# Ctrl-C's run goes through a shell, which must see status 130.
status = os.path.join(SCRATCH, "status")
for sig in (signal.SIGINT, signal.SIGTERM):
    out_json = os.path.join(SCRATCH, "int.json")
    cmd = [CLI, "generate", "chain", "--nodes", "1000000", "-o", out_json]
    if sig == signal.SIGINT:
        cmd = ["sh", "-c", '"$@"; echo $? > ' + status, "sh"] + cmd
    master, slave = new_pty()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=slave)
    text = read_until(master, proc, b"writing int.json")
    termios.tcflow(slave, termios.TCOOFF)  # its next frame blocks
    during = leftovers(SCRATCH, "int.json")
    check(b"writing int.json" in text and proc.poll() is None,
          f"{sig.name}: never saw the write start ({text[-200:]!r})")
    check(len(during) == 1 and during[0].startswith("int.json.tmp"),
          f"{sig.name}: no temporary file while writing: {during}")
    target = proc.pid
    if sig == signal.SIGINT:  # the shell's child, as a terminal's ^C hits
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
            target = int(f.read().split()[0])
    os.kill(target, sig)
    try:
        rc = proc.wait(timeout=120)
    finally:
        termios.tcflow(slave, termios.TCOON)
        os.close(slave)
        os.close(master)
    if sig == signal.SIGINT:
        with open(status) as f:
            got = f.read().strip()
        check(rc == 0 and got == "130", f"SIGINT: the shell saw {got!r}")
    else:
        check(rc == -sig, f"{sig.name}: exit {rc}, expected killed by it")
    check(leftovers(SCRATCH, "int.json") == [],
          f"{sig.name}: left {leftovers(SCRATCH, 'int.json')}")

# 6. export writes one file per rank, all or none, Ctrl-C included: the
# signal waits while a file is written and, caught between files, removes
# the ones written. Frozen output holds the command inside the export.
graph8 = os.path.join(SCRATCH, "g8.json")
subprocess.run([CLI, "generate", "chain", "--nodes", "20000", "--world", "8",
                "-o", graph8], check=True)
prefix = os.path.join(SCRATCH, "exp")
rc, text, _ = on_terminal(["export", "chakra", graph8, "-o", prefix])
check(rc == 0 and len(leftovers(SCRATCH, "exp.")) == 8,
      f"export on a terminal: exit {rc}, {leftovers(SCRATCH, 'exp.')}")
check(b"/8 files" in text and b"writing " in text, "export: no files line")
for f in leftovers(SCRATCH, "exp."):
    os.unlink(os.path.join(SCRATCH, f))
master, slave = new_pty()
proc = subprocess.Popen([CLI, "export", "chakra", graph8, "-o", prefix],
                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=slave)
text = read_until(master, proc, b"0/8 files")
termios.tcflow(slave, termios.TCOOFF)  # its next frame, or its erasure
check(b"0/8 files" in text and proc.poll() is None,
      f"export: never saw it start ({text[-200:]!r})")
proc.send_signal(signal.SIGINT)
time.sleep(0.2)
termios.tcflow(slave, termios.TCOON)
stop_reading = time.monotonic() + 120
while proc.poll() is None and time.monotonic() < stop_reading:
    text += read_until(master, proc, b"\0never\0", 0.5)
os.close(slave)
os.close(master)
rc = proc.wait(timeout=10)
check(rc == -signal.SIGINT, f"export interrupted: exit {rc}")
check(leftovers(SCRATCH, "exp.") == [],
      f"export interrupted: left {leftovers(SCRATCH, 'exp.')}")
check(b"interrupted: removing the" in text,
      f"export interrupted: no message ({text[-300:]!r})")

# 7. A write that fails (past `ulimit -f`) leaves nothing either.
p = subprocess.run(["sh", "-c", 'ulimit -f 1000 && exec "$@"', "sh", CLI,
                    "generate", "chain", "--nodes", "300000", "-o",
                    os.path.join(SCRATCH, "big.json")],
                   stdin=subprocess.DEVNULL, capture_output=True)
check(p.returncode in (1, 2) and b"big.json" in p.stderr,
      f"ulimit -f: exit {p.returncode}, stderr {p.stderr[:200]!r}")
check(leftovers(SCRATCH, "big.json") == [],
      f"ulimit -f: left {leftovers(SCRATCH, 'big.json')}")

if FAILED:
    sys.exit(1)
print("progress and interrupts: ok")
