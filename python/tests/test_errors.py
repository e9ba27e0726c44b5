"""fusec's statuses raise NumPy's exception types, with fusec's messages; bad arguments never
crash."""
import numpy as np
import pytest

import fusec


def test_status_mapping():
    x = fusec.zeros((2, 3))
    with pytest.raises(ValueError, match="broadcast"):           # FC_ERR_SHAPE
        x + fusec.zeros((4,))
    with pytest.raises(ValueError):
        fusec.reshape(x, (4, 2))
    with pytest.raises(fusec.AxisError) as e:                     # FC_ERR_AXIS
        fusec.sum(x, axis=5)
    assert isinstance(e.value, ValueError) and isinstance(e.value, IndexError)
    with pytest.raises(TypeError):                                # FC_ERR_DTYPE
        fusec.asarray([True]) - fusec.asarray([False])
    with pytest.raises(TypeError):
        fusec.arctan2(fusec.asarray([1j]), 1.0)
    with pytest.raises(IndexError):                               # FC_ERR_INDEX
        x[5]
    with pytest.raises(OverflowError, match="out of bounds"):     # a Python int too large
        fusec.asarray(np.zeros(1, np.int8)) + 1000
    with pytest.raises(ValueError):                               # FC_ERR_VALUE, evaluation
        (fusec.asarray([2]) ** fusec.asarray([-1])).get()
    with pytest.raises(fusec.linalg.LinAlgError, match="Singular matrix"):
        fusec.linalg.solve(fusec.zeros((2, 2)), fusec.ones(2)).get()
    with pytest.raises(MemoryError):                              # FC_ERR_NOMEM
        fusec.eval(fusec.zeros((2**40,)) + 1)  # stored: 8 TiB (a sum of it would fuse away)
    with pytest.raises(ValueError, match="too large"):            # beyond 2**62 bytes
        fusec.zeros((2**40, 2**20), dtype=fusec.float64)


def test_messages_name_the_op():
    with pytest.raises(ValueError) as e:
        fusec.zeros((2, 3)) * fusec.zeros((4, 5))
    assert "multiply" in str(e.value) or "mul" in str(e.value)
    assert "[2, 3]" in str(e.value) and "[4, 5]" in str(e.value)


@pytest.mark.parametrize("bad", [
    lambda: fusec.zeros((-1,)),
    lambda: fusec.zeros((2**63,)),
    lambda: fusec.zeros((1,) * 9),
    lambda: fusec.zeros("abc"),
    lambda: fusec.sum(fusec.zeros(3), axis=float("nan")),
    lambda: fusec.sum(fusec.zeros(3), axis=2**80),
    lambda: fusec.sum(fusec.zeros(3), axis=(0, 0)),
    lambda: fusec.sum(fusec.zeros(3), axis=tuple(range(20))),
    lambda: fusec.reshape(fusec.zeros(4), (2, "x")),
    lambda: fusec.zeros(3)[(0,) * 40],
    lambda: fusec.zeros(3)[None, ..., ...],
    lambda: fusec.asarray(object()),
    lambda: fusec.asarray([1, [2, 3]]),
    lambda: fusec.add(fusec.zeros(3)),
    lambda: fusec.add(fusec.zeros(3), None),
    lambda: fusec.zeros(3, dtype="float128"),
    lambda: fusec.zeros(3, dtype="U4"),
    lambda: fusec.concat([]),
    lambda: fusec.einsum("ij,jk", fusec.zeros((2, 2))),
    lambda: fusec.take(fusec.zeros(3), fusec.asarray([0.5])),
    lambda: fusec.eval(1),
    lambda: fusec._fusec.from_buffer(b"abc", 11, (1,)),
    lambda: fusec._fusec.to_buffer(fusec.zeros(3), bytearray(3)),
    lambda: fusec._fusec.full(99, (1,), 0),
    lambda: fusec.Context(backend=None, device="x"),
])
def test_bad_arguments_raise(bad):
    with pytest.raises((ValueError, TypeError, IndexError, OverflowError, MemoryError,
                        NotImplementedError)):
        r = bad()
        if isinstance(r, fusec.ndarray):
            r.get()


def test_errors_leave_arrays_usable():
    x = fusec.asarray([1.0, 2.0])
    with pytest.raises(ValueError):
        x += fusec.zeros((5,))
    with pytest.raises(IndexError):
        x[7] = 1
    np.testing.assert_array_equal(fusec.asnumpy(x), [1.0, 2.0])
    assert fusec.asnumpy(x * 2).tolist() == [2.0, 4.0]
