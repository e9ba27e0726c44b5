#!/usr/bin/env python3
"""Generates tests/data/npy/, the .npy fixtures test_npy.c reads.

Run once with NumPy 2.x (CI has no NumPy, so the output is checked in):

    python3 tests/gen_npy.py

valid/  files NumPy wrote (np.save / np.lib.format.write_array) for every dtype fusec reads,
        C and Fortran order, little- and big-endian, 0-d, empty, 1-d, 8-d, format 2.0 and 3.0,
        plus a few hand-made ones NumPy also reads (Python 2 'L' extents, bytes after the data,
        bools stored as 2). Each has a reference ref/NAME.bin: the same values as raw C-order
        little-endian bytes, what fusec must hold after loading.
valid.txt  one line per file: FILE REF DTYPE SHAPE NPSAVE
           SHAPE is "3,4,5" ("-" for 0-d); NPSAVE is 1 where FILE is exactly np.save's output
           for the reference array (C order, little-endian, format 1.0), so fc_npy_save of the
           loaded array must reproduce FILE byte for byte.
bad/    malformed or unsupported files.
bad.txt    one line per file: FILE STATUS TEXT, STATUS one of PARSE DTYPE SHAPE, TEXT a part
           of the message fc_npy_load must give (the message must name FILE too).

Every value is random and non-zero (bools are random); float dtypes include inf, -inf and NaN.
"""
import io
import os
import shutil
import struct
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "data", "npy")

DTYPES = [  # (fusec name, numpy dtype)
    ("bool", "b1"), ("i8", "i1"), ("i16", "i2"), ("i32", "i4"), ("i64", "i8"),
    ("u8", "u1"), ("u16", "u2"), ("u32", "u4"), ("u64", "u8"),
    ("f16", "f2"), ("f32", "f4"), ("f64", "f8"), ("c64", "c8"), ("c128", "c16"),
]

rng = np.random.default_rng(20240607)


def random_values(code, shape):
    n = int(np.prod(shape, dtype=np.int64))
    dt = np.dtype(code)
    if dt.kind == "b":
        v = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        v = rng.integers(int(info.min), int(info.max), n, dtype=dt, endpoint=True)
        v[v == 0] = 1
    else:
        def reals():
            r = rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n) * 10.0 ** rng.integers(-3, 4, n)
            if n >= 8:
                r[1], r[3], r[5] = np.inf, -np.inf, np.nan
            return r
        if dt.kind == "c":
            v = np.empty(n, dtype=dt)
            v.real, v.imag = reals(), reals()
        else:
            v = reals().astype(dt)
    return v.reshape(shape)


def shape_str(shape):
    return ",".join(str(d) for d in shape) if shape else "-"


valid_lines = []
bad_lines = []


def save_ref(name, arr):
    path = os.path.join(OUT, "ref", name + ".bin")
    with open(path, "wb") as f:
        f.write(np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes())
    return "ref/" + name + ".bin"


def write_valid(fname, data, ref, fusec_dtype, shape, npsave):
    with open(os.path.join(OUT, "valid", fname), "wb") as f:
        f.write(data)
    valid_lines.append(f"valid/{fname} {ref} {fusec_dtype} {shape_str(shape)} {int(npsave)}")


def npy_bytes(arr, version=None):
    b = io.BytesIO()
    if version is None:
        np.save(b, arr)
    else:
        np.lib.format.write_array(b, arr, version=version)
    return b.getvalue()


def gen_valid():
    for name, code in DTYPES:
        one_byte = np.dtype(code).itemsize == 1
        for tag, shape in [("3x4x5", (3, 4, 5)), ("scalar", ()), ("empty", (0, 3)),
                           ("empty3", (2, 0, 3)), ("vec", (7,))]:
            arr = random_values(code, shape)
            ref = save_ref(f"{name}_{tag}", arr)
            base = f"{name}_{tag}"
            le = arr.astype(arr.dtype.newbyteorder("<"))
            write_valid(base + "_C_le.npy", npy_bytes(le), ref, name, shape, True)
            if not one_byte and tag in ("3x4x5", "scalar", "vec"):
                be = arr.astype(arr.dtype.newbyteorder(">"))
                write_valid(base + "_C_be.npy", npy_bytes(be), ref, name, shape, False)
            if len(shape) >= 2:
                f = np.asfortranarray(le)
                data = npy_bytes(f)
                assert b"'fortran_order': True" in data or 0 in shape
                write_valid(base + "_F_le.npy", data, ref, name, shape, False)
                if not one_byte:
                    fb = np.asfortranarray(arr.astype(arr.dtype.newbyteorder(">")))
                    write_valid(base + "_F_be.npy", npy_bytes(fb), ref, name, shape, False)

    # Eight dimensions, Fortran order, big-endian: the reorder at fusec's most axes.
    shape8 = (2, 3, 1, 2, 2, 1, 3, 2)
    arr = random_values("f4", shape8)
    ref = save_ref("f32_8d", arr)
    write_valid("f32_8d_C_le.npy", npy_bytes(arr), ref, "f32", shape8, True)
    write_valid("f32_8d_F_be.npy", npy_bytes(np.asfortranarray(arr.astype(">f4"))), ref, "f32",
                shape8, False)
    arr = random_values("c16", (3, 5))
    ref = save_ref("c128_3x5", arr)
    write_valid("c128_3x5_F_be.npy", npy_bytes(np.asfortranarray(arr.astype(">c16"))), ref,
                "c128", (3, 5), False)

    # Format versions 2.0 and 3.0 (4-byte header length).
    arr = random_values("f8", (4, 6))
    ref = save_ref("f64_v23", arr)
    write_valid("f64_4x6_v2.npy", npy_bytes(arr, (2, 0)), ref, "f64", (4, 6), False)
    write_valid("f64_4x6_v3.npy", npy_bytes(np.asfortranarray(arr), (3, 0)), ref, "f64", (4, 6),
                False)

    # Hand-made headers NumPy reads too.
    arr = random_values("i4", (2, 3))
    ref = save_ref("i32_py2", arr)
    write_valid("i32_py2_longs.npy",
                raw_npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2L, 3L), }",
                        arr.astype("<i4").tobytes()), ref, "i32", (2, 3), False)
    write_valid("i32_trailing_bytes.npy", npy_bytes(arr.astype("<i4")) + b"extra bytes",
                ref, "i32", (2, 3), False)
    write_valid("i32_double_quotes.npy",
                raw_npy('{"shape": (2, 3), "fortran_order": False, "descr": "<i4"}',
                        arr.astype("<i4").tobytes()), ref, "i32", (2, 3), False)
    b = np.array([[1, 0, 2], [255, 1, 0]], dtype=np.uint8)
    ref = save_ref("bool_nonzero", b != 0)
    write_valid("bool_bytes_not_01.npy",
                raw_npy("{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }", b.tobytes()),
                ref, "bool", (2, 3), False)
    # 1-d data marked Fortran order (NumPy never writes it, but reads it: order is moot).
    arr = random_values("u2", (5,))
    ref = save_ref("u16_vec_fortran", arr)
    write_valid("u16_vec_fortran.npy",
                raw_npy("{'descr': '>u2', 'fortran_order': True, 'shape': (5,), }",
                        arr.astype(">u2").tobytes()), ref, "u16", (5,), False)


def raw_npy(header, data, version=(1, 0), hlen=None, pad=True):
    h = header.encode("latin1")
    if pad:
        total = 10 + len(h) + 1
        h += b" " * ((64 - total % 64) % 64) + b"\n"
    if hlen is None:
        hlen = len(h)
    fmt = "<H" if version[0] == 1 else "<I"
    return b"\x93NUMPY" + bytes(version) + struct.pack(fmt, hlen) + h + data


def bad(fname, data, status, text):
    with open(os.path.join(OUT, "bad", fname), "wb") as f:
        f.write(data)
    bad_lines.append(f"bad/{fname} {status} {text}")


def gen_bad():
    good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
    data = np.arange(1, 7, dtype="<f4").tobytes()
    ok = raw_npy(good, data)
    bad("empty_file.npy", b"", "PARSE", "too short for the magic string")
    bad("short_magic.npy", b"\x93NUM", "PARSE", "too short for the magic string")
    bad("bad_magic.npy", b"\x93NUMPX" + ok[6:], "PARSE", "magic string")
    bad("text_file.npy", b"x = input f32 [4]\nout x\n", "PARSE", "magic string")
    bad("no_version.npy", b"\x93NUMPY\x01", "PARSE", "inside the format version")
    bad("version_4.npy", raw_npy(good, data, version=(4, 0)), "PARSE", "version 4.0")
    bad("version_1_1.npy", raw_npy(good, data, version=(1, 1)), "PARSE", "version 1.1")
    bad("no_header_len.npy", b"\x93NUMPY\x02\x00\x10\x00", "PARSE", "inside the header length")
    bad("header_len_past_end.npy", raw_npy(good, b"", hlen=4000), "PARSE",
        "the header is 4000 bytes long")
    bad("header_len_huge.npy", raw_npy(good, data, version=(2, 0), hlen=0xFFFFFFF0), "PARSE",
        "larger than")
    bad("header_empty.npy", raw_npy("", b"", pad=False), "PARSE", "expected '{'")
    bad("header_not_dict.npy", raw_npy("[1, 2, 3]", data), "PARSE", "expected '{'")
    bad("missing_shape.npy", raw_npy("{'descr': '<f4', 'fortran_order': False, }", data), "PARSE",
        "'shape' is missing")
    bad("missing_descr.npy", raw_npy("{'fortran_order': False, 'shape': (6,), }", data), "PARSE",
        "'descr' is missing")
    bad("extra_key.npy",
        raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'extra': 1, }", data),
        "PARSE", "unexpected key 'extra'")
    bad("duplicate_key.npy",
        raw_npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", data),
        "PARSE", "appears twice")
    bad("unquoted_key.npy", raw_npy("{descr: '<f4', 'fortran_order': False, 'shape': (6,), }",
                                    data), "PARSE", "expected a quoted string")
    bad("unbalanced_quotes.npy",
        raw_npy("{'descr': '<f4, 'fortran_order': False, 'shape': (6,), }", data), "PARSE",
        "expected ',' between header entries")
    bad("string_at_end.npy", raw_npy("{'descr': '<f4", data, pad=False), "PARSE",
        "unterminated string")
    bad("missing_brace.npy", raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,)",
                                     data), "PARSE", "expected ',' between header entries")
    bad("missing_colon.npy", raw_npy("{'descr' '<f4', 'fortran_order': False, 'shape': (6,), }",
                                     data), "PARSE", "expected ':' after a key")
    bad("garbage_after_dict.npy", raw_npy(good + " junk", data), "PARSE", "after the header dict")
    bad("fortran_not_bool.npy", raw_npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (6,), }",
                                        data), "PARSE", "fortran_order is not True or False")
    bad("shape_not_tuple.npy", raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': 6, }",
                                       data), "PARSE", "expected '(' to start the shape")
    bad("shape_paren_int.npy", raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6), }",
                                       data), "PARSE", "a 1-tuple is written (n,)")
    bad("shape_list.npy", raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }",
                                  data), "PARSE", "the shape is a list")
    bad("shape_negative.npy", raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-6,), }",
                                      data), "PARSE", "negative extent")
    bad("shape_float.npy", raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6.0,), }",
                                   data), "PARSE", "not an integer")
    bad("shape_missing_comma.npy",
        raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2 3), }", data), "PARSE",
        "expected ',' or ')' in the shape")
    bad("shape_extent_overflow.npy",
        raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
                data), "PARSE", "larger than 9223372036854775807")
    bad("shape_product_overflow.npy",
        raw_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }",
                data), "PARSE", "too large")
    bad("shape_huge_truncated.npy",
        raw_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }", data),
        "PARSE", "needs 8796093022208 bytes of data, the file has 24")
    bad("py2_long_in_v3.npy", raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6L,), }",
                                      data, version=(3, 0)), "PARSE", "not an integer")
    bad("data_truncated.npy", raw_npy(good, data[:10]), "PARSE", "needs 24 bytes of data, the file has 10")
    bad("data_missing.npy", raw_npy(good, b""), "PARSE", "needs 24 bytes of data, the file has 0")
    bad("nul_in_header.npy", raw_npy("{'descr': '<f4',\0 'fortran_order': False, 'shape': (6,), }",
                                     data), "PARSE", "NUL byte")
    bad("escape_in_string.npy",
        raw_npy("{'descr': '<f\\x34', 'fortran_order': False, 'shape': (6,), }", data), "PARSE",
        "escape sequences")
    # Valid headers of dtypes fusec lacks.
    bad("dtype_unicode.npy", npy_bytes(np.array(["ab", "cd"], dtype="<U2")), "DTYPE", "'<U2'")
    bad("dtype_bytes.npy", npy_bytes(np.array([b"ab"], dtype="S2")), "DTYPE", "'|S2'")
    bad("dtype_datetime.npy", npy_bytes(np.array(["2024-01-01"], dtype="datetime64[D]")), "DTYPE",
        "'<M8[D]'")
    bad("dtype_longdouble.npy", raw_npy("{'descr': '<f16', 'fortran_order': False, 'shape': (1,), }",
                                        b"\x01" * 16), "DTYPE", "long double")
    bad("dtype_structured.npy", npy_bytes(np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")])),
        "DTYPE", "structured dtype")
    bad("dtype_object.npy", raw_npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }",
                                    b"\x01" * 8), "DTYPE", "'|O'")
    bad("dtype_void_bf16.npy", raw_npy("{'descr': '<V2', 'fortran_order': False, 'shape': (3,), }",
                                       b"\x01" * 6), "DTYPE", "bfloat16")
    bad("dtype_empty.npy", raw_npy("{'descr': '', 'fortran_order': False, 'shape': (3,), }",
                                   b"\x01" * 6), "DTYPE", "dtype '' is not supported")
    bad("nine_dims.npy", npy_bytes(np.ones((1,) * 9, dtype="<f4")), "SHAPE", "9 dimensions")


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    for d in ("valid", "ref", "bad"):
        os.makedirs(os.path.join(OUT, d))
    gen_valid()
    gen_bad()
    # Every valid file must load in NumPy to the reference; every bad one must not load in
    # NumPy either, except those NumPy reads but fusec does not (dtypes, 9 dimensions).
    for line in valid_lines:
        f, ref, dt, shape, _ = line.split()
        with warnings.catch_warnings():  # the Python 2 style header warns, as it should
            warnings.simplefilter("ignore")
            a = np.ascontiguousarray(np.load(os.path.join(OUT, f)))
        if dt == "bool":
            got = (a.view(np.uint8) != 0).astype(np.uint8).tobytes()
        else:
            got = a.astype(a.dtype.newbyteorder("<")).tobytes()
        assert got == open(os.path.join(OUT, ref), "rb").read(), f
    numpy_reads = []
    for line in bad_lines:
        f, status = line.split()[:2]
        try:
            np.load(os.path.join(OUT, f), allow_pickle=False)
            numpy_reads.append(f)
        except Exception:
            pass
    print("bad files NumPy reads:", " ".join(numpy_reads))
    head = "# generated by tests/gen_npy.py; see there for the format\n"
    with open(os.path.join(OUT, "valid.txt"), "w") as f:
        f.write(head + "\n".join(valid_lines) + "\n")
    with open(os.path.join(OUT, "bad.txt"), "w") as f:
        f.write(head + "\n".join(bad_lines) + "\n")
    print(f"{len(valid_lines)} valid files, {len(bad_lines)} bad files in {OUT}")


if __name__ == "__main__":
    main()
