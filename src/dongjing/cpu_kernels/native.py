"""Fused kernels as native libraries on disk: a later process loads a kernel without numba.

numba's own disk cache (``cache=True``) still needs numba in the loading process: importing it
and starting its code generator cost about half a second, far more than the kernel. So where it
can, dongjing compiles a kernel once with numba as a C-callable function (``numba.cfunc``,
arrays passed as pointers), emits that machine code as an object file, and links it with a small
generated C wrapper (a Python extension module with one function, ``call``) into a shared
library in the kernel cache. Any later process imports the library in about a millisecond.

The machine code is numba's, for this CPU, from the same kernel source: a kernel computes the
same bits through either path (no fast-math, so no contraction or reassociation). ``call``
takes the kernel's arguments as numba's dispatcher does, but only C-contiguous arrays and
scalars of exactly the dtypes it was built for; for anything else it returns ``NotImplemented``
and the caller runs numba's JIT-compiled kernel instead.

Off (numba's cache alone) without a C compiler, off Linux, for dtypes other than float32,
float64, int32 and int64, or with ``DONGJING_NATIVE_KERNELS=0``. The library's name is a hash of
the kernel's module text, its parameter types, this CPU's model and flags, the Python ABI and
numba's installation, so a changed CPU, Python or numba builds a new one.

A library is never loaded unverified: loading a damaged one (a truncated file ends the process
with SIGBUS) cannot be undone. Each library has a manifest beside it (``<library>.sha256``: its
size and SHA-256), both written atomically; a library whose manifest is missing or disagrees is
rebuilt, and where it cannot be rebuilt, numba's kernel runs instead.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
import warnings

FORMAT = "2"  # bump when the library's layout or the wrapper changes
C_TYPES = {"float32": "float", "float64": "double", "int32": "int32_t", "int64": "int64_t"}
_FORMATS = {"float32": "f", "float64": "d", "int32": "i", "int64": "lq"}  # buffer format chars
_broken: list = []  # why building failed once in this process (then numba's cache is used)
_cpu: list = []


def enabled() -> bool:
    """True when native kernel libraries may be built and loaded here."""
    return (sys.platform.startswith("linux") and not _broken
            and os.environ.get("DONGJING_NATIVE_KERNELS", "1") not in ("0", ""))


def supported(params: tuple) -> bool:
    """True when every kernel parameter (kind, dtype name) has a C type here."""
    return all(dtype in C_TYPES for _, dtype in params)


def cpu_tag() -> str:
    """This CPU's model name and feature flags (Linux), which the machine code is built for."""
    if not _cpu:
        lines = []
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if not line.strip():
                        break  # the first processor's block is enough
                    if line.startswith(("model name", "flags", "vendor_id", "cpu family")):
                        lines.append(line.strip())
        except OSError:
            pass
        _cpu.append("\n".join(lines))
    return _cpu[0]


def _numba_stamp() -> str:
    spec = importlib.util.find_spec("numba")
    origin = getattr(spec, "origin", None) or ""
    try:
        st = os.stat(origin)
    except OSError:
        return origin
    return f"{origin}:{st.st_size}:{st.st_mtime_ns}"


def library_key(text: str, params: tuple) -> str:
    """The hash naming a kernel's library (see the module docstring for what it covers)."""
    parts = [FORMAT, text, repr(params), cpu_tag(), sys.implementation.cache_tag or "",
             os.uname().machine, _numba_stamp()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


_MAX_LIBRARY = 256 << 20  # bytes: no kernel library is near this; a bigger file is not ours


def manifest_path(path: str) -> str:
    """Where the size and checksum of the library at `path` are kept."""
    return path + ".sha256"


def file_digest(path: str) -> tuple[int, str] | None:
    """(size, SHA-256 hex) of the regular file at `path`, or None when it cannot be read as
    one (missing, a FIFO or device, too large)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_LIBRARY:
            return None
        h, size = hashlib.sha256(), 0
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def manifest_text(digest: tuple[int, str]) -> str:
    return f"{digest[0]} {digest[1]}\n"


def verified(path: str) -> bool:
    """True when the library at `path` has the size and checksum its manifest records."""
    digest = file_digest(manifest_path(path))
    if digest is None or digest[0] > 200:
        return False
    try:
        with open(manifest_path(path), encoding="ascii") as f:
            recorded = f.read(200)
    except (OSError, ValueError):
        return False
    found = file_digest(path)
    return found is not None and recorded == manifest_text(found)


def _warn_damaged(path: str, why: str) -> None:
    warnings.warn(f"dongjing: kernel cache entry {path} {why}; rebuilding it (or running the "
                  "kernel without it)", RuntimeWarning, stacklevel=3)


def load(path: str, key: str):
    """The library's ``call`` function, or None when the file is missing, fails verification
    (see the module docstring) or does not load."""
    if not os.path.exists(path):
        return None
    name = f"dongjing_native_{key}"
    module = sys.modules.get(name)
    if module is not None:  # verified when this process loaded it
        return module.call
    if not verified(path):
        _warn_damaged(path, "does not match its recorded size and checksum")
        return None
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    try:
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
        call = module.call
    except (ImportError, OSError, AttributeError) as exc:
        _warn_damaged(path, f"does not load ({exc})")
        return None
    sys.modules[name] = module
    return call


def build(fn, params: tuple, path: str, key: str) -> bool:
    """Compile the Python kernel `fn` with numba and link it into the library at `path`
    (atomically: other processes may race); False (remembered) when that is not possible."""
    cc = os.environ.get("CC") or "cc"
    if shutil.which(cc.split()[0]) is None:
        _broken.append(f"no C compiler ({cc})")
        return False
    try:
        obj, symbol = _object_code(fn, params)
    except Exception as exc:  # numba internals differ: its own cache still works
        _broken.append(f"numba object code: {exc!r}")
        return False
    name = f"dongjing_native_{key}"
    try:
        with tempfile.TemporaryDirectory(dir=os.path.dirname(path)) as tmp:
            obj_path = os.path.join(tmp, "kernel.o")
            c_path = os.path.join(tmp, "wrapper.c")
            out = os.path.join(tmp, "kernel.so")
            with open(obj_path, "wb") as f:
                f.write(obj)
            with open(c_path, "w") as f:
                f.write(wrapper_source(name, symbol, params))
            cmd = [*cc.split(), "-shared", "-fPIC", "-O2",
                   "-I" + sysconfig.get_paths()["include"], "-o", out, c_path, obj_path]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                _broken.append(f"{' '.join(cmd)}: {done.stderr.strip()[-500:]}")
                return False
            digest = file_digest(out)
            if digest is None:
                _broken.append(f"{out}: the linked library cannot be read back")
                return False
            record = os.path.join(tmp, "kernel.sha256")
            with open(record, "w", encoding="ascii") as f:
                f.write(manifest_text(digest))
                f.flush()
                os.fsync(f.fileno())
            with open(out, "rb") as f:
                os.fsync(f.fileno())  # the library's bytes reach the disk before its name does
            os.replace(out, path)
            os.replace(record, manifest_path(path))
    except OSError as exc:  # an unwritable or full cache, a compiler that does not start
        _broken.append(f"building {path}: {exc}")
        return False
    return True


def _object_code(fn, params: tuple) -> tuple[bytes, str]:
    """Position-independent machine code of a C-callable wrapper of `fn` (the kernel compiled
    inside it) for this CPU, and the wrapper's symbol."""
    import llvmlite.binding as ll  # numba and llvmlite: optional (tools/layers.py lists them)
    import numba

    carray, nt, config = numba.carray, numba.types, numba.core.config
    kernel = numba.njit(fn, nogil=True, error_model="numpy")
    scalar = {"float32": nt.float32, "float64": nt.float64, "int32": nt.int32,
              "int64": nt.int64}
    names = [f"p{k}" for k in range(len(params))]
    args = [p if kind == "scalar" else f"carray({p}, (n,))" for p, (kind, _) in zip(names, params)]
    scope = {"kernel": kernel, "carray": carray}
    exec(f"def entry(n, {', '.join(names)}):\n    kernel(n, {', '.join(args)})\n", scope)
    types = [scalar[d] if kind == "scalar" else nt.CPointer(scalar[d]) for kind, d in params]
    compiled = numba.cfunc(nt.void(nt.int64, *types), nopython=True,
                           error_model="numpy")(scope["entry"])
    library = compiled._library
    codegen = library._codegen
    machine = ll.Target.from_triple(ll.get_process_triple()).create_target_machine(
        opt=config.OPT, cpu=codegen._get_host_cpu_name(), features=codegen._tm_features,
        reloc="pic", codemodel="default")
    return machine.emit_object(library._final_module), compiled.native_name


_STUBS = """
/* numba's exception machinery, reached only if a kernel raised (the fused bodies cannot:
   elementwise arithmetic under numba's numpy error model); stop loudly if it ever happens */
#define DJ_HIDDEN __attribute__((visibility("hidden")))
static void dj_raised(void) {
    fputs("dongjing: a native fused kernel raised an exception (a bug)\\n", stderr);
    abort();
}
DJ_HIDDEN void numba_gil_ensure(void *s) { (void)s; dj_raised(); }
DJ_HIDDEN void numba_gil_release(void *s) { (void)s; dj_raised(); }
DJ_HIDDEN void *numba_unpickle(const char *d, int n, const char *h) { dj_raised(); return 0; }
DJ_HIDDEN void *numba_runtime_build_excinfo_struct(void *a, void *b) { dj_raised(); return 0; }
DJ_HIDDEN int numba_do_raise(void *e) { (void)e; dj_raised(); return 0; }
DJ_HIDDEN void NRT_MemInfo_call_dtor(void *m) { (void)m; dj_raised(); }
DJ_HIDDEN void NRT_Free(void *p) { (void)p; dj_raised(); }
"""


def wrapper_source(module: str, symbol: str, params: tuple) -> str:
    """The C extension module around the kernel's symbol: ``call(n, *params)``; a param is
    (kind, dtype name), kind "scalar", "array" (read) or "out" (written)."""
    decl = ", ".join(["int64_t"] + [C_TYPES[d] + ("" if kind == "scalar" else " *")
                                    for kind, d in params])
    body, call = [], ["n"]
    for k, (kind, dtype) in enumerate(params):
        ctype, fmt = C_TYPES[dtype], _FORMATS[dtype]
        flags = "PyBUF_C_CONTIGUOUS | PyBUF_FORMAT" + (" | PyBUF_WRITABLE" if kind == "out"
                                                       else "")
        size = f"(Py_ssize_t)sizeof({ctype})"
        need = size if kind == "scalar" else f"n * {size}"
        exact = "==" if kind == "scalar" else ">="
        body.append(f"""    if (PyObject_GetBuffer(args[{k + 1}], &v[{k}], {flags}) < 0) goto other;
    got = {k + 1};
    if (v[{k}].itemsize != sizeof({ctype}) || !v[{k}].format || v[{k}].format[1] != 0
        || !strchr("{fmt}", v[{k}].format[0]) || !(v[{k}].len {exact} {need})) goto other;""")
        call.append(f"*({ctype} *)v[{k}].buf" if kind == "scalar" else f"({ctype} *)v[{k}].buf")
    count = len(params)
    return f"""/* generated by dongjing.cpu_kernels.native: one fused kernel, a Python extension */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
{_STUBS}
extern void dj_kernel({decl}) __asm__("{symbol}");

static PyObject *call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {{
    Py_buffer v[{count}];
    int got = 0, j;
    (void)self;
    if (nargs != {count + 1}) {{
        PyErr_SetString(PyExc_TypeError, "a fused kernel takes {count + 1} arguments");
        return NULL;
    }}
    long long n = PyLong_AsLongLong(args[0]);
    if (n == -1 && PyErr_Occurred()) return NULL;
{chr(10).join(body)}
    Py_BEGIN_ALLOW_THREADS
    dj_kernel({", ".join(call)});
    Py_END_ALLOW_THREADS
    for (j = 0; j < got; j++) PyBuffer_Release(&v[j]);
    Py_RETURN_NONE;
other:  /* not this kernel's dtypes or layout: the caller runs numba's */
    PyErr_Clear();
    for (j = 0; j < got; j++) PyBuffer_Release(&v[j]);
    Py_RETURN_NOTIMPLEMENTED;
}}

static PyMethodDef methods[] = {{
    {{"call", (PyCFunction)(void (*)(void))call, METH_FASTCALL, "Run the kernel."}},
    {{NULL, NULL, 0, NULL}}
}};
static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, "{module}", NULL, -1, methods}};
PyMODINIT_FUNC PyInit_{module}(void) {{ return PyModule_Create(&def); }}
"""
