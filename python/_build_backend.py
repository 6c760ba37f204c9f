"""A minimal PEP 517 / PEP 660 build backend, standard library only.

The binding is pure Python (ctypes); what it loads is the C library. In a
commsched checkout (this directory's parent holds the project's
CMakeLists.txt) a wheel therefore carries libcommsched.so.0 and
libcommsched_import.so.0, built with the project's own CMake, next to the
package, where commsched/_lib.py looks second (COMMSCHED_LIBRARY still
wins): `pip install ./python` gives a binding that works with no
environment variable. The wheel is then tagged for this platform.

Where the C libraries come from, in order:
- COMMSCHED_CMAKE_BUILD_DIR (or config setting "cmake-build-dir"): that
  CMake build tree, configured there first when it has no CMakeCache.txt
  (an existing tree is only built, its configuration left alone: pointing
  at build/release reuses what `make` built);
- otherwise a fresh Release build in a temporary directory (tests, MPI and
  CUDA off: the binding needs neither), removed afterwards.
Outside a checkout (a wheel built from the sdist), and with
COMMSCHED_PURE_WHEEL=1 (the test environments, whose tests point
COMMSCHED_LIBRARY at the build under test), the wheel is the pure binding,
which loads an installed libcommsched.

A backend of our own means `pip install ./python` needs nothing beyond pip
and what the C build needs (cmake, a C compiler, the library's
dependencies): no setuptools, no wheel package, no network (pip's isolated
build env has nothing to install because `requires` is empty), on any
Python >= 3.8.

Name, version, summary and Python requirement come from pyproject.toml's
[project] table (read with a few regular expressions: tomllib is 3.11+).
"""

import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

_HERE = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = "commsched"


def _project():
    with open(os.path.join(_HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    table = text.split("[project]", 1)[1].split("\n[", 1)[0]

    def field(key):
        m = re.search(r'^%s\s*=\s*"([^"]*)"' % key, table, re.M)
        return m.group(1) if m else None
    return {"name": field("name"), "version": field("version"),
            "summary": field("description") or "",
            "requires_python": field("requires-python")}


def _metadata(p):
    lines = ["Metadata-Version: 2.1", "Name: %s" % p["name"],
             "Version: %s" % p["version"], "Summary: %s" % p["summary"]]
    if p["requires_python"]:
        lines.append("Requires-Python: %s" % p["requires_python"])
    readme = os.path.join(_HERE, "README.md")
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = "\n" + f.read()
    return ("\n".join(lines) + "\n" + body).encode()


def _platform_tag():
    return re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())


def _wheel_meta(tag):
    return ("Wheel-Version: 1.0\nGenerator: commsched _build_backend\n"
            "Root-Is-Purelib: %s\nTag: %s\n" % (
                "true" if tag == "py3-none-any" else "false", tag)).encode()


def _package_files():
    root = os.path.join(_HERE, _PACKAGE)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(dirpath, name)
            yield full, os.path.relpath(full, _HERE).replace(os.sep, "/")


def _write_wheel(directory, files, tag="py3-none-any"):
    """files: [(archive name, bytes)]; adds dist-info and RECORD."""
    p = _project()
    dist = "%s-%s" % (p["name"], p["version"])
    info = dist + ".dist-info"
    files = list(files) + [(info + "/METADATA", _metadata(p)),
                           (info + "/WHEEL", _wheel_meta(tag))]
    record = []
    wheel_name = "%s-%s.whl" % (dist, tag)
    with zipfile.ZipFile(os.path.join(directory, wheel_name), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for arc, data in files:
            z.writestr(zipfile.ZipInfo(arc, (2020, 1, 1, 0, 0, 0)), data)
            digest = base64.urlsafe_b64encode(
                hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (arc, digest, len(data)))
        record.append(info + "/RECORD,,")
        z.writestr(zipfile.ZipInfo(info + "/RECORD", (2020, 1, 1, 0, 0, 0)),
                   "\n".join(record) + "\n")
    return wheel_name


def _read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- PEP 517 -------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


# The shared objects a wheel carries: (CMake target, file the loader wants).
_LIBRARIES = (("commsched", "libcommsched.so.0"),
              ("commsched_import_shared", "libcommsched_import.so.0"))


def _run(cmd):
    sys.stderr.write("commsched build: %s\n" % " ".join(cmd))
    subprocess.run(cmd, check=True, stdout=sys.stderr)


def _c_libraries(root, config_settings):
    """[(archive name, bytes)] of the C libraries built from root."""
    build = (config_settings or {}).get("cmake-build-dir") or \
        os.environ.get("COMMSCHED_CMAKE_BUILD_DIR")
    tmp = None
    if not build:
        tmp = build = tempfile.mkdtemp(prefix="commsched-wheel-")
    try:
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            _run(["cmake", "-S", root, "-B", build,
                  "-DCMAKE_BUILD_TYPE=Release", "-DCOMMSCHED_BUILD_TESTS=OFF",
                  "-DCOMMSCHED_WITH_MPI=OFF", "-DCOMMSCHED_WITH_CUDA=OFF"])
        _run(["cmake", "--build", build, "-j", str(os.cpu_count() or 2),
              "--target"] + [t for t, _ in _LIBRARIES])
        return [("%s/%s" % (_PACKAGE, name), _read(os.path.join(build, name)))
                for _, name in _LIBRARIES]
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = [(arc, _read(full)) for full, arc in _package_files()]
    root = os.path.dirname(_HERE)
    if (not os.path.exists(os.path.join(root, "CMakeLists.txt")) or
            os.environ.get("COMMSCHED_PURE_WHEEL") == "1"):
        return _write_wheel(wheel_directory, files)
    files += _c_libraries(root, config_settings)
    return _write_wheel(wheel_directory, files,
                        "py3-none-" + _platform_tag())


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = "%s-%s" % (p["name"], p["version"])
    name = base + ".tar.gz"
    members = [(full, arc) for full, arc in _package_files()]
    for extra in ("pyproject.toml", "README.md", "_build_backend.py"):
        members.append((os.path.join(_HERE, extra), extra))
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for full, arc in members:
            t.add(full, arcname=base + "/" + arc, recursive=False)
        pkg_info = _metadata(p)
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(pkg_info)
        t.addfile(ti, io.BytesIO(pkg_info))
    return name


# ---- PEP 660 (pip install -e) -------------------------------------------

def get_requires_for_build_editable(config_settings=None):
    return []


def build_editable(wheel_directory, config_settings=None,
                   metadata_directory=None):
    pth = (_HERE + "\n").encode()
    return _write_wheel(wheel_directory, [("_commsched_editable.pth", pth)])
