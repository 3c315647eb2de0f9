"""ms_memcopy.acl_limits: the values read from ops_impl/kernels/acl_limits.h against CANN 9.1's own numbers."""
import pytest

from ms_memcopy import acl_limits


def test_limits_are_canns():
    assert acl_limits.read_limits() == {
        "MAX_BATCH_ITEMS": 4096,  # DEVMM_MEMCPY_BATCH_MAX_COUNT
        "MAX_2D_HEIGHT": 5 * 1024 * 1024,
        "MAX_2D_WIDTH": 5_000_000,
        "MAX_DESC_COUNT": 4 * 1024**3,  # MAX_MEMCPY_SIZE_OF_D2D
        "DESC_COUNT_WRAP": 2**32,  # rtMemcpyAddrInfo::len is a uint32_t
        "DESC_ALIGNMENT": 64,
        "MAX_RUNTIME_DEVICES": 64,  # RT_MAX_DEV_NUM
        "DESC_CHUNK_BYTES": 2 * 1024**3,
    }
    assert acl_limits.MAX_2D_HEIGHT == 5 * 1024 * 1024 and acl_limits.DESC_CHUNK_BYTES == 2**31


def test_reader_takes_only_literal_expressions(tmp_path):
    header = tmp_path / "acl_limits.h"
    header.write_text("constexpr size_t kMaxFooItems = size_t{3} << 4;\nconstexpr int kTwoDBar = 2 * 5;\n")
    assert acl_limits.read_limits(header) == {"MAX_FOO_ITEMS": 48, "TWO_D_BAR": 10}
    header.write_text("constexpr size_t kBad = kMaxFooItems + 1;\n")
    with pytest.raises(ValueError, match="kBad"):
        acl_limits.read_limits(header)
