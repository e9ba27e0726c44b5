#!/usr/bin/env python3
"""Generates tests/data/ops_*.txt: reference values of fusec's ops, computed by NumPy 2.4 (with
ml_dtypes for bf16), that tests/test_ops_ref.c replays through the public API.

Run with NumPy 2.4 and ml_dtypes (CI has neither, so the output is checked in):

    python3 tests/gen_reference.py

The output is deterministic (fixed seeds). Two local sweeps write larger files in place of
the checked-in ones (regenerate without flags afterwards):
    --full      every ordered pair of dtypes for the binary ops, weak scalars with every dtype,
                reductions over every dtype
    --fuzz N    N random chains of views (over ops_views.txt)

bf16 has no NumPy rules of its own. As fusec's header says, it promotes as f16 does (an f16 and
a bf16 together give f32), so a bf16 case is computed as its f16 twin would be: the inputs are
cast to the loop dtype (bf16 where the twin's loop is f16), the op runs in f32, and the result is
rounded to bf16 (ml_dtypes computes its own bf16 loops the same way). nextafter is the exception
(NATIVE_16BIT): it steps the 16-bit values themselves, so ml_dtypes' bf16 loop is the reference.

erf, erfc and lgamma are not NumPy ufuncs but fusec's extensions (scipy.special's erf, erfc and
gammaln); FloatExtension computes them with Python's math module under NumPy's float rule.

File format: whitespace-separated tokens, so line breaks carry no meaning.
  case NAME                    starts a case; registers are numbered from 0 in order
  a DTYPE NDIM D.. V..         an array from host data (fc_from_host) -> next register
  w KIND V                     a weak scalar: KIND int (decimal), float (hex bits of a double),
                               complex (two of those), bool (0/1) -> next register
  o OP ARGS..                  an op (see test_ops_ref.c for each op's arguments; %N names
                               register N) -> next register
  tol RTOL ATOL                the tolerance of the next float expectation (0 0: exact)
  x DTYPE NDIM D.. V..         the last register's dtype, shape and value
  err STATUS                   building the last register fails with STATUS (a poisoned array)
  evalerr STATUS               it builds, but reading it fails with STATUS
  end
Values are each element's bits in hex (bool 0/1, integers as their unsigned bits, floats as
their IEEE bits, complex as two such words).
"""
import contextlib
import math
import os
import sys
import warnings

import ml_dtypes
import numpy as np

warnings.simplefilter("ignore")
np.seterr(all="ignore")

BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)
DTYPES = [
    ("bool", np.dtype(np.bool_)),
    ("i8", np.dtype(np.int8)), ("i16", np.dtype(np.int16)),
    ("i32", np.dtype(np.int32)), ("i64", np.dtype(np.int64)),
    ("u8", np.dtype(np.uint8)), ("u16", np.dtype(np.uint16)),
    ("u32", np.dtype(np.uint32)), ("u64", np.dtype(np.uint64)),
    ("f16", F16), ("bf16", BF16), ("f32", F32), ("f64", F64), ("c64", C64), ("c128", C128),
]
DT = dict(DTYPES)
NAME = {dt: n for n, dt in DTYPES}
ALL = [n for n, _ in DTYPES]
INTS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
FLOATS = ["f16", "bf16", "f32", "f64"]
COMPLEX = ["c64", "c128"]

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


class Skip(Exception):
    """NumPy has no answer fusec should match (for example a Python int out of bounds)."""


class Expected(Exception):
    """Building the op fails: NumPy raises where fusec must return this status."""

    def __init__(self, status, at_eval=False):
        super().__init__(status)
        self.status = status
        self.at_eval = at_eval


# ---- value encoding ----------------------------------------------------------------------

def is_bf16(x):
    return isinstance(x, np.ndarray) and x.dtype == BF16


def hexbits(arr):
    arr = np.ascontiguousarray(arr)
    dt = arr.dtype
    if dt == np.bool_:
        return ["1" if v else "0" for v in arr.ravel()]
    if dt.kind == "c":
        arr = arr.view(F32 if dt == C64 else F64)
        dt = arr.dtype
    u = arr.view(np.dtype("u%d" % dt.itemsize))
    return ["%x" % int(v) for v in u.ravel()]


def f64hex(v):
    return "%x" % int(np.array([v], dtype=F64).view(np.uint64)[0])


def shape_tokens(shape):
    return [str(len(shape))] + [str(d) for d in shape]


# ---- cases ---------------------------------------------------------------------------------

class Case:
    def __init__(self, out, name):
        self.out = out
        self.tok = ["case", name]
        self.nreg = 0

    def _reg(self):
        self.nreg += 1
        return "%%%d" % (self.nreg - 1)

    def arr(self, a):
        a = np.asarray(a)
        self.tok += ["a", NAME[a.dtype]] + shape_tokens(a.shape) + hexbits(a)
        return self._reg()

    def weak(self, v):
        if isinstance(v, bool):
            self.tok += ["w", "bool", "1" if v else "0"]
        elif isinstance(v, int):
            self.tok += ["w", "int", str(v)]
        elif isinstance(v, float):
            self.tok += ["w", "float", f64hex(v)]
        else:
            self.tok += ["w", "complex", f64hex(v.real), f64hex(v.imag)]
        return self._reg()

    def op(self, *args):
        self.tok += ["o"] + [str(a) for a in args]
        return self._reg()

    def check(self, value, rtol=0.0, atol=0.0):
        """Expects the last register to hold `value` (more ops may follow)."""
        value = np.asarray(value)
        self.tok += ["tol", repr(float(rtol)), repr(float(atol))]
        self.tok += ["x", NAME[value.dtype]] + shape_tokens(value.shape) + hexbits(value)

    def check_error(self, status, at_eval=False):
        self.tok += ["evalerr" if at_eval else "err", status]

    def expect(self, value, rtol=0.0, atol=0.0):
        self.check(value, rtol, atol)
        self.finish()

    def error(self, status, at_eval=False):
        self.check_error(status, at_eval)
        self.finish()

    def finish(self):
        self.tok.append("end")
        self.out.append(" ".join(self.tok))


class Writer:
    """Collects the cases of tests/data/NAME; tests/gen_composite.py subclasses it."""
    CASE = Case
    GENERATOR = "tests/gen_reference.py"

    def __init__(self, name):
        self.name = name
        self.lines = []
        self.count = 0

    def case(self, name):
        self.count += 1
        label = "".join(ch if ch.isalnum() or ch in "()[]<>,.:+-=_" else "_" for ch in name)
        return self.CASE(self.lines, "%s#%d" % (label, self.count))

    def save(self):
        write_table(self.name, self.lines, self.GENERATOR)


def write_table(name, lines, generator):
    """Writes tests/data/NAME: a header naming the generator, then one line a case."""
    path = os.path.join(OUT_DIR, name)
    with open(path, "w") as f:
        f.write("# generated by %s; do not edit\n" % generator)
        for line in lines:
            f.write(line + "\n")
    print("%s: %d cases, %d bytes" % (name, len(lines), os.path.getsize(path)))


# ---- random inputs ---------------------------------------------------------------------------

rng = np.random.default_rng(20240611)

FLOAT_DOMAINS = {
    "any": (-4.0, 4.0), "pos": (0.1, 10.0), "unit": (-0.95, 0.95), "ge1": (1.05, 10.0),
    "gtm1": (-0.9, 10.0), "exp": (-5.0, 5.0), "tan": (-1.4, 1.4), "base": (0.5, 3.0),
    "expo": (-3.0, 3.0), "wide": (-10.0, 10.0), "near1": (0.6, 1.5),
}
INT_DOMAINS = {
    "any": None, "pos": (1, 100), "unit": (-1, 1), "ge1": (1, 10), "gtm1": (1, 100),
    "exp": (-5, 5), "tan": (-1, 1), "base": (-5, 5), "expo": (1, 7), "wide": (-100, 100),
    "small": (-3, 3), "near1": (1, 2),
}


def rand(name, shape, dom="any", zeros=False):
    """Random values of dtype `name`; never zero unless zeros=True."""
    dt = DT[name]
    n = int(np.prod(shape)) if len(shape) else 1
    if name == "bool":
        v = rng.random(n) < 0.5
        return v.reshape(shape)
    if name in INTS:
        info = np.iinfo(dt)
        lo, hi = INT_DOMAINS.get(dom) or (int(info.min), int(info.max))
        lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
        v = rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64 if name != "u64" else np.uint64)
        if not zeros:
            while True:
                z = v == 0
                if not z.any():
                    break
                v[z] = rng.integers(lo, hi, size=int(z.sum()), endpoint=True, dtype=v.dtype)
        return v.astype(dt).reshape(shape)
    lo, hi = FLOAT_DOMAINS.get(dom, FLOAT_DOMAINS["any"])

    def draw():
        return rng.uniform(lo, hi, size=n)

    if dt.kind == "c":
        v = (draw() + 1j * draw()).astype(dt)
    else:
        v = draw().astype(dt)
    if not zeros:
        v[v == 0] = dt.type(hi / 2) if dt.kind != "c" else dt.type(hi / 2 + 0.25j)
    return v.reshape(shape)


def choice(name, values, shape):
    v = np.array(rng.choice(np.array(values, dtype=object), size=int(np.prod(shape))).tolist())
    if DT[name].kind == "c":
        v = v.astype(np.complex128)
    return v.astype(DT[name]).reshape(shape)


# ---- NumPy as the judge ----------------------------------------------------------------------

class FloatExtension:
    """A float function NumPy has no ufunc for (fusec's extensions: scipy.special's erf, erfc
    and gammaln, named lgamma), as fusec defines it: the loop dtype of NumPy's own float
    functions (np.cbrt's: bool and integers to the smallest float that holds them, complex
    refused), each element computed in double by Python's math module and rounded once.
    math.lgamma (CPython's own code, a few ulps from exact) stands in for scipy.special.gammaln,
    which needs SciPy; its poles (0, -1, -2, ...) give +inf, as gammaln's and C's do, where
    math raises."""

    def __init__(self, fn):
        self.fn = fn

    def resolve_dtypes(self, sig):
        return np.cbrt.resolve_dtypes(sig)

    def _one(self, v):
        try:
            return self.fn(v)
        except ValueError:  # a pole of lgamma
            return math.inf
        except OverflowError:
            return math.inf

    def __call__(self, x):
        x = np.asarray(x)
        loop = self.resolve_dtypes((x.dtype, None))[0]  # TypeError for complex, as NumPy
        v = x.astype(loop).astype(F64)
        r = np.array([self._one(float(e)) for e in v.ravel()], F64).reshape(v.shape)
        return r.astype(loop)


def gelu_tanh(v):
    """torch's gelu(approximate='tanh') in double, as x / (1 + exp(-2 z)) (the same function as
    x (1 + tanh z) / 2 without its cancellation); exp overflowing means the result is -0."""
    z = math.sqrt(2.0 / math.pi) * (v + 0.044715 * (v * v * v))
    try:
        return v / (1.0 + math.exp(-2.0 * z))
    except OverflowError:
        return math.copysign(0.0, v)


EW = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.true_divide,
    "floor_divide": np.floor_divide, "remainder": np.remainder, "power": np.power,
    "arctan2": np.arctan2, "maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax,
    "fmin": np.fmin, "less": np.less, "less_equal": np.less_equal, "greater": np.greater,
    "greater_equal": np.greater_equal, "equal": np.equal, "not_equal": np.not_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "left_shift": np.left_shift, "right_shift": np.right_shift,
    "negative": np.negative, "abs": np.absolute, "sign": np.sign, "sqrt": np.sqrt,
    "cbrt": np.cbrt, "square": np.square, "reciprocal": np.reciprocal, "exp": np.exp,
    "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2, "log10": np.log10,
    "log1p": np.log1p, "sin": np.sin, "cos": np.cos, "tan": np.tan, "arcsin": np.arcsin,
    "arccos": np.arccos, "arctan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "arcsinh": np.arcsinh, "arccosh": np.arccosh, "arctanh": np.arctanh,
    "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint, "isnan": np.isnan,
    "isinf": np.isinf, "isfinite": np.isfinite, "logical_not": np.logical_not,
    "invert": np.invert, "real": np.real, "imag": np.imag, "conj": np.conjugate,
    "angle": np.angle, "where": np.where, "clip": np.clip,
    "hypot": np.hypot, "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2,
    "copysign": np.copysign, "nextafter": np.nextafter, "fmod": np.fmod, "signbit": np.signbit,
    "erf": FloatExtension(math.erf), "erfc": FloatExtension(math.erfc),
    "lgamma": FloatExtension(math.lgamma),
    "gelu": FloatExtension(lambda v: 0.5 * v * math.erfc(-v / math.sqrt(2.0))),
    "gelu_tanh": FloatExtension(lambda v: gelu_tanh(v)),
}
BINARY = ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power",
          "arctan2", "maximum", "minimum", "fmax", "fmin", "less", "less_equal", "greater",
          "greater_equal", "equal", "not_equal", "logical_and", "logical_or", "logical_xor",
          "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"]
UNARY = ["negative", "abs", "sign", "sqrt", "cbrt", "square", "reciprocal", "exp", "exp2",
         "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos",
         "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "floor", "ceil",
         "trunc", "rint", "isnan", "isinf", "isfinite", "logical_not", "invert", "real", "imag",
         "conj", "angle"]
# Ops whose float results NumPy computes exactly (correctly rounded, or exact by construction):
# fusec must match their bits.
EXACT = {"add", "subtract", "multiply", "divide", "floor_divide", "remainder", "maximum",
         "minimum", "fmax", "fmin", "negative", "abs", "sign", "sqrt", "square", "reciprocal",
         "floor", "ceil", "trunc", "rint", "real", "imag", "conj", "where", "clip", "cast",
         "copysign", "nextafter", "fmod"}
# ... except for complex operands, where NumPy's SIMD loops may fuse multiply-adds.
EXACT_COMPLEX = {"add", "subtract", "negative", "real", "imag", "conj", "where", "rint", "cast",
                 "maximum", "minimum", "fmax", "fmin", "clip"}

# Ops whose 16-bit loops work on the 16-bit values themselves rather than in f32 (NumPy's
# npy_half_nextafter; ml_dtypes' bf16 loop, which fusec follows for bf16).
NATIVE_16BIT = {"nextafter"}

INT_POWER_MSG = "Integers to negative integer powers are not allowed"


def call(op, args):
    with np.errstate(all="ignore"):
        try:
            r = EW[op](*args)
        except OverflowError as e:
            raise Skip(str(e))
        except ValueError as e:
            if INT_POWER_MSG in str(e):
                raise Expected("FC_ERR_VALUE", at_eval=True)
            raise
        except TypeError:
            raise Expected("FC_ERR_DTYPE")
    return np.asarray(r)


def twin(x):
    """The f16 twin of a bf16 operand (for finding dtypes)."""
    return x.astype(F16) if is_bf16(x) else x


def loop_dtype(op, args):
    """NumPy's loop dtype for the op over these operands (for the twin when bf16 is involved)."""
    # a Python bool promotes as np.bool_ does (NEP 50 makes only int, float, complex weak)
    sig = tuple(a.dtype if isinstance(a, np.ndarray) else
                np.dtype(np.bool_) if isinstance(a, bool) else type(a) for a in args)
    if op == "where":
        return np.result_type(args[1], args[2])
    if op == "clip":
        from numpy._core import umath
        return umath.clip.resolve_dtypes(sig + (None,))[0]
    if op in ("real", "imag", "conj"):
        return args[0].dtype
    if op == "angle":
        return np.arctan2.resolve_dtypes((int, args[0].dtype, None))[0] if args[0].dtype.kind != "c" else args[0].dtype
    try:
        return EW[op].resolve_dtypes(sig + (None,))[0]
    except TypeError:
        raise Expected("FC_ERR_DTYPE")


def reference(op, args):
    """NumPy's result of op(args), with bf16 computed as its f16 twin's rule says."""
    if not any(is_bf16(a) for a in args):
        return call(op, args)
    twins = [twin(a) for a in args]
    res_twin = call(op, twins)  # raises where the twin is rejected
    has_f16 = any(isinstance(a, np.ndarray) and a.dtype == F16 for a in args)
    loop = loop_dtype(op, twins)
    if has_f16 or loop != F16:
        # the loop is wider than bf16 (or f16 meets bf16: f32): bf16 -> f32 is exact
        wide = [a.astype(F32) if is_bf16(a) else a for a in args]
        if has_f16 and loop == F16:
            wide = [a.astype(F32) if isinstance(a, np.ndarray) and a.dtype == F16 else a
                    for a in wide]
        r = call(op, wide)
        if has_f16 and res_twin.dtype == F16:
            assert r.dtype == F32
        return r
    if op in NATIVE_16BIT:
        # ml_dtypes' own bf16 loop (nextafter steps bf16 values, which f32 cannot do)
        conv = [a.astype(BF16) if isinstance(a, np.ndarray) else np.asarray(a).astype(BF16)[()]
                for a in args]
        return call(op, conv)
    # a bf16 loop: inputs cast to bf16, computed in f32, rounded to bf16
    conv = []
    for i, a in enumerate(args):
        if op == "where" and i == 0:
            conv.append(a)
        elif isinstance(a, np.ndarray):
            conv.append(a.astype(BF16).astype(F32))
        else:
            conv.append(np.asarray(a).astype(BF16).astype(F32)[()])
    r = call(op, conv)
    if res_twin.dtype == F16:
        return r.astype(BF16)
    if res_twin.dtype == C64 or res_twin.dtype == np.bool_:
        return r.astype(res_twin.dtype)
    raise AssertionError("bf16 twin result %s for %s" % (res_twin.dtype, op))


def tolerance(op, dtype, exact_ok=True, complex_in=False):
    """(rtol, atol) for comparing fusec's result of `op` with NumPy's."""
    if dtype.kind in "biu":
        return 0.0, 0.0
    complex_ = dtype.kind == "c" or complex_in
    if exact_ok and (op in EXACT_COMPLEX or (op in EXACT and not complex_)):
        return 0.0, 0.0
    real = {C64: F32, C128: F64}.get(dtype, dtype)
    if real == BF16:
        eps = 2.0 ** -7
        return eps, eps * 2 ** -10
    if real == F16:
        eps = 2.0 ** -10
        return eps, 2.0 ** -24
    if real == F32:
        return 2.0 ** -20, 2.0 ** -21
    return 2.0 ** -46, 2.0 ** -48


def emit_ew(w, label, op, args, tol=None, case=None, regs=None):
    """An elementwise op over arrays (fc_from_host) or Python scalars (weak scalars): a case of
    its own, or one more check in `case` over its registers `regs`."""
    try:
        expected = reference(op, args)
    except Skip:
        return
    except Expected as e:
        expected = e
    c = case or w.case(label)
    if regs is None:
        regs = [c.arr(a) if isinstance(a, np.ndarray) else c.weak(a) for a in args]
    c.op(op, *regs)
    if isinstance(expected, Expected):
        c.check_error(expected.status, expected.at_eval)
    else:
        cin = any(np.asarray(a).dtype.kind == "c" for a in args)
        rtol, atol = tol if tol else tolerance(op, expected.dtype, complex_in=cin)
        c.check(expected, rtol, atol)
    if case is None:
        c.finish()


# ---- elementwise -----------------------------------------------------------------------------

UNARY_DOMAIN = {
    "sqrt": "pos", "log": "pos", "log2": "pos", "log10": "pos", "log1p": "gtm1",
    "exp": "exp", "exp2": "exp", "expm1": "exp", "tan": "tan", "arcsin": "unit",
    "arccos": "unit", "arctanh": "unit", "arccosh": "ge1", "sin": "wide", "cos": "wide",
    "sinh": "exp", "cosh": "exp", "reciprocal": "any", "floor": "wide", "ceil": "wide",
    "trunc": "wide", "rint": "wide",
}
BINARY_DOMAIN = {
    "power": ("base", "expo"), "divide": ("any", "any"), "floor_divide": ("wide", "any"),
    "remainder": ("wide", "any"), "left_shift": ("any", "shift"), "right_shift": ("any", "shift"),
}
# operands from a small set, so that ties and equal values occur
TIES = {"maximum", "minimum", "fmax", "fmin", "less", "less_equal", "greater", "greater_equal",
        "equal", "not_equal", "logical_and", "logical_or", "logical_xor"}
MIXED_PAIRS = [
    ("i8", "u8"), ("i16", "u32"), ("i64", "u64"), ("u8", "f16"), ("i16", "f16"), ("i32", "f32"),
    ("i64", "f32"), ("f16", "bf16"), ("bf16", "i8"), ("bf16", "f32"), ("f32", "c64"),
    ("f64", "c64"), ("bool", "i8"), ("bool", "f32"), ("u64", "c64"), ("i8", "c64"),
    ("u16", "i32"), ("f16", "f32"), ("bf16", "u16"), ("i32", "u8"),
]
# --full (a local sweep, not checked in): every ordered pair of dtypes, weak scalars with all
FULL = "--full" in sys.argv
FULL_PAIRS = [(a, b) for a in ALL for b in ALL if a != b]
WEAK_VALUES = {"int": 3, "float": 0.7, "complex": 0.5 - 1.25j, "bool": True}
WEAK_TARGETS = ["bool", "i8", "u8", "i32", "u64", "f16", "bf16", "f32", "f64", "c64"]


def operand(name, op, side, shape):
    dom = "any"
    if op in BINARY_DOMAIN:
        dom = BINARY_DOMAIN[op][side]
    if op in TIES:
        if name == "bool":
            return rand("bool", shape)
        if DT[name].kind == "c":
            return choice(name, [1 + 1j, 1 - 1j, 2 + 0.5j, -1 + 1j, 0.5 + 0j, 0j], shape)
        return choice(name, [1, 2, 3, 0] if name[0] == "u" else [-2, 1, 3, 0], shape)
    if dom == "shift":
        bits = DT[name].itemsize * 8 if name != "bool" else 8
        return rand(name, shape, "any", zeros=True) if name == "bool" else \
            np.array(rng.integers(0, bits, size=int(np.prod(shape))), dtype=DT[name]).reshape(shape) \
            if name in INTS else rand(name, shape)
    return rand(name, shape, dom)


def gen_elementwise():
    w = Writer("ops_ew.txt")
    shape = (2, 3)
    for op in UNARY:
        dom = UNARY_DOMAIN.get(op, "any")
        for name in ALL:
            x = rand(name, shape, dom)
            if op in ("arcsin", "arccos", "arctanh") and name in INTS:
                x = choice(name, [1] if name[0] == "u" else [-1, 1], shape)
            emit_ew(w, "%s(%s)" % (op, name), op, [x])
    for op in BINARY:
        for name in ALL:
            emit_ew(w, "%s(%s,%s)" % (op, name, name), op,
                    [operand(name, op, 0, shape), operand(name, op, 1, shape)])
        for a, b in (FULL_PAIRS if FULL else MIXED_PAIRS):
            emit_ew(w, "%s(%s,%s)" % (op, a, b), op,
                    [operand(a, op, 0, shape), operand(b, op, 1, shape)])
        for kind, v in WEAK_VALUES.items():
            for name in (ALL if FULL else WEAK_TARGETS):
                x = operand(name, op, 0, shape)
                if op in ("left_shift", "right_shift") and kind == "int":
                    v2 = 2
                else:
                    v2 = v
                if op == "power" and kind == "float" and name in INTS:
                    x = rand(name, shape, "pos")
                emit_ew(w, "%s(%s,weak %s)" % (op, name, kind), op, [x, v2])
                if op in ("subtract", "divide", "power", "less", "floor_divide", "arctan2",
                          "maximum", "right_shift"):
                    y = operand(name, op, 1, shape)
                    if op == "power" and name in INTS:
                        v2 = 2
                    if op == "right_shift" and kind == "int":
                        v2 = 1000
                    emit_ew(w, "%s(weak %s,%s)" % (op, kind, name), op, [v2, y])
    # ternary
    for name in ALL:
        cond = rand("bool", shape)
        emit_ew(w, "where(%s)" % name, "where", [cond, rand(name, shape), rand(name, shape)])
        x = rand(name, (2, 3), "wide")
        lo = rand(name, (3,), "any")
        hi = np.array([True] * 3) if name == "bool" else (lo + rand(name, (3,), "pos")).astype(DT[name])
        emit_ew(w, "clip(%s)" % name, "clip", [x, lo, hi])
    for a, b, cnd in [("i8", "f32", "f64"), ("u8", "i8", "i32"), ("bf16", "f16", "bool"),
                      ("c64", "f64", "u8"), ("bool", "i64", "c128")]:
        emit_ew(w, "where(%s,%s,%s)" % (cnd, a, b), "where",
                [rand(cnd, (2, 1)), rand(a, (3,)), rand(b, (2, 3))])
    emit_ew(w, "where(weak)", "where", [rand("bool", (2, 3)), 1.5, rand("f32", (2, 3))])
    emit_ew(w, "where(weak int)", "where", [rand("bool", (2, 3)), rand("i8", (3,)), 7])
    emit_ew(w, "clip(weak)", "clip", [rand("f16", (2, 3), "wide"), -1.0, 2.0])
    emit_ew(w, "clip(int weak)", "clip", [rand("i16", (2, 3)), -300, 300])
    emit_ew(w, "clip(mixed)", "clip", [rand("i8", (2, 3)), rand("f32", (3,)), 100.0])
    # casts between every pair (values in range of every dtype)
    for src in ALL:
        for dst in ALL:
            x = rand(src, (5,), "wide")
            if src in FLOATS or src in COMPLEX:
                x = (x * (1 if src in COMPLEX else 1)).astype(DT[src])
                if dst in ("u8", "u16", "u32", "u64", "bool"):
                    x = rand(src, (5,), "pos")
            if src in INTS and dst in INTS:
                x = rand(src, (5,))  # wrapping casts
            c = w.case("cast(%s->%s)" % (src, dst))
            r = c.arr(x)
            c.op("cast", r, dst)
            if src == "bf16" or dst == "bf16":
                y = x.astype(F32).astype(DT[dst]) if src == "bf16" and dst not in INTS + ["bool"] else x.astype(DT[dst])
            else:
                y = x.astype(DT[dst])
            c.expect(y, *tolerance("cast", y.dtype))
    # broadcasting and strided operands
    bshapes = [((3, 1, 4), (5, 4)), ((4,), (2, 3, 4)), ((), (2, 3)), ((2, 1), (1, 3)),
               ((1,), (7,)), ((2, 3, 1, 2), (3, 4, 1)), ((0, 3), (1, 3)), ((3, 0), (3, 1))]
    for sa, sb in bshapes:
        for op, name in [("add", "f32"), ("multiply", "i16"), ("less", "f64"), ("arctan2", "f32"),
                         ("subtract", "c128")]:
            emit_ew(w, "%s %s %s" % (op, sa, sb), op, [rand(name, sa), rand(name, sb)])
    for name in ["f32", "i32", "c64", "bf16"]:
        x = rand(name, (3, 4))
        y = rand(name, (4, 3))
        c = w.case("add(transpose, x) %s" % name)
        rx = c.arr(x)
        ry = c.arr(y)
        rt = c.op("transpose", rx)
        c.op("add", rt, ry)
        c.expect(reference("add", [x.T.copy(), y]), *tolerance("add", DT[name]))
        # a strided slice feeding a unary op
        z = rand(name, (5, 6), "pos")
        c = w.case("sqrt(slice) %s" % name)
        rz = c.arr(z)
        rs = c.op("index", rz, 2, "s", 4, 0, -2, "s", 1, "nil", 2)
        c.op("sqrt", rs)
        c.expect(reference("sqrt", [z[4:0:-2, 1::2].copy()]), *tolerance("sqrt", reference("sqrt", [z[:1, :1].copy()]).dtype))
    gen_added_elementwise(w)
    gen_later_elementwise(w)
    w.save()
    return w


# ---- special values ------------------------------------------------------------------------

def gen_special():
    w = Writer("ops_special.txt")
    inf, nan = math.inf, math.nan
    fvals = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.5, -0.5, 1.5, 3.0, -3.0, inf, -inf, nan, 1e-30,
             7.0, -7.0, 1e30]
    for name in ["f16", "bf16", "f32", "f64"]:
        a = np.array([x for x in fvals for _ in fvals], dtype=F64)
        b = np.array([y for _ in fvals for y in fvals], dtype=F64)
        a, b = a.astype(DT[name]), b.astype(DT[name])
        c = w.case("special binary %s" % name)
        regs = [c.arr(a), c.arr(b)]
        for op in ["add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power",
                   "arctan2", "maximum", "minimum", "fmax", "fmin", "less", "less_equal",
                   "greater", "greater_equal", "equal", "not_equal", "logical_and",
                   "logical_xor"]:
            emit_ew(w, "", op, [a, b], case=c, regs=regs)
        c.finish()
        x = np.array(fvals + [0.49999997, 2.5000002, -1.5, 4.5, 1e-45, 65504.0], dtype=F64).astype(DT[name])
        c = w.case("special unary %s" % name)
        regs = [c.arr(x)]
        for op in UNARY:
            emit_ew(w, "", op, [x], case=c, regs=regs)
        c.finish()
        emit_ew(w, "special clip %s" % name, "clip",
                [x, np.array(fvals[::-1][:len(x)] + [0.0] * (len(x) - len(fvals)), F64).astype(DT[name]),
                 np.array([2.0] * len(x), F64).astype(DT[name])])
    cvals = [complex(r, i) for r in [0.0, -0.0, 1.0, -2.0, inf, -inf, nan] for i in [0.0, 1.0, -inf, nan, -0.0]]
    for name in ["c64", "c128"]:
        a = np.array([x for x in cvals for _ in range(3)], dtype=C128).astype(DT[name])
        b = np.array([cvals[(i * 7 + 3) % len(cvals)] for i in range(len(a))], dtype=C128).astype(DT[name])
        c = w.case("special complex binary %s" % name)
        regs = [c.arr(a), c.arr(b)]
        for op in ["add", "multiply", "divide", "maximum", "minimum", "fmax", "fmin", "less",
                   "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and"]:
            emit_ew(w, "", op, [a, b], case=c, regs=regs)
        c.finish()
        x = np.array(cvals, dtype=C128).astype(DT[name])
        c = w.case("special complex unary %s" % name)
        regs = [c.arr(x)]
        for op in ["sign", "abs", "isnan", "isinf", "isfinite", "logical_not", "negative",
                   "conj", "real", "imag", "square", "reciprocal", "rint", "angle"]:
            emit_ew(w, "", op, [x], case=c, regs=regs)
        c.finish()
        base = np.array([1 + 1j, 0j, 0j, 0j, 2 + 0j, -1 + 2j, 0.5 - 0.5j, 3 + 0j, 1j, 1 + 1j], C128).astype(DT[name])
        expo = np.array([2, 0, -1, 1 + 1j, 0.5, 3, -2, 1, 5, 101], C128).astype(DT[name])
        emit_ew(w, "special power %s" % name, "power", [base, expo])
    # integers: division by zero, MIN // -1, shifts past the width, wrapping
    for name in INTS:
        info = np.iinfo(DT[name])
        mn, mx = int(info.min), int(info.max)
        ivals = [mn, mx, -1 if mn < 0 else 1, 0, 1, 7, -7 if mn < 0 else 9, 3, mn + 1]
        a = np.array([x for x in ivals for _ in ivals], dtype=DT[name])
        b = np.array([y for _ in ivals for y in ivals], dtype=DT[name])
        c = w.case("special int binary %s" % name)
        regs = [c.arr(a), c.arr(b)]
        for op in ["add", "subtract", "multiply", "floor_divide", "remainder", "maximum",
                   "minimum", "less", "equal", "bitwise_and", "bitwise_xor", "logical_or"]:
            emit_ew(w, "", op, [a, b], case=c, regs=regs)
        c.finish()
        x = np.array(ivals, dtype=DT[name])
        c = w.case("special int unary %s" % name)
        regs = [c.arr(x)]
        for op in ["negative", "abs", "sign", "square", "invert", "logical_not", "floor"]:
            emit_ew(w, "", op, [x], case=c, regs=regs)
        c.finish()
        emit_ew(w, "special reciprocal %s" % name, "reciprocal",
                [np.array([1, 2, mx, 3] + ([-1, mn, -2] if mn < 0 else [7]), DT[name])])
        bits = info.bits
        sh = [0, 1, bits - 1, bits, bits + 1, 100 % 127] + ([-1, -bits] if mn < 0 else [])
        a = np.array([x for x in [mn, mx, 1, 3] for _ in sh], dtype=DT[name])
        b = np.array([s for _ in [mn, mx, 1, 3] for s in sh], dtype=DT[name])
        emit_ew(w, "special left_shift %s" % name, "left_shift", [a, b])
        emit_ew(w, "special right_shift %s" % name, "right_shift", [a, b])
        base = np.array([2, 3, -2 if mn < 0 else 5, mx, 1, 0, 7], DT[name])
        expo = np.array([7, 5, 3, 2, 100, 3, 0], DT[name])
        emit_ew(w, "special power %s" % name, "power", [base, expo])
        if mn < 0:
            emit_ew(w, "negative power %s" % name, "power",
                    [np.array([2, 3], DT[name]), np.array([1, -1], DT[name])])
    # bool arithmetic
    t = np.array([True, True, False, False])
    f = np.array([True, False, True, False])
    for op in ["add", "multiply", "maximum", "minimum", "less", "greater_equal", "equal",
               "bitwise_and", "bitwise_or", "bitwise_xor", "logical_xor", "power",
               "floor_divide", "remainder"]:
        emit_ew(w, "bool %s" % op, op, [t, f])
    # casts of special values (NaN and out-of-range floats to integers are left out: C and
    # NumPy leave those unspecified)
    for src in ["f16", "bf16", "f32", "f64", "c128"]:
        v = np.array([0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, 127.9, -128.9, 3e4, inf, -inf, nan],
                     F64)
        x = v.astype(DT[src])
        for dst in ALL:
            if dst == src:
                continue
            y = x
            if dst in INTS:
                info = np.iinfo(DT[dst])
                t = np.trunc((x.real if x.dtype.kind == "c" else x).astype(F64))
                y = x[np.isfinite(t) & (t >= info.min) & (t <= info.max)]
            c = w.case("special cast %s->%s" % (src, dst))
            r = c.arr(y)
            c.op("cast", r, dst)
            z = y.astype(F32).astype(DT[dst]) if src == "bf16" and dst not in INTS + ["bool"] \
                else y.astype(DT[dst])
            c.expect(z, *tolerance("cast", z.dtype))
    # double -> f16 rounds once (NumPy's cast); double -> bf16 goes through f32 (ml_dtypes)
    v = np.array([1 + 2 ** -11 + 2 ** -40, 1 + 2 ** -8 + 2 ** -30, 65519.99, 65520.0, 2 ** -25,
                  2 ** -25 + 2 ** -60, 6e-8, 1e-40, -3 * 2 ** -26], F64)
    for dst in ["f16", "bf16", "f32"]:
        c = w.case("rounding cast f64->%s" % dst)
        r = c.arr(v)
        c.op("cast", r, dst)
        c.expect(v.astype(DT[dst]))
    gen_added_special(w)
    gen_later_special(w)
    w.save()
    return w


# ---- ops added later -------------------------------------------------------------------------
# The cases of ops added after the data files were first generated (hypot ... lgamma) draw from
# a random stream of their own and follow all others in their files, so that every earlier
# case keeps its bits.

ADDED_BINARY = ["hypot", "logaddexp", "logaddexp2", "copysign", "nextafter", "fmod"]
ADDED_UNARY = ["signbit", "erf", "erfc", "lgamma"]
ADDED_DOMAIN = {"fmod": ("wide", "any"), "lgamma": "wide"}
# ops whose signed zeros are checked too (the exact comparison takes +0 and -0 as equal)
SIGNED_ZERO = {"copysign", "nextafter", "fmod", "erf"}


@contextlib.contextmanager
def own_stream(seed):
    """rand() and choice() draw from a stream seeded with `seed` inside the block."""
    global rng
    saved, rng = rng, np.random.default_rng(seed)
    try:
        yield
    finally:
        rng = saved


def emit_sign_check(c, value):
    """Checks the sign bits of case c's last register, whose value is `value`: signbit of it
    with its NaNs replaced by 0 (the sign of a NaN the arithmetic makes is the hardware's)."""
    reg = "%%%d" % (c.nreg - 1)
    v = np.asarray(value)
    v = v.astype(F32) if is_bf16(v) else v
    clean = c.op("where", c.op("isnan", reg), c.weak(0.0), reg)
    c.op("signbit", clean)
    c.check(np.signbit(np.where(np.isnan(v), 0.0, v)))


def gen_added_elementwise(w):
    shape = (2, 3)
    with own_stream(20250301):
        for op in ADDED_UNARY:
            for name in ALL:
                emit_ew(w, "%s(%s)" % (op, name), op, [rand(name, shape, ADDED_DOMAIN.get(op, "any"))])
        for op in ADDED_BINARY:
            da, db = ADDED_DOMAIN.get(op, ("any", "any"))
            for name in ALL:
                emit_ew(w, "%s(%s,%s)" % (op, name, name), op,
                        [rand(name, shape, da), rand(name, shape, db)])
            for a, b in (FULL_PAIRS if FULL else MIXED_PAIRS):
                emit_ew(w, "%s(%s,%s)" % (op, a, b), op, [rand(a, shape, da), rand(b, shape, db)])
            for kind, v in WEAK_VALUES.items():
                for name in (ALL if FULL else WEAK_TARGETS):
                    emit_ew(w, "%s(%s,weak %s)" % (op, name, kind), op, [rand(name, shape, da), v])
                    emit_ew(w, "%s(weak %s,%s)" % (op, kind, name), op, [v, rand(name, shape, db)])


def gen_added_special(w):
    inf, nan = math.inf, math.nan
    fvals = [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.5, -0.5, 1.5, 3.0, -3.0, inf, -inf, nan, 7.0,
             -7.0, 1e-30, 1e30]
    # the smallest subnormal, the smallest normal and the largest finite value of each float
    extremes = {"f16": (2.0 ** -24, 2.0 ** -14, 65504.0),
                "bf16": (2.0 ** -133, 2.0 ** -126, float(ml_dtypes.finfo(BF16).max)),
                "f32": (2.0 ** -149, 2.0 ** -126, float(np.finfo(F32).max)),
                "f64": (2.0 ** -1074, 2.0 ** -1022, float(np.finfo(F64).max))}
    for name in FLOATS:
        sub, norm, big = extremes[name]
        vals = fvals + [sub, -sub, norm, -norm, big, -big]
        a = np.array([x for x in vals for _ in vals], F64).astype(DT[name])
        b = np.array([y for _ in vals for y in vals], F64).astype(DT[name])
        c = w.case("added special binary %s" % name)
        regs = [c.arr(a), c.arr(b)]
        for op in ADDED_BINARY:
            emit_ew(w, "", op, [a, b], case=c, regs=regs)
            if op in SIGNED_ZERO:
                emit_sign_check(c, reference(op, [a, b]))
        c.finish()
        x = np.array(vals + [0.49999997, 2.5000002, 4.5, -4.5, 1.0000001, 2.0, 1e-8, 10.0, 27.0,
                             -27.0, 171.5, 1e10], F64).astype(DT[name])
        c = w.case("added special unary %s" % name)
        regs = [c.arr(x)]
        for op in ADDED_UNARY:
            emit_ew(w, "", op, [x], case=c, regs=regs)
            if op in SIGNED_ZERO:
                emit_sign_check(c, reference(op, [x]))
        c.finish()
    # integers: division by zero, MIN fmod -1, the extremes through the float rule
    for name in INTS:
        info = np.iinfo(DT[name])
        mn, mx = int(info.min), int(info.max)
        ivals = [mn, mx, -1 if mn < 0 else 1, 0, 1, 7, -7 if mn < 0 else 9, 3, mn + 1]
        a = np.array([x for x in ivals for _ in ivals], dtype=DT[name])
        b = np.array([y for _ in ivals for y in ivals], dtype=DT[name])
        c = w.case("added special int binary %s" % name)
        regs = [c.arr(a), c.arr(b)]
        for op in ADDED_BINARY:
            emit_ew(w, "", op, [a, b], case=c, regs=regs)
        c.finish()
        x = np.array(ivals, dtype=DT[name])
        c = w.case("added special int unary %s" % name)
        regs = [c.arr(x)]
        for op in ADDED_UNARY:
            emit_ew(w, "", op, [x], case=c, regs=regs)
        c.finish()
    t = np.array([True, True, False, False])
    f = np.array([True, False, True, False])
    for op in ADDED_BINARY:
        emit_ew(w, "bool %s" % op, op, [t, f])
    for op in ADDED_UNARY:
        emit_ew(w, "bool %s" % op, op, [t])
    # complex: refused by every one of them
    for name in COMPLEX:
        z = np.array([1 + 1j, -0.5j], DT[name])
        for op in ADDED_BINARY:
            emit_ew(w, "%s(%s) refused" % (op, name), op, [z, z])
        for op in ADDED_UNARY:
            emit_ew(w, "%s(%s) refused" % (op, name), op, [z])


# Ops added after the "added" ones (gelu, gelu_tanh): a stream of their own again, cases after
# all others, so that no earlier case changes.
LATER_UNARY = ["gelu", "gelu_tanh"]


def gen_later_elementwise(w):
    with own_stream(20261128):
        for op in LATER_UNARY:
            for name in ALL:
                emit_ew(w, "%s(%s)" % (op, name), op, [rand(name, (2, 3))])
            for name in FLOATS:  # the tails, where the naive expressions cancel
                emit_ew(w, "%s(%s wide)" % (op, name), op, [rand(name, (4, 8), "wide")])


def gen_later_special(w):
    inf, nan = math.inf, math.nan
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 3.0, -3.0, 5.5, -5.5, 9.0, -9.0, 12.0, -12.0,
            40.0, -40.0, 1e-8, -1e-8, 1e-30, 1e13, -1e13, 1e30, -1e30, inf, -inf, nan]
    for name in FLOATS:
        x = np.array(vals, F64).astype(DT[name])
        c = w.case("later special unary %s" % name)
        regs = [c.arr(x)]
        for op in LATER_UNARY:
            emit_ew(w, "", op, [x], case=c, regs=regs)
        c.finish()
    for op in LATER_UNARY:
        emit_ew(w, "bool %s" % op, op, [np.array([True, False])])
        for name in COMPLEX:
            emit_ew(w, "%s(%s) refused" % (op, name), op, [np.array([1 + 1j, -0.5j], DT[name])])


# ---- reductions ------------------------------------------------------------------------------

def axes_token(axes):
    if axes is None:
        return "all"
    if len(axes) == 0:
        return "none"
    return ",".join(str(a) for a in axes)


def reduce_ref(op, x, axes, keepdims, ddof=0, ord_=None):
    ax = tuple(axes) if axes is not None else None
    bf = is_bf16(x)
    xx = x.astype(F32) if bf else x
    with np.errstate(all="ignore"):
        if op == "sum":
            r = np.sum(xx, axis=ax, keepdims=keepdims)
        elif op == "prod":
            r = np.prod(xx, axis=ax, keepdims=keepdims)
        elif op == "mean":
            r = np.mean(xx, axis=ax, keepdims=keepdims)
        elif op == "max":
            r = np.max(xx, axis=ax, keepdims=keepdims)
        elif op == "min":
            r = np.min(xx, axis=ax, keepdims=keepdims)
        elif op == "any":
            r = np.any(xx, axis=ax, keepdims=keepdims)
        elif op == "all":
            r = np.all(xx, axis=ax, keepdims=keepdims)
        elif op == "var":
            r = np.var(xx, axis=ax, keepdims=keepdims, ddof=ddof)
        elif op == "std":
            r = np.std(xx, axis=ax, keepdims=keepdims, ddof=ddof)
        elif op == "norm":
            # computed in f64 (an independent path from NumPy's own dtype handling)
            r = np.linalg.vector_norm(xx.astype(C128 if xx.dtype.kind == "c" else F64),
                                      ord={0: 2, 1: 1, 2: math.inf}[ord_], axis=ax,
                                      keepdims=keepdims)
            # the result is the input's real dtype; integers and bool give f64
            rdt = {C64: F32, C128: F64}.get(x.dtype, x.dtype) if x.dtype.kind in "fc" or bf else F64
            r = np.asarray(r).astype(rdt)
            return r
        r = np.asarray(r)
    if bf:
        twin_dt = {"sum": F16, "prod": F16, "mean": F16, "max": F16, "min": F16, "var": F16,
                   "std": F16}.get(op)
        if twin_dt is not None:
            r = r.astype(BF16)
    return r


def gen_reductions():
    w = Writer("ops_reduce.txt")
    shape = (3, 4, 5)
    subsets = [None, (), (0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2)]
    dtypes = ["f32", "f64", "i32", "u8", "bool", "f16", "c128", "i8", "bf16", "c64", "u64", "i64"]
    if FULL:
        dtypes = ALL
    for name in dtypes:
        for op in ["sum", "prod", "mean", "max", "min", "any", "all", "var", "std", "norm"]:
            if name == "bool" and op in ("var", "std"):
                continue
            dom = "near1" if op == "prod" else "any"
            x = rand(name, shape, dom)
            if op in ("any", "all"):
                x = rand(name, shape, dom)
                flat = x.reshape(-1)
                zero_idx = rng.choice(60, size=20, replace=False)
                flat[zero_idx] = 0
                flat[:5] = 0  # an all-zero row along axis 2 of [0, 0]
                if op == "all":
                    x = x.copy()
                    x.reshape(-1)[5:10] = 1
            variants = [(0, None)]
            if op in ("var", "std"):
                variants = [(0, None), (1, None)]
            if op == "norm":
                variants = [(0, 0), (0, 1), (0, 2)]
            c = w.case("%s(%s)" % (op, name))
            r = c.arr(x)
            for ddof, ord_ in variants:
                for axes in subsets:
                    for keep in (False, True):
                        try:
                            ref = reduce_ref(op, x, axes, keep, ddof, ord_)
                        except (TypeError, ValueError):
                            continue
                        args = [op, r, axes_token(axes), int(keep)]
                        if op in ("var", "std"):
                            args.append(ddof)
                        if op == "norm":
                            args.append(ord_)
                        c.op(*args)
                        rtol, atol = tolerance("reduce", ref.dtype)
                        if ref.dtype.kind in "fc":
                            # NumPy accumulates in the dtype, fusec wider: allow for the error of
                            # a sum of up to 60 terms of magnitude ~4
                            atol = max(atol, 64 * 4 * rtol)
                            if op == "prod":
                                rtol *= 64
                        c.check(ref, rtol, atol)
            c.finish()
    # argmax / argmin, with ties and NaN
    for name in ["f32", "f64", "i16", "u8", "bool", "c128", "f16", "bf16", "i64"]:
        x = choice(name, [3, 1, 2, 3, 0] if name[0] != "c" else [1 + 1j, 1 + 2j, 2 - 1j, 2 - 1j, 0j], shape) \
            if name != "bool" else rand("bool", shape)
        variants = [x]
        if DT[name].kind in "fc" or name == "bf16":
            y = x.copy()
            y[1, 2, 3] = np.nan
            y[2, 0, 1] = np.nan
            y[0, 3, 0] = np.nan
            variants.append(y)
        for v in variants:
            c = w.case("argmax/argmin(%s)" % name)
            r = c.arr(v)
            for op in ["argmax", "argmin"]:
                for axis in [None, 0, 1, 2, -1]:
                    for keep in (False, True):
                        xx = v.astype(F32) if name == "bf16" else v
                        ref = getattr(np, op)(xx, axis=axis, keepdims=keep)
                        ref = np.asarray(ref).astype(np.int64)
                        c.op(op, r, "none" if axis is None else axis, int(keep))
                        c.check(ref)
            c.finish()
    # empty reductions and reductions over empty axes
    for name in ["f32", "i32", "c64"]:
        x = rand(name, (0, 3))
        for op in ["sum", "prod", "mean"]:
            for axes in [(0,), None]:
                c = w.case("%s empty %s" % (op, name))
                r = c.arr(x)
                c.op(op, r, axes_token(axes), 0)
                c.expect(reduce_ref(op, x, axes, False), *tolerance("reduce", reduce_ref(op, x, axes, False).dtype))
    # var with ddof >= count: NumPy divides by max(count - ddof, 0)
    x = rand("f64", (3, 4))
    for ddof in [3, 4, 5]:
        c = w.case("var ddof %d" % ddof)
        r = c.arr(x)
        c.op("var", r, "0", 0, ddof)
        c.expect(np.var(x, axis=0, ddof=ddof), *tolerance("reduce", F64))
    # NaN propagation in max/min/sum, on strided (transposed) input
    x = rand("f64", (4, 6))
    x[1, 2] = np.nan
    x[3, 5] = np.nan
    for op in ["max", "min", "sum", "mean"]:
        c = w.case("%s nan transposed" % op)
        r = c.arr(x)
        t = c.op("transpose", r)
        c.op(op, t, "1", 0)
        c.expect(reduce_ref(op, x.T.copy(), (1,), False), *tolerance("reduce", F64))
    # a long f32 sum (accumulation width)
    x = rand("f32", (4096,), "pos")
    c = w.case("long sum")
    r = c.arr(x)
    c.op("sum", r, "all", 0)
    c.expect(np.asarray(np.sum(x.astype(F64)).astype(F32)), 2.0 ** -22, 0)
    # integer sums wrap in 64 bits
    x = np.array([2 ** 62, 2 ** 62, 2 ** 62, 5], dtype=np.int64)
    c = w.case("wrapping sum")
    r = c.arr(x)
    c.op("sum", r, "all", 0)
    c.expect(np.asarray(np.sum(x)))
    # count_nonzero (added after the rest, on its own stream, so the cases above keep their
    # data): every dtype, about a third zeros, NaN and -0.0 among the floats, an empty axis
    with own_stream(20261125):
        subsets = [None, (), (0,), (2,), (0, 2), (1, 2), (0, 1, 2)]
        for name in ALL:
            x = rand(name, shape)
            flat = x.reshape(-1)
            flat[rng.choice(60, size=20, replace=False)] = 0
            if DT[name].kind in "fc" or name == "bf16":
                flat[7] = np.nan
                flat[11] = -0.0
            if DT[name].kind == "c":
                flat[13] = 1j  # a zero real part with a non-zero imaginary part counts
            c = w.case("count_nonzero(%s)" % name)
            r = c.arr(x)
            for axes in subsets:
                for keep in (False, True):
                    xx = x.astype(F32) if is_bf16(x) else x
                    ref = np.asarray(np.count_nonzero(xx, axis=axes, keepdims=keep)).astype(np.int64)
                    c.op("count_nonzero", r, axes_token(axes), int(keep))
                    c.check(ref)
            c.finish()
        x = rand("f32", (0, 3))
        c = w.case("count_nonzero empty f32")
        r = c.arr(x)
        c.op("count_nonzero", r, "0", 0)
        c.expect(np.asarray(np.count_nonzero(x, axis=0)).astype(np.int64))
    w.save()
    return w


# ---- views -----------------------------------------------------------------------------------

def gen_views():
    w = Writer("ops_views.txt")

    def case(label, x, steps, ref):
        c = w.case(label)
        r = c.arr(x)
        for s in steps:
            r = c.op(s[0], r, *s[1:])
        c.expect(ref, *tolerance("cast", ref.dtype))

    x = rand("f32", (2, 3, 4))
    case("reshape", x, [("reshape", 2, 6, 4)], x.reshape(6, 4))
    case("reshape -1", x, [("reshape", 3, 4, -1, 3)], x.reshape(4, -1, 3))
    x1 = rand("i16", (1, 1))
    case("reshape to 0-d", x1, [("reshape", 0)], x1.reshape(()))
    case("transpose", x, [("transpose",)], x.T)
    case("permute", x, [("permute", 3, 1, 2, 0)], x.transpose(1, 2, 0))
    case("reshape of transpose", x, [("transpose",), ("reshape", 2, 4, 6)], x.T.reshape(4, 6))
    case("reshape of slice", x, [("index", 1, "s", "nil", "nil", -1), ("reshape", 1, 24)],
         x[::-1].reshape(24))
    y = rand("u16", (3, 1))
    case("broadcast_to", y, [("broadcast_to", 3, 2, 3, 4)], np.broadcast_to(y, (2, 3, 4)))
    y0 = rand("c64", ())
    case("broadcast_to 0-d", y0, [("broadcast_to", 2, 2, 2)], np.broadcast_to(y0, (2, 2)))
    case("expand_dims 0", x, [("expand_dims", 0)], np.expand_dims(x, 0))
    case("expand_dims -1", x, [("expand_dims", -1)], np.expand_dims(x, -1))
    case("expand_dims 2", x, [("expand_dims", 2)], np.expand_dims(x, 2))
    z = rand("i8", (1, 3, 1, 2))
    case("squeeze all", z, [("squeeze", "all")], np.squeeze(z))
    case("squeeze 2", z, [("squeeze", "2")], np.squeeze(z, 2))
    case("squeeze 0,-2", z, [("squeeze", "0,-2")], np.squeeze(z, (0, -2)))
    case("flip all", x, [("flip", "all")], np.flip(x))
    case("flip 1", x, [("flip", "1")], np.flip(x, 1))
    case("flip 0,2", x, [("flip", "0,2")], np.flip(x, (0, 2)))
    v = rand("f64", (5, 6, 7))

    def idx(label, entries, ref):
        toks = [len(entries)]
        for e in entries:
            toks += e
        case(label, v, [("index",) + tuple(toks)], ref)

    S = lambda a, b, c: ["s", "nil" if a is None else a, "nil" if b is None else b, "nil" if c is None else c]
    idx("index [1:4]", [S(1, 4, None)], v[1:4])
    idx("index [::-1, 2]", [S(None, None, -1), ["i", 2]], v[::-1, 2])
    idx("index [-1, ::2, 1:-1]", [["i", -1], S(None, None, 2), S(1, -1, None)], v[-1, ::2, 1:-1])
    idx("index [None, 1:3]", [["n"], S(1, 3, None)], v[None, 1:3])
    idx("index [..., None, 3]", [["e"], ["n"], ["i", 3]], v[..., None, 3])
    idx("index [4:0:-2, ..., ::-3]", [S(4, 0, -2), ["e"], S(None, None, -3)], v[4:0:-2, ..., ::-3])
    idx("index [10:20]", [S(10, 20, None)], v[10:20])
    idx("index [-100:100:3]", [S(-100, 100, 3)], v[-100:100:3])
    idx("index [2, 3, 4]", [["i", 2], ["i", 3], ["i", 4]], v[2, 3, 4])
    idx("index [:, None, :, None]", [S(None, None, None), ["n"], S(None, None, None), ["n"]],
        v[:, None, :, None])
    idx("index [3:1]", [S(3, 1, None)], v[3:1])
    # pad, every mode
    p = rand("f32", (3, 4))
    for mode, mname in [(0, "constant"), (1, "edge"), (2, "reflect"), (3, "symmetric")]:
        for widths in [((1, 2), (2, 1)), ((2, 2), (3, 0)), ((0, 0), (1, 1))]:
            kw = {"constant_values": 1.5} if mname == "constant" else {}
            ref = np.pad(p, widths, mode=mname, **kw)
            toks = [2] + [x for pr in widths for x in pr] + [mode, f64hex(1.5)]
            case("pad %s %s" % (mname, widths), p, [("pad",) + tuple(toks)], ref)
    pi = rand("i32", (5,))
    case("pad 1-d symmetric", pi, [("pad", 1, 4, 3, 3, f64hex(0.0))], np.pad(pi, (4, 3), mode="symmetric"))
    case("pad const int", pi, [("pad", 1, 2, 1, 0, f64hex(-7.9))], np.pad(pi, (2, 1), constant_values=-7.9))
    pc = rand("c128", (2, 3))
    case("pad complex reflect", pc, [("pad", 1, 1, 1, 2, f64hex(0.0))], np.pad(pc, 1, mode="reflect"))
    # concatenate / stack with mixed dtypes (the result promotes)
    for axis in [0, 1, -1]:
        a = rand("i8", (2, 3))
        b = rand("f32", (2, 3))
        cc = rand("u8", (2, 3))
        c = w.case("concatenate axis %d" % axis)
        ra, rb, rc = c.arr(a), c.arr(b), c.arr(cc)
        c.op("concatenate", 3, ra, rb, rc, axis)
        ref = np.concatenate([a, b, cc], axis=axis)
        c.expect(ref)
        c = w.case("stack axis %d" % axis)
        ra, rb, rc = c.arr(a), c.arr(b), c.arr(cc)
        c.op("stack", 3, ra, rb, rc, axis)
        c.expect(np.stack([a, b, cc], axis=axis))
    a = rand("c64", (1, 4))
    b = rand("f64", (3, 4))
    c = w.case("concatenate c64 f64")
    ra, rb = c.arr(a), c.arr(b)
    rt = c.op("transpose", rb)
    rt2 = c.op("transpose", rt)
    c.op("concatenate", 2, ra, rt2, 0)
    c.expect(np.concatenate([a, b]))
    a = rand("bf16", (2, 2))
    b = rand("f16", (2, 1))
    c = w.case("concatenate bf16 f16")
    ra, rb = c.arr(a), c.arr(b)
    c.op("concatenate", 2, ra, rb, 1)
    c.expect(np.concatenate([a.astype(F32), b.astype(F32)], axis=1))
    # views of views, and non-contiguous inputs to the ops that copy or reduce
    x = rand("f32", (3, 4))
    case("reshape of broadcast", x[:, :1].copy(), [("broadcast_to", 3, 2, 3, 5), ("reshape", 2, 5, 6)],
         np.broadcast_to(x[:, :1], (2, 3, 5)).reshape(5, 6))
    case("pad of transpose", x, [("transpose",), ("pad", 2, 1, 0, 0, 2, 2, f64hex(0.0))],
         np.pad(x.T, ((1, 0), (0, 2)), mode="reflect"))
    case("pad of reversed slice", x, [("index", 2, "s", "nil", "nil", -1, "s", 1, "nil", 2),
                                      ("pad", 1, 2, 2, 1, f64hex(0.0))],
         np.pad(x[::-1, 1::2], 2, mode="edge"))
    case("flip of transpose of expand", x, [("expand_dims", 1), ("transpose",), ("flip", "all")],
         np.flip(np.expand_dims(x, 1).T))
    case("argmax of transpose", x, [("transpose",), ("argmax", 1, 0)], np.argmax(x.T, axis=1))
    case("argmin flat of slice", x, [("index", 1, "s", "nil", "nil", -2), ("argmin", "none", 1)],
         np.argmin(x[::-2], keepdims=True))
    case("sum of broadcast", x[:1], [("broadcast_to", 2, 5, 4), ("sum", "0", 0)],
         np.sum(np.broadcast_to(x[:1], (5, 4)).astype(F64), axis=0).astype(F32))
    case("var of reversed", x, [("flip", "1"), ("var", "1", 1, 1)],
         np.var(np.flip(x, 1).astype(F64), axis=1, ddof=1, keepdims=True).astype(F32))
    a = rand("c64", (2, 3))
    b = rand("c64", (3, 2))
    c = w.case("concatenate of transpose and slice")
    ra, rb = c.arr(a), c.arr(b)
    rt = c.op("transpose", rb)
    rs = c.op("index", ra, 1, "s", "nil", "nil", -1)
    c.op("concatenate", 2, rt, rs, 1)
    c.expect(np.concatenate([b.T, a[::-1]], axis=1))
    s = rand("i64", (4,))
    c = w.case("stack single 1-d")
    r = c.arr(s)
    c.op("stack", 1, r, 1)
    c.expect(np.stack([s], axis=1))
    w.save()
    return w


# ---- creation, matmul, random ----------------------------------------------------------------

M32 = (1 << 32) - 1


def philox4x32_10(ctr, key):
    """Philox4x32-10 (Salmon et al., SC'11), written from the paper: 4 words of 32 bits."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for r in range(10):
        if r:
            k0 = (k0 + 0x9E3779B9) & M32
            k1 = (k1 + 0xBB67AE85) & M32
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & M32, (p0 >> 32) ^ c3 ^ k1, p0 & M32
    return c0, c1, c2, c3


def random_block(seed, stream, block):
    return philox4x32_10((block & M32, block >> 32, stream & M32, stream >> 32),
                         (seed & M32, seed >> 32))


def bits64(seed, stream, i):
    w = random_block(seed, stream, i >> 1)
    k = 2 * (i & 1)
    return w[k] | w[k + 1] << 32


def uniform_at(real, seed, stream, i):
    """include/fusec.h's fc_rng layout: 32-bit dtypes a word an element, f64 two."""
    if real == F64:
        return (bits64(seed, stream, i) >> 11) * 2.0 ** -53
    w = random_block(seed, stream, i >> 2)[i & 3]
    shift, scale = {F16: (21, 2.0 ** -11), BF16: (24, 2.0 ** -8)}.get(real, (8, 2.0 ** -24))
    return (w >> shift) * scale


def normal_at(real, seed, stream, i):
    if real == F64:
        w = random_block(seed, stream, i >> 1)
        u1 = (((w[0] | w[1] << 32) >> 11) + 1) * 2.0 ** -53
        u2 = ((w[2] | w[3] << 32) >> 11) * 2.0 ** -53
    else:
        w = random_block(seed, stream, i >> 2)
        k = i & 2
        u1, u2 = (w[k] + 1.0) * 2.0 ** -32, w[k + 1] * 2.0 ** -32
    r, a = math.sqrt(-2 * math.log(u1)), 6.283185307179586 * u2
    return r * math.sin(a) if i & 1 else r * math.cos(a)


def integer_at(wide, low, rng, seed, stream, i):
    if not wide:
        x = bits64(seed, stream, i)
        off = (x * rng) >> 64
    else:
        w = random_block(seed, stream, i)
        x = w[0] | w[1] << 32 | w[2] << 64 | w[3] << 96
        off = (x * rng) >> 128
    return low + off


def draw_ref(name, shape, seed, stream, at):
    """A float or complex draw (at: uniform_at or normal_at), rounded once to the dtype."""
    dt = DT[name]
    real = {C64: F32, C128: F64}.get(dt, dt)
    n = int(np.prod(shape))
    if dt.kind == "c":
        v = [complex(at(real, seed, stream, 2 * i), at(real, seed, stream, 2 * i + 1)) for i in range(n)]
        return np.array(v, C128).astype(dt).reshape(shape)
    return np.array([at(real, seed, stream, i) for i in range(n)], F64).astype(dt).reshape(shape)


def gen_creation():
    w = Writer("ops_creation.txt")

    def case(label, toks, ref):
        c = w.case(label)
        c.op(*toks)
        c.expect(ref, *tolerance("cast", ref.dtype))

    for name in ALL:
        dt = DT[name]
        for start, stop, step in [(0, 10, 1), (0.5, 5, 1.5), (1, 2, 0.1), (10, -3, -2.5),
                                  (-3, 3, 0.7), (5, 5, 1)]:
            if name == "bool":
                if not (0 <= (stop - start) / step <= 2):
                    continue
            if name[0] == "u" and (start < 0 or stop < -1 and step < 0 or min(start, stop) < 0):
                continue
            try:
                ref = np.arange(start, stop, step, dtype=dt if name != "bf16" else BF16)
            except (TypeError, ValueError):
                continue
            case("arange %s %s" % (name, (start, stop, step)),
                 ["arange", name, f64hex(start), f64hex(stop), f64hex(step)], ref)
        for start, stop, num, endpoint in [(0, 1, 5, 1), (0, 1, 5, 0), (-3.5, 4.2, 7, 1),
                                           (2, -2, 4, 0), (1, 2, 1, 1), (1, 2, 1, 0),
                                           (1, 2, 0, 1), (0, 1e-310, 3, 1)]:
            if name[0] == "u" and min(start, stop) < 0:
                continue
            ref = np.linspace(start, stop, num, endpoint=bool(endpoint),
                              dtype=dt if name != "bf16" else None)
            if name == "bf16":
                ref = ref.astype(BF16)
            case("linspace %s %s" % (name, (start, stop, num, endpoint)),
                 ["linspace", name, f64hex(start), f64hex(stop), num, endpoint], ref)
        for n, m, k in [(3, 3, 0), (3, 5, 1), (4, 2, -1), (2, 3, 5), (3, 4, -2)]:
            case("eye %s %s" % (name, (n, m, k)), ["eye", name, n, m, k], np.eye(n, m, k, dtype=dt))
        val = {"bool": 1.0}.get(name, -2.5 if name[0] in "ifbc" and name != "bool" else 7.0)
        if name[0] == "i":
            val = -2.0
        case("full %s" % name, ["full", name, 2, 2, 3, f64hex(val)], np.full((2, 3), val).astype(dt))
        case("zeros %s" % name, ["zeros", name, 2, 3, 2], np.zeros((3, 2), dt))
        case("ones %s" % name, ["ones", name, 1, 4], np.ones((4,), dt))
        case("empty %s" % name, ["empty", name, 2, 2, 2], np.zeros((2, 2), dt))
        if name in FLOATS or name in COMPLEX:
            case("random %s" % name, ["random", name, 2, 3, 4, 12345],
                 draw_ref(name, (3, 4), 12345, 0, uniform_at))
            # 16- and 32-bit normals are Box-Muller in float (graph/normal32.h): within 2 ulps
            # of the exact value, so 2 ulps and this reference's rounding from it (f16 and bf16:
            # a rounding boundary between the two); f64 ones are computed as here
            real = {"c64": "f32", "c128": "f64"}.get(name, name)
            c = w.case("standard_normal %s" % name)
            c.op("standard_normal", name, 2, 3, 5, 777, 4)
            c.expect(draw_ref(name, (3, 5), 777, 4, normal_at),
                     *{"f16": (2.0 ** -10, 0.0), "bf16": (2.0 ** -7, 0.0),
                       "f32": (2.0 ** -21, 0.0)}.get(real, (0.0, 0.0)))
        if name[0] in "iu":
            bits = DT[name].itemsize * 8
            lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - (bits == 64)) if name[0] == "i" \
                else (0, (1 << bits) - (bits == 64) * (1 << 63) - (bits == 64))
            for low, high in [(-5 if name[0] == "i" else 3, 40), (lo, hi)]:
                v = [integer_at(bits == 64, low, high - low, 99, 7, i) for i in range(13)]
                case("integers %s [%d, %d)" % (name, low, high),
                     ["integers", name, 1, 13, low, high, 99, 7], np.array(v, dtype=DT[name]))
        c = w.case("like %s" % name)
        x = rand(name, (2, 3))
        r = c.arr(x)
        c.op("zeros_like", r)
        c.expect(np.zeros_like(x))
        for op, ref in [("ones_like", np.ones_like(x)), ("empty_like", np.zeros_like(x))]:
            c = w.case("%s %s" % (op, name))
            r = c.arr(x)
            c.op(op, r)
            c.expect(ref)
        c = w.case("full_like %s" % name)
        r = c.arr(x)
        c.op("full_like", r, f64hex(3.0))
        c.expect(np.full_like(x, 3.0))
    for name in COMPLEX:
        case("full_complex %s" % name, ["full_complex", name, 1, 3, f64hex(1.5), f64hex(-2.0)],
             np.full((3,), 1.5 - 2j, DT[name]))
    case("full 0-d", ["full", "f32", 0, f64hex(0.25)], np.array(0.25, F32))
    case("full empty", ["full", "i16", 2, 0, 3, f64hex(1.0)], np.full((0, 3), 1, np.int16))
    for name in ["f32", "f64", "i32", "u8"]:
        case("scalar %s" % name, ["scalar", name, f64hex(3.0)], np.array(3, DT[name]))
    w.save()
    return w


def gen_matmul():
    w = Writer("ops_matmul.txt")

    def case(label, a, b):
        try:
            ref = np.matmul(a.astype(F32) if is_bf16(a) else a, b.astype(F32) if is_bf16(b) else b)
        except ValueError:
            c = w.case(label)
            c.op("matmul", c.arr(a), c.arr(b))
            c.error("FC_ERR_SHAPE")
            return
        if is_bf16(a) or is_bf16(b):
            ref = ref.astype(BF16)
        c = w.case(label)
        ra, rb = c.arr(a), c.arr(b)
        c.op("matmul", ra, rb)
        rtol, atol = tolerance("matmul", ref.dtype)
        if ref.dtype.kind in "fc":
            atol = max(atol, 8 * 16 * rtol)
        c.expect(ref, rtol, atol)

    for name in ["f32", "f64", "i32", "i8", "u16", "c64", "c128", "f16", "bf16", "bool", "i64"]:
        case("1-d . 1-d %s" % name, rand(name, (5,)), rand(name, (5,)))
        case("2-d %s" % name, rand(name, (3, 4)), rand(name, (4, 2)))
        case("1-d @ 2-d %s" % name, rand(name, (4,)), rand(name, (4, 3)))
        case("2-d @ 1-d %s" % name, rand(name, (3, 4)), rand(name, (4,)))
        case("batched %s" % name, rand(name, (2, 3, 4)), rand(name, (2, 4, 5)))
        case("broadcast batch %s" % name, rand(name, (2, 1, 3, 4)), rand(name, (3, 4, 2)))
    x, y = rand("f64", (4, 3)), rand("f64", (4, 2))
    c = w.case("transposed operand")
    rx, ry = c.arr(x), c.arr(y)
    c.op("matmul", c.op("transpose", rx), ry)
    c.expect(x.T @ y, *tolerance("matmul", F64))
    x = rand("i16", (3, 2, 4))
    c = w.case("sliced batched operands")
    rx = c.arr(x)
    c.op("matmul", c.op("index", rx, 2, "s", "nil", "nil", -1, "s", "nil", "nil", -1),
         c.op("permute", rx, 3, 0, 2, 1))
    c.expect(np.matmul(x[::-1, ::-1], x.transpose(0, 2, 1)))
    case("mixed i8 f32", rand("i8", (2, 3)), rand("f32", (3, 2)))
    case("mixed u8 c64", rand("u8", (2, 3)), rand("c64", (3,)))
    case("batched @ 1-d", rand("f64", (2, 3, 4)), rand("f64", (4,)))
    case("1-d @ batched", rand("f64", (3,)), rand("f64", (2, 3, 4)))
    case("k = 0", rand("f32", (2, 0)), rand("f32", (0, 3)))
    case("wrapping i32", rand("i32", (2, 8)), rand("i32", (8, 2)))
    w.save()
    return w


def gen_fuzz(count):
    """--fuzz N (a local sweep, not checked in): N random chains of views ending in an
    elementwise op or a reduction, written over ops_views.txt."""
    w = Writer("ops_views.txt")
    for k in range(count):
        name = ["f32", "i16", "c64", "f64", "u8"][k % 5]
        nd = int(rng.integers(1, 4))
        shape = tuple(int(v) for v in rng.integers(1, 5, size=nd))
        x = rand(name, shape)
        c = w.case("fuzz %d" % k)
        r = c.arr(x)
        v = x
        for _ in range(int(rng.integers(1, 5))):
            kind = rng.choice(["permute", "index", "expand", "squeeze", "flip", "reshape",
                               "broadcast", "pad"])
            if kind == "permute" and v.ndim > 0:
                p = [int(i) for i in rng.permutation(v.ndim)]
                r = c.op("permute", r, v.ndim, *p)
                v = v.transpose(p)
            elif kind == "index" and v.ndim > 0:
                toks, key = [], []
                for d in range(v.ndim):
                    n = v.shape[d]
                    if rng.random() < 0.2 and n > 0:
                        i = int(rng.integers(-n, n))
                        toks += ["i", i]
                        key.append(i)
                    else:
                        st = int(rng.choice([1, 2, -1, -2, 3]))
                        a = int(rng.integers(-n - 1, n + 1))
                        b = int(rng.integers(-n - 1, n + 1))
                        if rng.random() < 0.3:
                            a = None
                        if rng.random() < 0.3:
                            b = None
                        toks += ["s", "nil" if a is None else a, "nil" if b is None else b, st]
                        key.append(slice(a, b, st))
                r = c.op("index", r, v.ndim, *toks)
                v = v[tuple(key)]
            elif kind == "expand":
                ax = int(rng.integers(-v.ndim - 1, v.ndim + 1))
                r = c.op("expand_dims", r, ax)
                v = np.expand_dims(v, ax)
            elif kind == "squeeze":
                r = c.op("squeeze", r, "all")
                v = np.squeeze(v)
            elif kind == "flip" and v.ndim > 0:
                r = c.op("flip", r, "all")
                v = np.flip(v)
            elif kind == "reshape" and v.size > 0:
                r = c.op("reshape", r, 2, -1, 1)
                v = v.reshape(-1, 1)
            elif kind == "broadcast":
                target = (2,) + tuple(v.shape)
                r = c.op("broadcast_to", r, len(target), *target)
                v = np.broadcast_to(v, target)
            elif kind == "pad" and v.ndim > 0 and min(v.shape) > 1:
                mode = int(rng.integers(0, 4))
                mname = ["constant", "edge", "reflect", "symmetric"][mode]
                r = c.op("pad", r, 1, 1, 1, mode, f64hex(2.0))
                kw = {"constant_values": 2} if mode == 0 else {}
                v = np.pad(v, 1, mode=mname, **kw)
        c.check(np.array(v, order="C"), *tolerance("cast", v.dtype))
        end = rng.choice(["add", "sum", "sin", "none"])
        if end == "add":
            c.op("add", r, r)
            c.check(v + v, *tolerance("add", v.dtype))
        elif end == "sum" and v.ndim > 0:
            ref = reduce_ref("sum", v, (v.ndim - 1,), False)
            c.op("sum", r, str(v.ndim - 1), 0)
            c.check(ref, *tolerance("reduce", ref.dtype))
        c.finish()
    w.save()


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    assert np.__version__.startswith("2."), "NumPy 2.x is the reference"
    if "--fuzz" in sys.argv:
        gen_fuzz(int(sys.argv[sys.argv.index("--fuzz") + 1]))
        return
    gen_elementwise()
    gen_special()
    gen_reductions()
    gen_views()
    gen_creation()
    gen_matmul()


if __name__ == "__main__":
    sys.exit(main())
