#!/usr/bin/env python3
"""Generates tests/data/promotion*.txt, the dtype tables test_promotion.c asserts.

Run once with NumPy 2.4 and ml_dtypes (CI has neither, so the output is checked in):

    python3 tests/gen_promotion.py

NumPy is the judge. bf16 has no NumPy answer of its own, so:
  * where ml_dtypes (NumPy's bfloat16) gives an answer, it is used;
  * where it has none (no loop, no promotion), the answer is f16's with bf16 in place of f16
    (an f16 result becomes bf16; an f16 and a bf16 input together promote to f32);
  * some ml_dtypes answers are known accidents and are replaced by f16's rule as well:
      - weak Python scalars: bf16 array + 1.5 gives f32 under NumPy 2 (ml_dtypes issue #189,
        which its maintainers call a regression: the scalar should be weak);
      - np.linalg.vector_norm gives f64 for bf16 because bfloat16 is not a subclass of
        np.inexact, so NumPy casts it to float first as it does integers;
      - matmul and clip have no bf16 loops in ml_dtypes, so NumPy casts to its f32 loop
        (bf16 @ bf16 -> f32); fusec's header says their dtypes promote, as for f16.
    Everywhere else ml_dtypes and f16's rule agree; the script fails if they ever do not.

File formats (one case a line, '#' comments, dtype names as fc_dtype_name writes them,
"error" where NumPy raises):
  promotion_types.txt   A B RESULT                    np.result_type(A, B)
  promotion_weak.txt    OP SIDE DTYPE KIND RESULT     OP(array, weak) (SIDE R) or OP(weak, array)
                                                      (SIDE L); KIND bool|int|float|complex
  promotion_ops.txt     OP RESULT IN...               result dtype of the op on strong arrays
  promotion_reduce.txt  OP DTYPE RESULT               result dtype of a reduction
"""
import os
import sys
import warnings

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [
    ("bool", np.dtype(np.bool_)),
    ("i8", np.dtype(np.int8)), ("i16", np.dtype(np.int16)),
    ("i32", np.dtype(np.int32)), ("i64", np.dtype(np.int64)),
    ("u8", np.dtype(np.uint8)), ("u16", np.dtype(np.uint16)),
    ("u32", np.dtype(np.uint32)), ("u64", np.dtype(np.uint64)),
    ("f16", np.dtype(np.float16)), ("bf16", BF16),
    ("f32", np.dtype(np.float32)), ("f64", np.dtype(np.float64)),
    ("c64", np.dtype(np.complex64)), ("c128", np.dtype(np.complex128)),
]
NAME_OF = {dt: name for name, dt in DTYPES}
F16 = np.dtype(np.float16)
F32 = np.dtype(np.float32)

# fusec's C name -> NumPy's callable
BINARY = [
    ("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.true_divide),
    ("floordiv", np.floor_divide), ("mod", np.remainder), ("pow", np.power),
    ("arctan2", np.arctan2), ("maximum", np.maximum), ("minimum", np.minimum),
    ("fmax", np.fmax), ("fmin", np.fmin), ("less", np.less), ("less_equal", np.less_equal),
    ("greater", np.greater), ("greater_equal", np.greater_equal), ("equal", np.equal),
    ("not_equal", np.not_equal), ("logical_and", np.logical_and),
    ("logical_or", np.logical_or), ("logical_xor", np.logical_xor),
    ("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
    ("bitwise_xor", np.bitwise_xor), ("left_shift", np.left_shift),
    ("right_shift", np.right_shift), ("hypot", np.hypot), ("logaddexp", np.logaddexp),
    ("logaddexp2", np.logaddexp2), ("copysign", np.copysign), ("nextafter", np.nextafter),
    ("fmod", np.fmod),
]
UNARY = [
    ("negative", np.negative), ("abs", np.absolute), ("sign", np.sign), ("sqrt", np.sqrt),
    ("cbrt", np.cbrt), ("square", np.square), ("reciprocal", np.reciprocal), ("exp", np.exp),
    ("exp2", np.exp2), ("expm1", np.expm1), ("log", np.log), ("log2", np.log2),
    ("log10", np.log10), ("log1p", np.log1p), ("sin", np.sin), ("cos", np.cos), ("tan", np.tan),
    ("arcsin", np.arcsin), ("arccos", np.arccos), ("arctan", np.arctan), ("sinh", np.sinh),
    ("cosh", np.cosh), ("tanh", np.tanh), ("arcsinh", np.arcsinh), ("arccosh", np.arccosh),
    ("arctanh", np.arctanh), ("floor", np.floor), ("ceil", np.ceil), ("rint", np.rint),
    ("trunc", np.trunc), ("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite),
    ("logical_not", np.logical_not), ("bitwise_not", np.invert), ("real", np.real),
    ("imag", np.imag), ("conj", np.conjugate), ("angle", np.angle), ("signbit", np.signbit),
    # fusec's extensions (scipy.special's erf, erfc, gammaln; NumPy has no such ufuncs) take
    # the rule of NumPy's own float functions that refuse complex: cbrt's
    ("erf", np.cbrt), ("erfc", np.cbrt), ("lgamma", np.cbrt), ("gelu", np.cbrt),
    ("gelu_tanh", np.cbrt),
]
WEAK = [("bool", True), ("int", 1), ("float", 1.5), ("complex", 1j)]


def norm(order):
    return lambda x: np.linalg.vector_norm(x, ord=order)


REDUCE = [
    ("sum", np.sum), ("prod", np.prod), ("mean", np.mean), ("max", np.max), ("min", np.min),
    ("any", np.any), ("all", np.all), ("var", np.var), ("std", np.std),
    ("norm_l2", norm(2)), ("norm_l1", norm(1)), ("norm_inf", norm(np.inf)),
    ("argmax", np.argmax), ("argmin", np.argmin),
]

# Per-op operand shapes and calls beyond plain ufuncs.
EXTRA_BINARY = [
    ("matmul", np.matmul, (2, 2)),
    ("concatenate", lambda a, b: np.concatenate([a, b]), (2,)),
    ("stack", lambda a, b: np.stack([a, b]), (2,)),
]


def outcome(fn, *args):
    """The result dtype of fn(*args), or None where NumPy raises."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = fn(*args)
            return r if isinstance(r, np.dtype) else np.asarray(r).dtype
        except (TypeError, ValueError, OverflowError):
            return None


def ones(dt, shape=(2,)):
    return np.ones(shape, dt)


def substitute(dtypes):
    """bf16 -> f16 (or both -> f32 when f16 is there too); returns (dtypes, f16 maps back)."""
    if BF16 not in dtypes:
        return dtypes, False
    if F16 in dtypes:
        return [F32 if d in (F16, BF16) else d for d in dtypes], False
    return [F16 if d == BF16 else d for d in dtypes], True


def by_rule(call, dtypes):
    """The answer of f16's rule with bf16 in place of f16."""
    subst, back = substitute(dtypes)
    r = call(subst)
    if r is not None and back and r == F16:
        return BF16
    return r


def judged(label, call, dtypes, trust_ml_dtypes=True):
    """NumPy's answer (ml_dtypes for bf16 where it has one), per the module docstring."""
    if BF16 not in dtypes:
        return call(dtypes)
    mine = by_rule(call, dtypes)
    theirs = call(dtypes)
    if theirs is None or not trust_ml_dtypes:
        return mine
    if theirs != mine:
        sys.exit(f"bf16 {label}: ml_dtypes gives {theirs}, f16's rule {mine}: decide which")
    return theirs


def name(dt):
    return "error" if dt is None else NAME_OF[np.dtype(dt)]


def write(path, header, lines):
    with open(path, "w") as f:
        f.write(header)
        f.write("\n".join(lines) + "\n")


def main():
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
    os.makedirs(out_dir, exist_ok=True)
    stamp = (f"# generated by tests/gen_promotion.py with NumPy {np.__version__}, "
             f"ml_dtypes {ml_dtypes.__version__}; do not edit\n")

    lines = []
    for an, a in DTYPES:
        for bn, b in DTYPES:
            r = judged(f"result_type {an} {bn}",
                       lambda d: outcome(np.result_type, d[0], d[1]), [a, b])
            lines.append(f"{an} {bn} {name(r)}")
    write(os.path.join(out_dir, "promotion_types.txt"), stamp + "# A B np.result_type(A, B)\n",
          lines)

    lines = []
    for op, fn in BINARY:
        for dn, dt in DTYPES:
            for kind, value in WEAK:
                for side in "RL":
                    if side == "R":
                        call = lambda d, fn=fn, value=value: outcome(fn, ones(d[0]), value)
                    else:
                        call = lambda d, fn=fn, value=value: outcome(fn, value, ones(d[0]))
                    # ml_dtypes#189: weak scalars with bf16 follow f16's rule.
                    r = judged(f"{op} {side} {dn} {kind}", call, [dt], trust_ml_dtypes=False)
                    lines.append(f"{op} {side} {dn} {kind} {name(r)}")
    write(os.path.join(out_dir, "promotion_weak.txt"),
          stamp + "# OP SIDE DTYPE WEAK_KIND RESULT (weak values: True, 1, 1.5, 1j)\n", lines)

    lines = []
    for op, fn in UNARY:
        for dn, dt in DTYPES:
            r = judged(f"{op} {dn}", lambda d, fn=fn: outcome(fn, ones(d[0])), [dt])
            lines.append(f"{op} {name(r)} {dn}")
    binaries = [(op, fn, (2,)) for op, fn in BINARY] + EXTRA_BINARY
    for op, fn, shape in binaries:
        for an, a in DTYPES:
            for bn, b in DTYPES:
                r = judged(f"{op} {an} {bn}",
                           lambda d, fn=fn, shape=shape: outcome(fn, ones(d[0], shape),
                                                                 ones(d[1], shape)), [a, b],
                           trust_ml_dtypes=op != "matmul")
                lines.append(f"{op} {name(r)} {an} {bn}")
    cond = ones(np.bool_)
    for an, a in DTYPES:
        for bn, b in DTYPES:
            r = judged(f"where {an} {bn}",
                       lambda d: outcome(np.where, cond, ones(d[0]), ones(d[1])), [a, b])
            lines.append(f"where {name(r)} bool {an} {bn}")
            r = judged(f"clip {an} {bn}",
                       lambda d: outcome(np.clip, ones(d[0]), ones(d[1]), ones(d[1])), [a, b],
                       trust_ml_dtypes=False)
            lines.append(f"clip {name(r)} {an} {bn} {bn}")
    write(os.path.join(out_dir, "promotion_ops.txt"),
          stamp + "# OP RESULT INPUT_DTYPES... (strong arrays of ones)\n", lines)

    lines = []
    for op, fn in REDUCE:
        for dn, dt in DTYPES:
            trust = not op.startswith("norm")  # bf16 is not np.inexact to vector_norm
            r = judged(f"{op} {dn}", lambda d, fn=fn: outcome(fn, ones(d[0], (3, 2))), [dt],
                       trust_ml_dtypes=trust)
            lines.append(f"{op} {dn} {name(r)}")
    write(os.path.join(out_dir, "promotion_reduce.txt"),
          stamp + "# REDUCTION DTYPE RESULT (norm_*: np.linalg.vector_norm, ord 2, 1, inf)\n",
          lines)


if __name__ == "__main__":
    main()
