"""Files API directories of the fake: ``GET|HEAD /api/2.0/fs/directories/Volumes/<c>/<s>/<v>/...``.

``GET`` lists a folder as the REST docs describe it: ``{"contents": [{"path",
"name", "is_directory", "file_size", "last_modified"}], "next_page_token"}``,
at most ``page_size`` (default and maximum 1000) entries a page, sorted by name;
a folder that does not exist is a 404 ``NOT_FOUND``. ``HEAD`` answers 200 or 404.
The job runner lists Job_B's sub-LM exchange folder this way.
"""

from __future__ import annotations

from urllib.parse import unquote

from .files import VolumeMap
from .replies import ApiError, Reply, bad_request, ok

PREFIX = "/api/2.0/fs/directories"
MAX_PAGE = 1000


def handle(volumes: VolumeMap, method: str, path: str, query: dict[str, str]) -> Reply:
    volume_path = unquote(path[len(PREFIX):]).rstrip("/")
    parts = [p for p in volume_path.split("/") if p]
    # The volume itself (/Volumes/c/s/v) is a folder too; VolumeMap.local wants a path inside one.
    local = volumes.root.joinpath(*parts[1:]) if len(parts) == 4 and parts[0] == "Volumes" else \
        volumes.local(volume_path)
    if method == "HEAD":
        return Reply(200 if local.is_dir() else 404)
    if method != "GET":
        raise ApiError(405, "INVALID_PARAMETER_VALUE", f"{method} is not supported on {PREFIX} by the fake")
    if not local.is_dir():
        raise ApiError(404, "NOT_FOUND", f"The directory being accessed is not found: {volume_path}")
    try:
        size = min(MAX_PAGE, int(query.get("page_size") or MAX_PAGE))
        start = int(query.get("page_token") or 0)
    except ValueError:
        raise bad_request("page_size and page_token must be the values the API handed out") from None
    entries = sorted(local.iterdir(), key=lambda e: e.name)
    page = entries[start:start + max(1, size)]
    contents = []
    for entry in page:
        item = {"path": f"{volume_path}/{entry.name}", "name": entry.name, "is_directory": entry.is_dir()}
        if not entry.is_dir():
            stat = entry.stat()
            item.update(file_size=stat.st_size, last_modified=int(stat.st_mtime * 1000))
        contents.append(item)
    body: dict = {"contents": contents}
    if start + len(page) < len(entries):
        body["next_page_token"] = str(start + len(page))
    return ok(body)
