"""Workspace REST of the fake that reads ``WorkspaceObjects`` (what ``rlm-conformance doctor --databricks`` asks):

* ``GET /api/2.0/preview/scim/v2/Me`` — the token's user (``userName``, ``groups``);
* ``GET /api/2.0/sql/warehouses/{id}`` — ``state`` ...; an unknown id is 404 ``RESOURCE_DOES_NOT_EXIST``;
* ``GET /api/2.1/clusters/get?cluster_id=`` (and 2.0) — ``state``, ``spark_version``, ``data_security_mode`` ...;
  an unknown id is 400 ``INVALID_PARAMETER_VALUE`` "Cluster <id> does not exist", as the Clusters API answers
  (the SDK turns it into ``ResourceDoesNotExist``);
* ``GET /api/2.0/permissions/{warehouses|clusters}/{id}`` — ``access_control_list``, the ``admins`` group's
  ``CAN_MANAGE`` included; 403 ``PERMISSION_DENIED`` when ``acls_readable`` is off;
* ``GET /api/2.0/secrets/list?scope=`` — the keys; 404 ``RESOURCE_DOES_NOT_EXIST`` for a missing scope,
  403 ``PERMISSION_DENIED`` without READ on it.
"""

from __future__ import annotations

from .replies import ApiError, Reply, bad_request, ok
from .workspace_objects import WorkspaceObjects

ME = "/api/2.0/preview/scim/v2/Me"
WAREHOUSES = "/api/2.0/sql/warehouses/"
CLUSTERS_GET = ("/api/2.0/clusters/get", "/api/2.1/clusters/get")
PERMISSIONS = "/api/2.0/permissions/"
SECRETS_LIST = "/api/2.0/secrets/list"
_OBJECT_IDS = {"warehouses": "/sql/warehouses/", "clusters": "/clusters/"}


def serves(method: str, path: str) -> bool:
    return method == "GET" and (path in (ME, SECRETS_LIST, *CLUSTERS_GET) or path.startswith(WAREHOUSES)
                                or path.startswith(PERMISSIONS))


class WorkspaceApi:
    def __init__(self, objects: WorkspaceObjects) -> None:
        self.objects = objects

    def handle(self, method: str, path: str, query: dict[str, str]) -> Reply:
        if path == ME:
            return self._me()
        if path.startswith(WAREHOUSES):
            return self._warehouse(path[len(WAREHOUSES):])
        if path in CLUSTERS_GET:
            return self._cluster(query.get("cluster_id", ""))
        if path.startswith(PERMISSIONS):
            return self._permissions(*path[len(PERMISSIONS):].partition("/")[::2])
        if path == SECRETS_LIST:
            return self._secrets(query.get("scope", ""))
        raise ApiError(404, "ENDPOINT_NOT_FOUND", f"No API found for '{method} {path}'")

    def _me(self) -> Reply:
        user = self.objects.user
        return ok({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "id": "1000000000000001",
                   "userName": user, "displayName": user.split("@")[0], "active": True,
                   "emails": [{"value": user, "type": "work", "primary": True}],
                   "groups": [{"display": g, "value": f"{i + 2000}", "type": "direct"}
                              for i, g in enumerate(self.objects.groups)]})

    def _warehouse(self, warehouse_id: str) -> Reply:
        warehouse = self.objects.warehouses.get(warehouse_id)
        if warehouse is None or "/" in warehouse_id:
            raise ApiError(404, "RESOURCE_DOES_NOT_EXIST", f"Unable to find SQL warehouse {warehouse_id}.")
        return ok({"id": warehouse_id, "name": warehouse.name, "state": warehouse.state,
                   "warehouse_type": warehouse.warehouse_type, "cluster_size": "2X-Small",
                   "enable_serverless_compute": warehouse.enable_serverless_compute,
                   "auto_stop_mins": warehouse.auto_stop_mins, "min_num_clusters": 1, "max_num_clusters": 1,
                   "creator_name": "admin@example.com"})

    def _cluster(self, cluster_id: str) -> Reply:
        if not cluster_id:
            raise bad_request("Missing required field: cluster_id")
        cluster = self.objects.clusters.get(cluster_id)
        if cluster is None:
            raise ApiError(400, "INVALID_PARAMETER_VALUE", f"Cluster {cluster_id} does not exist")
        body = {"cluster_id": cluster_id, "cluster_name": cluster.cluster_name, "state": cluster.state,
                "spark_version": cluster.spark_version, "spark_env_vars": dict(cluster.spark_env_vars),
                "node_type_id": "i3.xlarge", "num_workers": 0, "creator_user_name": "admin@example.com"}
        if cluster.data_security_mode is not None:
            body["data_security_mode"] = cluster.data_security_mode
        if cluster.single_user_name is not None:
            body["single_user_name"] = cluster.single_user_name
        return ok(body)

    def _permissions(self, object_type: str, object_id: str) -> Reply:
        known = {"warehouses": self.objects.warehouses, "clusters": self.objects.clusters}
        if object_type not in known:
            raise bad_request(f"'{object_type}' is not a supported object type here")
        if object_id not in known[object_type]:
            raise ApiError(404, "RESOURCE_DOES_NOT_EXIST", f"{object_type[:-1].capitalize()} {object_id} does not exist")
        if not self.objects.acls_readable:
            raise ApiError(403, "PERMISSION_DENIED",
                           f"User {self.objects.user} does not have Manage permissions on {object_type[:-1]} "
                           f"{object_id}.")
        entries = [{"group_name": "admins", "all_permissions": [
            {"permission_level": "CAN_MANAGE", "inherited": True,
             "inherited_from_object": [_OBJECT_IDS[object_type]]}]}]
        for principal, level in self.objects.acls.get((object_type, object_id), {}).items():
            who = "user_name" if "@" in principal else "group_name"
            entries.append({who: principal, "all_permissions": [{"permission_level": level, "inherited": False}]})
        return ok({"object_id": _OBJECT_IDS[object_type] + object_id,
                   "object_type": "warehouses" if object_type == "warehouses" else "cluster",
                   "access_control_list": entries})

    def _secrets(self, scope_name: str) -> Reply:
        scope = self.objects.secret_scopes.get(scope_name)
        if scope is None:
            raise ApiError(404, "RESOURCE_DOES_NOT_EXIST", f"Scope {scope_name} does not exist!")
        if not scope.readers & self.objects.principals():
            raise ApiError(403, "PERMISSION_DENIED",
                           f"User {self.objects.user} does not have READ permission on scope {scope_name}.")
        return ok({"secrets": [{"key": key, "last_updated_timestamp": 1764000000000} for key in sorted(scope.keys)]})
