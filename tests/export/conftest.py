"""The app tests' fixtures (the tiny demo, the allowed roots of the app) for the export tests."""

from tests.app.conftest import app_roots, tiny_demo  # noqa: F401  (fixtures; app_roots is autouse)
