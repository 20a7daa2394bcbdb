"""API shapes of teams, projects and their code snapshots."""

from __future__ import annotations

from rest_framework import serializers

from teams.models import AdoptionProject, ApiDecision, SourceSnapshot, Team


class TeamSerializer(serializers.ModelSerializer):
    class Meta:
        model = Team
        fields = ["id", "name", "slug"]


class ProjectSerializer(serializers.ModelSerializer):
    team = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = AdoptionProject
        fields = [
            "id",
            "team",
            "name",
            "codebase_description",
            "current_platform",
            "target_gpus",
            "created_at",
        ]


class ProjectCreateSerializer(serializers.ModelSerializer):
    team = serializers.SlugField(help_text="team slug")
    target_gpus = serializers.ListField(child=serializers.CharField(max_length=64), required=False)

    class Meta:
        model = AdoptionProject
        fields = ["team", "name", "codebase_description", "current_platform", "target_gpus"]


class SourceSerializer(serializers.ModelSerializer):
    lineage_key = serializers.CharField(read_only=True)

    class Meta:
        model = SourceSnapshot
        fields = [
            "id",
            "project",
            "origin",
            "status",
            "name",
            "ref",
            "lineage",
            "lineage_key",
            "commit",
            "archive_sha256",
            "file_count",
            "total_bytes",
            "error",
            "created_at",
        ]


class SourceCreateSerializer(serializers.Serializer):
    archive = serializers.FileField(required=False, help_text=".tar.gz, .tgz or .zip")
    git_url = serializers.CharField(required=False, max_length=300)
    ref = serializers.CharField(required=False, max_length=200, default="", allow_blank=True)
    lineage = serializers.CharField(
        required=False,
        max_length=200,
        default="",
        allow_blank=True,
        help_text="which code this is a version of (blank: derived from the name)",
    )

    def validate(self, attrs: dict) -> dict:
        if bool(attrs.get("archive")) == bool(attrs.get("git_url")):
            raise serializers.ValidationError("Send either an archive or a git_url.")
        return attrs


class ApiDecisionSerializer(serializers.ModelSerializer):
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = ApiDecision
        fields = ["api", "decision", "replacement", "note", "decided_by", "updated_at"]
        read_only_fields = fields


class ApiDecisionInputSerializer(serializers.Serializer):
    """Shape only; teams.porting.record_decision checks the values (one set of rules)."""

    api = serializers.CharField(max_length=500, allow_blank=True)
    decision = serializers.CharField(max_length=40, allow_blank=True)
    replacement = serializers.CharField(
        required=False, default="", allow_blank=True, max_length=500
    )
    note = serializers.CharField(required=False, default="", allow_blank=True, max_length=10000)


class PortingSettingsSerializer(serializers.Serializer):
    vendored = serializers.ListField(child=serializers.CharField(allow_blank=True), required=False)
    not_vendored = serializers.ListField(
        child=serializers.CharField(allow_blank=True), required=False
    )
    hazards_off = serializers.ListField(child=serializers.CharField(), required=False)
