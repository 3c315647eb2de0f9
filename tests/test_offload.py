"""ms_memcopy.offload.OffloadingHandler: the behaviour of vLLM v1's CPU-GPU offloading handler over a
BlockPool and its TransferQueue, checked against numpy.

The handler launches its copies through the TransferQueue, which runs eagerly in either mode (between
compiled steps in GRAPH_MODE): the data tests run in both modes. A job is held in flight by blocking the
transfer streams (Hold, as in test_transfer_queue.py). The expected host slot of each device block is
computed here block by block from the documented rule, independently of the handler's code."""
import numpy as np
import pytest

import mindspore as ms

from ms_memcopy.nn import BlockPool, TransferPending
from ms_memcopy.offload import DeviceBlocksSpec, HostBlocksSpec, OffloadingHandler, TransferResult

from test_transfer_queue import Hold

BLOCK = (2, 3)  # tokens x width of one device block
NUM_CACHES = 2
NUM_BLOCKS = 12
NUM_HOST_BLOCKS = 5  # the handler's host blocks, of `factor` device blocks each


def make_handler(factor, num_blocks=NUM_BLOCKS, num_host_blocks=NUM_HOST_BLOCKS, seed=0):
    pool = BlockPool(num_caches=NUM_CACHES, num_blocks=num_blocks, num_host_blocks=num_host_blocks * factor,
                     block_shape=BLOCK, dtype=ms.float32)
    rng = np.random.default_rng(seed)
    for cache in pool.caches:
        cache.set_data(ms.Tensor(rng.standard_normal((num_blocks, *BLOCK)).astype(np.float32)))
    host = host_view(pool)
    host[:] = rng.standard_normal(host.shape).astype(np.float32)
    return pool, OffloadingHandler(pool, block_size_factor=factor)


def host_view(pool):
    """[cache, pool host block, *BLOCK]: the pool's cache-major host layout."""
    return pool.host_buffer.numpy(np.float32).reshape(pool.num_caches, pool.num_host_blocks, *BLOCK)


def snapshot(pool):
    return np.stack([c.asnumpy() for c in pool.caches]), host_view(pool).copy()


def slots_of(host_ids, factor, skip=0, count=None):
    """The pool host blocks that a run of device blocks fills: host block h holds slots h*factor ..
    h*factor + factor - 1; the run starts `skip` slots into its first host block."""
    slots = []
    for h in host_ids:
        for j in range(factor):
            slots.append(h * factor + j)
    slots = slots[skip:]
    return slots if count is None else slots[:count]


def finish(handler, job_ids):
    handler.wait(set(job_ids))
    return handler.get_finished()


@pytest.mark.parametrize("factor", [1, 3])
def test_store_then_load_move_each_block_to_its_host_slot(ms_mode, factor):
    """vLLM's transfer test, both directions: random device blocks, random host blocks; the source is
    unchanged, every destination slot holds its source block and every other slot is as it was."""
    pool, handler = make_handler(factor)
    rng = np.random.default_rng(1)
    try:
        device = rng.choice(NUM_BLOCKS, 2 * factor, replace=False).tolist()
        host = rng.choice(NUM_HOST_BLOCKS, 2, replace=False).tolist()
        slots = slots_of(host, factor)
        caches, host_before = snapshot(pool)
        assert handler.transfer_async(1, (DeviceBlocksSpec(device), HostBlocksSpec(host))) is True
        (result,) = finish(handler, {1})
        expected = host_before.copy()
        expected[:, slots] = caches[:, device]
        np.testing.assert_array_equal(host_view(pool), expected)
        np.testing.assert_array_equal(snapshot(pool)[0], caches)
        block_bytes = NUM_CACHES * int(np.prod(BLOCK)) * 4
        assert isinstance(result, TransferResult)
        assert result[:3] == (1, True, 2 * factor * block_bytes) and result.transfer_type == ("GPU", "CPU")
        assert result.transfer_time > 0

        # load other host blocks into other device blocks
        host_blocks = [h for h in range(NUM_HOST_BLOCKS) if h not in host][:2]
        load_to = [b for b in range(NUM_BLOCKS) if b not in device][:2 * factor][::-1]
        caches, host_before = snapshot(pool)
        assert handler.transfer_async(2, (HostBlocksSpec(host_blocks), DeviceBlocksSpec(load_to))) is True
        (result,) = finish(handler, [2])
        expected = caches.copy()
        expected[:, load_to] = host_before[:, slots_of(host_blocks, factor)]
        np.testing.assert_array_equal(snapshot(pool)[0], expected)
        np.testing.assert_array_equal(host_view(pool), host_before)
        assert result[:3] == (2, True, 2 * factor * block_bytes) and result.transfer_type == ("CPU", "GPU")
        assert result.transfer_time > 0
    finally:
        handler.close()
        pool.close()


def test_groups_and_block_indices_place_blocks_in_host_blocks(ms_mode):
    """A device spec of KV cache groups: each group starts a new host block, skips block_index % factor
    device blocks of its first one (a load of a prefix's unaligned tail), and an empty group takes none."""
    factor = 3
    pool, handler = make_handler(factor)
    try:
        caches, host_before = snapshot(pool)
        # group 0: 2 blocks from logical block 4 (skip 1: slots 1, 2 of host block 3);
        # group 1: empty; group 2: 4 blocks from logical block 0 (host blocks 0 and 4, the last one partly)
        device = [5, 7, 0, 11, 2, 9]
        spec = DeviceBlocksSpec(device, group_sizes=[2, 0, 4], block_indices=[4, 9, 0])
        handler.transfer_async(3, (HostBlocksSpec([3, 0, 4]), spec))
        finish(handler, [3])
        slots = slots_of([3], factor, skip=1, count=2) + slots_of([0, 4], factor, count=4)
        assert slots == [10, 11, 0, 1, 2, 12]
        expected = caches.copy()
        expected[:, device] = host_before[:, slots]
        np.testing.assert_array_equal(snapshot(pool)[0], expected)

        # the same groups stored: the slots written are those, nothing else
        handler.transfer_async(4, (DeviceBlocksSpec([1, 3, 4, 6, 8, 10], [2, 0, 4], [4, 9, 0]),
                                   HostBlocksSpec([2, 1, 4])))
        finish(handler, [4])
        expected_host = host_before.copy()
        expected_host[:, slots_of([2], factor, skip=1, count=2) + slots_of([1, 4], factor, count=4)] = \
            expected[:, [1, 3, 4, 6, 8, 10]]
        np.testing.assert_array_equal(host_view(pool), expected_host)
    finally:
        handler.close()
        pool.close()


def test_vllms_own_spec_objects_work_unchanged(ms_mode):
    """vLLM's specs: block_ids a numpy int64 array, group_sizes a tuple, medium() a staticmethod."""
    class GPULoadStoreSpec:
        def __init__(self, block_ids, group_sizes, block_indices=None):
            self.block_ids = np.array(block_ids, dtype=np.int64)
            self.group_sizes, self.block_indices = group_sizes, block_indices

        @staticmethod
        def medium():
            return "GPU"

    class CPULoadStoreSpec:
        def __init__(self, block_ids):
            self.block_ids = np.array(block_ids, dtype=np.int64)

        @staticmethod
        def medium():
            return "CPU"

    pool, handler = make_handler(2)
    try:
        caches, host_before = snapshot(pool)
        handler.transfer_async(10, (GPULoadStoreSpec([4, 1], (2,)), CPULoadStoreSpec([3])))
        handler.transfer_async(11, (CPULoadStoreSpec([3]), GPULoadStoreSpec([6, 7], (2,), (0,))))
        assert [r.job_id for r in finish(handler, [10, 11])] == [10, 11]
        np.testing.assert_array_equal(snapshot(pool)[0][:, [6, 7]], caches[:, [4, 1]])
    finally:
        handler.close()
        pool.close()


def test_jobs_are_reported_once_in_order_and_wait_takes_a_subset(ms_mode):
    pool, handler = make_handler(1)
    try:
        hold = Hold()
        for job, (d, h) in enumerate([(0, 0), (1, 1), (2, 2)], start=20):
            handler.transfer_async(job, (DeviceBlocksSpec([d]), HostBlocksSpec([h])))
        assert handler.get_finished() == []               # the transfer streams are held
        handler.wait({99, 5})                             # ids it does not know are ignored, without blocking
        hold.release()
        handler.wait({21})                                # jobs 20 and 21 have finished (one stream, in order)
        reported = handler.get_finished()
        assert [r.job_id for r in reported][:2] == [20, 21]
        while len(reported) < 3:
            reported += handler.get_finished()
        assert [r.job_id for r in reported] == [20, 21, 22] and all(r.success for r in reported)
        assert handler.get_finished() == []
        handler.wait({20, 21, 22})                        # reported jobs: nothing to wait for
        handler.transfer_async(20, (DeviceBlocksSpec([3]), HostBlocksSpec([3])))  # a reported id may come again
        assert [r.job_id for r in finish(handler, [20])] == [20]
    finally:
        handler.close()
        pool.close()


@pytest.mark.parametrize("second", ["load_what_was_stored", "load_into_what_is_stored", "store_again"])
def test_transfers_over_the_same_blocks_run_in_submission_order(ms_mode, second):
    """A transfer over blocks of one still in flight waits for it (the pool would refuse it otherwise):
    a load of host blocks being stored gets the stored bytes; a load into device blocks being stored
    does not change what the store reads."""
    factor = 2
    pool, handler = make_handler(factor)
    try:
        caches, host_before = snapshot(pool)
        hold = Hold()
        handler.transfer_async(1, (DeviceBlocksSpec([0, 1]), HostBlocksSpec([4])))
        hold.release(after=0.2)  # transfer_async below blocks until job 1 has finished
        if second == "load_what_was_stored":
            handler.transfer_async(2, (HostBlocksSpec([4]), DeviceBlocksSpec([5, 6])))
        elif second == "load_into_what_is_stored":
            handler.transfer_async(2, (HostBlocksSpec([2]), DeviceBlocksSpec([1, 0])))
        else:
            handler.transfer_async(2, (DeviceBlocksSpec([1, 0]), HostBlocksSpec([3])))
        if second.startswith("load"):  # the pool still guards a load's destination until it is reported
            with pytest.raises(TransferPending, match="written by swap_in job"):
                pool.check_readable([5, 6] if second == "load_what_was_stored" else [1, 0])
        assert [r.job_id for r in finish(handler, [2])] == [1, 2]
        expected_caches, expected_host = caches.copy(), host_before.copy()
        expected_host[:, [8, 9]] = caches[:, [0, 1]]
        if second == "load_what_was_stored":
            expected_caches[:, [5, 6]] = caches[:, [0, 1]]
        elif second == "load_into_what_is_stored":
            expected_caches[:, [1, 0]] = host_before[:, [4, 5]]
        else:
            expected_host[:, [6, 7]] = caches[:, [1, 0]]
        np.testing.assert_array_equal(snapshot(pool)[0], expected_caches)
        np.testing.assert_array_equal(host_view(pool), expected_host)
    finally:
        handler.close()
        pool.close()


BAD_SPECS = [
    ("not a pair", lambda: DeviceBlocksSpec([0]), TypeError, r"spec must be a pair \(src_spec, dst_spec\)"),
    ("not a spec", lambda: ([0, 1], HostBlocksSpec([0])), TypeError, r"spec\[0\] must be a block spec"),
    ("two device specs", lambda: (DeviceBlocksSpec([0, 1]), DeviceBlocksSpec([2, 3])), ValueError,
     "spec: a transfer goes GPU -> CPU .* got GPU -> GPU"),
    ("device id out of range", lambda: (DeviceBlocksSpec([0, 12]), HostBlocksSpec([0])), ValueError,
     r"spec\[0\]\.block_ids: device block\(s\) \[12\] out of range \[0, 12\)"),
    ("negative device id", lambda: (HostBlocksSpec([0]), DeviceBlocksSpec([-1, 0])), ValueError,
     r"spec\[1\]\.block_ids: device block\(s\) \[-1\] out of range"),
    ("host id out of range", lambda: (DeviceBlocksSpec([0, 1]), HostBlocksSpec([5])), ValueError,
     r"spec\[1\]\.block_ids: host block\(s\) \[5\] out of range \[0, 5\)"),
    ("float ids", lambda: (DeviceBlocksSpec([0.0, 1.0]), HostBlocksSpec([0])), TypeError,
     r"spec\[0\]\.block_ids must be a 1-D sequence of ints"),
    ("too few host blocks", lambda: (DeviceBlocksSpec([0, 1, 2]), HostBlocksSpec([0])), ValueError,
     r"spec\[1\]\.block_ids: the 3 device blocks need 2 host blocks of 2 device blocks each .* got 1"),
    ("too many host blocks", lambda: (HostBlocksSpec([0, 1]), DeviceBlocksSpec([0, 1])), ValueError,
     r"spec\[0\]\.block_ids: the 2 device blocks need 1 host blocks .* got 2"),
    ("group sizes", lambda: (DeviceBlocksSpec([0, 1, 2], group_sizes=[1, 1]), HostBlocksSpec([0, 1])),
     ValueError, r"spec\[0\]\.group_sizes = \[1, 1\] add up to 2, not to the 3 block_ids"),
    ("block indices", lambda: (HostBlocksSpec([0]), DeviceBlocksSpec([0, 1], [2], [0, 0])), ValueError,
     r"spec\[1\]\.block_indices has 2 values for 1 groups"),
    ("negative group size", lambda: (DeviceBlocksSpec([0, 1], [3, -1]), HostBlocksSpec([0])), ValueError,
     r"spec\[0\]\.group_sizes must hold non-negative ints"),
    ("host block twice", lambda: (DeviceBlocksSpec([0, 1, 2, 3]), HostBlocksSpec([1, 1])), ValueError,
     r"spec\[1\]: destinations given twice .*: \[2, 3\]"),
    ("device block twice", lambda: (DeviceBlocksSpec([4, 4]), HostBlocksSpec([1])), ValueError,
     r"spec\[0\]: sources given twice .*: \[4\]"),
]


@pytest.mark.parametrize("make_spec, error, match", [case[1:] for case in BAD_SPECS],
                         ids=[case[0] for case in BAD_SPECS])
def test_bad_specs_name_the_argument_and_write_nothing(make_spec, error, match):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    pool, handler = make_handler(2)
    try:
        before = snapshot(pool)
        with pytest.raises(error, match=match):
            handler.transfer_async(1, make_spec())
        for got, want in zip(snapshot(pool), before):
            np.testing.assert_array_equal(got, want)
        assert handler.get_finished() == [] and handler.queue.pending == []
        assert pool.num_free_blocks == 0 and pool.num_free_host_blocks == 0  # the handler holds every block
        handler.transfer_async(1, (DeviceBlocksSpec([0, 1]), HostBlocksSpec([0])))  # still works, same id
        assert [r.job_id for r in finish(handler, [1])] == [1]
    finally:
        handler.close()
        pool.close()


def test_bad_job_ids_and_construction_name_the_argument():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    pool, handler = make_handler(2)
    try:
        spec = (DeviceBlocksSpec([0, 1]), HostBlocksSpec([0]))
        with pytest.raises(TypeError, match="job_id must be an int, not bool"):
            handler.transfer_async(True, spec)
        hold = Hold()
        handler.transfer_async(4, spec)
        with pytest.raises(ValueError, match="job_id 4 is still in flight or unreported"):
            handler.transfer_async(4, (DeviceBlocksSpec([2, 3]), HostBlocksSpec([1])))
        hold.release()
        handler.wait({4})
        with pytest.raises(ValueError, match="job_id 4 is still in flight or unreported"):  # not reported yet
            handler.transfer_async(4, (DeviceBlocksSpec([2, 3]), HostBlocksSpec([1])))
        with pytest.raises(TypeError, match="job_ids must be a set of job ids, not int"):
            handler.wait(4)
        with pytest.raises(TypeError, match="pool must be a BlockPool"):
            OffloadingHandler(object())
        with pytest.raises(ValueError, match="the handler keeps the pool's books"):
            OffloadingHandler(pool, block_size_factor=2)  # its blocks are this handler's
        handler.close()
        assert pool.num_free_blocks == NUM_BLOCKS and pool.num_free_host_blocks == 2 * NUM_HOST_BLOCKS
        with pytest.raises(ValueError, match="OffloadingHandler is closed"):
            handler.transfer_async(5, spec)
        with pytest.raises(ValueError, match=r"block_size_factor = 3 must divide the pool's 10 host blocks"):
            OffloadingHandler(pool, block_size_factor=3)
        with pytest.raises(ValueError, match="block_size_factor must be >= 1"):
            OffloadingHandler(pool, block_size_factor=0)
    finally:
        handler.close()
        pool.close()


@pytest.mark.parametrize("seen_by", ["wait", "get_finished"])
def test_a_failed_copy_is_reported_with_success_false(monkeypatch, seen_by):
    """The queue raises a job's error when the copy failed on its stream: the handler reports the job with
    success=False instead of raising, keeps every block and goes on. The error is injected into the
    queue call that retires the job, after the real call (so the queue's books are those of a retired job)."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    pool, handler = make_handler(1)
    try:
        name = "wait" if seen_by == "wait" else "finished"
        real = getattr(handler.queue, name)

        def failing(*args):
            before = handler.queue.pending
            result = real(*args)
            if handler.queue.pending != before:
                raise RuntimeError("injected copy failure")
            return result

        monkeypatch.setattr(handler.queue, name, failing)
        handler.transfer_async(1, (DeviceBlocksSpec([0]), HostBlocksSpec([0])))
        if seen_by == "wait":
            handler.wait({1})  # does not raise
        results = []
        while not results:
            results = handler.get_finished()
        monkeypatch.undo()
        assert [(r.job_id, r.success) for r in results] == [(1, False)]
        assert pool.num_free_blocks == 0 and pool.num_free_host_blocks == 0
        handler.transfer_async(2, (DeviceBlocksSpec([1]), HostBlocksSpec([1])))
        assert [(r.job_id, r.success) for r in finish(handler, [2])] == [(2, True)]
    finally:
        handler.close()
        pool.close()
