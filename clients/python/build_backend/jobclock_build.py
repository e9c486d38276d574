"""A PEP 517 build backend in the standard library only, for this one pure-Python package.

Why not setuptools: a fresh venv has setuptools without `wheel` (before setuptools 70.1 it cannot
build a wheel alone), and the usual `requires = ["setuptools", "wheel"]` makes pip download them,
which fails on a machine without an index. This backend needs nothing, so `pip install
./clients/python` works anywhere Python 3.9+ and pip do. It reads name and version from
pyproject.toml's [project] table and packs src/jobclock_worker (py.typed included).
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from typing import Any, Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "jobclock_worker"
TAG = "py3-none-any"


def _project() -> Dict[str, str]:
    """name, version, description and requires-python from pyproject.toml (tomllib is 3.11+)."""
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    section = text.split("[project]", 1)[1].split("\n[", 1)[0]
    fields = dict(re.findall(r'^([\w-]+)\s*=\s*"([^"]*)"', section, re.M))
    return fields


def _dist_name() -> Tuple[str, str]:
    p = _project()
    return p["name"].replace("-", "_"), p["version"]


def _metadata() -> str:
    p = _project()
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {p['name']}\n"
        f"Version: {p['version']}\n"
        f"Summary: {p['description']}\n"
        "License: MIT\n"
        f"Requires-Python: {p['requires-python']}\n"
        "Classifier: Programming Language :: Python :: 3\n"
        "Classifier: Typing :: Typed\n"
        "Description-Content-Type: text/markdown\n"
        f"\n{readme}"
    )


def _package_files() -> List[Tuple[str, str]]:
    """(path in the wheel, path on disk) of every file of the package, sorted."""
    src = os.path.join(ROOT, "src", PACKAGE)
    files = []
    for name in sorted(os.listdir(src)):
        if name.endswith(".py") or name == "py.typed":
            files.append((f"{PACKAGE}/{name}", os.path.join(src, name)))
    return files


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _write_wheel(directory: str, contents: List[Tuple[str, bytes]]) -> str:
    name, version = _dist_name()
    dist_info = f"{name}-{version}.dist-info"
    entries = list(contents) + [
        (f"{dist_info}/METADATA", _metadata().encode()),
        (f"{dist_info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: jobclock_build\nRoot-Is-Purelib: true\nTag: {TAG}\n".encode()),
        (f"{dist_info}/top_level.txt", f"{PACKAGE}\n".encode()),
    ]
    record = [_record_line(path, data) for path, data in entries] + [f"{dist_info}/RECORD,,"]
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    filename = f"{name}-{version}-{TAG}.whl"
    with zipfile.ZipFile(os.path.join(directory, filename), "w", zipfile.ZIP_DEFLATED) as whl:
        for path, data in entries:
            info = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(info, data)
    return filename


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None, metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, [(path, open(disk, "rb").read()) for path, disk in _package_files()])


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None, metadata_directory: Optional[str] = None) -> str:
    """`pip install -e`: a .pth file puts src/ on the path, so edits take effect without reinstalling."""
    return _write_wheel(wheel_directory, [(f"{PACKAGE}.pth", (os.path.join(ROOT, "src") + "\n").encode())])


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    name, version = _dist_name()
    base = f"{name}-{version}"
    filename = f"{base}.tar.gz"
    members = ["pyproject.toml", "README.md", "build_backend/jobclock_build.py"]
    members += [os.path.relpath(disk, ROOT) for _, disk in _package_files()]
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in members:
            tar.add(os.path.join(ROOT, rel), arcname=f"{base}/{rel}")
        pkg_info = _metadata().encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg_info)
        tar.addfile(info, io.BytesIO(pkg_info))
    return filename
