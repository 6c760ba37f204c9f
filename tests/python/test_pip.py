"""`pip wheel ./python` builds the C libraries with the project's CMake and
bundles them: the wheel, installed into a fresh virtual environment with
nothing else (no COMMSCHED_LIBRARY, no PYTHONPATH), runs docs/API.md's
examples -- the Python one, and the import one on the shared real traces
when they are there -- with the library it carries.

usage: test_pip.py PYTHON_SOURCE_DIR SCRATCH_DIR DOCS_API_MD TEST_DOCS_PY
COMMSCHED_CMAKE_BUILD_DIR (set by ctest: the build tree) is the CMake tree
the backend builds the libraries in, so the test rebuilds nothing; without
it the backend makes a fresh Release build. Exit 77 (skipped) when this
interpreter has no pip or cannot make a virtual environment."""

import os
import shutil
import subprocess
import sys
import zipfile


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.stderr.write("$ %s\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
        sys.exit(1)
    return p.stdout


def main():
    src, scratch, api_md, test_docs = sys.argv[1:5]
    if subprocess.run([sys.executable, "-m", "pip", "--version"],
                      capture_output=True).returncode != 0:
        print("%s has no pip module: skipped (tools/install-deps.sh installs "
              "python3-pip for the system python3)" % sys.executable)
        return 77
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    before = sorted(os.listdir(src))
    env = dict(os.environ, PIP_ROOT_USER_ACTION="ignore",
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    wheels = os.path.join(scratch, "wheels")
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation",
         "--no-index", "--no-deps", "-w", wheels, src], env=env, cwd=scratch)
    if sorted(os.listdir(src)) != before:
        sys.stderr.write("pip left files in %s: %s\n" % (
            src, sorted(set(os.listdir(src)) - set(before))))
        return 1
    (wheel,) = os.listdir(wheels)
    names = zipfile.ZipFile(os.path.join(wheels, wheel)).namelist()
    for lib in ("commsched/libcommsched.so.0",
                "commsched/libcommsched_import.so.0"):
        if lib not in names:
            sys.stderr.write("%s lacks %s: %s\n" % (wheel, lib, names))
            return 1
    if wheel.endswith("-none-any.whl"):
        sys.stderr.write("%s carries C libraries but is tagged for every "
                         "platform\n" % wheel)
        return 1

    venv = os.path.join(scratch, "venv")
    if subprocess.run([sys.executable, "-m", "venv", venv],
                      capture_output=True).returncode != 0:
        print("%s cannot make a virtual environment: skipped "
              "(python3-venv)" % sys.executable)
        return 77
    py = os.path.join(venv, "bin", "python")
    run([py, "-m", "pip", "install", "-q", "--no-index",
         os.path.join(wheels, wheel)], env=env, cwd=scratch)
    clean = {k: v for k, v in env.items()
             if k not in ("COMMSCHED_LIBRARY", "COMMSCHED_IMPORT_LIBRARY",
                          "PYTHONPATH", "COMMSCHED_CMAKE_BUILD_DIR")}
    out = run([py, "-c",
               "import commsched, commsched._lib as L\n"
               "print(L.load()._name)\n"
               "print(L.load_import()._name)\n"], env=clean, cwd=scratch)
    site = os.path.realpath(venv)
    for path in out.split():
        if not os.path.realpath(path).startswith(site):
            sys.stderr.write("loaded %s, not the wheel's library\n" % path)
            return 1
    examples = ["api_example.py"]
    data = os.environ.get("COMMSCHED_SHARED_DATA", "")
    if os.path.exists(os.path.join(data, "kineto/sampled_rank-1.json.gz")):
        examples.append("import_example.py")
        clean["COMMSCHED_SHARED_DATA"] = data
    for name in examples:
        run([py, test_docs, api_md, name], env=clean, cwd=scratch)
    print("pip wheel ./python: %s, installed in a fresh venv, runs %s with "
          "its own library" % (wheel, " and ".join(examples)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
