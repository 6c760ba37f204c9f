"""A minimal PEP 517 / PEP 660 build backend, standard library only.

The binding is pure Python, so a wheel is just its files plus metadata. A
backend of our own means `pip install ./python` needs nothing beyond pip:
no setuptools, no wheel package, no network (pip's isolated build env has
nothing to install because `requires` is empty), on any Python >= 3.8.

Name, version, summary and Python requirement come from pyproject.toml's
[project] table (read with a few regular expressions: tomllib is 3.11+).
"""

import base64
import hashlib
import io
import os
import re
import tarfile
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


def _wheel_meta():
    return (b"Wheel-Version: 1.0\nGenerator: commsched _build_backend\n"
            b"Root-Is-Purelib: true\nTag: py3-none-any\n")


def _package_files():
    root = os.path.join(_HERE, _PACKAGE)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(dirpath, name)
            yield full, os.path.relpath(full, _HERE).replace(os.sep, "/")


def _write_wheel(directory, files):
    """files: [(archive name, bytes)]; adds dist-info and RECORD."""
    p = _project()
    dist = "%s-%s" % (p["name"], p["version"])
    info = dist + ".dist-info"
    files = list(files) + [(info + "/METADATA", _metadata(p)),
                           (info + "/WHEEL", _wheel_meta())]
    record = []
    wheel_name = dist + "-py3-none-any.whl"
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


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory,
                        [(arc, _read(full)) for full, arc in _package_files()])


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
