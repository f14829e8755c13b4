from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path, re_path
from django.views.defaults import server_error as html_server_error
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from project.api import api_not_found, api_server_error
from project.health import healthz
from project.metrics import metrics

# The API docs page is Swagger UI from drf-spectacular's default CDN. Its start-up script is a
# file of its own (the split view), so no inline script; its template and Swagger UI itself
# use inline styles, allowed on this page only.
SWAGGER_UI_CDN = "https://cdn.jsdelivr.net"
api_docs = csp_update({"script-src": [SWAGGER_UI_CDN], "style-src": [SWAGGER_UI_CDN, UNSAFE_INLINE], "img-src": [SWAGGER_UI_CDN]})(
    SpectacularSwaggerSplitView.as_view(url_name="schema")
)

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("project.api_urls")),
    path("api/v1/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/v1/docs/", api_docs, name="api-docs"),
    # Anything else under /api/ (a malformed id such as `runs/null,null/`) is the JSON 404.
    re_path(r"^api/", api_not_found),
    path("", include("project.console_urls")),
]

# A crash under /api/ answers the JSON error shape; elsewhere Django's page.
handler500 = "project.urls.server_error"


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith("/api/"):
        return api_server_error(request)
    return html_server_error(request)
