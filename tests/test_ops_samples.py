"""The table of sample calls (ms_memcopy/samples.py): one per op of configs/ops/*.yaml, each run in
GRAPH_MODE and PYNATIVE_MODE (in a Cell, in ms.jit and eagerly) and compared against numpy."""
import pytest

import mindspore as ms

from ms_memcopy import HostBuffer, op_defs, ops, samples

from _ops_support import call

OP_NAMES = list(op_defs.all_op_defs())


def test_every_op_has_a_sample_and_every_sample_an_op():
    """A new op of configs/ops cannot be added without a sample call (the lists the tests and
    npu-check run come from this table)."""
    assert sorted(samples.SAMPLES) == sorted(OP_NAMES)
    with pytest.raises(KeyError, match=r"configs/ops defines 'no_such_op' but ms_memcopy/samples.py has no sample"):
        samples.sample("no_such_op", None)


def test_each_sample_builds_its_op():
    """A sample's op is the primitive of that op (held by the public Cell for the variadic forms) and
    an instance of the public class of its label."""
    classes = set()
    with HostBuffer(samples.HOST_BUFFER_BYTES) as buf:
        for name in OP_NAMES:
            sample = samples.sample(name, buf)
            primitive = getattr(sample.op, "primitive", sample.op)
            assert primitive._op_def.name == name
            public = sample.label.split("(")[0]
            if name not in samples.GRADIENT_ONLY:
                assert type(sample.op) is getattr(ops, public), name
                classes.add(public)
    public_classes = {name for name in ops.__all__ if isinstance(getattr(ops, name), type)}
    assert classes == public_classes  # every public class has its forms in the table


@pytest.mark.parametrize("name", OP_NAMES)
def test_sample_against_numpy(ms_mode, style, name):
    with HostBuffer(samples.HOST_BUFFER_BYTES) as buf:
        buf.numpy()[:] = 0xA5
        sample = samples.sample(name, buf)
        sample.check(call(style, sample.op, *sample.inputs))


def test_a_wrong_expectation_fails():
    """check compares values and dtypes: it can fail."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    with HostBuffer(samples.HOST_BUFFER_BYTES) as buf:
        sample = samples.sample("memcpy_batch_d2h", buf)
        outputs = sample.op(*sample.inputs)
        sample.check(outputs)
        sample.writes[1][2][0, 0] += 1
        with pytest.raises(AssertionError, match=r"MemcpyBatch\(d2h\): host_buffer\[64:88\]"):
            sample.check(outputs)
        sample = samples.sample("memcpy_batch_h2d", buf)
        outputs = sample.op(*sample.inputs)
        with pytest.raises(AssertionError, match="dtype int32, expected int16"):
            sample.check((outputs[0], outputs[1].astype(ms.int32)))
        with pytest.raises(AssertionError, match="expected a tuple of 2 tensors"):
            sample.check(outputs[0])
