"""Unity Catalog REST of the fake (read side), on ``WorkspaceObjects``:

* ``GET /api/2.1/unity-catalog/catalogs/{name}``, ``.../schemas/{full_name}``, ``.../volumes/{full_name}``,
  ``.../tables/{full_name}`` — 404 ``CATALOG_DOES_NOT_EXIST`` / ``SCHEMA_DOES_NOT_EXIST`` /
  ``TABLE_DOES_NOT_EXIST`` / ``RESOURCE_DOES_NOT_EXIST`` (volume) for a missing one, 403 ``PERMISSION_DENIED``
  when the caller lacks what the API reference asks of it (``USE_CATALOG`` on the catalog, and ``USE_SCHEMA``
  on the schema, and ``READ_VOLUME`` on a volume, or ``SELECT`` on a table; an owner needs none);
* ``GET /api/2.1/unity-catalog/effective-permissions/{securable_type}/{full_name}`` (``grants.get_effective``):
  ``privilege_assignments`` per principal, inherited grants with ``inherited_from_type`` / ``_name``;
  ``principal=`` filters.

Also ``files_guard``: the Files API's answer for a volume this module knows (404 for a missing volume, 403
without ``READ_VOLUME`` / ``WRITE_VOLUME``); volumes of other catalogs are left to the Files API as before.
"""

from __future__ import annotations

from urllib.parse import unquote

from .replies import ApiError, Reply, bad_request, ok
from .workspace_objects import WorkspaceObjects

PREFIX = "/api/2.1/unity-catalog"
_KINDS = {"catalogs": "catalog", "schemas": "schema", "volumes": "volume", "tables": "table"}
_MISSING = {"catalog": "CATALOG_DOES_NOT_EXIST", "schema": "SCHEMA_DOES_NOT_EXIST",
            "table": "TABLE_DOES_NOT_EXIST", "volume": "RESOURCE_DOES_NOT_EXIST"}
_PARTS = {"catalog": 1, "schema": 2, "volume": 3, "table": 3}
_NEEDS = {"catalog": (), "schema": (), "volume": ("READ_VOLUME",), "table": ("SELECT",)}


class UnityCatalogApi:
    def __init__(self, objects: WorkspaceObjects) -> None:
        self.objects = objects

    def handle(self, method: str, path: str, query: dict[str, str]) -> Reply:
        parts = path[len(PREFIX) + 1:].split("/")
        if method == "GET" and len(parts) == 3 and parts[0] == "effective-permissions":
            return self._effective(parts[1].lower(), unquote(parts[2]), query.get("principal"))
        if method == "GET" and len(parts) == 2 and parts[0] in _KINDS:
            return self._get(_KINDS[parts[0]], unquote(parts[1]))
        raise ApiError(404, "ENDPOINT_NOT_FOUND", f"No API found for '{method} {path}'")

    # --- securables ------------------------------------------------------------------------------------

    def _get(self, kind: str, full_name: str) -> Reply:
        self._require_visible(kind, full_name)
        securable = self.objects.securables(kind)[full_name]
        names = full_name.split(".")
        body = {"name": names[-1], "full_name": full_name, "owner": securable.owner,
                "metastore_id": "11111111-2222-3333-4444-555555555555"}
        if kind != "catalog":
            body["catalog_name"] = names[0]
        if kind in ("volume", "table"):
            body["schema_name"] = names[1]
        body.update({"catalog": {"catalog_type": "MANAGED_CATALOG"}, "schema": {},
                     "volume": {"volume_type": "MANAGED"},
                     "table": {"table_type": "MANAGED", "data_source_format": "DELTA"}}[kind])
        return ok(body)

    def _require_visible(self, kind: str, full_name: str) -> None:
        """404 for a missing securable (or parent), 403 when the caller may not see it."""
        if len(full_name.split(".")) != _PARTS[kind]:
            raise bad_request(f"Invalid {kind} name '{full_name}'.")
        for level_kind, name in reversed(self.objects.lineage(kind, full_name)):
            if not self.objects.exists(level_kind, name):
                raise ApiError(404, _MISSING[level_kind], f"{level_kind.capitalize()} '{name}' does not exist.")
        objects = self.objects
        for level_kind, name in reversed(objects.lineage(kind, full_name)):
            needed = {"catalog": ("USE_CATALOG",), "schema": ("USE_SCHEMA",)}.get(level_kind, ())
            if level_kind == kind:
                needed = (*needed, *_NEEDS[kind])
            for privilege in needed:
                if not objects.holds(level_kind, name, privilege):
                    raise ApiError(403, "PERMISSION_DENIED",
                                   f"User does not have {privilege.replace('_', ' ')} on "
                                   f"{level_kind.capitalize()} '{name}'.")

    # --- effective permissions -------------------------------------------------------------------------

    def _effective(self, kind: str, full_name: str, principal: str | None) -> Reply:
        if kind not in _PARTS:
            raise bad_request(f"Invalid securable type '{kind}'.")
        if len(full_name.split(".")) != _PARTS[kind]:
            raise bad_request(f"Invalid {kind} name '{full_name}'.")
        for level_kind, name in reversed(self.objects.lineage(kind, full_name)):
            if not self.objects.exists(level_kind, name):
                raise ApiError(404, _MISSING[level_kind], f"{level_kind.capitalize()} '{name}' does not exist.")
        if self.objects.effective_permissions_self_only and principal != self.objects.user:
            raise ApiError(403, "PERMISSION_DENIED", f"User does not have MANAGE on {kind.capitalize()} '{full_name}'.")
        assignments: dict[str, list[dict[str, str]]] = {}
        for who, privilege, inherited in self.objects.effective(kind, full_name):
            if principal is not None and who != principal:
                continue
            entry = {"privilege": privilege}
            if inherited is not None:
                entry.update(inherited_from_type=inherited[0].upper(), inherited_from_name=inherited[1])
            assignments.setdefault(who, []).append(entry)
        return ok({"privilege_assignments": [{"principal": who, "privileges": privileges}
                                             for who, privileges in assignments.items()]})

    # --- the Files API's view of a known volume --------------------------------------------------------

    def files_guard(self, method: str, volume_path: str) -> None:
        """Raise what the Files API answers on a volume of a known catalog that is missing or not allowed."""
        parts = [p for p in volume_path.split("/") if p]
        if len(parts) < 4 or parts[0] != "Volumes" or parts[1] not in self.objects.catalogs:
            return
        full_name = ".".join(parts[1:4])
        if not self.objects.exists("volume", full_name) or not self.objects.exists("schema", ".".join(parts[1:3])):
            raise ApiError(404, "NOT_FOUND", f"Volume '{full_name}' does not exist.")
        privilege = "WRITE_VOLUME" if method in ("PUT", "DELETE") else "READ_VOLUME"
        needed = [("catalog", parts[1], "USE_CATALOG"), ("schema", ".".join(parts[1:3]), "USE_SCHEMA"),
                  ("volume", full_name, privilege)]
        for kind, name, wanted in needed:
            if not self.objects.holds(kind, name, wanted):
                raise ApiError(403, "PERMISSION_DENIED",
                               f"User does not have {wanted.replace('_', ' ')} on {kind.capitalize()} '{name}'.")
