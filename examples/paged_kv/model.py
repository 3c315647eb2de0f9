"""The decoders of examples/paged_kv_cache.py: attention over paged caches written in place, two per
layer: K and V (Attention), or an MLA-like latent cache and rope cache of other shapes and dtypes
(LatentAttention)."""

import numpy as np

import mindspore as ms
from mindspore import nn, ops

from ms_memcopy.ops import Memcpy2D

MiB = 1 << 20


def int64(*values):
    return ms.Tensor(np.array(values, dtype=np.int64))


# ---- the model ------------------------------------------------------------------------------------

class Attention(nn.Cell):
    """Weights of one layer. The heads form head groups; each group's output projection is computed on
    its own and the groups' projections are summed in order. Under tensor parallelism (ranks > 1) a rank
    holds the heads of its own groups (their columns of wq, wk, wv and rows of wo, cut from the same
    seeded weights) and an AllReduce sums the ranks' projections: with 2 ranks and 2 groups that is the
    same sum as in one process, so the outputs are identical."""

    def __init__(self, index, model_dim, heads, head_dim, groups, rank=0, ranks=1):
        super().__init__()
        rng = np.random.default_rng(1000 + index)
        width = heads * head_dim
        mine = slice(rank * width // ranks, (rank + 1) * width // ranks)

        def weight(name, rows, cols, part):
            values = rng.standard_normal((rows, cols)).astype(np.float32) / np.sqrt(rows)
            return ms.Parameter(ms.Tensor(np.ascontiguousarray(values[part])), name=f"layer{index}.{name}")

        self.wq, self.wk, self.wv = (weight(n, model_dim, width, (slice(None), mine)) for n in ("wq", "wk", "wv"))
        self.wo = weight("wo", width, model_dim, (mine, slice(None)))
        self.heads, self.head_dim, self.groups = heads // ranks, head_dim, groups // ranks
        self.width = width // ranks
        self.scale = float(1 / np.sqrt(head_dim))
        self.all_reduce = ops.AllReduce() if ranks > 1 else None

    def cache_rows(self, x):
        """The rows of this layer's two caches for tokens x [t, model_dim]: keys and values."""
        return ops.matmul(x, self.wk), ops.matmul(x, self.wv)

    def keys_values(self, first, second):
        """Keys and values [n, width] from rows of the two caches."""
        return first, second

    def attend(self, q, keys, values, visible):
        """q [t, width], keys/values [n, width] (this rank's heads), visible [t, n] -> x update [t, model_dim]."""
        t, n = q.shape[0], keys.shape[0]
        qh = q.reshape(t, self.heads, self.head_dim).transpose(1, 0, 2)
        kh = keys.reshape(n, self.heads, self.head_dim).transpose(1, 2, 0)
        vh = values.reshape(n, self.heads, self.head_dim).transpose(1, 0, 2)
        scores = ops.matmul(qh, kh) * self.scale
        scores = ops.where(visible.reshape(1, t, n), scores, ops.full_like(scores, -1e30))
        context = ops.matmul(ops.softmax(scores, axis=-1), vh).transpose(1, 0, 2).reshape(t, self.width)
        per_group = self.width // self.groups
        out = ops.matmul(context[:, :per_group], self.wo[:per_group])
        for g in range(1, self.groups):
            part = slice(g * per_group, (g + 1) * per_group)
            out = out + ops.matmul(context[:, part], self.wo[part])
        if self.all_reduce is not None:
            out = self.all_reduce(out)
        return out


class LatentAttention(Attention):
    """An MLA-like layer (DeepSeek's multi-head latent attention): its caches hold a latent row per token
    (latent_dim values, float16) and a rope key row shared by the heads (rope_dim values, float32), caches
    of different shapes and dtypes; each head's key is its up-projection of the latent followed by the
    rope key, its value another up-projection. Under tensor parallelism every rank holds the whole latent
    and rope caches and the up-projections of its own heads."""

    CACHE_DTYPES = (ms.float16, ms.float32)

    def __init__(self, index, model_dim, heads, head_dim, groups, latent_dim, rope_dim, rank=0, ranks=1):
        super().__init__(index, model_dim, heads, head_dim, groups, rank, ranks)
        rng = np.random.default_rng(2000 + index)
        nope = head_dim - rope_dim
        mine = slice(rank * heads // ranks, (rank + 1) * heads // ranks)

        def weight(name, rows, shape, part=None):
            values = rng.standard_normal((rows, *shape)).astype(np.float32) / np.sqrt(rows)
            values = values if part is None else values[:, part].reshape(rows, -1)
            return ms.Parameter(ms.Tensor(np.ascontiguousarray(values)), name=f"layer{index}.{name}")

        self.w_dkv = weight("w_dkv", model_dim, (latent_dim,))
        self.w_kr = weight("w_kr", model_dim, (rope_dim,))
        self.w_uk = weight("w_uk", latent_dim, (heads, nope), mine)
        self.w_uv = weight("w_uv", latent_dim, (heads, head_dim), mine)
        self.nope, self.rope_dim = nope, rope_dim

    def cache_rows(self, x):
        return ops.matmul(x, self.w_dkv).astype(self.CACHE_DTYPES[0]), ops.matmul(x, self.w_kr)

    def keys_values(self, latent, rope):
        n = latent.shape[0]
        c = latent.astype(ms.float32)
        nope = ops.matmul(c, self.w_uk).reshape(n, self.heads, self.nope)
        shared = ops.broadcast_to(rope.reshape(n, 1, self.rope_dim), (n, self.heads, self.rope_dim))
        return ops.concat((nope, shared), axis=-1).reshape(n, self.width), ops.matmul(c, self.w_uv)


def cache_specs(args, width):
    """The block shape and dtype of a layer's two caches for the model args.model."""
    if args.model == "mla":
        return [(args.block_size, args.latent_dim), (args.block_size, args.rope_dim)], \
            list(LatentAttention.CACHE_DTYPES)
    return [(args.block_size, width)] * 2, [ms.float32] * 2


NUMPY_DTYPES = {ms.float16: np.float16, ms.float32: np.float32}  # of the caches' dtypes


def block_bytes(shapes, dtypes):
    """The bytes of one block of every cache of the given block shapes and dtypes."""
    return sum(int(np.prod(s)) * np.dtype(NUMPY_DTYPES[d]).itemsize for s, d in zip(shapes, dtypes))


def describe_caches(args, num_caches, num_blocks, cache_block_bytes):
    """The report's words for the caches of the model args.model."""
    total = f"{num_caches * num_blocks * cache_block_bytes / MiB:.0f} MiB"
    if args.model == "mla":
        return (f"MLA-like latent (float16 x {args.latent_dim}) + rope (float32 x {args.rope_dim}) caches: "
                f"{num_caches} Parameters x {num_blocks} blocks of {args.block_size} tokens = {total}; host pool: "
                "2 chunks of registered memory (HostBuffer.wrap)")
    return (f"K/V caches: {num_caches} Parameters x {num_blocks} blocks of {args.block_size} tokens "
            f"({cache_block_bytes // 1024} KiB) = {total}")


def make_layers(args, rank, ranks):
    if args.model == "mla":
        return [LatentAttention(i, args.model_dim, args.heads, args.head_dim, args.head_groups, args.latent_dim,
                                args.rope_dim, rank, ranks) for i in range(args.layers)]
    return [Attention(i, args.model_dim, args.heads, args.head_dim, args.head_groups, rank, ranks)
            for i in range(args.layers)]


class DecodeStep(nn.Cell):
    """One token through every layer: writes its key and value rows into the caches in place (row
    `row` of each cache's 2-D view), then attends over the sequence's blocks (`table`)."""

    def __init__(self, layers, caches, block_size, max_blocks):
        super().__init__()
        self.layers = nn.CellList(layers)
        self.caches = ms.ParameterTuple(caches)
        self.write = Memcpy2D("write")
        self.block_size, self.max_blocks = block_size, max_blocks
        self.token_index = ms.Tensor(np.arange(max_blocks * block_size, dtype=np.int64))
        self.zero = int64(0)

    def construct(self, x, pos, row, table):
        n = self.max_blocks * self.block_size
        visible = (self.token_index <= pos).reshape(1, n)
        for i, layer in enumerate(self.layers):
            first, second = self.caches[2 * i], self.caches[2 * i + 1]
            rows = layer.cache_rows(x)
            written = self.write(first, rows[0], row, self.zero)
            written = written + self.write(second, rows[1], row, self.zero)
            keys, values = layer.keys_values(ops.gather(first, table, 0).reshape(n, -1),
                                             ops.gather(second, table, 0).reshape(n, -1))
            x = ops.depend(x, written)
            x = x + layer.attend(ops.matmul(x, layer.wq), keys, values, visible)
        return x


class Prefill(nn.Cell):
    """A whole prompt through every layer with causal attention. Returns the last token's output and,
    per layer, the prompt's rows of its two caches (the engine writes them into its blocks)."""

    def __init__(self, layers):
        super().__init__()
        self.layers = nn.CellList(layers)

    def construct(self, x):
        t = x.shape[0]
        causal = ops.arange(t).reshape(t, 1) >= ops.arange(t).reshape(1, t)
        kvs = ()
        for layer in self.layers:
            rows = layer.cache_rows(x)
            kvs = kvs + rows
            keys, values = layer.keys_values(*rows)
            x = x + layer.attend(ops.matmul(x, layer.wq), keys, values, causal)
        return x[t - 1:], kvs


# ---- the scheduler ---------------------------------------------------------------------------------
