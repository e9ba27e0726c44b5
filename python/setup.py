"""Builds fusec._fusec, a CPython extension against the limited API (abi3, CPython >= 3.11).

Where libfusec is found, in this order:
  FUSEC_BUILD_DIR=DIR   a CMake build tree (DIR/libfusec.so) and the source tree's include/
  FUSEC_PREFIX=DIR      an installed fusec (DIR/include/fusec.h, DIR/lib*/libfusec.so)
  the in-tree build     ../build and ../include, when this folder sits in the fusec repository
  pkg-config fusec      an installed fusec that pkg-config knows
The module gets an rpath to the library's folder, so it needs no LD_LIBRARY_PATH.
FUSEC_WERROR=1 makes compiler warnings errors (./test.sh sets it).
"""
import os
import shlex
import subprocess

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def _libdir_of(prefix):
    for sub in ("lib", "lib64", os.path.join("lib", "x86_64-linux-gnu")):
        d = os.path.join(prefix, sub)
        if os.path.exists(os.path.join(d, "libfusec.so")):
            return d
    raise SystemExit(f"fusec: no libfusec.so under {prefix}/lib*")


def find_fusec():
    """(include dirs, library dirs, extra link args) for libfusec."""
    build = os.environ.get("FUSEC_BUILD_DIR")
    if build:
        build = os.path.abspath(build)
        return [os.path.join(REPO, "include")], [build], []
    prefix = os.environ.get("FUSEC_PREFIX")
    if prefix:
        prefix = os.path.abspath(prefix)
        return [os.path.join(prefix, "include")], [_libdir_of(prefix)], []
    intree = os.path.join(REPO, "build")
    if os.path.exists(os.path.join(REPO, "include", "fusec.h")) and os.path.exists(
        os.path.join(intree, "libfusec.so")
    ):
        return [os.path.join(REPO, "include")], [intree], []
    try:
        cflags = subprocess.check_output(["pkg-config", "--cflags", "fusec"], text=True)
        libdir = subprocess.check_output(
            ["pkg-config", "--variable=libdir", "fusec"], text=True
        ).strip()
    except (OSError, subprocess.CalledProcessError):
        raise SystemExit(
            "fusec: libfusec not found. Build it first (cmake --build build --target fusec), "
            "or set FUSEC_BUILD_DIR or FUSEC_PREFIX, or make `pkg-config fusec` work."
        )
    incs = [f[2:] for f in shlex.split(cflags) if f.startswith("-I")]
    return incs, [libdir], []


incs, libdirs, extra_link = find_fusec()
cflags = ["-std=c11", "-Wall", "-Wextra", "-Wno-missing-field-initializers"]
if os.environ.get("FUSEC_WERROR") == "1":
    cflags.append("-Werror")

ext = Extension(
    "fusec._fusec",
    sources=[os.path.join("src", f) for f in ("module.c", "array.c", "ops.c", "fuse.c", "user.c",
                                                   "random.c", "interop.c")],
    depends=[os.path.join("src", "pyfusec.h")],
    include_dirs=incs,
    library_dirs=libdirs,
    runtime_library_dirs=libdirs,
    libraries=["fusec"],
    define_macros=[("Py_LIMITED_API", "0x030B0000")],
    py_limited_api=True,
    extra_compile_args=cflags,
    extra_link_args=extra_link,
)

setup(ext_modules=[ext], options={"bdist_wheel": {"py_limited_api": "cp311"}})
