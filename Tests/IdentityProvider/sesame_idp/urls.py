from django.urls import include, path, re_path

from . import control, provider, registration

urlpatterns = [
    # Ahead of DOT's own views for these paths, which they extend (see provider.py).
    re_path(r"^o/\.well-known/openid-configuration/?$", provider.DiscoveryView.as_view()),
    path("o/.well-known/oauth-authorization-server", provider.MetadataView.as_view()),
    path("o/device-authorization/", provider.DeviceAuthorizationView.as_view()),
    path("o/token/", provider.TokenView.as_view()),
    path("o/register/", registration.register, name="client-registration"),
    path("o/register/<str:client_id>", registration.configuration, name="client-configuration"),
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("_test/", include(control.urlpatterns)),
]
