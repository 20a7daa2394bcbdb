from django.apps import AppConfig


class RoadmapConfig(AppConfig):
    name = "roadmap"
    verbose_name = "Adoption roadmap"
