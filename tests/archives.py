"""Archives built in memory for the source intake tests (teams and security)."""

from __future__ import annotations

import gzip
import io
import stat
import tarfile
import zipfile

KERNEL = b"__global__ void k(float* x) { x[threadIdx.x] = 0; }\n"


def tar_bytes(members: list[tuple[tarfile.TarInfo, bytes | None]], fmt=tarfile.PAX_FORMAT) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as archive:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
            else:
                archive.addfile(info)
    # mtime=0: the same bytes every time, so parametrized ids built from them agree
    # between pytest-xdist's workers (a gzip header's time would differ by the second)
    return gzip.compress(buffer.getvalue(), mtime=0)


def tar_entry(name: str, kind: bytes = tarfile.REGTYPE, linkname: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.mode = 0o755 if kind in (tarfile.DIRTYPE, tarfile.SYMTYPE) else 0o644
    return info


def zip_bytes(files: dict[str, bytes], symlinks: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.create_system = 3
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()
