"""Fixtures shared by the suite."""

import pytest
from samples import TOOLS

import toolcall


@pytest.fixture(scope="session")
def toolset():
    return toolcall.Toolset(TOOLS)
