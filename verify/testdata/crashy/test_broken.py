"""A suite file that does not even import: the runner must report it, not stop."""

import no_such_module_mpspatch  # noqa: F401


def test_never():
    pass
