#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_fc and fuzz_npy (fuzz/corpus/fuzz_fc, fuzz/corpus/fuzz_npy).

Run once from the repository root with NumPy 2.x (CI has no NumPy; the output is checked in):

    python3 fuzz/gen_corpus.py

fuzz_fc:  every program of examples/fc, bench/fc (sweep/ too) and tests/data/fc, each ```fc
          block of docs/FC_FORMAT.md (doc_NN.fc), and a few snippets below (snip_*.fc) for
          what those do not show: symbols, degenerate extents, odd spellings, near-errors.
fuzz_npy: small arrays NumPy writes (every dtype fusec reads, C and Fortran order, both byte
          orders, 0-d, empty, 8-d, formats 2.0 and 3.0, Python 2 extents) and bad files
          (truncated, bad magic, version, header, dtype, rank, shape).
The cache targets' seeds come from fuzz/gen_cache_corpus.c.
"""
import io
import os
import re
import shutil

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")

SNIPPETS = {
    "symbols": ("x = input f32 [n, m]\ny = input f32 [m]\na = (x * y).sum(axis=1)\n"
                "b = x.T @ x\nout a, b\n"),
    "zero_extent": ("x = input f64 [0, k]\ns = x.sum(axis=0)\nm = x.mean()\nr = x[::-1]\n"
                    "out s, m, r\n"),
    "scalar": "x = input i32 []\na = x + 1\nb = -x\nc = x ** 2\nd = x // 3 % -2\nout a, b, c, d\n",
    "weak": ("x = input f16 [3]\na = x * 0.1\nb = x + 2**70\nc = 1j * x\nd = x > 1e300\n"
             "e = True & (x < 0)\nout a, b, c, d, e\n"),
    "pad_modes": ('x = input u8 [2, 3]\na = pad(x, [[1, 2], [0, 1]], mode="edge")\n'
                  'b = pad(x, 1, mode="reflect")\nc = pad(x[:, 0:0], 1)\n'
                  'd = pad(x, 1, constant_values=-1.5)\nout a, b, c, d\n'),
    "fft": ("x = input c64 [4, 6]\nf = fft(x, axis=1)\ng = ifft(f, axis=1)\nh = fft(x.real, axis=0)\n"
            "out g, h\n"),
    "arg": ("x = input bf16 [3, 4]\na = argmax(x, axis=1)\nb = argmin(x)\nc = x.var(axis=0, ddof=1)\n"
            "d = x.std()\ne = norm(x, 1, axis=1)\nf = nanargmax(x, axis=0)\nout a, b, c, d, e, f\n"),
    "creation": ("a = arange(0, 5, 0.5)\nl = linspace(0, 1, 7, endpoint=False)\ne = eye(3, 4, k=1)\n"
                 "r = random([2, 3], f32, seed=7)\nz = zeros([2], i8)\nf = full([2, 2], 3)\n"
                 "out a, l, e, r, z, f\n"),
    "where_clip": ("x = input f32 [5]\ny = input i64 [5]\na = where(x > 0, x, y)\nb = clip(x, -1, 1)\n"
                   "c = isnan(x)\nd = maximum(x, y)\ne = x.astype(c128)\nout a, b, c, d, e\n"),
    "methods": ("x = input f32 [2, 3, 4]\na = x.reshape(6, -1)\nb = transpose(x, [2, 0, 1])\n"
                "c = x.sum(axis=(0, 2), keepdims=True)\nd = x.max(-1)\ne = x.flatten()[::5]\n"
                "out a, b, c, d, e\n"),
    "concat": ("x = input i16 [2, 3]\na = concatenate([x, x, x[:1]], axis=0)\nb = stack([x, x], axis=-1)\n"
               "c = split(x, 3, axis=1)\nd = c[2]\nout a, b, d\n"),
    "shifts": ("x = input u16 [4]\ny = input i8 [4]\na = x << 3\nb = x >> y\nc = ~x\nd = x ^ y\n"
               "e = x | 1\nout a, b, c, d, e\n"),
    "composite": ("x = input f64 [3, 3]\na = logsumexp(x, axis=1)\nb = tril(x, -1) + diag(diagonal(x))\n"
                  "c = roll(x, [1, -1], axis=[0, 1])\nd = tile(x[0], 2)\ne = isclose(x, x.T)\n"
                  "f = nan_to_num(x / 0.0)\nout a, b, c, d, e, f\n"),
    "unpack": ('x = input f32 [3]\nk = ElementwiseKernel("T x", "T a, T b", "a = x; b = -x;", "k")\n'
               "p, q = k(x)\nout p, q\n"),
    "comments": "# only a comment\nx = input f32 [2] # trailing\n\n\ny = x \\\n  + 1\nout y  # end\n",
    "long_chain": ("x0 = input f32 [2]\n" + "".join("x%d = x%d * 2 + 1\n" % (i + 1, i) for i in range(40))
                   + "out x40\n"),
    "nested": "x = input f64 [2]\ny = " + "(" * 40 + "x" + " + 1)" * 40 + "\nout y\n",
    # what fuzz_fc found (tests/test_fc.c, tests/test_ops_ref.c hold them too)
    "found_repeated_alias": "x = input f32 [4]\ny = x * 2\nz = y\nk = 3.5\nout z, y, x, y, k\n",
    "found_negative_stride": "x = input f32 [10]\ny = x[::-1] * (-2.5)\nout y\n",
    "bad_unclosed": "x = input f32 [2\nout x\n",
    "bad_unknown": "x = input f32 [2]\ny = frobnicate(x)\nout y\n",
}


def fc_corpus():
    out = os.path.join(CORPUS, "fuzz_fc")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    for folder, prefix in (("examples/fc", "ex_"), ("bench/fc", "bench_"),
                           ("bench/fc/sweep", "sweep_"), ("tests/data/fc", "test_")):
        base = os.path.join(ROOT, folder)
        for name in sorted(os.listdir(base)):
            if name.endswith(".fc"):
                shutil.copy(os.path.join(base, name), os.path.join(out, prefix + name))
    with open(os.path.join(ROOT, "docs", "FC_FORMAT.md")) as f:
        doc = f.read()
    for i, block in enumerate(re.findall(r"```fc\n(.*?)```", doc, re.S)):
        with open(os.path.join(out, "doc_%02d.fc" % i), "w") as f:
            f.write(block)
    for name, text in SNIPPETS.items():
        with open(os.path.join(out, "snip_%s.fc" % name), "w") as f:
            f.write(text)
    return len(os.listdir(out))


def npy_bytes(a, version=None):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, a, version=version, allow_pickle=False)
    return buf.getvalue()


def npy_corpus():
    out = os.path.join(CORPUS, "fuzz_npy")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    files = {}
    base = np.arange(6).reshape(2, 3)
    for t in ("?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8",
              "c16"):
        a = (base - 2).astype(t) if t[0] not in "?u" else base.astype(t)
        files["%s_2x3.npy" % t.replace("?", "bool")] = npy_bytes(a)
    files["f4_2x3_F.npy"] = npy_bytes(np.asfortranarray((base * 0.5).astype("f4")))
    files["i2_2x2x2_F.npy"] = npy_bytes(np.asfortranarray(np.arange(8, dtype="i2").reshape(2, 2, 2)))
    files["c8_3x2_F.npy"] = npy_bytes(np.asfortranarray((base.T + 1j).astype("c8")))
    files["f8_be.npy"] = npy_bytes(np.array([1.5, -np.inf, np.nan], dtype=">f8"))
    files["i4_be_F.npy"] = npy_bytes(np.asfortranarray(np.array([[1, -2], [3, 4]], dtype=">i4")))
    files["c16_be.npy"] = npy_bytes(np.array([1 + 2j, -3j], dtype=">c16"))
    files["f8_0d.npy"] = npy_bytes(np.array(2.5))
    files["bool_0d.npy"] = npy_bytes(np.array(True))
    files["f4_empty.npy"] = npy_bytes(np.zeros((0,), "f4"))
    files["f4_2x0x3.npy"] = npy_bytes(np.zeros((2, 0, 3), "f4"))
    files["u1_8d.npy"] = npy_bytes(np.arange(2, dtype="u1").reshape(1, 1, 1, 1, 1, 1, 2, 1))
    files["f4_v2.npy"] = npy_bytes(np.arange(3, dtype="f4"), version=(2, 0))
    files["f4_v3.npy"] = npy_bytes(np.arange(3, dtype="f4"), version=(3, 0))

    good = npy_bytes(np.arange(4, dtype="<i4").reshape(2, 2))
    hlen = good[8] | good[9] << 8
    header = good[10:10 + hlen].decode("latin1")

    def with_header(text, data=good[10 + hlen:], version=b"\x01\x00"):
        text = text + " " * ((64 - (10 + len(text) + 1) % 64) % 64) + "\n"
        return b"\x93NUMPY" + version + len(text).to_bytes(2, "little") + text.encode("latin1") + data

    files["py2_extents.npy"] = with_header(header.strip().replace("(2, 2)", "(2L, 2L)"))
    files["bool_stored_2.npy"] = with_header("{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }",
                                             bytes([0, 1, 2, 255]))
    files["trailing_bytes.npy"] = good + b"extra"
    files["bad_truncated_data.npy"] = good[:-3]
    files["bad_truncated_header.npy"] = good[:20]
    files["bad_magic.npy"] = b"\x93NUMPZ" + good[6:]
    files["bad_version.npy"] = good[:6] + b"\x04\x00" + good[8:]
    files["bad_no_shape.npy"] = with_header("{'descr': '<i4', 'fortran_order': False, }")
    files["bad_dtype_void.npy"] = with_header("{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }")
    files["bad_dtype_object.npy"] = with_header("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }")
    files["bad_9d.npy"] = with_header("{'descr': '<i4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,4), }")
    files["bad_huge_shape.npy"] = with_header("{'descr': '<f8', 'fortran_order': False, "
                                              "'shape': (4611686018427387904, 4), }")
    files["bad_negative_extent.npy"] = with_header("{'descr': '<i4', 'fortran_order': False, 'shape': (-1,), }")
    files["bad_not_dict.npy"] = with_header("['descr', '<i4']")
    files["bad_nul.npy"] = with_header("{'descr': '<i4',\0 'fortran_order': False, 'shape': (4,), }")
    files["bad_fortran_word.npy"] = with_header("{'descr': '<i4', 'fortran_order': 0, 'shape': (4,), }")
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    return len(files)


if __name__ == "__main__":
    print("fuzz_fc: %d files, fuzz_npy: %d files" % (fc_corpus(), npy_corpus()))
