"""`pip install --no-build-isolation --no-index ./python` works offline and
the installed package finds a libcommsched placed next to it (the second
place the loader looks), without COMMSCHED_LIBRARY.

usage: test_pip.py PYTHON_SOURCE_DIR SCRATCH_DIR  (COMMSCHED_LIBRARY names
the built library, which is copied next to the installed package).
Exit 77 (skipped) when this interpreter has no pip."""

import os
import shutil
import subprocess
import sys


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.stderr.write("$ %s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
        sys.exit(1)
    return p.stdout


def main():
    src, scratch = sys.argv[1], sys.argv[2]
    if subprocess.run([sys.executable, "-m", "pip", "--version"],
                      capture_output=True).returncode != 0:
        print("%s has no pip module: skipped (tools/install-deps.sh installs "
              "python3-pip for the system python3)" % sys.executable)
        return 77
    shutil.rmtree(scratch, ignore_errors=True)
    target = os.path.join(scratch, "site")
    os.makedirs(target)
    before = sorted(os.listdir(src))
    env = dict(os.environ, PIP_ROOT_USER_ACTION="ignore",
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation",
         "--no-index", "--target", target, src], env=env, cwd=scratch)
    if sorted(os.listdir(src)) != before:
        sys.stderr.write("pip left files in %s: %s\n" % (
            src, sorted(set(os.listdir(src)) - set(before))))
        return 1
    lib = os.path.realpath(os.environ["COMMSCHED_LIBRARY"])
    shutil.copy(lib, os.path.join(target, "commsched", "libcommsched.so.0"))
    env = {k: v for k, v in os.environ.items()
           if k not in ("COMMSCHED_LIBRARY", "PYTHONPATH")}
    env["PYTHONPATH"] = target
    out = run([sys.executable, "-c",
               "import commsched, commsched._lib as L\n"
               "g = commsched.Graph('p')\n"
               "g.add_input('a', 8)\n"
               "g.compute('c', inputs=['a'], outputs=[('b', 8)], "
               "runtime_ns=1)\n"
               "print(commsched.__file__)\n"
               "print(L.load()._name)\n"
               "print(commsched.optimize(g).order)\n"], env=env, cwd=scratch)
    pkg, libpath, order = out.splitlines()
    ok = (pkg.startswith(target) and libpath.startswith(target) and
          order == "['c']")
    if not ok:
        sys.stderr.write("unexpected:\n%s" % out)
        return 1
    print("pip install ./python: ok (package and library from %s)" % target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
