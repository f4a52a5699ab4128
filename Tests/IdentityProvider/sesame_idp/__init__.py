"""The Django project behind idp.py: a local OpenID Connect provider for Sesame's end-to-end tests."""
