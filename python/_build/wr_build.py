"""A minimal PEP 517 build backend (standard library only) for the weight-relay package: a pure
Python wheel of src/weight_relay with the metadata and entry points of pyproject.toml."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import zipfile

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _project() -> dict:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        if tomllib is not None:
            return tomllib.load(fh)["project"]
    # 3.10 without tomllib: the few fields this backend needs, read plainly
    return {"name": "weight-relay", "version": "0.1.0", "requires-python": ">=3.10",
            "dependencies": ["numpy>=1.24"],
            "entry-points": {"vllm.general_plugins":
                             {"weight_relay": "weight_relay.adapters.vllm:register"}}}


def _dist(p: dict) -> str:
    return p["name"].replace("-", "_") + "-" + p["version"]


def _metadata(p: dict) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}",
             f"Summary: {p.get('description', '')}", f"Requires-Python: {p['requires-python']}"]
    lines += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    for extra, deps in p.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    return "\n".join(lines) + "\n"


def _entry_points(p: dict) -> str:
    out = []
    for group, items in p.get("entry-points", {}).items():
        out.append(f"[{group}]")
        out += [f"{k} = {v}" for k, v in items.items()]
    return "\n".join(out) + "\n"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def _wheel(wheel_directory: str, files: dict[str, bytes]) -> str:
    p = _project()
    dist = _dist(p)
    info = f"{dist}.dist-info"
    files = dict(files)
    files[f"{info}/METADATA"] = _metadata(p).encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: wr_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{info}/entry_points.txt"] = _entry_points(p).encode()
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    name = f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, data in files.items():
            z.writestr(n, data)
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {}
    src = os.path.join(ROOT, "src")
    for d, _, names in os.walk(os.path.join(src, "weight_relay")):
        for n in sorted(names):
            if n.endswith(".py") or n == "py.typed":  # PEP 561: the package ships its types
                path = os.path.join(d, n)
                with open(path, "rb") as fh:
                    files[os.path.relpath(path, src).replace(os.sep, "/")] = fh.read()
    return _wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, {"weight_relay_src.pth": (os.path.join(ROOT, "src") + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    name = f"{_dist(p)}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        for rel in ["pyproject.toml", "README.md", "_build", "src"]:
            tar.add(os.path.join(ROOT, rel), arcname=f"{_dist(p)}/{rel}",
                    filter=lambda t: None if "__pycache__" in t.name else t)
    return name
