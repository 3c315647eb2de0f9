"""The decoder of examples/paged_kv_cache.py: attention over paged K and V caches written in place."""

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
            k_cache, v_cache = self.caches[2 * i], self.caches[2 * i + 1]
            written = self.write(k_cache, ops.matmul(x, layer.wk), row, self.zero)
            written = written + self.write(v_cache, ops.matmul(x, layer.wv), row, self.zero)
            keys = ops.gather(k_cache, table, 0).reshape(n, -1)
            values = ops.gather(v_cache, table, 0).reshape(n, -1)
            x = ops.depend(x, written)
            x = x + layer.attend(ops.matmul(x, layer.wq), keys, values, visible)
        return x


class Prefill(nn.Cell):
    """A whole prompt through every layer with causal attention. Returns the last token's output and,
    per layer, the prompt's keys and values [t, width] (the engine writes them into its blocks)."""

    def __init__(self, layers):
        super().__init__()
        self.layers = nn.CellList(layers)

    def construct(self, x):
        t = x.shape[0]
        causal = ops.arange(t).reshape(t, 1) >= ops.arange(t).reshape(1, t)
        kvs = ()
        for layer in self.layers:
            keys, values = ops.matmul(x, layer.wk), ops.matmul(x, layer.wv)
            kvs = kvs + (keys, values)
            x = x + layer.attend(ops.matmul(x, layer.wq), keys, values, causal)
        return x[t - 1:], kvs


# ---- the scheduler ---------------------------------------------------------------------------------
