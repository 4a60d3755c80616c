"""The modules of ``conftest.ISOLATED["a"]``, each in a process of its own (why:
``conftest.ISOLATED``)."""

import pytest
from conftest import ISOLATED, run_isolated


@pytest.mark.slow
@pytest.mark.parametrize("module", ISOLATED["a"])
def test_module_in_its_own_process(module):
    run_isolated(module)
