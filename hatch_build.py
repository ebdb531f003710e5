"""Build hook: a built (not editable) wheel of zan carries the typed answer, ``clients/python/zan_client``, so
that ``pip install .`` works from the package index alone. An editable install leaves it to the workspace
member (``uv sync`` installs clients/python editable), so edits to the models are seen at once."""

from __future__ import annotations

from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "standard":
            build_data["force_include"]["clients/python/zan_client"] = "zan_client"
