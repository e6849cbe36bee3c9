"""The fixtures every test directory can use, registered as plugins: one module per area in
``tests/fixtures/``. Fixtures of one directory stay in its own ``conftest.py``; helpers the tests share
(functions, doubles, data) live in modules of their own, never in a ``test_*.py`` or a ``conftest.py``."""

pytest_plugins = ["tests.fixtures.stack"]
