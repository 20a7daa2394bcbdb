"""The OpenAPI schema documents every operation: a summary (Redoc and Swagger name the
operation by it, not by ``v1_environments_list``), a description and an example."""

from __future__ import annotations

from typing import Any

import pytest

METHODS = ("get", "post", "put", "patch", "delete")


@pytest.fixture
def schema(api) -> dict[str, Any]:
    response = api.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return response.json()


def _operations(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{method.upper()} {path}", op)
        for path, item in schema["paths"].items()
        for method, op in item.items()
        if method in METHODS
    ]


def _contents(op: dict[str, Any]) -> list[dict[str, Any]]:
    bodies = [op.get("requestBody") or {}, *op.get("responses", {}).values()]
    return [c for body in bodies for c in (body.get("content") or {}).values()]


def test_every_operation_has_a_summary_and_a_description(schema):
    operations = _operations(schema)
    assert len(operations) >= 20
    lacking = [name for name, op in operations if not op.get("summary")]
    lacking += [name for name, op in operations if len(op.get("description") or "") < 20]
    assert lacking == []
    summaries = [op["summary"] for _, op in operations]
    assert len(set(summaries)) == len(summaries), "two operations share a summary"


def test_every_operation_has_an_example(schema):
    lacking = [
        name
        for name, op in _operations(schema)
        if not any(content.get("examples") for content in _contents(op))
    ]
    assert lacking == []


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def test_the_examples_name_only_fields_the_answers_have(schema):
    checked = 0
    for name, op in _operations(schema):
        for content in _contents(op):
            shape = _resolve(schema, content.get("schema") or {})
            if "results" in shape.get("properties", {}):  # a page: its rows' shape
                shape = _resolve(schema, shape["properties"]["results"]["items"])
            fields = set(shape.get("properties", {}))
            for example in (content.get("examples") or {}).values():
                value = example["value"]
                if isinstance(value, dict) and "results" in value:
                    value = value["results"][0]
                if isinstance(value, list):
                    value = value[0]
                if fields and isinstance(value, dict):
                    unknown = set(value) - fields - {"detail"}  # 202's note beside the job
                    assert not unknown, f"{name}: {sorted(unknown)}"
                    checked += 1
    assert checked >= 15
