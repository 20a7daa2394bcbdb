from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from config.health import healthz
from jobs.health import control_worker
from results.metrics import metrics_view


class Favicon(RedirectView):
    """/favicon.ico, which browsers ask for whatever the page links, leads to the static icon
    (looked up per request: the manifest names it by its hash)."""

    permanent = False

    def get_redirect_url(self, *args: object, **kwargs: object) -> str:
        return static("img/favicon.svg")


# Swagger UI's init script is served from ?script (the split view), not inline, and the page
# itself carries no inline style (templates/api/swagger_ui.html): both pass the CSP. Redoc is
# gone: its styles are injected inline at run time, which the CSP refuses; its old address
# leads to the Swagger UI.
urlpatterns = [
    # Container health checks (compose.yaml): the database, the broker, the control worker.
    path("healthz", healthz, {"control_worker": control_worker}, name="healthz"),
    path("metrics", metrics_view, name="metrics"),  # Prometheus (docs/metrics.md)
    path("favicon.ico", Favicon.as_view(), name="favicon"),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/", include("config.api_router")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(url_name="schema", template_name="api/swagger_ui.html"),
        name="api-docs",
    ),
    path("api/redoc/", RedirectView.as_view(pattern_name="api-docs"), name="api-redoc"),
    path("", include("portal.urls")),
]
