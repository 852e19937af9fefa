"""Job_B's payload: a small pure-Python wheel of the executor package, built here and put on the volume.

What Job_B imports on the compute is the executor package (``reference_agent/executor``:
the REPL, the result JSON, the direct sub-LM over ``urllib``, the process helpers
and the supervisor) and nothing else. It is standard library only and runs on
Python 3.10–3.12, so it installs on any cluster or serverless environment
without PyPI. The same source files are shipped unchanged under the payload's own
top-level name, ``rlm_jobb``: the package uses relative imports only, so it is the
same code under either name (``tests/databricks/test_payload.py`` holds it to that).

The wheel is built in memory and deterministically (fixed timestamps and
permissions, sorted entries, PEP 427 ``WHEEL``/``METADATA``/``RECORD``), so its
sha256 names it: the job runner uploads it to
``<volume_root>/_rlm/wheels/<digest16>/rlm_jobb-<version>-py3-none-any.whl`` and a
changed payload gets a new path (a cluster never reuses a stale install).
``RLM_DATABRICKS_WHEEL`` overrides it with a payload wheel of your own.

``payload_source(settings)`` says where a run's payload comes from (the doctor reports it).
"""

from __future__ import annotations

import base64
import csv
import functools
import hashlib
import io
import posixpath
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import DatabricksSettings

PACKAGE = "rlm_jobb"  # the payload's top-level package (and distribution) name on the compute
SOURCE = Path(__file__).resolve().parents[2] / "executor"  # reference_agent/executor: the one source
LEFT_OUT = frozenset({"worker.py"})  # the local warm worker: Job_B on Databricks runs one block per process
REQUIRES_PYTHON = ">=3.10"
WHEELS_DIR = ("_rlm", "wheels")
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip can hold: the same bytes on every build
_SUMMARY = "Job_B of rlm-conformance: runs analyst code with the RLM REPL surface on Databricks compute"


@dataclass(frozen=True)
class PayloadWheel:
    filename: str
    data: bytes
    version: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def folder(self) -> str:
        """``_rlm/wheels/<digest16>``: content-addressed, so a changed payload never reuses a path."""
        return posixpath.join(*WHEELS_DIR, self.digest[:16])

    def volume_path(self, volume_root: str) -> str:
        """Where the job runner puts it (a cluster never reinstalls a library from a path it already has)."""
        return posixpath.join(volume_root, self.folder, self.filename)


def payload_files() -> dict[str, bytes]:
    """The payload's modules: ``rlm_jobb/<name>.py`` -> the bytes of ``reference_agent/executor/<name>.py``."""
    files = {f"{PACKAGE}/{path.name}": path.read_bytes()
             for path in sorted(SOURCE.glob("*.py")) if path.name not in LEFT_OUT}
    if f"{PACKAGE}/supervisor.py" not in files:
        raise RuntimeError(f"{SOURCE} has no supervisor.py: the payload would not run Job_B")
    return files


def project_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rlm-conformance")
    except PackageNotFoundError:
        return "0.0.0"


@functools.lru_cache(maxsize=4)
def build_payload_wheel(version: str | None = None) -> PayloadWheel:
    """The payload wheel (``rlm_jobb-<version>-py3-none-any.whl``), the same bytes for the same sources."""
    version = version or project_version()
    dist_info = f"{PACKAGE}-{version}.dist-info"
    files = dict(payload_files())
    files[f"{dist_info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {PACKAGE.replace('_', '-')}\nVersion: {version}\nSummary: {_SUMMARY}\n"
        f"Requires-Python: {REQUIRES_PYTHON}\n").encode()
    files[f"{dist_info}/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: rlm-conformance (reference_agent.backends.databricks.payload)\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n").encode()
    record = f"{dist_info}/RECORD"
    rows = [(name, _record_hash(data), str(len(data))) for name, data in sorted(files.items())]
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows([*rows, (record, "", "")])
    files[record] = text.getvalue().encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        # Package files first, the .dist-info last and RECORD at its end, as PEP 427 recommends.
        for name in sorted(files, key=lambda n: (n.startswith(dist_info), n == record, n)):
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, so the mode below is read
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[name])
    return PayloadWheel(f"{PACKAGE}-{version}-py3-none-any.whl", buffer.getvalue(), version)


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def payload_source(settings: DatabricksSettings) -> str:
    """Where Job_B's payload comes from for ``settings``, in one line (for ``rlm-conformance doctor``)."""
    if settings.wheel:
        return f"{settings.wheel} (RLM_DATABRICKS_WHEEL: your own payload wheel; it must hold the {PACKAGE} package)"
    from .errors import DatabricksConfigError

    wheel = build_payload_wheel()
    try:
        root = settings.volume_root
    except DatabricksConfigError:  # the volume settings are incomplete: say where under it
        root = "<volume_root>"
    where = posixpath.join(root, wheel.folder, wheel.filename)
    return (f"{where} (built from reference_agent/executor, {PACKAGE} {wheel.version}, sha256 {wheel.digest[:16]}; "
            "uploaded by the job runner before the first run)")


def main(argv: list[str] | None = None) -> int:
    """``python -m reference_agent.backends.databricks.payload [OUT_DIR]``: write the payload wheel, print its path.

    For ``RLM_DATABRICKS_WHEEL`` (your own copy on the volume); the job runner does not need it.
    """
    import argparse

    parser = argparse.ArgumentParser(prog="python -m reference_agent.backends.databricks.payload",
                                     description=main.__doc__)
    parser.add_argument("out_dir", nargs="?", default=".", help="folder to write the wheel into (default: .)")
    args = parser.parse_args(argv)
    wheel = build_payload_wheel()
    path = Path(args.out_dir) / wheel.filename
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(wheel.data)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
