"""fusec.random: fusec's Philox streams (not NumPy's values): determinism for a seed, dtypes
and shapes, and the distributions' moments and ranges within tolerances."""
import numpy as np
import pytest

import fusec
import fusec.random as fr

N = 20000


def values(a):
    assert isinstance(a, fusec.ndarray)
    return fusec.asnumpy(a)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_uniform_range_mean_var(dtype):
    g = fr.default_rng(7)
    a = g.random(N, dtype=dtype)
    assert a.dtype == dtype and a.shape == (N,)
    v = values(a)
    assert v.min() >= 0 and v.max() < 1
    assert abs(v.mean() - 0.5) < 0.01 and abs(v.var() - 1 / 12) < 0.005
    u = values(g.uniform(-2, 3, (100, 200)))
    assert u.shape == (100, 200) and u.min() >= -2 and u.max() < 3
    assert abs(u.mean() - 0.5) < 0.05


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_normal_moments(dtype):
    g = fr.default_rng(11)
    z = values(g.standard_normal((N,), dtype=dtype))
    assert z.dtype == dtype
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.03
    n = values(g.normal(5.0, 2.0, N, dtype=dtype))
    assert abs(n.mean() - 5) < 0.06 and abs(n.std() - 2) < 0.06
    with pytest.raises(ValueError):
        g.normal(0, -1, 3)


def test_integers_and_exponential():
    g = fr.default_rng(3)
    k = g.integers(-5, 10, size=(N,), dtype=np.int16)
    assert k.dtype == np.int16
    v = values(k)
    assert v.min() == -5 and v.max() == 9 and abs(v.mean() - 2) < 0.1
    e = values(g.integers(4, size=N, endpoint=True))
    assert e.dtype == np.int64 and set(np.unique(e)) == {0, 1, 2, 3, 4}
    x = values(g.exponential(2.0, N))
    assert x.min() >= 0 and abs(x.mean() - 2) < 0.06
    b = values(g.binomial(1, 0.25, N))
    assert b.dtype == np.int64 and set(np.unique(b)) == {0, 1} and abs(b.mean() - 0.25) < 0.02
    with pytest.raises(ValueError):
        g.integers(5, 5)
    with pytest.raises(NotImplementedError):
        g.binomial(3, 0.5)


def test_determinism_and_streams():
    a, b = fr.default_rng(42), fr.default_rng(42)
    x1, x2 = values(a.random(100)), values(b.random(100))
    np.testing.assert_array_equal(x1, x2)
    assert not np.array_equal(values(a.random(100)), x1)  # the next draw is the next stream
    assert not np.array_equal(values(fr.default_rng(43).random(100)), x1)
    # stream 0 of a seed is fc_random_uniform's: the same values in any fusion
    np.testing.assert_array_equal(values(fr.default_rng(42).random(100) * 2), x1 * 2)
    g = fr.default_rng(5)
    assert fr.default_rng(g) is g and "stream=0" in repr(g)


def test_permutation_shuffle_choice():
    g = fr.default_rng(9)
    p = values(g.permutation(50))
    assert p.dtype == np.int64 and sorted(p) == list(range(50))
    a = np.arange(24.0).reshape(6, 4)
    s = values(g.permutation(a))
    assert s.shape == (6, 4) and sorted(map(tuple, s)) == sorted(map(tuple, a))
    x = fusec.asarray(a)
    alias = x
    g.shuffle(x)  # in place: the object is rebound to the shuffled value
    assert alias is x and sorted(map(tuple, values(x))) == sorted(map(tuple, a))
    c = values(g.choice(10, (4, 2), replace=False))
    assert c.shape == (4, 2) and len(set(c.ravel())) == 8 and c.max() < 10
    rows = values(g.choice(fusec.asarray(a), 3))
    assert rows.shape == (3, 4) and all(tuple(r) in set(map(tuple, a)) for r in rows)
    with pytest.raises(ValueError):
        values(g.choice(3, 5, replace=False))
    with pytest.raises(NotImplementedError):
        g.choice(3, 2, p=[0.2, 0.3, 0.5])
    with pytest.raises(TypeError):
        g.shuffle(a)


def test_legacy_module_functions():
    fr.seed(1)
    a = fr.rand(3, 4)
    fr.seed(1)
    np.testing.assert_array_equal(values(fr.rand(3, 4)), values(a))
    assert a.shape == (3, 4) and a.dtype == np.float64
    assert fr.randn(5).shape == (5,)
    assert fr.randn().shape == ()  # size None: a 0-d array, as CuPy gives
    assert fr.random((2,), dtype=np.float32).dtype == np.float32
    r = values(fr.randint(3, 7, size=1000))
    assert r.dtype == np.int64 and r.min() == 3 and r.max() == 6
    assert fr.uniform(1, 2, 3).shape == (3,) and fr.normal(0, 1, (2, 2)).shape == (2, 2)
    assert fr.exponential(1.0, 4).shape == (4,) and fr.permutation(5).shape == (5,)
    assert fr.choice(5, 2).shape == (2,)
    assert isinstance(fr.get_random_state(), fr.Generator)
