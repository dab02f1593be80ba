"""What a reader of the read-only API may rely on, checked the same way wherever the views are fetched from (a folder
store, moto's S3, the hub image): strict JSON (no NaN or infinity), each view valid against the OpenAPI description
the API publishes beside it, and the index naming every view."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema
from openapi_spec_validator import validate as validate_openapi

from orchestrator.public_api import OPENAPI_FILE, VIEWS

FILES = [f"{name}.json" for name in VIEWS] + [OPENAPI_FILE]


def strict_json(text: str | bytes, where: str) -> Any:
    """JSON as a strict parser reads it: NaN and Infinity are not JSON."""

    def refuse(constant: str) -> None:
        raise AssertionError(f"{where}: {constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def response_schema(openapi: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The schema of GET /<name>.json, with the description's components beside it so its references resolve."""
    schema = openapi["paths"][f"/{name}.json"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    return {**schema, "components": openapi["components"]}


def check_views(documents: Mapping[str, Any], where: str) -> None:
    """`documents`: every file of the API by its name, parsed. Fails unless the OpenAPI description is valid OpenAPI,
    each view is valid against it and is the view it says, and the index lists exactly the views there are."""
    assert set(documents) == set(FILES), f"{where}: {sorted(documents)}"
    openapi = documents[OPENAPI_FILE]
    validate_openapi(openapi)
    assert set(openapi["paths"]) == {f"/{name}.json" for name in VIEWS}, where
    for name in VIEWS:
        document = documents[f"{name}.json"]
        jsonschema.Draft202012Validator(response_schema(openapi, name)).validate(document)
        assert document["view"] == name and document["api_version"] == "v1", f"{where}: {name}"
    index = documents["index.json"]
    assert [view["path"] for view in index["views"]] == [f"{name}.json" for name in VIEWS if name != "index"], where
    for view in index["views"]:
        assert view["items"] == len(documents[view["path"]].get("items", [])) or view["items"] is None, view
    shas = {documents[f"{name}.json"]["snapshot_sha256"] for name in VIEWS}
    assert len(shas) == 1, f"{where}: views of different snapshots {shas}"


def envelope(documents: Mapping[str, Any], **identity: Any) -> dict[str, Any]:
    """The one envelope item with these fields (tco_tier, model, precision, workload, interactivity, hardware)."""
    found = [item for item in documents["envelopes.json"]["items"]
             if all(item[key] == value for key, value in identity.items())]  # fmt: skip
    assert len(found) == 1, f"{len(found)} envelope items match {identity}"
    return found[0]
