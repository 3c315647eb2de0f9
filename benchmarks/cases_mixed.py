"""SwapBlocks over caches of several block shapes (an MLA-like latent and rope cache per layer): one call
over every cache against what users write without it, one SwapBlocks call per distinct block shape
(caches of one shape each) and MindSpore's ``swap_cache`` once per cache (what the MindSpore port of vLLM
calls). Eager calls with the block table on the host, each waited for, as a scheduler makes them.
"""
import numpy as np

from .case import BASELINE, OURS, Case
from .cases_blocks import _cache, _mapping, _one_memcpy, _size, _synced
from .cases_primitives import _host_buffer, _ops

LATENT, ROPE = 512, 64  # values a token of the latent and rope caches (DeepSeek's MLA)


def mixed_swap_case(direction, block_bytes, count, layers):
    """SwapBlocks of `count` blocks of `layers` latent caches (float16, block_bytes a block) and as many
    rope caches (float16, an eighth of that), shuffled mapping."""
    tokens = max(1, block_bytes // (2 * LATENT))
    shapes = [(tokens, LATENT), (tokens, ROPE)] * layers
    per_block = [int(np.prod(s)) * 2 for s in shapes]
    nbytes = count * sum(per_block)

    def build(stack):
        o = _ops()
        import mindspore as ms
        from mindspore._c_expression import swap_cache

        rng = np.random.default_rng(2)
        caches = tuple(_cache(rng.standard_normal((count, *s)).astype(np.float16), f"mixed{l}")
                       for l, s in enumerate(shapes))
        host_caches = [ms.Tensor(np.ones((count, *s), np.float16)) for s in shapes]
        mapping = _mapping(rng, count, count, count)
        mapping_tensor = ms.Tensor(mapping)
        to_host = direction == "d2h"
        op = o.SwapBlocks(direction, _host_buffer(stack, nbytes), num_caches=len(caches))
        # one call per block shape: the latent caches, then the rope caches, each over a HostBuffer of its own
        latent, rope = caches[0::2], caches[1::2]
        by_shape = [(o.SwapBlocks(direction, _host_buffer(stack, count * per_block[k] * layers), num_caches=layers),
                     group) for k, group in ((0, latent), (1, rope))]

        def per_shape():
            for shape_op, group in by_shape:
                shape_op(*group, mapping)

        return {
            f"SwapBlocks {direction}, one call (eager)": (OURS, _synced(lambda: op(*caches, mapping))),
            "SwapBlocks per block shape (eager)": (BASELINE, _synced(per_shape)),
            "swap_cache per cache": (BASELINE, _synced(lambda: [swap_cache(h, c, mapping_tensor, to_host)
                                                                for c, h in zip(caches, host_caches)])),
            "one memcpy (C++)": (BASELINE, _one_memcpy(nbytes)),
        }
    return Case("ops.SwapBlocks mixed", f"{direction}, {layers} layers x (latent {_size(per_block[0])} + rope "
                f"{_size(per_block[1])}) x {count} blocks", nbytes, count=2 * layers * count,
                params={"direction": direction, "block_bytes": per_block[:2], "blocks": count, "layers": layers},
                build=build)


def cases(settings):
    block_bytes, count, layers = settings.swap_blocks
    return [mixed_swap_case(d, block_bytes, count, layers) for d in ("d2h", "h2d")]
