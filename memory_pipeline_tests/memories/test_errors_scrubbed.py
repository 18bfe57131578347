"""Proves: a memory tool's error never repeats a secret it was handed.

An error message reaches the MCP client and the server's log; a token passed where a memory type
or a memory id belongs is echoed redacted, and the call is still refused with its reason.
"""

from __future__ import annotations

import pytest

from memory_pipeline.memories.operations import MemoryOperationError, check_type
from memory_pipeline.memories.service import _mid
from memory_pipeline_tests.secret_corpus import corpus

ALONE = [p.secrets[0] for p in corpus(11) if p.alone][:12]


@pytest.mark.parametrize("secret", ALONE)
def test_a_secret_as_type_or_id_is_refused_and_not_echoed(secret):
    for check, what in ((check_type, "unknown memory_type"), (_mid, "is not a memory id")):
        with pytest.raises(MemoryOperationError, match=what) as refused:
            check(secret)
        assert secret[:100] not in str(refused.value) and "[REDACTED:" in str(refused.value)
