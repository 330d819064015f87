/* -- the layer's hot methods in C: a second Python module in this shared library --
 *
 * GraphExec.launch, Graph.add_empty, Graph.add_memset, Graph.add_kernel and Graph.add_memcpy, and the
 * plain kernel launch (Stream.launch, Kernel.launch) as CPython method descriptors (bindgen/fast.py inlines this file after the runtime calls it generates from the
 * IR: _pgr_hot_launch, _pgr_hot_add_empty, _pgr_hot_add_memset, _pgr_hot_add_kernel, _pgr_hot_add_memcpy,
 * _pgr_hot_bound, _pgr_hot_symbols, _PGR_HOT_NAME and _PGR_HOT_INIT).  pygraphrt._fast loads the module from the extension's
 * file once the cffi module is imported; pygraphrt.graph._hot installs the graph methods,
 * pygraphrt.kernels._hot the launches.  The module also holds a compute graph's index of its
 * nodes' accesses (index_accesses, which pygraphrt.compute._hot.index_function hands out)
 * and its evaluation of a node's closure with the variables' accesses (bind_compute, which
 * pygraphrt.compute._hot installs).
 *
 * Each method does only the common, valid call in C: the argument checks the Python method
 * makes, the runtime call through the pointer _pgr_bind filled, the node object and its entry
 * in the graph's node table.  The launches release the GIL for their call, as cffi's wrappers
 * do (a launch can wait for room in the launch queue); the node adds hold it, as the bulk loop
 * always has (see "Adding nodes").  Anything else --
 * another backend's objects (the simulator's), closed handles, an unusual argument, edge
 * data, a function the runtime lacks -- goes, untouched, to the Python method this one
 * replaced (its fallback), so messages and semantics stay the Python code's.  A runtime
 * error code is turned into the exception by the backend's ops.error, as in Python.
 *
 * cdata are made with the conversion cffi's generated wrappers use (the _cffi_exports table of
 * cffi's extension ABI) and read with it too, but for the handles themselves: those are read
 * straight from the object, where a check at bind time proved cffi's layout (_pgr_cdata).  The
 * attributes the methods read and write on Graph, GraphExec and Node are __slots__ of those
 * classes, at the offsets their member descriptors give (checked when a backend is bound);
 * they are used on objects of exactly those classes (subclasses take the Python method).
 * Node objects are made as object.__new__ does (tp_alloc).
 */
#ifdef Py_LIMITED_API
#error "the hot methods need CPython's full C API: compile with _CFFI_NO_LIMITED_API (bindgen.fast.make_api_ffi)"
#endif
#include <limits.h>
#include <math.h>
#include <structmember.h>

/* The graph methods (bind(): their API names, _pgr_hot_symbols), then the kernel launches
 * (bind_launch(): the launch function is the kernel's own, from its layout) */
enum { _PGR_LAUNCH, _PGR_ADD_EMPTY, _PGR_ADD_MEMSET, _PGR_ADD_KERNEL, _PGR_ADD_MEMCPY, _PGR_METHODS,
       _PGR_STREAM_LAUNCH = _PGR_METHODS, _PGR_KERNEL_LAUNCH, _PGR_ALL_METHODS };
#define _PGR_MAX_DEPS 16 /* dependencies passed on the C stack; more take the Python method */
/* A kernel's packed parameters on the C stack (pygraphrt.graph._hot.KERNEL_MAX_*: larger
 * signatures keep no layout, so they take the Python method) */
#define _PGR_KERNEL_MAX_PARAMS 64
#define _PGR_KERNEL_MAX_BYTES 4096

static struct {
    PyObject *backend;  /* the Backend whose objects take the C path (NULL: none bound yet) */
    PyObject *error;    /* its ops.error(code, api) -> exception */
    PyObject *api[_PGR_METHODS];  /* the API names errors carry ("cudaGraphLaunch"); None: method off */
    PyObject *ct_exec, *ct_stream, *ct_graph, *ct_node, *ct_void_p;  /* cffi ctypes of the handles */
    PyTypeObject *graph_cls, *exec_cls, *stream_cls, *node_cls, *empty_cls, *memset_cls, *buffer_cls, *memcpy_cls;
    /* __slots__ offsets: Graph's _backend, _handle, _nodes, _keep; GraphExec's _backend, _handle,
       _host_sinks, _last_stream; Node's _graph, _handle; DeviceBuffer's _backend, _handle */
    Py_ssize_t g_backend, g_handle, g_nodes, g_keep, e_backend, e_handle, e_host_sinks, e_last_stream, n_graph,
        n_handle, b_backend, b_handle;
    /* bind_kernels(): Kernel, Library, KernelNode, AsyncBuffer; Kernel's _backend, _func, _owner,
       _signature, _node_layout, form slots (kernels_bound: 0 until then, add_kernel stays Python) */
    int kernels_bound;
    PyTypeObject *kernel_cls, *library_cls, *kernel_node_cls, *async_buffer_cls;
    Py_ssize_t k_backend, k_func, k_owner, k_signature, k_layout, k_form, l_handle, ab_backend, ab_handle, k_on_devices;
    /* (l_: Library's _handle slot; ab_: AsyncBuffer's _backend and _handle slots; k_on_devices:
       Kernel's device -> copy table, Kernel._for_device's) */
    /* bind_launch(): the Backend whose kernels and streams take the C launch, the cffi types of a
       stream and of void *, and Kernel's _launch_layout slot (the other slots and classes it reads
       are those above: the same classes, whichever bind filled them) */
    int launch_bound;
    PyObject *launch_backend, *ct_lstream, *ct_lvoid_p;
    Py_ssize_t k_launch;
    /* one_device(): the bound backend's runtime has exactly one device, so `device=0` on an add
       names the current device and the C may take the call (multidevice.placed's answer) */
    int one_device;
    /* several()'s record: while several devices are in use, pygraphrt.multidevice.record_node, handed each
       node an add made here (its device: the current one, or the one being placed on); NULL
       while one device is in use (every node is device 0's then) */
    PyObject *record;
    /* several(): the backend is used with several devices (pygraphrt.multidevice.when_several):
       a kernel's node or launch takes the C only where _pgr_runs_on finds what the Python
       methods' device checks would pass */
    int several;
    PyObject *fallback[_PGR_ALL_METHODS];  /* the Python methods replaced */
    PyObject *descr[_PGR_ALL_METHODS];     /* the method descriptors made (once each) */
    PyObject *doc[_PGR_ALL_METHODS];       /* the UTF-8 text ml_doc points into */
} _pgr_hot;

static PyObject *_pgr_s_handle, *_pgr_s_stream, *_pgr_s_dependencies,
    *_pgr_s_edges, *_pgr_s_dst, *_pgr_s_value, *_pgr_s_count, *_pgr_s_element_size, *_pgr_s_height,
    *_pgr_s_pitch, *_pgr_s_kernel, *_pgr_s_grid, *_pgr_s_block, *_pgr_s_args, *_pgr_s_shared_mem,
    *_pgr_s_attributes, *_pgr_s_backend, *_pgr_s_capture, *_pgr_s_keep, *_pgr_s_device, *_pgr_s_src,
    *_pgr_s_private_device;

/* ---- small helpers ---- */

/* obj.name as a new reference, or NULL without an exception set: the Python method will
 * meet the same attribute and report whatever is wrong with it. */
static PyObject *_pgr_attr(PyObject *obj, PyObject *name) {
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL) PyErr_Clear();
    return v;
}

/* A cdata object as cffi's backend lays it out: the object header, its ctype, its data -- for a
 * pointer cdata, the pointer.  That layout is not part of cffi's extension ABI, so it is read
 * only from objects of the type _pgr_cdata_check proved it on (the plain cdata cffi makes for a
 * pointer value, as every handle is) and only with the ctypes bind() and bind_launch() were
 * given, each of which it proved (the ctypes _pgr_ptr is called with: pointer types); anything
 * else goes through cffi's conversion.  Reading the pointer there takes a few instructions
 * instead of cffi's generic conversion, on every handle of every hot call. */
typedef struct {
    PyObject_HEAD
    void *c_type;
    char *c_data;
} _pgr_cdata;
static struct {
    PyTypeObject *type;  /* the cdata type the layout was proved on (NULL: none) */
    int failed;          /* a check did not hold: nothing is read directly, for good */
} _pgr_cdata_layout;

/* Prove the layout with ctype `ct`: the cdata cffi makes for two known pointers must be objects
 * of one type, large enough, holding `ct` and the pointer where _pgr_cdata has them, and cffi
 * must read the same pointers back.  Anything else turns the direct read off (the hot methods
 * then use cffi's conversion: slower, the same results). */
static void _pgr_cdata_check(PyObject *ct) {
    char *const probe[2] = {(char *)&_pgr_cdata_layout, (char *)&_pgr_hot};
    int i, ok = !_pgr_cdata_layout.failed;
    for (i = 0; ok && i < 2; i++) {
        PyObject *obj = _cffi_from_c_pointer(probe[i], (struct _cffi_ctypedescr *)ct);
        char *back;
        if (obj == NULL) {
            PyErr_Clear();
            ok = 0;
            break;
        }
        back = _cffi_to_c_pointer(obj, (struct _cffi_ctypedescr *)ct);
        if (back == NULL && PyErr_Occurred()) PyErr_Clear();
        ok = Py_TYPE(obj)->tp_basicsize >= (Py_ssize_t)sizeof(_pgr_cdata) &&
             (_pgr_cdata_layout.type == NULL || Py_TYPE(obj) == _pgr_cdata_layout.type) &&
             ((_pgr_cdata *)obj)->c_type == (void *)ct && ((_pgr_cdata *)obj)->c_data == probe[i] && back == probe[i];
        if (ok) _pgr_cdata_layout.type = Py_TYPE(obj);
        Py_DECREF(obj);
    }
    if (!ok) {
        _pgr_cdata_layout.failed = 1;
        _pgr_cdata_layout.type = NULL;
    }
}

/* The pointer cffi would pass for `obj` as an argument of pointer type `ct` (1), or 0, with
 * no exception set, where cffi would refuse it (None, another binding's cdata, ...). */
static int _pgr_ptr(PyObject *obj, PyObject *ct, void **out) {
    char *p;
    if (Py_TYPE(obj) == _pgr_cdata_layout.type && ((_pgr_cdata *)obj)->c_type == (void *)ct) {
        *out = ((_pgr_cdata *)obj)->c_data;
        return 1;
    }
    p = _cffi_to_c_pointer(obj, (struct _cffi_ctypedescr *)ct);
    if (p == NULL && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    *out = p;
    return 1;
}

/* A __slots__ member of an object (borrowed; NULL when unset). */
#define _PGR_SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* Method `m` runs in C for the bound backend: on for it, and the library exports its function. */
static int _pgr_on(int m) {
    return _pgr_hot.api[m] != Py_None && _pgr_hot_bound(m);
}

/* An unsigned 64-bit value of a plain int (not bool, not a subclass), or 0. */
static int _pgr_u64(PyObject *obj, unsigned long long *out) {
    if (obj == NULL || !PyLong_CheckExact(obj)) return 0;
    *out = PyLong_AsUnsignedLongLong(obj);
    if (*out == (unsigned long long)-1 && PyErr_Occurred()) {  /* negative, or 2**64 and more */
        PyErr_Clear();
        return 0;
    }
    return 1;
}

static int _pgr_size(PyObject *obj, size_t *out) {
    unsigned long long v;
    if (!_pgr_u64(obj, &v) || v > (unsigned long long)SIZE_MAX) return 0;
    *out = (size_t)v;
    return 1;
}

/* The device address of `obj`, exactly one of pygraphrt's buffers (DeviceBuffer, AsyncBuffer:
 * their _backend and _handle slots), when it is open and of `backend` (1), or 0 with no
 * exception: the Python method reports it.  (`void_p`: cffi's void *, which its handle converts to.) */
static int _pgr_buffer_of(PyObject *obj, PyObject *backend, PyObject *void_p, void **out) {
    PyObject *h, *b;
    if (Py_IS_TYPE(obj, _pgr_hot.buffer_cls)) {
        h = _PGR_SLOT(obj, _pgr_hot.b_handle);
        b = _PGR_SLOT(obj, _pgr_hot.b_backend);
    } else if (_pgr_hot.async_buffer_cls != NULL && Py_IS_TYPE(obj, _pgr_hot.async_buffer_cls)) {
        h = _PGR_SLOT(obj, _pgr_hot.ab_handle);
        b = _PGR_SLOT(obj, _pgr_hot.ab_backend);
    } else {
        return 0;
    }
    return h != NULL && h != Py_None && b == backend && _pgr_ptr(h, void_p, out);
}

/* The same for the graph methods' backend. */
static int _pgr_buffer(PyObject *obj, void **out) {
    return _pgr_buffer_of(obj, _pgr_hot.backend, _pgr_hot.ct_void_p, out);
}

/* The list of objects Graph `self` keeps alive (its _keep slot; `self` is a Graph of the bound
 * backend, as _pgr_add_graph found), a new reference, or NULL (no exception) where it is not a
 * list: the Python method takes the call. */
static PyObject *_pgr_keep_of(PyObject *self) {
    PyObject *keep = _PGR_SLOT(self, _pgr_hot.g_keep);
    return keep != NULL && PyList_CheckExact(keep) ? Py_NewRef(keep) : NULL;
}

/* How many of a keep list's last entries _pgr_keep looks through. */
#define _PGR_KEEP_WINDOW 8

/* Keep `obj` alive as long as the graph whose keep list is `keep`: an entry, unless one of the
 * list's last _PGR_KEEP_WINDOW entries is `obj` already (0), or -1 with an exception.  Nodes
 * built in a loop keep the same buffers and kernel: one entry then serves them all, and the
 * list -- which the cyclic collector walks while the graph is young -- stays short. */
static int _pgr_keep(PyObject *keep, PyObject *obj) {
    Py_ssize_t n = PyList_GET_SIZE(keep), i, stop = n > _PGR_KEEP_WINDOW ? n - _PGR_KEEP_WINDOW : 0;
    for (i = n - 1; i >= stop; i--)
        if (PyList_GET_ITEM(keep, i) == obj) return 0;
    return PyList_Append(keep, obj);
}

/* The classes in tuple `classes` (exactly `n` of them) into `out`, or -1 with a TypeError
 * naming `what`. */
static int _pgr_classes(PyObject *classes, Py_ssize_t n, const char *what, PyTypeObject **out) {
    Py_ssize_t i;
    if (PyTuple_GET_SIZE(classes) != n) {
        PyErr_Format(PyExc_TypeError, "%s: classes takes %zd classes", what, n);
        return -1;
    }
    for (i = 0; i < n; i++) {
        if (!PyType_Check(PyTuple_GET_ITEM(classes, i))) {
            PyErr_Format(PyExc_TypeError, "%s: classes must be classes", what);
            return -1;
        }
        out[i] = (PyTypeObject *)PyTuple_GET_ITEM(classes, i);
    }
    return 0;
}

/* 0 when every item of tuple `ctypes` is a cffi ctype (they are read as such: _pgr_cdata_check
 * makes cdata of them), or -1 with a TypeError naming `what`. */
static int _pgr_ctypes(PyObject *ctypes, const char *what) {
    Py_ssize_t i;
    for (i = 0; i < PyTuple_GET_SIZE(ctypes); i++)
        if (strcmp(Py_TYPE(PyTuple_GET_ITEM(ctypes, i))->tp_name, "_cffi_backend.CType") != 0) {
            PyErr_Format(PyExc_TypeError, "%s: ctypes must be cffi ctypes", what);
            return -1;
        }
    return 0;
}

/* Bind a vectorcall's arguments to `v` by the parameter `names` (n of them, the first `npos`
 * positional-or-keyword, the rest keyword-only; the first `nreq` required; `v` holds the
 * defaults, NULL where a parameter was not given).  1, or 0 where Python would raise TypeError
 * (too many positionals, an unknown keyword, one given twice, a required one missing): the
 * Python method then raises it. */
static int _pgr_bind_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject *const *names,
                          int n, int npos, int nreq, PyObject **v) {
    Py_ssize_t i, nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    int k;
    if (nargs > npos) return 0;
    for (i = 0; i < nargs; i++) v[i] = args[i];
    for (i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        for (k = 0; k < n && names[k] != name; k++) {}
        if (k == n || k < nargs) return 0;
        v[k] = args[nargs + i];
    }
    for (k = 0; k < nreq; k++)
        if (v[k] == NULL) return 0;
    return 1;
}

/* Whether an add's `device=` value lets the C take the call: not given, None, or 0 where
 * device 0 is current -- on a one-device runtime always; else asked of the runtime.  A node on
 * the current device needs no switch: while one device is in use no record either (as
 * multidevice.placed finds), and while several are, several()'s record records the current device, as
 * placing it there would.  Anything else -- another ordinal, a Device, a bad value -- takes the
 * Python method. */
static int _pgr_device_here(PyObject *device) {
    long d;
    int current = -1;
    if (device == NULL || device == Py_None) return 1;
    if (!PyLong_CheckExact(device)) return 0;
    d = PyLong_AsLong(device);
    if (d == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (d != 0) return 0;
    return _pgr_hot.one_device || (_pgr_hot_get_device(&current) == 0 && current == 0);
}

/* fallback(self, ...) with a method call's arguments: the Python method a C one replaced. */
static PyObject *_pgr_call_fallback(PyObject *fallback, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                    PyObject *kwnames) {
    PyObject *stack[16], **argv = stack, *res;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0, total = 1 + nargs + nkw, i;
    if (total > 16 && (argv = (PyObject **)PyMem_Malloc(sizeof(PyObject *) * (size_t)total)) == NULL)
        return PyErr_NoMemory();
    argv[0] = self;
    for (i = 0; i < nargs + nkw; i++) argv[1 + i] = args[i];
    res = PyObject_Vectorcall(fallback, argv, (size_t)(1 + nargs), kwnames);
    if (argv != stack) PyMem_Free(argv);
    return res;
}

/* The Python method hot method m replaced, called with the same arguments. */
static PyObject *_pgr_fallback(int m, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames) {
    return _pgr_call_fallback(_pgr_hot.fallback[m], self, args, nargs, kwnames);
}

/* Raise what the Python method raises for a failed runtime call: ops.error(rc, api). */
static PyObject *_pgr_raise(int m, int rc) {
    PyObject *exc = PyObject_CallFunction(_pgr_hot.error, "iO", rc, _pgr_hot.api[m]);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* ---- GraphExec.launch(stream) ---- */

static PyObject *_pgr_launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *stream, *h, *sh = NULL, *sinks, *res = NULL;
    void *exec_p, *stream_p;
    int rc;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs == 1 && nkw == 0)
        stream = args[0];
    else if (nargs == 0 && nkw == 1 && PyTuple_GET_ITEM(kwnames, 0) == _pgr_s_stream)
        stream = args[0];
    else
        goto fallback;
    if (!_pgr_on(_PGR_LAUNCH) || !Py_IS_TYPE(self, _pgr_hot.exec_cls) ||
        _PGR_SLOT(self, _pgr_hot.e_backend) != _pgr_hot.backend || !PyObject_TypeCheck(stream, _pgr_hot.stream_cls))
        goto fallback;
    h = _PGR_SLOT(self, _pgr_hot.e_handle);
    if (h == NULL || h == Py_None || !_pgr_ptr(h, _pgr_hot.ct_exec, &exec_p)) goto fallback;
    /* graphs with Python host callables route their errors to the stream: the Python method */
    sinks = _PGR_SLOT(self, _pgr_hot.e_host_sinks);
    if (sinks == NULL || !PyTuple_CheckExact(sinks) || PyTuple_GET_SIZE(sinks) != 0) goto fallback;
    sh = _pgr_attr(stream, _pgr_s_handle);
    if (sh == NULL || sh == Py_None || !_pgr_ptr(sh, _pgr_hot.ct_stream, &stream_p)) goto fallback;
    Py_BEGIN_ALLOW_THREADS
    rc = _pgr_hot_launch(exec_p, stream_p);
    Py_END_ALLOW_THREADS
    if (rc != 0) {
        _pgr_raise(_PGR_LAUNCH, rc);
    } else {
        PyObject *last = _PGR_SLOT(self, _pgr_hot.e_last_stream);
        _PGR_SLOT(self, _pgr_hot.e_last_stream) = Py_NewRef(stream);
        Py_XDECREF(last);
        res = Py_NewRef(Py_None);
    }
    Py_DECREF(sh);
    return res;
fallback:
    Py_XDECREF(sh);
    return _pgr_fallback(_PGR_LAUNCH, self, args, nargs, kwnames);
}

/* ---- adding nodes ----
 *
 * The node adds make their runtime call with the GIL held.  The call is host-side bookkeeping
 * of a fraction of a microsecond that waits for no GPU work; giving the GIL up and taking it
 * back around it cost 11-20% of a whole node add on the H100 machine (measured in one process,
 * the two ways alternating).  Holding it is what the bulk loop (_pgr_bulk_add) has always done
 * (it lets other threads run every _PGR_BULK_CHUNK nodes), and it keeps another thread from
 * closing the graph while the runtime works on it.  Between two adds the interpreter hands the
 * GIL over as usual.  (A runtime's first call on a thread with no current context may set one
 * up first: once per thread.)
 */

typedef struct {
    PyObject *nodes;  /* the graph's node table (borrowed: the graph holds it) */
    void *graph;
    void *deps[_PGR_MAX_DEPS];
    size_t n;
} _pgr_add_args;

/* The common case of the graph and its dependencies: a Graph of the bound backend, open
 * (_pgr_add_graph: `a` without dependencies); `deps` None, or a list or tuple of at most
 * _PGR_MAX_DEPS live nodes of this graph (_pgr_add_prepare).  1: `a` is filled; 0: anything
 * else, for the Python method. */
static int _pgr_add_graph(PyObject *self, _pgr_add_args *a) {
    PyObject *h;
    a->n = 0;
    if (!Py_IS_TYPE(self, _pgr_hot.graph_cls) || _PGR_SLOT(self, _pgr_hot.g_backend) != _pgr_hot.backend) return 0;
    h = _PGR_SLOT(self, _pgr_hot.g_handle);
    if (h == NULL || h == Py_None || !_pgr_ptr(h, _pgr_hot.ct_graph, &a->graph)) return 0;
    a->nodes = _PGR_SLOT(self, _pgr_hot.g_nodes);
    return a->nodes != NULL && PyDict_CheckExact(a->nodes);
}

/* The handle of `d` when it is a live node of graph `self` (1), else 0. */
static int _pgr_node_of(PyObject *self, PyObject *d, void **out) {
    PyObject *dh;
    if (!PyObject_TypeCheck(d, _pgr_hot.node_cls) || _PGR_SLOT(d, _pgr_hot.n_graph) != self) return 0;
    dh = _PGR_SLOT(d, _pgr_hot.n_handle);
    return dh != NULL && dh != Py_None && _pgr_ptr(dh, _pgr_hot.ct_node, out);
}

static int _pgr_add_prepare(PyObject *self, PyObject *deps, _pgr_add_args *a) {
    if (!_pgr_add_graph(self, a)) return 0;
    if (deps != Py_None) {
        Py_ssize_t i, n;
        if (!PyList_CheckExact(deps) && !PyTuple_CheckExact(deps)) return 0;
        n = PySequence_Fast_GET_SIZE(deps);
        if (n > _PGR_MAX_DEPS) return 0;
        for (i = 0; i < n; i++)
            if (!_pgr_node_of(self, PySequence_Fast_GET_ITEM(deps, i), &a->deps[i])) return 0;
        a->n = (size_t)n;
    }
    return 1;
}

/* The node the runtime made (handle `out`; _pgr_node_new: its handle object): a `cls` object of
 * graph `self`, entered in its node table `nodes` (held by the caller across the call: making
 * the node may run the cyclic collector, and with it any finalizer) by a weak reference
 * (Graph.__init__ says why).  That reference has no
 * callback, so it holds nothing that could be part of a cycle, and it is untracked: the cyclic
 * collector has nothing to walk for it. */
static PyObject *_pgr_node_new(PyObject *self, PyObject *nodes, PyTypeObject *cls, PyObject *handle) {
    /* (`handle`: a new reference, which the node takes) */
    PyObject *node, *ref;
    node = cls->tp_alloc(cls, 0);
    if (node == NULL) {
        Py_DECREF(handle);
        return NULL;
    }
    _PGR_SLOT(node, _pgr_hot.n_graph) = Py_NewRef(self);
    _PGR_SLOT(node, _pgr_hot.n_handle) = handle;  /* the node's reference */
    ref = PyWeakref_NewRef(node, NULL);
    if (ref == NULL) {
        Py_DECREF(node);
        return NULL;
    }
    PyObject_GC_UnTrack(ref);
    if (PyDict_SetItem(nodes, handle, ref) < 0) Py_CLEAR(node);
    Py_DECREF(ref);
    return node;
}

/* ... and, while several devices are in use, its device recorded (several()'s record: the Python adds
 * record it the same way; a failure to ask leaves the node made, as there) */
static PyObject *_pgr_add_made(PyObject *self, PyObject *nodes, PyTypeObject *cls, void *out) {
    PyObject *node, *record, *r, *handle = _cffi_from_c_pointer((char *)out, (struct _cffi_ctypedescr *)_pgr_hot.ct_node);
    if (handle == NULL) return NULL;
    node = _pgr_node_new(self, nodes, cls, handle);
    if (node == NULL || _pgr_hot.record == NULL) return node;
    record = Py_NewRef(_pgr_hot.record);  /* (another thread may set it while it runs) */
    r = PyObject_CallFunctionObjArgs(record, self, node, NULL);
    Py_DECREF(record);
    if (r == NULL) Py_CLEAR(node);
    else Py_DECREF(r);
    return node;
}

/* Graph.add_empty(*, dependencies=None, edges=None) */
static PyObject *_pgr_add_empty(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *deps = Py_None, *res;
    _pgr_add_args a;
    void *out = NULL;
    int rc;
    Py_ssize_t i, nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs != 0) goto fallback;
    for (i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i), *v = args[i];
        if (name == _pgr_s_dependencies) deps = v;
        else if (name != _pgr_s_edges || v != Py_None) goto fallback;
    }
    if (!_pgr_on(_PGR_ADD_EMPTY) || !_pgr_add_prepare(self, deps, &a)) goto fallback;
    Py_INCREF(a.nodes);
    rc = _pgr_hot_add_empty(&out, a.graph, a.n ? a.deps : NULL, a.n);
    res = rc ? _pgr_raise(_PGR_ADD_EMPTY, rc) : _pgr_add_made(self, a.nodes, _pgr_hot.empty_cls, out);
    Py_DECREF(a.nodes);
    return res;
fallback:
    return _pgr_fallback(_PGR_ADD_EMPTY, self, args, nargs, kwnames);
}

/* Graph.add_memset(dst, value, count, *, element_size=1, height=1, pitch=0, dependencies=None,
 * edges=None), dst a plain int address or an open DeviceBuffer of the same backend. */
static PyObject *_pgr_add_memset(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *v[9] = {NULL, NULL, NULL, NULL, NULL, NULL, Py_None, Py_None, NULL};
    enum { DST, VALUE, COUNT, ESIZE, HEIGHT, PITCH, DEPS, EDGES, DEVICE };
    PyObject *const names[9] = {_pgr_s_dst, _pgr_s_value, _pgr_s_count, _pgr_s_element_size, _pgr_s_height,
                                _pgr_s_pitch, _pgr_s_dependencies, _pgr_s_edges, _pgr_s_device};
    PyObject *keep = NULL, *res = NULL;
    unsigned long long value, esize = 1, dst = 0;
    size_t count, height = 1, pitch = 0;
    void *dst_p = NULL, *out = NULL;
    _pgr_add_args a;
    int rc, from_buffer = 0;
    if (!_pgr_bind_args(args, nargs, kwnames, names, 9, 3, 3, v)) goto fallback;
    if (v[EDGES] != Py_None || !_pgr_device_here(v[DEVICE]) || !_pgr_on(_PGR_ADD_MEMSET)) goto fallback;
    if (v[ESIZE] != NULL && (!_pgr_u64(v[ESIZE], &esize) || (esize != 1 && esize != 2 && esize != 4))) goto fallback;
    if (!_pgr_u64(v[VALUE], &value) || value >> (8 * esize) != 0 || !_pgr_size(v[COUNT], &count)) goto fallback;
    if ((v[HEIGHT] != NULL && !_pgr_size(v[HEIGHT], &height)) || (v[PITCH] != NULL && !_pgr_size(v[PITCH], &pitch)))
        goto fallback;
    if (Py_IS_TYPE(v[DST], _pgr_hot.buffer_cls)) {
        /* a DeviceBuffer: open, of this backend; kept alive by the graph */
        if (!_pgr_buffer(v[DST], &dst_p)) goto fallback;
        from_buffer = 1;
    } else if (_pgr_u64(v[DST], &dst)) {
        dst_p = (void *)(uintptr_t)dst;
        if ((unsigned long long)(uintptr_t)dst_p != dst) goto fallback;
    } else {
        goto fallback;
    }
    if (!_pgr_add_prepare(self, v[DEPS], &a)) goto fallback;
    if (from_buffer && (keep = _pgr_keep_of(self)) == NULL) goto fallback;
    if (keep != NULL && _pgr_keep(keep, v[DST]) < 0) goto done;
    Py_INCREF(a.nodes);
    rc = _pgr_hot_add_memset(&out, a.graph, a.n ? a.deps : NULL, a.n, dst_p, (unsigned int)value,
                             (unsigned int)esize, count, height, pitch);
    res = rc ? _pgr_raise(_PGR_ADD_MEMSET, rc) : _pgr_add_made(self, a.nodes, _pgr_hot.memset_cls, out);
    Py_DECREF(a.nodes);
    goto done;
fallback:
    res = _pgr_fallback(_PGR_ADD_MEMSET, self, args, nargs, kwnames);
done:
    Py_XDECREF(keep);
    return res;
}

/* An operand of a copy as the C takes it: a plain int address, or an open pygraphrt buffer of the
 * bound backend (DeviceBuffer, AsyncBuffer; `*buffer` set to 1: the graph keeps it).  1, or 0
 * for anything else (the Python method takes the call). */
static int _pgr_operand(PyObject *obj, void **out, int *buffer) {
    unsigned long long v;
    *buffer = 0;
    if (_pgr_u64(obj, &v)) {
        *out = (void *)(uintptr_t)v;
        return (unsigned long long)(uintptr_t)*out == v;
    }
    if (!_pgr_buffer(obj, out)) return 0;
    *buffer = 1;
    return 1;
}

/* Graph.add_memcpy(dst, src, count, *, dependencies=None, edges=None, device=None): a 1-D copy
 * (MemcpyDefault), dst and src each a plain int address or an open buffer of the same backend. */
static PyObject *_pgr_add_memcpy(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *v[6] = {NULL, NULL, NULL, Py_None, Py_None, NULL};
    enum { DST, SRC, COUNT, DEPS, EDGES, DEVICE };
    PyObject *const names[6] = {_pgr_s_dst, _pgr_s_src, _pgr_s_count, _pgr_s_dependencies, _pgr_s_edges,
                                _pgr_s_device};
    PyObject *keep = NULL, *res = NULL;
    size_t count;
    void *dst_p = NULL, *src_p = NULL, *out = NULL;
    _pgr_add_args a;
    int rc, dst_buffer, src_buffer;
    if (!_pgr_bind_args(args, nargs, kwnames, names, 6, 3, 3, v)) goto fallback;
    if (v[EDGES] != Py_None || !_pgr_device_here(v[DEVICE]) || !_pgr_on(_PGR_ADD_MEMCPY)) goto fallback;
    if (!_pgr_operand(v[DST], &dst_p, &dst_buffer) || !_pgr_operand(v[SRC], &src_p, &src_buffer) ||
        !_pgr_size(v[COUNT], &count))
        goto fallback;
    if (!_pgr_add_prepare(self, v[DEPS], &a)) goto fallback;
    /* the buffers live as long as the graph: dst, then src, as the Python method keeps them */
    if ((dst_buffer || src_buffer) && (keep = _pgr_keep_of(self)) == NULL) goto fallback;
    if ((dst_buffer && _pgr_keep(keep, v[DST]) < 0) || (src_buffer && _pgr_keep(keep, v[SRC]) < 0)) goto done;
    Py_INCREF(a.nodes);
    rc = _pgr_hot_add_memcpy(&out, a.graph, a.n ? a.deps : NULL, a.n, dst_p, src_p, count);
    res = rc ? _pgr_raise(_PGR_ADD_MEMCPY, rc) : _pgr_add_made(self, a.nodes, _pgr_hot.memcpy_cls, out);
    Py_DECREF(a.nodes);
    goto done;
fallback:
    res = _pgr_fallback(_PGR_ADD_MEMCPY, self, args, nargs, kwnames);
done:
    Py_XDECREF(keep);
    return res;
}

/* ---- Graph.add_kernel(kernel, grid, block, args=(), *, shared_mem=0, attributes=None,
 *                       dependencies=None, edges=None) ---- */

/* Launch dimensions as the Python's as_dims takes them in the common forms: a plain int, or a
 * tuple or list of 1-3 plain ints, each in 1 .. 2**32-1 (d: 3 values, missing ones 1). */
static int _pgr_dims(PyObject *v, unsigned int *d) {
    unsigned long long x;
    Py_ssize_t i, n;
    d[0] = d[1] = d[2] = 1;
    if (PyLong_CheckExact(v)) {
        if (!_pgr_u64(v, &x) || x == 0 || x > 0xFFFFFFFFull) return 0;
        d[0] = (unsigned int)x;
        return 1;
    }
    if (!PyTuple_CheckExact(v) && !PyList_CheckExact(v)) return 0;
    n = PySequence_Fast_GET_SIZE(v);
    if (n < 1 || n > 3) return 0;
    for (i = 0; i < n; i++) {
        if (!_pgr_u64(PySequence_Fast_GET_ITEM(v, i), &x) || x == 0 || x > 0xFFFFFFFFull) return 0;
        d[i] = (unsigned int)x;
    }
    return 1;
}

/* The bytes struct code `code` packs (0: not one the C packs). */
static unsigned int _pgr_code_size(char code) {
    switch (code) {
    case 'b': case 'B': return 1;
    case 'h': case 'H': return 2;
    case 'i': case 'I': case 'f': return 4;
    case 'q': case 'Q': case 'd': case 'P': return 8;
    default: return 0;
    }
}

/* A signed integer of a plain int, or 0 (no exception) where it is not one or out of range. */
static int _pgr_i64(PyObject *obj, long long lo, long long hi, long long *out) {
    int overflow = 0;
    if (!PyLong_CheckExact(obj)) return 0;
    *out = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (*out == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return !overflow && *out >= lo && *out <= hi;
}

/* Write argument `v` as struct code `code` would pack it ('b' 'B' 'h' 'H' 'i' 'I' 'q' 'Q'
 * integers: plain ints in range; 'f' 'd': floats or plain ints, a float finite and in range;
 * 'P': a pointer, from a plain int or an open DeviceBuffer/AsyncBuffer of `backend`, whose
 * address a graph keeps with the arguments).  0, with no exception, for anything
 * else: the Python method packs it (or explains why it cannot). */
static int _pgr_pack_arg(PyObject *v, char code, char *dst, PyObject *backend, PyObject *void_p) {
    long long s;
    unsigned long long u;
    double f;
    switch (code) {
    case 'b': { signed char c; if (!_pgr_i64(v, -128, 127, &s)) return 0; c = (signed char)s; memcpy(dst, &c, 1); return 1; }
    case 'B': { unsigned char c; if (!_pgr_i64(v, 0, 255, &s)) return 0; c = (unsigned char)s; memcpy(dst, &c, 1); return 1; }
    case 'h': { short c; if (!_pgr_i64(v, -32768, 32767, &s)) return 0; c = (short)s; memcpy(dst, &c, 2); return 1; }
    case 'H': { unsigned short c; if (!_pgr_i64(v, 0, 65535, &s)) return 0; c = (unsigned short)s; memcpy(dst, &c, 2); return 1; }
    case 'i': { int c; if (!_pgr_i64(v, -2147483647LL - 1, 2147483647LL, &s)) return 0; c = (int)s; memcpy(dst, &c, 4); return 1; }
    case 'I': { unsigned int c; if (!_pgr_i64(v, 0, 4294967295LL, &s)) return 0; c = (unsigned int)s; memcpy(dst, &c, 4); return 1; }
    case 'q': if (!_pgr_i64(v, LLONG_MIN, LLONG_MAX, &s)) return 0; memcpy(dst, &s, 8); return 1;
    case 'Q': if (!_pgr_u64(v, &u)) return 0; memcpy(dst, &u, 8); return 1;
    case 'f':
    case 'd':
        if (PyFloat_CheckExact(v)) {
            f = PyFloat_AS_DOUBLE(v);
        } else if (PyLong_CheckExact(v)) {
            f = PyLong_AsDouble(v);
            if (f == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                return 0;
            }
        } else {
            return 0;
        }
        if (code == 'd') {
            memcpy(dst, &f, 8);
        } else {
            float g = (float)f;
            if (isinf(g) && !isinf(f)) return 0;  /* struct's OverflowError: the Python explains */
            memcpy(dst, &g, 4);
        }
        return 1;
    case 'P':
        if (PyLong_CheckExact(v)) {
            if (!_pgr_u64(v, &u)) return 0;
        } else if (Py_IS_TYPE(v, _pgr_hot.buffer_cls) || Py_IS_TYPE(v, _pgr_hot.async_buffer_cls)) {
            void *p;
            if (!_pgr_buffer_of(v, backend, void_p, &p)) return 0;
            u = (unsigned long long)(uintptr_t)p;
        } else {
            return 0;
        }
        if ((unsigned long long)(uintptr_t)u != u) return 0;
        memcpy(dst, &u, 8);
        return 1;
    default:
        return 0;
    }
}

/* A kernel's packed layout (pygraphrt.kernels._hot.c_layout): `spec`, bytes of uint32s -- the
 * parameter count n and their total size, then each parameter's offset and struct code -- into
 * `desc` (the parameters' words), `n` and `size`.  1, or 0 where it is not one the C packs. */
static int _pgr_layout(PyObject *spec, const char **desc, unsigned int *n, unsigned int *size) {
    if (!PyBytes_CheckExact(spec) || PyBytes_GET_SIZE(spec) < 8) return 0;
    memcpy(n, PyBytes_AS_STRING(spec), 4);
    memcpy(size, PyBytes_AS_STRING(spec) + 4, 4);
    if (*n > _PGR_KERNEL_MAX_PARAMS || *size > _PGR_KERNEL_MAX_BYTES ||
        PyBytes_GET_SIZE(spec) != 8 + 8 * (Py_ssize_t)*n)
        return 0;
    *desc = PyBytes_AS_STRING(spec) + 8;
    return 1;
}

/* Arguments `items` (n of them) packed by layout `desc` (at most `size` bytes) into `bytes`,
 * `argv` pointing at each: 1, or 0 (no exception) where one is not an argument the C packs
 * (_pgr_pack_arg; buffers of `backend`).  Packing runs no Python code. */
static int _pgr_pack_args(PyObject *const *items, unsigned int n, const char *desc, unsigned int size,
                          char *bytes, void **argv, PyObject *backend, PyObject *void_p) {
    unsigned int i, w, word[2];
    for (i = 0; i < n; i++) {
        memcpy(word, desc + 8 * i, 8);  /* offset, struct code */
        w = _pgr_code_size((char)word[1]);
        if (w == 0 || word[0] > size || size - word[0] < w) return 0;  /* a layout not ours */
        if (!_pgr_pack_arg(items[i], (char)word[1], bytes + word[0], backend, void_p)) return 0;
        argv[i] = bytes + word[0];
    }
    return 1;
}

/* The handle of Kernel `kernel` (its _func slot, as cffi's `void_p`) while it is valid: not
 * closed, and its library (its _owner, where that is a Library) still loaded.  1, or 0. */
static int _pgr_kernel_func(PyObject *kernel, PyObject *void_p, void **out) {
    PyObject *func = _PGR_SLOT(kernel, _pgr_hot.k_func), *owner = _PGR_SLOT(kernel, _pgr_hot.k_owner);
    if (func == NULL || func == Py_None || owner == NULL || !_pgr_ptr(func, void_p, out)) return 0;
    if (Py_IS_TYPE(owner, _pgr_hot.library_cls)) {  /* a kernel of an unloaded library is invalid */
        PyObject *oh = _PGR_SLOT(owner, _pgr_hot.l_handle);
        if (oh == NULL || oh == Py_None) return 0;
    }
    return 1;
}

/* Several devices in use: whether `kernel` runs on device `d` as what the Python methods'
 * checks (multidevice.check_launch) would pass -- the kernel itself there (its _on_devices maps
 * d to None: Kernel._for_device put that there once it found the code runs on d), and every
 * pygraphrt buffer among the `n` arguments `items` d's memory or of no known device
 * (check_kernel_buffers refuses only another device's memory d has no peer access to; whether
 * it has is the Python method's to judge, as is everything else).  1, or 0 (no exception). */
static int _pgr_runs_on(PyObject *kernel, int d, PyObject *const *items, Py_ssize_t n) {
    PyObject *on = _PGR_SLOT(kernel, _pgr_hot.k_on_devices), *key, *v, *md;
    Py_ssize_t i;
    int same;
    if (on == NULL || !PyDict_CheckExact(on) || (key = PyLong_FromLong(d)) == NULL) {
        PyErr_Clear();
        return 0;
    }
    v = PyDict_GetItemWithError(on, key);  /* (int keys: no Python code runs) */
    Py_DECREF(key);
    if (v != Py_None) {
        PyErr_Clear();
        return 0;
    }
    for (i = 0; i < n; i++) {
        if (!Py_IS_TYPE(items[i], _pgr_hot.buffer_cls) && !Py_IS_TYPE(items[i], _pgr_hot.async_buffer_cls)) continue;
        if ((md = _pgr_attr(items[i], _pgr_s_device)) == NULL) return 0;  /* (an instance attribute of both) */
        same = md == Py_None || (PyLong_CheckExact(md) && PyLong_AsLong(md) == d);
        Py_DECREF(md);
        if (!same) {
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

static PyObject *_pgr_add_kernel(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *v[9] = {NULL, NULL, NULL, NULL, NULL, NULL, Py_None, Py_None, NULL};
    enum { KERNEL, GRID, BLOCK, ARGS, SMEM, ATTRS, DEPS, EDGES, DEVICE };
    PyObject *const names[9] = {_pgr_s_kernel, _pgr_s_grid, _pgr_s_block, _pgr_s_args, _pgr_s_shared_mem,
                                _pgr_s_attributes, _pgr_s_dependencies, _pgr_s_edges, _pgr_s_device};
    PyObject *kernel, *layout, *form, *keep = NULL, *res = NULL, *snapshot = NULL;
    PyObject *const *items = NULL;
    PyObject *owners[_PGR_KERNEL_MAX_PARAMS];  /* the buffers among the arguments (new references) */
    Py_ssize_t nitems = 0;
    int nown = 0, k;
    union { char bytes[_PGR_KERNEL_MAX_BYTES]; long double align_ld; void *align_p; long long align_ll; } buf;
    void *argv[_PGR_KERNEL_MAX_PARAMS], *func_p = NULL, *out = NULL;
    unsigned int dims[7];
    unsigned long long smem = 0;
    unsigned int n, size;
    int form_code, device = 0;
    const char *desc;
    _pgr_add_args a;
    int rc;
    if (!_pgr_bind_args(args, nargs, kwnames, names, 9, 4, 3, v)) goto fallback;
    /* several devices in use: the node runs on the current device (a placed add has made it
       current), and several()'s record records it; without a record set -- the moment several() is
       turned on or off -- the Python method takes the call */
    if (_pgr_hot.several && (_pgr_hot.record == NULL || _pgr_hot_get_device(&device) != 0)) goto fallback;
    if (v[EDGES] != Py_None || !_pgr_device_here(v[DEVICE]) ||
        (v[ATTRS] != NULL && v[ATTRS] != Py_None) || !_pgr_hot.kernels_bound || !_pgr_on(_PGR_ADD_KERNEL))
        goto fallback;
    /* the kernel: exactly a Kernel of this backend whose layout the Python method recorded for
       its current signature (after the first node had its signature checked against it) */
    kernel = v[KERNEL];
    if (!Py_IS_TYPE(kernel, _pgr_hot.kernel_cls) || _PGR_SLOT(kernel, _pgr_hot.k_backend) != _pgr_hot.backend)
        goto fallback;
    layout = _PGR_SLOT(kernel, _pgr_hot.k_layout);
    if (layout == NULL || !PyTuple_CheckExact(layout) || PyTuple_GET_SIZE(layout) != 2 ||
        PyTuple_GET_ITEM(layout, 0) != _PGR_SLOT(kernel, _pgr_hot.k_signature))
        goto fallback;
    if (!_pgr_layout(PyTuple_GET_ITEM(layout, 1), &desc, &n, &size) ||
        !_pgr_kernel_func(kernel, _pgr_hot.ct_void_p, &func_p))
        goto fallback;
    /* the handle's form (Kernel.form): 1 a library kernel, which a direct call to the driver
       passes as such; 0 another (a HIP function): the runtime's call only */
    form = _PGR_SLOT(kernel, _pgr_hot.k_form);
    form_code = form != NULL && PyUnicode_CheckExact(form) && PyUnicode_Compare(form, _pgr_s_kernel) == 0;  /* "kernel" */
    if (!_pgr_dims(v[GRID], dims) || !_pgr_dims(v[BLOCK], dims + 3)) goto fallback;
    if (v[SMEM] != NULL && (!_pgr_u64(v[SMEM], &smem) || smem > 0xFFFFFFFFull)) goto fallback;
    dims[6] = (unsigned int)smem;
    /* the arguments (a tuple or list: packing runs no Python code, so a list cannot change
       meanwhile), packed at the signature's offsets */
    if (v[ARGS] != NULL) {
        if (!PyTuple_CheckExact(v[ARGS]) && !PyList_CheckExact(v[ARGS])) goto fallback;
        /* (with several devices in use a list is read from a copy: the arguments' devices are
           read as attributes, which packing from the list must not follow) */
        if (_pgr_hot.several && PyList_CheckExact(v[ARGS]) && (snapshot = PyList_AsTuple(v[ARGS])) == NULL) {
            PyErr_Clear();
            goto fallback;
        }
        items = PySequence_Fast_ITEMS(snapshot ? snapshot : v[ARGS]);
        nitems = PySequence_Fast_GET_SIZE(snapshot ? snapshot : v[ARGS]);
    }
    if (_pgr_hot.several && !_pgr_runs_on(kernel, device, items, nitems)) goto fallback;
    if (nitems != (Py_ssize_t)n ||
        !_pgr_pack_args(items, n, desc, size, buf.bytes, argv, _pgr_hot.backend, _pgr_hot.ct_void_p))
        goto fallback;
    for (k = 0; k < (int)n; k++)
        if (Py_IS_TYPE(items[k], _pgr_hot.buffer_cls) || Py_IS_TYPE(items[k], _pgr_hot.async_buffer_cls))
            owners[nown++] = Py_NewRef(items[k]);
    if (!_pgr_add_prepare(self, v[DEPS], &a) || (keep = _pgr_keep_of(self)) == NULL) goto fallback;
    /* the runtime copies the values; once the node is made (a failed call keeps nothing) the
       graph keeps the buffers pointers came from and the kernel (whose _owner, the library, must
       stay loaded): keep list entries (_pgr_keep), no new object -- not the arguments' tuple,
       which would be one more tracked object per node for the cyclic collector to walk */
    Py_INCREF(a.nodes);
    rc = _pgr_hot_add_kernel(&out, a.graph, a.n ? a.deps : NULL, a.n, func_p, form_code, dims, n ? argv : NULL);
    res = rc ? _pgr_raise(_PGR_ADD_KERNEL, rc) : _pgr_add_made(self, a.nodes, _pgr_hot.kernel_node_cls, out);
    for (k = 0; k < nown && res != NULL; k++)
        if (_pgr_keep(keep, owners[k]) < 0) Py_CLEAR(res);
    if (res != NULL && _pgr_keep(keep, kernel) < 0) Py_CLEAR(res);
    Py_DECREF(a.nodes);
    goto done;
fallback:
    res = _pgr_fallback(_PGR_ADD_KERNEL, self, args, nargs, kwnames);
done:
    Py_XDECREF(keep);
    Py_XDECREF(snapshot);
    for (k = 0; k < nown; k++) Py_DECREF(owners[k]);
    return res;
}

/* ---- the plain kernel launch: Stream.launch(kernel, grid, block, *args, shared_mem=0,
 *      **attributes) and Kernel.launch(stream, grid, block, *args, shared_mem=0, **attributes) ---- */

/* A captured launch's objects, into the capture's keep list `keep`: the buffers of the `n`
 * arguments `items` (the C packs no other object) and the kernel's owner, but for an int (a
 * wrapped handle: Stream._retain keeps no int either).  0, or -1 with an exception. */
static int _pgr_capture_keep(PyObject *keep, PyObject *kernel, PyObject *const *items, unsigned int n) {
    PyObject *owner = _PGR_SLOT(kernel, _pgr_hot.k_owner);
    unsigned int i;
    for (i = 0; i < n; i++)
        if ((Py_IS_TYPE(items[i], _pgr_hot.buffer_cls) || Py_IS_TYPE(items[i], _pgr_hot.async_buffer_cls)) &&
            _pgr_keep(keep, items[i]) < 0)
            return -1;
    return owner != NULL && owner != Py_None && !PyLong_Check(owner) ? _pgr_keep(keep, owner) : 0;
}

/* The launch of `kernel` on `stream` with positional arguments `args` (nargs of them; the first
 * is the stream or the kernel, then grid, block and the kernel's arguments) and keywords
 * `kwnames`, as the Python hot launch (pygraphrt.kernels._hot) makes it: a Kernel of the bound
 * backend with its C layout -- recorded once its first launch checked the signature --, valid;
 * a Stream of the same backend, open; plain dims and shared memory, no launch attributes;
 * arguments the C packs.  On a stream a pygraphrt capture records, the capture's keep list (which
 * its graph takes) gets, once the launch succeeded, the buffers pointers came from and the
 * kernel's owner (its library), as the Python launch's retain() gives them (_pgr_capture_keep).
 * The launch function is the kernel's own (the layout names it: cuLaunchKernel,
 * hipModuleLaunchKernel), called with the GIL released.  A code other than
 * success goes to the layout's `failed` (Python: the vendor's retry, or the error with the
 * stream's note), as the Python hot launch's does.  Anything else: the Python method. */
static PyObject *_pgr_kernel_launch(int m, PyObject *self, PyObject *stream, PyObject *kernel,
                                    PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *layout, *failed = NULL, *smem_obj = NULL, *sb = NULL, *sh = NULL, *cap = NULL, *keep = NULL,
             *res = NULL, *sd = NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    union { char bytes[_PGR_KERNEL_MAX_BYTES]; long double align_ld; void *align_p; long long align_ll; } buf;
    void *argv[_PGR_KERNEL_MAX_PARAMS], *func_p = NULL, *stream_p = NULL;
    unsigned long long smem = 0, address;
    unsigned int dims[6], n, size;
    const char *desc;
    int rc;
    if (nargs < 3 || nkw > 1 || !_pgr_hot.launch_bound) goto fallback;
    if (nkw == 1) {
        if (PyTuple_GET_ITEM(kwnames, 0) != _pgr_s_shared_mem) goto fallback;  /* launch attributes */
        smem_obj = args[nargs];
        if (!_pgr_u64(smem_obj, &smem) || smem > 0xFFFFFFFFull) goto fallback;
    }
    if (!Py_IS_TYPE(kernel, _pgr_hot.kernel_cls) || !Py_IS_TYPE(stream, _pgr_hot.stream_cls) ||
        _PGR_SLOT(kernel, _pgr_hot.k_backend) != _pgr_hot.launch_backend)
        goto fallback;
    /* the layout: (signature, packed layout, launch function's address, failed) */
    layout = _PGR_SLOT(kernel, _pgr_hot.k_launch);
    if (layout == NULL || !PyTuple_CheckExact(layout) || PyTuple_GET_SIZE(layout) != 4 ||
        PyTuple_GET_ITEM(layout, 0) != _PGR_SLOT(kernel, _pgr_hot.k_signature) ||
        !_pgr_layout(PyTuple_GET_ITEM(layout, 1), &desc, &n, &size) ||
        !_pgr_u64(PyTuple_GET_ITEM(layout, 2), &address) || address == 0 ||
        (unsigned long long)(uintptr_t)address != address)
        goto fallback;
    /* (held: the stream's attributes are looked up below, and while the GIL is released another
       thread may give the kernel another layout) */
    failed = Py_NewRef(PyTuple_GET_ITEM(layout, 3));
    if (!_pgr_kernel_func(kernel, _pgr_hot.ct_lvoid_p, &func_p)) goto fallback;
    if (!_pgr_dims(args[1], dims) || !_pgr_dims(args[2], dims + 3)) goto fallback;
    if (nargs - 3 != (Py_ssize_t)n ||
        !_pgr_pack_args(args + 3, n, desc, size, buf.bytes, argv, _pgr_hot.launch_backend, _pgr_hot.ct_lvoid_p))
        goto fallback;
    /* the stream, read last: its attributes are looked up by name (its _handle a slot, the
       others in its __dict__) -- the layout and arguments were read before anything that could
       run Python code */
    sb = _pgr_attr(stream, _pgr_s_backend);
    if (sb != _pgr_hot.launch_backend) goto fallback;
    sh = _pgr_attr(stream, _pgr_s_handle);
    if (sh == NULL || sh == Py_None || !_pgr_ptr(sh, _pgr_hot.ct_lstream, &stream_p)) goto fallback;
    cap = _pgr_attr(stream, _pgr_s_capture);
    if (cap == NULL) goto fallback;
    if (cap != Py_None && ((keep = _pgr_attr(cap, _pgr_s_keep)) == NULL || !PyList_CheckExact(keep)))
        goto fallback;
    /* several devices in use: the kernel runs on the stream's device, as far as pygraphrt knows
       it (a stream whose device it has not asked yet, or the legacy default stream's, takes the
       Python method, which asks), with the checks of _pgr_runs_on */
    if (_pgr_hot.several) {
        long d;
        sd = _pgr_attr(stream, _pgr_s_private_device);
        if (sd == NULL || !PyLong_CheckExact(sd) || (d = PyLong_AsLong(sd)) < 0 || d > INT_MAX ||
            !_pgr_runs_on(kernel, (int)d, args + 3, n)) {
            PyErr_Clear();
            goto fallback;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    rc = ((_pgr_launch_fn)(uintptr_t)address)(func_p, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
                                              (unsigned int)smem, stream_p, n ? argv : NULL, NULL);
    Py_END_ALLOW_THREADS
    if (rc == 0) {
        res = keep != NULL && _pgr_capture_keep(keep, kernel, args + 3, n) < 0 ? NULL : Py_NewRef(Py_None);
    } else {  /* failed(rc, kernel, stream, grid, block, args, smem) */
        PyObject *code = PyLong_FromLong(rc), *rest = PyTuple_New(nargs - 3);
        PyObject *zero = smem_obj == NULL ? PyLong_FromLong(0) : Py_NewRef(smem_obj);
        Py_ssize_t i;
        for (i = 3; rest != NULL && i < nargs; i++) PyTuple_SET_ITEM(rest, i - 3, Py_NewRef(args[i]));
        if (code != NULL && rest != NULL && zero != NULL) {
            PyObject *call[7] = {code, kernel, stream, args[1], args[2], rest, zero};
            res = PyObject_Vectorcall(failed, call, 7, NULL);
        }
        Py_XDECREF(code);
        Py_XDECREF(rest);
        Py_XDECREF(zero);
    }
    goto done;
fallback:
    res = _pgr_fallback(m, self, args, nargs, kwnames);
done:
    Py_XDECREF(failed);
    Py_XDECREF(sb);
    Py_XDECREF(sh);
    Py_XDECREF(cap);
    Py_XDECREF(keep);
    Py_XDECREF(sd);
    return res;
}

static PyObject *_pgr_stream_launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    if (nargs < 1) return _pgr_fallback(_PGR_STREAM_LAUNCH, self, args, nargs, kwnames);
    return _pgr_kernel_launch(_PGR_STREAM_LAUNCH, self, self, args[0], args, nargs, kwnames);
}

static PyObject *_pgr_kernel_launch_method(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                           PyObject *kwnames) {
    if (nargs < 1) return _pgr_fallback(_PGR_KERNEL_LAUNCH, self, args, nargs, kwnames);
    return _pgr_kernel_launch(_PGR_KERNEL_LAUNCH, self, args[0], self, args, nargs, kwnames);
}

/* ---- Graph.add_nodes: the run of plain specs, in one C loop ---- */

/* The entries of the NodeList being made (graph/_nodelist.py): entry k is the node object in
 * cache[k] once made, else the address in handles[k] (0: none) and the class code in kinds[k]
 * (0 EmptyNode, 1 MemsetNode). */
typedef struct {
    void **handles;
    unsigned char *kinds;
    PyObject *cache;  /* a list */
} _pgr_bulk_made;

/* Whether the NodeList arrays `hb` (addresses), `kb` (class codes) and list `cache` hold at
 * least `n` entries (1); else 0 with a ValueError naming `what`. */
static int _pgr_entries_fit(const Py_buffer *hb, const Py_buffer *kb, PyObject *cache, Py_ssize_t n,
                            const char *what) {
    if (hb->itemsize == (Py_ssize_t)sizeof(void *) && hb->len >= n * (Py_ssize_t)sizeof(void *) && kb->len >= n &&
        PyList_GET_SIZE(cache) >= n)
        return 1;
    PyErr_Format(PyExc_ValueError, "%s: the NodeList's arrays hold fewer than %zd entries", what, n);
    return 0;
}

/* Dependency `d` of spec `i` as add_nodes resolves it -- an int index of an earlier spec
 * (entry d of `made`), a Node, or a key of `names` -- when it is a live node of graph `self`:
 * its handle in *out (1); 0 (no exception) for anything else, which the Python loop reports. */
static int _pgr_bulk_dep(PyObject *self, PyObject *d, Py_ssize_t i, const _pgr_bulk_made *made, PyObject *names,
                         void **out) {
    if (PyLong_CheckExact(d)) {
        Py_ssize_t k = PyLong_AsSsize_t(d);
        if (k == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        if (k < 0 || k >= i) return 0;
        d = PyList_GET_ITEM(made->cache, k);
        if (d == Py_None) {  /* made in C, no object yet: a node of this graph while its entry
                                holds an address (the graph zeroes the entries of nodes that go) */
            *out = made->handles[k];
            return *out != NULL;
        }
    } else if (!PyObject_TypeCheck(d, _pgr_hot.node_cls)) {
        if (names == Py_None || !PyDict_CheckExact(names)) return 0;
        d = PyDict_GetItemWithError(names, d);  /* borrowed */
        if (d == NULL) {
            PyErr_Clear();  /* missing or unhashable: the Python loop says which */
            return 0;
        }
    }
    return _pgr_node_of(self, d, out);
}

PyDoc_STRVAR(_pgr_bulk_doc,
"add_nodes(graph, specs, start, handles, kinds, cache, names)\n--\n\n"
"Make the nodes of ``specs`` (a list or tuple) from index ``start`` on, writing entry i of the\n"
"NodeList whose arrays these are (``handles[i]``: the node's address, ``kinds[i]``: 0 empty,\n"
"1 memset; ``cache``: its node objects, read for dependencies), while a spec is an empty or\n"
"plain memset spec (``(\"empty\", None|{}, deps)``, ``(\"memset\", {\"dst\", \"value\",\n"
"\"count\"}, deps)``) whose every part the one-node methods would accept -- what\n"
"Graph.add_nodes would do with it, in C.  Returns the index of the first spec it left\n"
"(``len(specs)`` when none), for the Python loop; a runtime error is raised as ops.error\n"
"raises it, the entries before it written.");

/* Specs made between two points where other threads may run (the GIL is held in between). */
#define _PGR_BULK_CHUNK 1024

static PyObject *_pgr_bulk_add(PyObject *mod, PyObject *args) {
    PyObject *self, *specs, *names, *keep = NULL, *res = NULL;
    Py_buffer hb, kb;
    _pgr_bulk_made made;
    _pgr_add_args a;
    void *graph_p, **deps = a.deps;
    Py_ssize_t i, n;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OOnw*w*O!O", &self, &specs, &i, &hb, &kb, &PyList_Type, &made.cache, &names))
        return NULL;
    made.handles = (void **)hb.buf;
    made.kinds = (unsigned char *)kb.buf;
    if (!PyList_CheckExact(specs) && !PyTuple_CheckExact(specs)) {
        res = PyLong_FromSsize_t(i);
        goto out;
    }
    n = PySequence_Fast_GET_SIZE(specs);
    if (i < 0 || i > n) {
        PyErr_SetString(PyExc_ValueError, "add_nodes: start out of range");
        goto out;
    }
    if (!_pgr_entries_fit(&hb, &kb, made.cache, n, "add_nodes")) goto out;
    if (!_pgr_on(_PGR_ADD_EMPTY) || !_pgr_add_graph(self, &a)) {
        res = PyLong_FromSsize_t(i);
        goto out;
    }
    graph_p = a.graph;
    /* Nothing here makes a Python object: each node's entry is its address (the NodeList makes
     * the object when the entry is read), so the cyclic collector has nothing new to walk. */
    for (; i < n; i++) {
        PyObject *spec = PySequence_Fast_GET_ITEM(specs, i), *kind, *params, *dep_list = Py_None;
        PyObject *buffer = NULL;
        Py_ssize_t len, nd = 0, k;
        unsigned long long value = 0, dst = 0;
        size_t count = 0;
        void *dst_p = NULL, *out = NULL;
        int rc, memset_spec;
        if (!PyTuple_CheckExact(spec) && !PyList_CheckExact(spec)) break;
        len = PySequence_Fast_GET_SIZE(spec);
        if (len != 2 && len != 3) break;
        kind = PySequence_Fast_GET_ITEM(spec, 0);
        params = PySequence_Fast_GET_ITEM(spec, 1);
        if (len == 3) dep_list = PySequence_Fast_GET_ITEM(spec, 2);
        if (!PyUnicode_CheckExact(kind)) break;
        if (PyUnicode_CompareWithASCIIString(kind, "empty") == 0) {
            memset_spec = 0;
            if (params != Py_None && !(PyDict_CheckExact(params) && PyDict_GET_SIZE(params) == 0)) break;
        } else if (PyUnicode_CompareWithASCIIString(kind, "memset") == 0) {
            PyObject *vd, *vv, *vc;
            memset_spec = 1;
            if (!_pgr_on(_PGR_ADD_MEMSET) || !PyDict_CheckExact(params) || PyDict_GET_SIZE(params) != 3) break;
            vd = PyDict_GetItemWithError(params, _pgr_s_dst);
            vv = PyDict_GetItemWithError(params, _pgr_s_value);
            vc = PyDict_GetItemWithError(params, _pgr_s_count);
            if (vd == NULL || vv == NULL || vc == NULL) {
                PyErr_Clear();
                break;
            }
            if (!_pgr_u64(vv, &value) || value > 255 || !_pgr_size(vc, &count)) break;
            if (Py_IS_TYPE(vd, _pgr_hot.buffer_cls)) {  /* open, of this backend; kept by the graph */
                if (!_pgr_buffer(vd, &dst_p)) break;
                if (keep == NULL && (keep = _pgr_keep_of(self)) == NULL) break;
                buffer = vd;
            } else if (_pgr_u64(vd, &dst) && (unsigned long long)(uintptr_t)dst == dst) {
                dst_p = (void *)(uintptr_t)dst;
            } else {
                break;
            }
        } else {
            break;
        }
        if (dep_list != Py_None) {
            if (!PyList_CheckExact(dep_list) && !PyTuple_CheckExact(dep_list)) break;
            nd = PySequence_Fast_GET_SIZE(dep_list);
            if (nd > _PGR_MAX_DEPS) break;
            for (k = 0; k < nd; k++)
                if (!_pgr_bulk_dep(self, PySequence_Fast_GET_ITEM(dep_list, k), i, &made, names, &deps[k])) break;
            if (k < nd) break;
        }
        if (buffer != NULL && _pgr_keep(keep, buffer) < 0) goto out;
        if (memset_spec)
            rc = _pgr_hot_add_memset(&out, graph_p, nd ? deps : NULL, (size_t)nd, dst_p, (unsigned int)value, 1,
                                     count, 1, 0);
        else
            rc = _pgr_hot_add_empty(&out, graph_p, nd ? deps : NULL, (size_t)nd);
        if (rc) {
            _pgr_raise(memset_spec ? _PGR_ADD_MEMSET : _PGR_ADD_EMPTY, rc);
            goto out;
        }
        made.handles[i] = out;
        made.kinds[i] = (unsigned char)memset_spec;
        if (i % _PGR_BULK_CHUNK == _PGR_BULK_CHUNK - 1) {  /* let other threads run */
            Py_BEGIN_ALLOW_THREADS
            Py_END_ALLOW_THREADS
            /* ... which may have closed the graph, or destroyed nodes (their entries zeroed,
               or their objects' handles None: both refused above): go on only while it is
               the same open graph, else the Python loop says what is wrong */
            if (!_pgr_add_graph(self, &a) || a.graph != graph_p || PyList_GET_SIZE(made.cache) < n) {
                i++;
                break;
            }
        }
    }
    res = PyLong_FromSsize_t(i);
out:
    Py_XDECREF(keep);
    PyBuffer_Release(&hb);
    PyBuffer_Release(&kb);
    return res;
}

PyDoc_STRVAR(_pgr_make_doc,
"make_nodes(graph, handles, kinds, cache, start, stop)\n--\n\n"
"The node objects of entries ``start`` to ``stop`` of a NodeList of ``graph`` (its arrays:\n"
"an entry without one in ``cache`` has its address in ``handles`` and its class code in\n"
"``kinds``), each the node table's object of its handle or a new one entered in it, as the\n"
"add methods enter theirs; returns the index of the first entry it left (``stop`` when none)\n"
"for NodeList's Python: every entry, where the graph is closed or not of the bound backend.");

static PyObject *_pgr_make_nodes(PyObject *mod, PyObject *args) {
    PyObject *self, *cache, *res = NULL;
    PyTypeObject *const classes[2] = {_pgr_hot.empty_cls, _pgr_hot.memset_cls};
    Py_buffer hb, kb;
    Py_ssize_t i, stop;
    _pgr_add_args a;
    int gc_was;
    (void)mod;
    if (!PyArg_ParseTuple(args, "Oy*y*O!nn", &self, &hb, &kb, &PyList_Type, &cache, &i, &stop)) return NULL;
    if (i < 0 || stop < i) {
        PyErr_SetString(PyExc_ValueError, "make_nodes: entries out of range");
        goto out;
    }
    if (!_pgr_entries_fit(&hb, &kb, cache, stop, "make_nodes")) goto out;
    if (!_pgr_add_graph(self, &a)) {
        res = PyLong_FromSsize_t(i);
        goto out;
    }
    /* The objects made stay reachable (the list keeps them): a collection in between would free
     * nothing, so the collector is paused for the call, the GIL held throughout (no other
     * thread can see the pause), as NodeList calls this for a chunk of entries at a time. */
    gc_was = PyGC_Disable();
    for (; i < stop; i++) {
        PyObject *handle, *entry, *node = NULL;
        void *h = ((void **)hb.buf)[i];
        unsigned char kind = ((unsigned char *)kb.buf)[i];
        if (PyList_GET_ITEM(cache, i) != Py_None) continue;
        if (h == NULL || kind > 1) break;
        handle = _cffi_from_c_pointer((char *)h, (struct _cffi_ctypedescr *)_pgr_hot.ct_node);
        if (handle == NULL) break;
        entry = PyDict_GetItemWithError(a.nodes, handle);  /* borrowed */
        if (entry == NULL && PyErr_Occurred()) {
            Py_DECREF(handle);
            break;
        }
        if (entry != NULL && PyWeakref_CheckRefExact(entry)) {
#if PY_VERSION_HEX >= 0x030D0000
            if (PyWeakref_GetRef(entry, &node) < 0) {
                Py_DECREF(handle);
                break;
            }
#else
            node = PyWeakref_GET_OBJECT(entry);
            node = node == Py_None ? NULL : Py_NewRef(node);
#endif
        } else if (entry != NULL) {
            node = Py_NewRef(entry);  /* a node Python code made (kept by the table) */
        }
        if (node != NULL)
            Py_DECREF(handle);
        else if ((node = _pgr_node_new(self, a.nodes, classes[kind], handle)) == NULL)
            break;
        PyList_SET_ITEM(cache, i, node);  /* takes the reference, and releases nothing: */
        Py_DECREF(Py_None);               /* the None it replaced */
    }
    if (gc_was) PyGC_Enable();
    if (!PyErr_Occurred()) res = PyLong_FromSsize_t(i);
out:
    PyBuffer_Release(&hb);
    PyBuffer_Release(&kb);
    return res;
}

static PyMethodDef _pgr_hot_defs[_PGR_ALL_METHODS] = {
    {"launch", (PyCFunction)(void (*)(void))_pgr_launch, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"add_empty", (PyCFunction)(void (*)(void))_pgr_add_empty, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"add_memset", (PyCFunction)(void (*)(void))_pgr_add_memset, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"add_kernel", (PyCFunction)(void (*)(void))_pgr_add_kernel, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"add_memcpy", (PyCFunction)(void (*)(void))_pgr_add_memcpy, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"launch", (PyCFunction)(void (*)(void))_pgr_stream_launch, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"launch", (PyCFunction)(void (*)(void))_pgr_kernel_launch_method, METH_FASTCALL | METH_KEYWORDS, NULL},
};
/* What method() knows them by (ml_name is the name in the class, which a text signature repeats) */
static const char *const _pgr_hot_keys[_PGR_ALL_METHODS] = {"launch", "add_empty", "add_memset", "add_kernel",
                                                            "add_memcpy",
                                                            "stream_launch", "kernel_launch"};

/* ---- the module's functions (pygraphrt.graph._hot calls them) ---- */

/* Whether node objects of `cls` can be made as object.__new__ makes them (tp_alloc): a concrete
 * subclass of `node`. */
static int _pgr_concrete_node(PyTypeObject *cls, PyTypeObject *node) {
    return PyType_IsSubtype(cls, node) && !(cls->tp_flags & Py_TPFLAGS_IS_ABSTRACT) && cls->tp_alloc != NULL;
}

/* The offset of __slots__ member `name` defined by `cls` itself, or -1 with an exception. */
static Py_ssize_t _pgr_slot_offset(PyTypeObject *cls, const char *name) {
    PyObject *d = PyDict_GetItemString(cls->tp_dict, name);  /* borrowed */
    PyMemberDef *m;
    if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a __slots__ member of the class", cls->tp_name, name);
        return -1;
    }
    m = ((PyMemberDescrObject *)d)->d_member;
    if (m->type != T_OBJECT_EX || (m->flags & READONLY) || m->offset < (Py_ssize_t)sizeof(PyObject) ||
        m->offset + (Py_ssize_t)sizeof(PyObject *) > cls->tp_basicsize) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a plain object slot", cls->tp_name, name);
        return -1;
    }
    return m->offset;
}

PyDoc_STRVAR(_pgr_bind_doc,
"bind(backend, error, api, ctypes, classes)\n--\n\n"
"Make ``backend``'s objects take the C path: ``error`` is its ops.error, ``api`` the API names\n"
"errors of launch, add_empty, add_memset, add_kernel and add_memcpy carry (None: that method stays\n"
"Python), ``ctypes`` the cffi types (exec, stream, graph, node, void *), ``classes`` (Graph, GraphExec,\n"
"Stream, Node, EmptyNode, MemsetNode, DeviceBuffer, MemcpyNode: the __slots__ named in _pgr_hot are\n"
"read at their offsets).\n"
"A later call replaces the backend.");

static PyObject *_pgr_bind_backend(PyObject *mod, PyObject *args) {
    PyObject *backend, *error, *api, *ctypes, *classes;
    PyTypeObject *cls[8];
    Py_ssize_t off[12];
    static const char *const slots[12] = {"_backend", "_handle", "_nodes", "_keep", "_backend", "_handle",
                                          "_host_sinks", "_last_stream", "_graph", "_handle", "_backend", "_handle"};
    static const int slot_cls[12] = {0, 0, 0, 0, 1, 1, 1, 1, 3, 3, 6, 6};  /* Graph, GraphExec, Node, DeviceBuffer */
    int i;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OOO!O!O!", &backend, &error, &PyTuple_Type, &api, &PyTuple_Type, &ctypes,
                          &PyTuple_Type, &classes))
        return NULL;
    if (PyTuple_GET_SIZE(api) != _PGR_METHODS || PyTuple_GET_SIZE(ctypes) != 5) {
        PyErr_SetString(PyExc_TypeError, "bind: api takes 5 names, ctypes 5 types");
        return NULL;
    }
    if (_pgr_classes(classes, 8, "bind", cls) < 0) return NULL;
    for (i = 0; i < 12; i++)
        if ((off[i] = _pgr_slot_offset(cls[slot_cls[i]], slots[i])) < 0) return NULL;
    for (i = 4; i < 8; i++)  /* EmptyNode, MemsetNode, MemcpyNode */
        if (i != 6 && (!_pgr_concrete_node(cls[i], cls[3]) || cls[i]->tp_basicsize != cls[3]->tp_basicsize)) {
            PyErr_SetString(PyExc_TypeError, "bind: EmptyNode, MemsetNode and MemcpyNode must be concrete Node classes without slots of their own");
            return NULL;
        }
    if (_pgr_ctypes(ctypes, "bind") < 0) return NULL;
    _pgr_hot.g_backend = off[0];
    _pgr_hot.g_handle = off[1];
    _pgr_hot.g_nodes = off[2];
    _pgr_hot.g_keep = off[3];
    _pgr_hot.e_backend = off[4];
    _pgr_hot.e_handle = off[5];
    _pgr_hot.e_host_sinks = off[6];
    _pgr_hot.e_last_stream = off[7];
    _pgr_hot.n_graph = off[8];
    _pgr_hot.n_handle = off[9];
    _pgr_hot.b_backend = off[10];
    _pgr_hot.b_handle = off[11];
    Py_XSETREF(_pgr_hot.backend, Py_NewRef(backend));
    Py_XSETREF(_pgr_hot.error, Py_NewRef(error));
    for (i = 0; i < _PGR_METHODS; i++) Py_XSETREF(_pgr_hot.api[i], Py_NewRef(PyTuple_GET_ITEM(api, i)));
    Py_XSETREF(_pgr_hot.ct_exec, Py_NewRef(PyTuple_GET_ITEM(ctypes, 0)));
    Py_XSETREF(_pgr_hot.ct_stream, Py_NewRef(PyTuple_GET_ITEM(ctypes, 1)));
    Py_XSETREF(_pgr_hot.ct_graph, Py_NewRef(PyTuple_GET_ITEM(ctypes, 2)));
    Py_XSETREF(_pgr_hot.ct_node, Py_NewRef(PyTuple_GET_ITEM(ctypes, 3)));
    Py_XSETREF(_pgr_hot.ct_void_p, Py_NewRef(PyTuple_GET_ITEM(ctypes, 4)));
    Py_XSETREF(_pgr_hot.graph_cls, (PyTypeObject *)Py_NewRef(cls[0]));
    Py_XSETREF(_pgr_hot.exec_cls, (PyTypeObject *)Py_NewRef(cls[1]));
    Py_XSETREF(_pgr_hot.stream_cls, (PyTypeObject *)Py_NewRef(cls[2]));
    Py_XSETREF(_pgr_hot.node_cls, (PyTypeObject *)Py_NewRef(cls[3]));
    Py_XSETREF(_pgr_hot.empty_cls, (PyTypeObject *)Py_NewRef(cls[4]));
    Py_XSETREF(_pgr_hot.memset_cls, (PyTypeObject *)Py_NewRef(cls[5]));
    Py_XSETREF(_pgr_hot.buffer_cls, (PyTypeObject *)Py_NewRef(cls[6]));
    Py_XSETREF(_pgr_hot.memcpy_cls, (PyTypeObject *)Py_NewRef(cls[7]));
    for (i = 0; i < 5; i++) _pgr_cdata_check(PyTuple_GET_ITEM(ctypes, i));
    Py_RETURN_NONE;
}

PyDoc_STRVAR(_pgr_bind_kernels_doc,
"bind_kernels(classes)\n--\n\n"
"Let add_kernel run in C: ``classes`` are (Kernel, Library, KernelNode, AsyncBuffer); Kernel's\n"
"``_backend``, ``_func``, ``_owner``, ``_signature``, ``_node_layout`` and ``form`` slots, Library's\n"
"``_handle`` and AsyncBuffer's ``_backend`` and ``_handle`` are read.  Until\n"
"this is called (pygraphrt binds it with the first kernel node), add_kernel stays Python.");

/* The slots add_kernel and the launches both read -- Kernel's _backend, _func, _owner and
 * _signature, Library's _handle, AsyncBuffer's _backend and _handle -- into `off` (0), or -1 with
 * an exception; _pgr_set_kernel_slots sets them and those classes (whichever binds first: the
 * same classes, the same offsets). */
static int _pgr_kernel_slots(PyTypeObject *kernel, PyTypeObject *library, PyTypeObject *async_buffer,
                             Py_ssize_t *off) {
    static const char *const slots[8] = {"_backend", "_func", "_owner", "_signature", "_handle", "_backend",
                                         "_handle", "_on_devices"};
    PyTypeObject *const cls[8] = {kernel, kernel, kernel, kernel, library, async_buffer, async_buffer, kernel};
    int i;
    for (i = 0; i < 8; i++)
        if ((off[i] = _pgr_slot_offset(cls[i], slots[i])) < 0) return -1;
    return 0;
}

static void _pgr_set_kernel_slots(PyTypeObject *kernel, PyTypeObject *library, PyTypeObject *async_buffer,
                                  const Py_ssize_t *off) {
    _pgr_hot.k_backend = off[0];
    _pgr_hot.k_func = off[1];
    _pgr_hot.k_owner = off[2];
    _pgr_hot.k_signature = off[3];
    _pgr_hot.l_handle = off[4];
    _pgr_hot.ab_backend = off[5];
    _pgr_hot.ab_handle = off[6];
    _pgr_hot.k_on_devices = off[7];
    Py_XSETREF(_pgr_hot.kernel_cls, (PyTypeObject *)Py_NewRef(kernel));
    Py_XSETREF(_pgr_hot.library_cls, (PyTypeObject *)Py_NewRef(library));
    Py_XSETREF(_pgr_hot.async_buffer_cls, (PyTypeObject *)Py_NewRef(async_buffer));
}

static PyObject *_pgr_bind_kernels(PyObject *mod, PyObject *args) {
    PyObject *classes;
    PyTypeObject *cls[4];
    Py_ssize_t off[8], layout, form;
    (void)mod;
    if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &classes)) return NULL;
    if (_pgr_hot.node_cls == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "bind() a backend first");
        return NULL;
    }
    if (_pgr_classes(classes, 4, "bind_kernels", cls) < 0) return NULL;  /* Kernel, Library, KernelNode, AsyncBuffer */
    if (_pgr_kernel_slots(cls[0], cls[1], cls[3], off) < 0 || (layout = _pgr_slot_offset(cls[0], "_node_layout")) < 0 ||
        (form = _pgr_slot_offset(cls[0], "form")) < 0)
        return NULL;
    if (!_pgr_concrete_node(cls[2], _pgr_hot.node_cls) || cls[2]->tp_basicsize != _pgr_hot.node_cls->tp_basicsize) {
        PyErr_SetString(PyExc_TypeError, "bind_kernels: KernelNode must be a concrete Node class without slots of its own");
        return NULL;
    }
    _pgr_set_kernel_slots(cls[0], cls[1], cls[3], off);
    _pgr_hot.k_layout = layout;
    _pgr_hot.k_form = form;
    Py_XSETREF(_pgr_hot.kernel_node_cls, (PyTypeObject *)Py_NewRef(cls[2]));
    _pgr_hot.kernels_bound = 1;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(_pgr_bind_launch_doc,
"bind_launch(backend, ctypes, classes)\n--\n\n"
"Make ``backend``'s plain kernel launches (stream_launch, kernel_launch) take the C path:\n"
"``ctypes`` are the cffi types (stream, void *), ``classes`` (Stream, Kernel, Library,\n"
"DeviceBuffer, AsyncBuffer): Kernel's ``_backend``, ``_func``, ``_owner``, ``_signature`` and\n"
"``_launch_layout`` slots, Library's ``_handle`` and the buffers' ``_backend`` and ``_handle`` are\n"
"read; a Stream's ``_backend``, ``_handle`` and ``_capture`` attributes.  A later call replaces\n"
"the backend.");

static PyObject *_pgr_bind_launch(PyObject *mod, PyObject *args) {
    PyObject *backend, *ctypes, *classes;
    PyTypeObject *cls[5];
    Py_ssize_t off[8], launch, b_backend, b_handle;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OO!O!", &backend, &PyTuple_Type, &ctypes, &PyTuple_Type, &classes)) return NULL;
    if (PyTuple_GET_SIZE(ctypes) != 2) {
        PyErr_SetString(PyExc_TypeError, "bind_launch: ctypes takes 2 types");
        return NULL;
    }
    /* Stream, Kernel, Library, DeviceBuffer, AsyncBuffer */
    if (_pgr_classes(classes, 5, "bind_launch", cls) < 0) return NULL;
    if (_pgr_kernel_slots(cls[1], cls[2], cls[4], off) < 0 || (launch = _pgr_slot_offset(cls[1], "_launch_layout")) < 0 ||
        (b_backend = _pgr_slot_offset(cls[3], "_backend")) < 0 || (b_handle = _pgr_slot_offset(cls[3], "_handle")) < 0 ||
        _pgr_ctypes(ctypes, "bind_launch") < 0)
        return NULL;
    _pgr_set_kernel_slots(cls[1], cls[2], cls[4], off);
    /* (DeviceBuffer's slots and Stream: as bind() sets them) */
    _pgr_hot.k_launch = launch;
    _pgr_hot.b_backend = b_backend;
    _pgr_hot.b_handle = b_handle;
    Py_XSETREF(_pgr_hot.stream_cls, (PyTypeObject *)Py_NewRef(cls[0]));
    Py_XSETREF(_pgr_hot.buffer_cls, (PyTypeObject *)Py_NewRef(cls[3]));
    Py_XSETREF(_pgr_hot.ct_lstream, Py_NewRef(PyTuple_GET_ITEM(ctypes, 0)));
    Py_XSETREF(_pgr_hot.ct_lvoid_p, Py_NewRef(PyTuple_GET_ITEM(ctypes, 1)));
    Py_XSETREF(_pgr_hot.launch_backend, Py_NewRef(backend));
    _pgr_cdata_check(_pgr_hot.ct_lstream);
    _pgr_cdata_check(_pgr_hot.ct_lvoid_p);
    _pgr_hot.launch_bound = 1;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(_pgr_method_doc,
"method(name, cls, fallback, doc)\n--\n\n"
"The method descriptor of hot method ``name`` (\"launch\", \"add_empty\", \"add_memset\",\n"
"\"add_kernel\", \"add_memcpy\", \"stream_launch\", \"kernel_launch\") for\n"
"class ``cls``, handing what it does not do itself to ``fallback`` (called as fallback(self, ...)),\n"
"with ``doc`` as its __doc__ (a text signature first).  Made once: a second call returns the same.");

static PyObject *_pgr_method(PyObject *mod, PyObject *args) {
    const char *name;
    PyObject *cls, *fallback, *doc;
    int m;
    (void)mod;
    if (!PyArg_ParseTuple(args, "sO!OU", &name, &PyType_Type, &cls, &fallback, &doc)) return NULL;
    for (m = 0; m < _PGR_ALL_METHODS && strcmp(_pgr_hot_keys[m], name) != 0; m++) {}
    if (m == _PGR_ALL_METHODS) return PyErr_Format(PyExc_ValueError, "no hot method %R", PyTuple_GET_ITEM(args, 0));
    if (_pgr_hot.descr[m] != NULL) return Py_NewRef(_pgr_hot.descr[m]);
    /* (the launches hand every call to their fallback until bind_launch(): they may be made first) */
    if (m < _PGR_METHODS && _pgr_hot.backend == NULL) return PyErr_Format(PyExc_RuntimeError, "bind() a backend first");
    if (!PyCallable_Check(fallback)) return PyErr_Format(PyExc_TypeError, "fallback must be callable");
    if ((_pgr_hot_defs[m].ml_doc = PyUnicode_AsUTF8(doc)) == NULL) return NULL;
    _pgr_hot.doc[m] = Py_NewRef(doc);
    _pgr_hot.fallback[m] = Py_NewRef(fallback);
    _pgr_hot.descr[m] = PyDescr_NewMethod((PyTypeObject *)cls, &_pgr_hot_defs[m]);
    return Py_XNewRef(_pgr_hot.descr[m]);
}

/* -- compute graphs: pygraphrt.compute._topology.index_accesses in C --
 *
 * The same edges in the same order and the same variable -> nodes index as the Python function
 * (tests/test_compute.py's property test holds the two equal), for a compute graph's topology
 * phase in compiled mode: in Python the index is about a sixth of a first launch.  Each
 * variable's state is a C record (its nodes' list, last writer, readers since that write,
 * whether it orders work: its `orders`, read once), found through a dict keyed by the variable
 * (its own hash and equality, as the Python dict's); node j's int object is made once and shared
 * by every list that holds j. */
typedef struct {
    PyObject *nodes;       /* list: every node that accesses the variable, in order, each once */
    Py_ssize_t last;       /* nodes[-1] */
    Py_ssize_t writer;     /* its last writer (-1: none yet) */
    Py_ssize_t *readers;   /* its readers since that write */
    Py_ssize_t n_readers, cap_readers;
    int orders;
} _pgr_use;

/* The record of `var` for node j (made at its first access, with `nodes` [j]); -1 on error. */
static Py_ssize_t _pgr_use_of(PyObject *index, _pgr_use **uses, Py_ssize_t *n_uses, Py_ssize_t *cap,
                              PyObject *var, Py_ssize_t j, PyObject *jj, int *made) {
    PyObject *k = PyDict_GetItemWithError(index, var), *orders, *key;
    _pgr_use *u;
    int o;
    *made = 0;
    if (k != NULL) return PyLong_AsSsize_t(k);
    if (PyErr_Occurred()) return -1;
    if ((orders = PyObject_GetAttrString(var, "orders")) == NULL) return -1;
    o = PyObject_IsTrue(orders);
    Py_DECREF(orders);
    if (o < 0) return -1;
    if (*n_uses == *cap) {
        Py_ssize_t c = *cap ? 2 * *cap : 64;
        _pgr_use *grown = PyMem_Realloc(*uses, (size_t)c * sizeof **uses);
        if (grown == NULL) { PyErr_NoMemory(); return -1; }
        *uses = grown;
        *cap = c;
    }
    u = &(*uses)[*n_uses];
    if ((u->nodes = PyList_New(1)) == NULL) return -1;
    Py_INCREF(jj);
    PyList_SET_ITEM(u->nodes, 0, jj);
    u->last = j;
    u->writer = -1;
    u->readers = NULL;
    u->n_readers = u->cap_readers = 0;
    u->orders = o;
    (*n_uses)++;  /* (the record is the caller's to free from here on) */
    if ((key = PyLong_FromSsize_t(*n_uses - 1)) == NULL) return -1;
    o = PyDict_SetItem(index, var, key);
    Py_DECREF(key);
    if (o < 0) return -1;
    *made = 1;
    return *n_uses - 1;
}

/* Edge i -> j, unless found already while visiting j (to[i] == j). */
static int _pgr_edge(Py_ssize_t *to, PyObject **ints, Py_ssize_t i, Py_ssize_t j, PyObject *sources,
                     PyObject *targets) {
    if (to[i] == j) return 0;
    to[i] = j;
    if (PyList_Append(sources, ints[i]) < 0 || PyList_Append(targets, ints[j]) < 0) return -1;
    return 0;
}

/* The record of variable k of `seq` (a node's reads or writes) for node j, with j added to its
 * nodes -- where `once`, unless j is its last already (a read of what the node wrote); NULL on
 * error.  (The variable is held while its hash, equality or `orders` runs.) */
static _pgr_use *_pgr_use_at(PyObject *seq, Py_ssize_t k, PyObject *index, _pgr_use **uses,
                             Py_ssize_t *n_uses, Py_ssize_t *cap, Py_ssize_t j, PyObject *jj, int once) {
    PyObject *var = PySequence_Fast_GET_ITEM(seq, k);
    Py_ssize_t x;
    _pgr_use *u;
    int made;
    Py_INCREF(var);
    x = _pgr_use_of(index, uses, n_uses, cap, var, j, jj, &made);
    Py_DECREF(var);
    if (x < 0) return NULL;
    u = &(*uses)[x];
    if (!made && !(once && u->last == j)) {
        if (PyList_Append(u->nodes, jj) < 0) return NULL;
        u->last = j;
    }
    return u;
}

PyDoc_STRVAR(_pgr_index_doc,
"index_accesses(reads_of, writes_of)\n--\n\n"
"pygraphrt.compute._topology.index_accesses in C: (sources, targets, nodes_of) from each\n"
"node's read and written variables (lists or tuples of lists or tuples).");

static PyObject *_pgr_index_accesses(PyObject *mod, PyObject *args) {
    PyObject *reads_of, *writes_of, *r_seq = NULL, *w_seq = NULL, *index = NULL, *sources = NULL,
        *targets = NULL, *nodes_of = NULL, *out = NULL, **ints = NULL, *seq = NULL;
    _pgr_use *uses = NULL;
    Py_ssize_t n = 0, count, j, k, n_uses = 0, cap = 0, *to = NULL;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OO", &reads_of, &writes_of)) return NULL;
    /* (tuples: what a variable's hash, equality or `orders` runs cannot change under the loop;
       a node's own list is read an item at a time, each held while it is used) */
    if ((r_seq = PySequence_Tuple(reads_of)) == NULL || (w_seq = PySequence_Tuple(writes_of)) == NULL)
        goto done;
    count = PyTuple_GET_SIZE(r_seq) < PyTuple_GET_SIZE(w_seq) ? PyTuple_GET_SIZE(r_seq)
                                                               : PyTuple_GET_SIZE(w_seq);  /* (zip's length) */
    to = PyMem_Malloc((size_t)(count ? count : 1) * sizeof *to);
    ints = PyMem_Calloc((size_t)(count ? count : 1), sizeof *ints);
    if (to == NULL || ints == NULL) { PyErr_NoMemory(); goto done; }
    n = count;  /* (the cleanup walks ints[:n]) */
    if ((index = PyDict_New()) == NULL || (sources = PyList_New(0)) == NULL ||
        (targets = PyList_New(0)) == NULL)
        goto done;
    for (j = 0; j < n; j++) {
        PyObject *jj;
        to[j] = -1;
        if ((jj = ints[j] = PyLong_FromSsize_t(j)) == NULL) goto done;
        /* the writes first: a variable both read and written is written */
        if ((seq = PySequence_Fast(PyTuple_GET_ITEM(w_seq, j), "a node's writes must be a sequence")) == NULL)
            goto done;
        for (k = 0; k < PySequence_Fast_GET_SIZE(seq); k++) {
            Py_ssize_t i, q;
            _pgr_use *u = _pgr_use_at(seq, k, index, &uses, &n_uses, &cap, j, jj, 0);
            if (u == NULL) goto done;
            if (!u->orders) continue;
            if ((i = u->writer) >= 0 && _pgr_edge(to, ints, i, j, sources, targets) < 0) goto done;
            for (q = 0; q < u->n_readers; q++)
                if (_pgr_edge(to, ints, u->readers[q], j, sources, targets) < 0) goto done;
            u->n_readers = 0;
            u->writer = j;
        }
        Py_CLEAR(seq);
        if ((seq = PySequence_Fast(PyTuple_GET_ITEM(r_seq, j), "a node's reads must be a sequence")) == NULL)
            goto done;
        for (k = 0; k < PySequence_Fast_GET_SIZE(seq); k++) {
            Py_ssize_t i;
            _pgr_use *u = _pgr_use_at(seq, k, index, &uses, &n_uses, &cap, j, jj, 1);
            if (u == NULL) goto done;
            if (!u->orders) continue;
            if ((i = u->writer) == j) continue;  /* also written by this node: its edges are the write's */
            if (i >= 0 && _pgr_edge(to, ints, i, j, sources, targets) < 0) goto done;
            if (u->n_readers == u->cap_readers) {
                Py_ssize_t c = u->cap_readers ? 2 * u->cap_readers : 8;
                Py_ssize_t *grown = PyMem_Realloc(u->readers, (size_t)c * sizeof *grown);
                if (grown == NULL) { PyErr_NoMemory(); goto done; }
                u->readers = grown;
                u->cap_readers = c;
            }
            u->readers[u->n_readers++] = j;
        }
        Py_CLEAR(seq);
    }
    /* nodes_of: each variable (the index's keys, in the order first accessed) -> its nodes */
    if ((nodes_of = PyDict_New()) == NULL) goto done;
    {
        PyObject *var, *key;
        Py_ssize_t pos = 0;
        while (PyDict_Next(index, &pos, &var, &key))
            if (PyDict_SetItem(nodes_of, var, uses[PyLong_AsSsize_t(key)].nodes) < 0) goto done;
    }
    out = PyTuple_Pack(3, sources, targets, nodes_of);
done:
    Py_XDECREF(seq);
    Py_XDECREF(r_seq);
    Py_XDECREF(w_seq);
    Py_XDECREF(index);
    Py_XDECREF(sources);
    Py_XDECREF(targets);
    Py_XDECREF(nodes_of);
    if (ints != NULL)
        for (j = 0; j < n; j++) Py_XDECREF(ints[j]);
    for (k = 0; k < n_uses; k++) {
        Py_DECREF(uses[k].nodes);
        PyMem_Free(uses[k].readers);
    }
    PyMem_Free(uses);
    PyMem_Free(ints);
    PyMem_Free(to);
    return out;
}

/* -- compute graphs: a node's evaluation and the variables' read and write in C --
 *
 * ComputeGraph._evaluate, Var.read and Var.write (pygraphrt.compute) as method descriptors
 * (pygraphrt.compute._hot installs them in compiled mode): every node's closure runs through
 * the first once a phase, and every access it makes through the others, so in Python they
 * are about half of a compute graph's first launch.  Each does what the Python method does in
 * the common case -- a node without a device, this thread's slot of the exact class, a context
 * of NodeContext's exact class; a variable inside a closure of its manager's graph, bound --
 * and hands every other call, before changing anything, to the Python method it replaced (its
 * fallback), so errors and semantics stay the Python code's.  The thread's slot (compute._vars'
 * thread-local _active.slot, made once per thread) is remembered for the thread last seen
 * (its interpreter and its thread state's unique id), so an access reads no thread-local.
 * The slot's and the context's attributes are __slots__, read and written at the offsets their
 * member descriptors give (checked by bind_compute); the variable's and the node's are read
 * as attributes. */
enum { _PGR_CG_EVALUATE, _PGR_CG_READ, _PGR_CG_WRITE, _PGR_CG_LAUNCH, _PGR_CG_MEMCPY, _PGR_CG_METHODS };
static struct {
    int bound;                       /* bind_compute ran: the methods exist only after it */
    PyObject *local;                 /* compute._vars._active: the thread-local of each thread's slot */
    PyTypeObject *slot_cls, *ctx_cls, *node_cls;
    PyTypeObject *var_cls[4];        /* the variable classes whose slots are read at their offsets */
    int n_var_cls;
    /* _Slot's rec, spare; NodeContext's node, phase, items, graph, manager, reads, writes;
       ComputeNode's name, fn, device, reads, writes, items, _gnodes; Var's manager, _bound, _obj, _solo */
    Py_ssize_t s_rec, s_spare, c_node, c_phase, c_items, c_graph, c_manager, c_reads, c_writes, n_name, n_fn,
        n_device, n_reads, n_writes, n_items, n_gnodes, v_manager, v_bound, v_obj, v_solo;
    PyObject *fallback[_PGR_CG_METHODS], *descr[_PGR_CG_METHODS], *doc[_PGR_CG_METHODS];
    PyInterpreterState *interp;      /* the thread whose slot is remembered */
    uint64_t thread_id;
    PyObject *slot;
    PyObject *s_slot, *s_manager, *s_solo, *s_build, *s_add_kernel, *s_add_memcpy;  /* attribute names, "build" */
    PyObject *kernel_kwnames;  /* ("shared_mem", "attributes") */
    /* compute._work's set of kernel classes NodeContext.launch has checked, KernelWork, MemcpyWork */
    PyObject *kernel_classes, *kernel_work, *memcpy_work;
    PyObject *zero;  /* NodeContext.launch's default shared_mem */
} _pgr_cg;

#define _PGR_MEMBER(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* Set the __slots__ member at `off` of `obj` to `v` (a new reference taken), as the member
 * descriptor does. */
static void _pgr_member_set(PyObject *obj, Py_ssize_t off, PyObject *v) {
    PyObject *old = _PGR_MEMBER(obj, off);
    _PGR_MEMBER(obj, off) = Py_NewRef(v);
    Py_XDECREF(old);
}

/* Whether `v` is a variable of one of the classes bound (their slots at their offsets; a
 * subclass may make any of them a property, so its objects take the Python method). */
static int _pgr_cg_plain_var(PyObject *v) {
    int i;
    for (i = 0; i < _pgr_cg.n_var_cls; i++)
        if (Py_TYPE(v) == _pgr_cg.var_cls[i]) return 1;
    return 0;
}

/* This thread's slot (borrowed), or NULL with an exception: compute._vars._active.slot. */
static PyObject *_pgr_cg_slot(void) {
    PyThreadState *ts = PyThreadState_Get();
    PyInterpreterState *interp = PyThreadState_GetInterpreter(ts);
    uint64_t id = PyThreadState_GetID(ts);
    PyObject *slot;
    if (_pgr_cg.slot != NULL && id == _pgr_cg.thread_id && interp == _pgr_cg.interp) return _pgr_cg.slot;
    if ((slot = PyObject_GetAttr(_pgr_cg.local, _pgr_cg.s_slot)) == NULL) return NULL;
    Py_XSETREF(_pgr_cg.slot, slot);
    _pgr_cg.thread_id = id;
    _pgr_cg.interp = interp;
    return slot;
}

/* The Python method compute method m replaced, called with the same arguments. */
static PyObject *_pgr_cg_fallback(int m, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames) {
    return _pgr_call_fallback(_pgr_cg.fallback[m], self, args, nargs, kwnames);
}

/* ---- Var.read() / Var.write() ---- */

static PyObject *_pgr_var_access(int m, PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                 PyObject *kwnames) {
    PyObject *slot, *rec, *obj, *list;
    if (nargs != 0 || kwnames != NULL || !_pgr_cg_plain_var(self))
        return _pgr_cg_fallback(m, self, args, nargs, kwnames);
    if ((slot = _pgr_cg_slot()) == NULL || Py_TYPE(slot) != _pgr_cg.slot_cls) {
        PyErr_Clear();
        return _pgr_cg_fallback(m, self, args, nargs, kwnames);
    }
    /* (inside a closure of a graph of the variable's manager, the variable bound) */
    rec = _PGR_MEMBER(slot, _pgr_cg.s_rec);
    if (rec == NULL || Py_TYPE(rec) != _pgr_cg.ctx_cls || _PGR_MEMBER(rec, _pgr_cg.c_manager) == NULL ||
        _PGR_MEMBER(self, _pgr_cg.v_manager) != _PGR_MEMBER(rec, _pgr_cg.c_manager) ||
        _PGR_MEMBER(self, _pgr_cg.v_bound) != Py_True || (obj = _PGR_MEMBER(self, _pgr_cg.v_obj)) == NULL)
        return _pgr_cg_fallback(m, self, args, nargs, kwnames);
    list = _PGR_MEMBER(rec, m == _PGR_CG_READ ? _pgr_cg.c_reads : _pgr_cg.c_writes);
    if (list == NULL || !PyList_CheckExact(list)) return _pgr_cg_fallback(m, self, args, nargs, kwnames);
    Py_INCREF(obj);
    if (PyList_Append(list, self) < 0) Py_CLEAR(obj);
    return obj;
}

static PyObject *_pgr_var_read(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    return _pgr_var_access(_PGR_CG_READ, self, args, nargs, kwnames);
}

static PyObject *_pgr_var_write(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    return _pgr_var_access(_PGR_CG_WRITE, self, args, nargs, kwnames);
}

/* ---- ComputeGraph._evaluate(n, phase, slot=None) ---- */

/* var._solo, a new reference */
static PyObject *_pgr_cg_solo(PyObject *var) {
    PyObject *t;
    if (_pgr_cg_plain_var(var) && (t = _PGR_MEMBER(var, _pgr_cg.v_solo)) != NULL) return Py_NewRef(t);
    return PyObject_GetAttr(var, _pgr_cg.s_solo);
}

/* Raise what reading the unset attribute `name` of `ctx` raises (a closure deleted it). */
static void _pgr_cg_missing(PyObject *ctx, const char *name) {
    PyObject *v = PyObject_GetAttrString(ctx, name);
    if (v != NULL) {  /* (set again meanwhile: still a context without it when it was read) */
        Py_DECREF(v);
        PyErr_Format(PyExc_AttributeError, "'NodeContext' object has no attribute '%s'", name);
    }
}

/* A context's recorded accesses as the evaluation returns them: each variable once, in the
 * order first accessed (one: the variable's own 1-tuple, its _solo), as a new reference. */
static PyObject *_pgr_cg_accesses(PyObject *seq) {
    PyObject *d, *t;
    Py_ssize_t n, i;
    if (!PyList_CheckExact(seq)) {  /* (a closure replaced it: as the Python method, generally) */
        if ((n = PyObject_Size(seq)) < 0) return NULL;
        if (n == 1) {
            PyObject *v = PySequence_GetItem(seq, 0);
            if (v == NULL) return NULL;
            t = _pgr_cg_solo(v);
            Py_DECREF(v);
            return t;
        }
        if ((d = PyObject_CallMethod((PyObject *)&PyDict_Type, "fromkeys", "(O)", seq)) == NULL) return NULL;
    } else {
        if ((n = PyList_GET_SIZE(seq)) == 1) return _pgr_cg_solo(PyList_GET_ITEM(seq, 0));
        if ((d = PyDict_New()) == NULL) return NULL;
        for (i = 0; i < PyList_GET_SIZE(seq); i++) {
            PyObject *v = Py_NewRef(PyList_GET_ITEM(seq, i));
            int rc = PyDict_SetItem(d, v, Py_None);
            Py_DECREF(v);
            if (rc < 0) {
                Py_DECREF(d);
                return NULL;
            }
        }
    }
    t = PySequence_Tuple(d);
    Py_DECREF(d);
    return t;
}

/* Empty a spared context's record (list.clear()). */
static int _pgr_cg_clear(PyObject *seq) {
    PyObject *r;
    if (PyList_CheckExact(seq)) return PyList_SetSlice(seq, 0, PY_SSIZE_T_MAX, NULL);
    if ((r = PyObject_CallMethod(seq, "clear", NULL)) == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

static PyObject *_pgr_evaluate(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *n, *phase, *slot, *fn = NULL, *name = NULL, *manager = NULL, *ctx = NULL, *r, *w,
        *reads = NULL, *writes = NULL, *items = NULL, *out = NULL;
    if (kwnames != NULL || nargs < 2 || nargs > 3)
        return _pgr_cg_fallback(_PGR_CG_EVALUATE, self, args, nargs, kwnames);
    n = args[0];
    phase = args[1];
    slot = nargs == 3 ? args[2] : Py_None;
    if (slot == Py_None && (slot = _pgr_cg_slot()) == NULL) PyErr_Clear();
    /* (a node with a device, an evaluation inside another, anything unusual: the Python method) */
    if (slot == NULL || Py_TYPE(slot) != _pgr_cg.slot_cls || _PGR_MEMBER(slot, _pgr_cg.s_rec) != Py_None ||
        Py_TYPE(n) != _pgr_cg.node_cls || _PGR_MEMBER(n, _pgr_cg.n_device) != Py_None ||
        (fn = _PGR_MEMBER(n, _pgr_cg.n_fn)) == NULL || (name = _PGR_MEMBER(n, _pgr_cg.n_name)) == NULL ||
        (ctx = _PGR_MEMBER(slot, _pgr_cg.s_spare)) == NULL || (ctx != Py_None && Py_TYPE(ctx) != _pgr_cg.ctx_cls) ||
        (manager = _pgr_attr(self, _pgr_cg.s_manager)) == NULL)
        return _pgr_cg_fallback(_PGR_CG_EVALUATE, self, args, nargs, kwnames);
    Py_INCREF(fn);
    Py_INCREF(name);
    /* A context of its own for each evaluation (a closure may keep it), made anew only where the
       previous one was kept. */
    if (ctx == Py_None) {
        if ((ctx = PyObject_CallFunctionObjArgs((PyObject *)_pgr_cg.ctx_cls, name, phase, self, NULL)) == NULL)
            goto done;
    } else {
        PyObject *fresh = PyList_New(0);
        if (fresh == NULL) {
            ctx = NULL;
            goto done;
        }
        Py_INCREF(ctx);
        _pgr_member_set(slot, _pgr_cg.s_spare, Py_None);
        _pgr_member_set(ctx, _pgr_cg.c_node, name);
        _pgr_member_set(ctx, _pgr_cg.c_phase, phase);
        _pgr_member_set(ctx, _pgr_cg.c_items, fresh);
        Py_DECREF(fresh);
        _pgr_member_set(ctx, _pgr_cg.c_graph, self);
        _pgr_member_set(ctx, _pgr_cg.c_manager, manager);
    }
    _pgr_member_set(slot, _pgr_cg.s_rec, ctx);
    r = PyObject_CallOneArg(fn, ctx);
    _pgr_member_set(slot, _pgr_cg.s_rec, Py_None);
    if (r == NULL) goto done;
    Py_DECREF(r);
    /* (r, w = ctx.reads, ctx.writes, held: what hashing a variable runs may replace them) */
    if ((r = _PGR_MEMBER(ctx, _pgr_cg.c_reads)) == NULL || _PGR_MEMBER(ctx, _pgr_cg.c_writes) == NULL) {
        _pgr_cg_missing(ctx, r == NULL ? "reads" : "writes");
        goto done;
    }
    Py_INCREF(r);
    w = Py_NewRef(_PGR_MEMBER(ctx, _pgr_cg.c_writes));
    reads = _pgr_cg_accesses(r);
    writes = reads == NULL ? NULL : _pgr_cg_accesses(w);
    Py_DECREF(r);
    Py_DECREF(w);
    if (writes == NULL) goto done;
    if ((items = _PGR_MEMBER(ctx, _pgr_cg.c_items)) == NULL) {
        _pgr_cg_missing(ctx, "items");
        goto done;
    }
    Py_INCREF(items);
    if (Py_REFCNT(ctx) == 1) {  /* nothing but this evaluation holds it: the thread's next one takes it */
        /* (emptied: a spare keeps neither this graph nor its variables nor its work alive) */
        if (_pgr_cg_clear(_PGR_MEMBER(ctx, _pgr_cg.c_reads)) < 0 || _pgr_cg_clear(_PGR_MEMBER(ctx, _pgr_cg.c_writes)) < 0)
            goto done;
        _pgr_member_set(ctx, _pgr_cg.c_items, Py_None);
        _pgr_member_set(ctx, _pgr_cg.c_graph, Py_None);
        _pgr_member_set(ctx, _pgr_cg.c_manager, Py_None);
        _pgr_member_set(slot, _pgr_cg.s_spare, ctx);
    }
    out = PyTuple_Pack(3, reads, writes, items);
done:
    Py_XDECREF(ctx);
    Py_XDECREF(reads);
    Py_XDECREF(writes);
    Py_XDECREF(items);
    Py_DECREF(fn);
    Py_DECREF(name);
    Py_DECREF(manager);
    return out;
}

/* ---- NodeContext.launch(kernel, grid, block, *args) and NodeContext.memcpy(dst, src, count) ----
 * The work item the Python method appends, for a kernel of a class it has checked before and no
 * keywords (shared_mem, launch attributes: the Python method), or a copy with its count given. */

static PyObject *_pgr_ctx_items(PyObject *self) {
    PyObject *items;
    if (Py_TYPE(self) != _pgr_cg.ctx_cls || (items = _PGR_MEMBER(self, _pgr_cg.c_items)) == NULL ||
        !PyList_CheckExact(items))
        return NULL;
    return items;
}

static PyObject *_pgr_ctx_launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *items, *item, *extra, *attributes;
    Py_ssize_t i;
    int known;
    if (kwnames != NULL || nargs < 3 || (items = _pgr_ctx_items(self)) == NULL)
        return _pgr_cg_fallback(_PGR_CG_LAUNCH, self, args, nargs, kwnames);
    if ((known = PySet_Contains(_pgr_cg.kernel_classes, (PyObject *)Py_TYPE(args[0]))) <= 0) {
        if (known < 0) PyErr_Clear();
        return _pgr_cg_fallback(_PGR_CG_LAUNCH, self, args, nargs, kwnames);
    }
    if ((extra = PyTuple_New(nargs - 3)) == NULL) return NULL;
    for (i = 3; i < nargs; i++) PyTuple_SET_ITEM(extra, i - 3, Py_NewRef(args[i]));
    if ((attributes = PyDict_New()) == NULL) {  /* (**attributes: a new dict each call) */
        Py_DECREF(extra);
        return NULL;
    }
    item = PyTuple_Pack(7, _pgr_cg.kernel_work, args[0], args[1], args[2], extra, _pgr_cg.zero, attributes);
    Py_DECREF(extra);
    Py_DECREF(attributes);
    if (item == NULL) return NULL;
    i = PyList_Append(items, item);
    Py_DECREF(item);
    if (i < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *_pgr_ctx_memcpy(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *items, *item;
    int rc;
    if (kwnames != NULL || nargs != 3 || args[2] == Py_None || (items = _pgr_ctx_items(self)) == NULL)
        return _pgr_cg_fallback(_PGR_CG_MEMCPY, self, args, nargs, kwnames);
    if ((item = PyTuple_Pack(4, _pgr_cg.memcpy_work, args[0], args[1], args[2])) == NULL) return NULL;
    rc = PyList_Append(items, item);
    Py_DECREF(item);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef _pgr_cg_defs[_PGR_CG_METHODS] = {
    {"_evaluate", (PyCFunction)(void (*)(void))_pgr_evaluate, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"read", (PyCFunction)(void (*)(void))_pgr_var_read, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"write", (PyCFunction)(void (*)(void))_pgr_var_write, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"launch", (PyCFunction)(void (*)(void))_pgr_ctx_launch, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"memcpy", (PyCFunction)(void (*)(void))_pgr_ctx_memcpy, METH_FASTCALL | METH_KEYWORDS, NULL},
};

PyDoc_STRVAR(_pgr_bind_compute_doc,
"bind_compute(local, classes, var_classes, work, fallbacks, docs)\n--\n\n"
"The compute graph's methods in C: returns the method descriptors of ComputeGraph._evaluate,\n"
"Var.read, Var.write, NodeContext.launch and NodeContext.memcpy (``classes``: _Slot, NodeContext,\n"
"ComputeGraph, ComputeNode, Var; ``work``: the set of kernel classes NodeContext.launch has\n"
"checked, KernelWork, MemcpyWork; ``fallbacks``: the Python methods, in the order above, each\n"
"called as fallback(self, ...) for what the C does not do; ``docs``: their __doc__).  ``local`` is\n"
"compute._vars' thread-local whose ``slot`` attribute is each thread's slot.  The __slots__ of\n"
"_Slot (``rec``, ``spare``), NodeContext (``node``, ``phase``, ``items``, ``graph``, ``manager``,\n"
"``reads``, ``writes``), ComputeNode (``name``, ``fn``, ``device``) and Var (``manager``, ``_bound``,\n"
"``_obj``, ``_solo``) are read at their offsets, Var's on objects of exactly ``var_classes`` (Var and\n"
"up to three subclasses of it) only.  Made once: a second call returns the same descriptors.");

/* ---- the build phase's loop (ComputeGraph._build_template) ---- */

/* Whether a node's recorded item and its new one have the one shape the loop takes: the same
 * kind, a kernel launch (7 fields) without launch attributes or a 1-D copy (4 fields).  1 yes,
 * 0 no (the Python loop compares), -1 error. */
static int _pgr_cg_plain_pair(PyObject *w, PyObject *o) {
    PyObject *kind;
    if (!PyTuple_CheckExact(w) || !PyTuple_CheckExact(o) || PyTuple_GET_SIZE(w) < 1 || PyTuple_GET_SIZE(o) < 1)
        return 0;
    kind = PyTuple_GET_ITEM(w, 0);
    if (kind != PyTuple_GET_ITEM(o, 0)) return 0;
    if (kind == _pgr_cg.memcpy_work) return PyTuple_GET_SIZE(w) == 4 && PyTuple_GET_SIZE(o) == 4;
    if (kind != _pgr_cg.kernel_work || PyTuple_GET_SIZE(w) != 7 || PyTuple_GET_SIZE(o) != 7) return 0;
    /* (attributes: the dict NodeContext.launch made, empty) */
    return PyDict_CheckExact(PyTuple_GET_ITEM(w, 6)) && PyDict_GET_SIZE(PyTuple_GET_ITEM(w, 6)) == 0 &&
           PyDict_CheckExact(PyTuple_GET_ITEM(o, 6)) && PyDict_GET_SIZE(PyTuple_GET_ITEM(o, 6)) == 0;
}

/* Whether node n's new evaluation (reads, writes, items) is the one the loop takes: n a
 * ComputeNode without a device, the accesses equal to its record, one item of the plain shape
 * as its recorded one.  1, 0, -1 (an error an equality raised, as the Python comparison would). */
static int _pgr_cg_plain_node(PyObject *n, PyObject *ev) {
    PyObject *items = PyTuple_GET_ITEM(ev, 2), *old, *v;
    int i, eq;
    if (Py_TYPE(n) != _pgr_cg.node_cls || _PGR_MEMBER(n, _pgr_cg.n_device) != Py_None) return 0;
    for (i = 0; i < 2; i++) {  /* reads == n.reads and writes == n.writes */
        if ((v = _PGR_MEMBER(n, i == 0 ? _pgr_cg.n_reads : _pgr_cg.n_writes)) == NULL) return 0;
        if ((eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(ev, i), v, Py_EQ)) <= 0) return eq;
    }
    old = _PGR_MEMBER(n, _pgr_cg.n_items);
    if (old == NULL || !PyList_CheckExact(old) || !PyList_CheckExact(items) || PyList_GET_SIZE(old) != 1 ||
        PyList_GET_SIZE(items) != 1)
        return 0;
    return _pgr_cg_plain_pair(PyList_GET_ITEM(items, 0), PyList_GET_ITEM(old, 0));
}

PyDoc_STRVAR(_pgr_build_nodes_doc,
"build_nodes(cg, nodes, i, slot, graph, first, last)\n--\n\n"
"ComputeGraph._build_template's loop from node ``i`` on, while each node is the common one: its\n"
"closure evaluated in the build phase (ComputeGraph._evaluate in C), its accesses and its one\n"
"work item -- a kernel launch without attributes, or a copy -- the same as recorded; the item's\n"
"graph node added to ``graph`` (its add_kernel or add_memcpy method), ``n.items`` and ``n._gnodes``\n"
"set, the node's handle appended to ``first`` and ``last``.  Returns ``(j, evaluation)``: node ``j``\n"
"(``len(nodes)``: none) is not the common one and was evaluated only, ``evaluation`` its\n"
"(reads, writes, items) for the Python loop to go on with.");

static PyObject *_pgr_build_nodes(PyObject *mod, PyObject *args) {
    PyObject *cg, *nodes, *slot, *graph, *first, *last, *ev = NULL, *argv[7], *made, *gnodes, *h;
    Py_ssize_t i;
    int plain;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OO!nOOO!O!", &cg, &PyList_Type, &nodes, &i, &slot, &graph, &PyList_Type, &first,
                          &PyList_Type, &last))
        return NULL;
    if (!_pgr_cg.bound) {
        PyErr_SetString(PyExc_RuntimeError, "build_nodes: bind_compute() first");
        return NULL;
    }
    for (; i >= 0 && i < PyList_GET_SIZE(nodes); i++) {
        PyObject *n = PyList_GET_ITEM(nodes, i), *w, *items;
        argv[0] = n;
        argv[1] = _pgr_cg.s_build;
        argv[2] = slot;
        Py_INCREF(n);  /* (the list may change under the closure) */
        ev = _pgr_evaluate(cg, argv, 3, NULL);
        if (ev == NULL || !PyTuple_CheckExact(ev) || PyTuple_GET_SIZE(ev) != 3) {
            Py_DECREF(n);
            if (ev == NULL) return NULL;
            break;  /* (a fallback's odd answer: the Python loop unpacks it) */
        }
        if ((plain = _pgr_cg_plain_node(n, ev)) <= 0) {
            Py_DECREF(n);
            if (plain < 0) Py_CLEAR(ev);
            if (ev == NULL) return NULL;
            break;
        }
        items = PyTuple_GET_ITEM(ev, 2);
        _pgr_member_set(n, _pgr_cg.n_items, items);
        w = PyList_GET_ITEM(items, 0);
        Py_INCREF(w);
        argv[0] = graph;
        if (PyTuple_GET_ITEM(w, 0) == _pgr_cg.kernel_work) {  /* KernelWork.add */
            argv[1] = PyTuple_GET_ITEM(w, 1);
            argv[2] = PyTuple_GET_ITEM(w, 2);
            argv[3] = PyTuple_GET_ITEM(w, 3);
            argv[4] = PyTuple_GET_ITEM(w, 4);
            argv[5] = PyTuple_GET_ITEM(w, 5);
            argv[6] = Py_None;  /* (attributes or None) */
            made = PyObject_VectorcallMethod(_pgr_cg.s_add_kernel, argv, 5,
                                             _pgr_cg.kernel_kwnames);
        } else {  /* MemcpyWork.add */
            argv[1] = PyTuple_GET_ITEM(w, 1);
            argv[2] = PyTuple_GET_ITEM(w, 2);
            argv[3] = PyTuple_GET_ITEM(w, 3);
            made = PyObject_VectorcallMethod(_pgr_cg.s_add_memcpy, argv, 4, NULL);
        }
        Py_DECREF(w);
        Py_CLEAR(ev);
        if (made == NULL) {
            Py_DECREF(n);
            return NULL;
        }
        gnodes = PyList_New(1);
        h = gnodes == NULL ? NULL : PyObject_GetAttr(made, _pgr_s_handle);
        if (gnodes != NULL) PyList_SET_ITEM(gnodes, 0, made);
        else Py_DECREF(made);
        if (h == NULL) {
            Py_XDECREF(gnodes);
            Py_DECREF(n);
            return NULL;
        }
        _pgr_member_set(n, _pgr_cg.n_gnodes, gnodes);
        Py_DECREF(gnodes);
        Py_DECREF(n);
        plain = PyList_Append(first, h) < 0 || PyList_Append(last, h) < 0;
        Py_DECREF(h);
        if (plain) return NULL;
    }
    if (ev == NULL) return Py_BuildValue("(nO)", i, Py_None);
    h = Py_BuildValue("(nO)", i, ev);
    Py_DECREF(ev);
    return h;
}

static PyObject *_pgr_cg_descrs(void) {
    return PyTuple_Pack(5, _pgr_cg.descr[0], _pgr_cg.descr[1], _pgr_cg.descr[2], _pgr_cg.descr[3], _pgr_cg.descr[4]);
}

static PyObject *_pgr_bind_compute(PyObject *mod, PyObject *args) {
    PyObject *local, *classes, *var_classes, *work[3], *fallbacks, *docs;
    PyTypeObject *cls[5], *var_cls[4];
    Py_ssize_t off[20], n_var;
    static const char *const slots[20] = {"rec", "spare", "node", "phase", "items", "graph", "manager", "reads",
                                          "writes", "name", "fn", "device", "reads", "writes", "items", "_gnodes",
                                          "manager", "_bound", "_obj", "_solo"};
    /* _Slot, NodeContext, ComputeNode, Var */
    static const int slot_cls[20] = {0, 0, 1, 1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4};
    static const char *const names[6] = {"slot", "manager", "_solo", "build", "add_kernel", "add_memcpy"};
    PyObject **const cells[6] = {&_pgr_cg.s_slot, &_pgr_cg.s_manager, &_pgr_cg.s_solo, &_pgr_cg.s_build,
                                 &_pgr_cg.s_add_kernel, &_pgr_cg.s_add_memcpy};
    int i;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OO!O!(O!O!O!)O!O!", &local, &PyTuple_Type, &classes, &PyTuple_Type, &var_classes,
                          &PySet_Type, &work[0], &PyType_Type, &work[1], &PyType_Type, &work[2],
                          &PyTuple_Type, &fallbacks, &PyTuple_Type, &docs))
        return NULL;
#ifdef Py_GIL_DISABLED
    /* (the evaluation spares a context by its reference count and remembers one thread's slot:
       both assume the GIL) */
    PyErr_SetString(PyExc_NotImplementedError, "bind_compute: not on a free-threaded build");
    return NULL;
#else
    if (_pgr_cg.bound) return _pgr_cg_descrs();
    /* _Slot, NodeContext, ComputeGraph, ComputeNode, Var */
    if (_pgr_classes(classes, 5, "bind_compute", cls) < 0) return NULL;
    n_var = PyTuple_GET_SIZE(var_classes);
    if (n_var < 1 || n_var > 4 || _pgr_classes(var_classes, n_var, "bind_compute", var_cls) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "bind_compute: var_classes takes 1 to 4 classes");
        return NULL;
    }
    for (i = 0; i < n_var; i++)
        if (!PyType_IsSubtype(var_cls[i], cls[4])) {
            PyErr_SetString(PyExc_TypeError, "bind_compute: var_classes must be Var and subclasses of it");
            return NULL;
        }
    if (PyTuple_GET_SIZE(fallbacks) != _PGR_CG_METHODS || PyTuple_GET_SIZE(docs) != _PGR_CG_METHODS) {
        PyErr_SetString(PyExc_TypeError, "bind_compute: fallbacks and docs take 5 each");
        return NULL;
    }
    for (i = 0; i < 20; i++)
        if ((off[i] = _pgr_slot_offset(cls[slot_cls[i]], slots[i])) < 0) return NULL;
    for (i = 0; i < _PGR_CG_METHODS; i++) {
        if (!PyCallable_Check(PyTuple_GET_ITEM(fallbacks, i)) || !PyUnicode_Check(PyTuple_GET_ITEM(docs, i))) {
            PyErr_SetString(PyExc_TypeError, "bind_compute: fallbacks must be callable, docs str");
            return NULL;
        }
    }
    for (i = 0; i < 6; i++)
        if (*cells[i] == NULL && (*cells[i] = PyUnicode_InternFromString(names[i])) == NULL) return NULL;
    if (_pgr_cg.kernel_kwnames == NULL &&
        (_pgr_cg.kernel_kwnames = PyTuple_Pack(2, _pgr_s_shared_mem, _pgr_s_attributes)) == NULL)
        return NULL;
    for (i = 0; i < _PGR_CG_METHODS; i++) {
        if ((_pgr_cg_defs[i].ml_doc = PyUnicode_AsUTF8(PyTuple_GET_ITEM(docs, i))) == NULL) return NULL;
        Py_XSETREF(_pgr_cg.doc[i], Py_NewRef(PyTuple_GET_ITEM(docs, i)));
        Py_XSETREF(_pgr_cg.fallback[i], Py_NewRef(PyTuple_GET_ITEM(fallbacks, i)));
        Py_XSETREF(_pgr_cg.descr[i], PyDescr_NewMethod(cls[i == _PGR_CG_EVALUATE ? 2 : i <= _PGR_CG_WRITE ? 4 : 1],
                                                       &_pgr_cg_defs[i]));
        if (_pgr_cg.descr[i] == NULL) return NULL;
    }
    _pgr_cg.s_rec = off[0];
    _pgr_cg.s_spare = off[1];
    _pgr_cg.c_node = off[2];
    _pgr_cg.c_phase = off[3];
    _pgr_cg.c_items = off[4];
    _pgr_cg.c_graph = off[5];
    _pgr_cg.c_manager = off[6];
    _pgr_cg.c_reads = off[7];
    _pgr_cg.c_writes = off[8];
    _pgr_cg.n_name = off[9];
    _pgr_cg.n_fn = off[10];
    _pgr_cg.n_device = off[11];
    _pgr_cg.n_reads = off[12];
    _pgr_cg.n_writes = off[13];
    _pgr_cg.n_items = off[14];
    _pgr_cg.n_gnodes = off[15];
    _pgr_cg.v_manager = off[16];
    _pgr_cg.v_bound = off[17];
    _pgr_cg.v_obj = off[18];
    _pgr_cg.v_solo = off[19];
    for (i = 0; i < n_var; i++) _pgr_cg.var_cls[i] = (PyTypeObject *)Py_NewRef(var_cls[i]);
    _pgr_cg.n_var_cls = (int)n_var;
    _pgr_cg.local = Py_NewRef(local);
    _pgr_cg.slot_cls = (PyTypeObject *)Py_NewRef(cls[0]);
    _pgr_cg.ctx_cls = (PyTypeObject *)Py_NewRef(cls[1]);
    _pgr_cg.node_cls = (PyTypeObject *)Py_NewRef(cls[3]);
    if (_pgr_cg.zero == NULL && (_pgr_cg.zero = PyLong_FromLong(0)) == NULL) return NULL;
    _pgr_cg.kernel_classes = Py_NewRef(work[0]);
    _pgr_cg.kernel_work = Py_NewRef(work[1]);
    _pgr_cg.memcpy_work = Py_NewRef(work[2]);
    _pgr_cg.bound = 1;
    return _pgr_cg_descrs();
#endif
}

PyDoc_STRVAR(_pgr_symbols_doc,
"symbols()\n--\n\n"
"{method name: the runtime function it calls}, for the methods this build can run (the\n"
"library exports the function).");

static PyObject *_pgr_symbols(PyObject *mod, PyObject *unused) {
    PyObject *d = PyDict_New(), *s;
    int m;
    (void)mod;
    (void)unused;
    for (m = 0; d != NULL && m < _PGR_METHODS; m++) {
        if (_pgr_hot_symbols[m] == NULL || !_pgr_hot_bound(m)) continue;
        if ((s = PyUnicode_FromString(_pgr_hot_symbols[m])) == NULL ||
            PyDict_SetItemString(d, _pgr_hot_defs[m].ml_name, s) < 0)
            Py_CLEAR(d);
        Py_XDECREF(s);
    }
    return d;
}

PyDoc_STRVAR(_pgr_handles_read_doc,
"handles_read()\n--\n\n"
"True when the hot methods read handles straight from their cdata (cffi's layout proved when\n"
"a backend was bound), False where they use cffi's conversion (none bound yet, or the check\n"
"failed).");

static PyObject *_pgr_handles_read(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    return PyBool_FromLong(_pgr_cdata_layout.type != NULL);
}

PyDoc_STRVAR(_pgr_roundtrip_doc,
"roundtrip(cdata, ctype)\n--\n\n"
"A new cdata of ``ctype`` made in C from the pointer C reads from ``cdata``: what the hot\n"
"methods do with handles (a load-time check of cffi's conversion functions).");

static PyObject *_pgr_roundtrip(PyObject *mod, PyObject *args) {
    PyObject *obj, *ct;
    char *p;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OO", &obj, &ct)) return NULL;
    p = _cffi_to_c_pointer(obj, (struct _cffi_ctypedescr *)ct);
    if (p == NULL && PyErr_Occurred()) return NULL;
    return _cffi_from_c_pointer(p, (struct _cffi_ctypedescr *)ct);
}

PyDoc_STRVAR(_pgr_one_device_doc,
"one_device(flag)\n--\n\n"
"Tell the hot methods whether the bound backend's runtime has exactly one device (then\n"
"``device=0`` on an add is the current device and stays in C); pygraphrt.multidevice sets it\n"
"when it first asks the device count.");

static PyObject *_pgr_one_device_set(PyObject *mod, PyObject *args) {
    int flag;
    (void)mod;
    if (!PyArg_ParseTuple(args, "p", &flag)) return NULL;
    _pgr_hot.one_device = flag;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(_pgr_several_doc,
"several(flag[, record])\n--\n\n"
"Whether the bound backend is used with several devices (pygraphrt.graph._hot and\n"
"pygraphrt.kernels._hot set it from pygraphrt.multidevice.when_several), and with ``record``\n"
"given (a callable or None), the function each node the C adds make is handed to, as\n"
"``record(graph, node)``, in the same step (so that no add runs between the two): graph._hot\n"
"gives pygraphrt.multidevice.record_node while several devices are in use.  A kernel's\n"
"node or launch then takes the C only where the kernel runs on the node's or stream's device as\n"
"itself and no pygraphrt buffer among its arguments is another device's memory; a kernel node\n"
"also needs ``record`` set.  Anything else goes to the Python methods, which check it.");

static PyObject *_pgr_several_set(PyObject *mod, PyObject *args) {
    int flag;
    PyObject *fn = NULL;
    (void)mod;
    if (!PyArg_ParseTuple(args, "p|O", &flag, &fn)) return NULL;
    if (fn != NULL && fn != Py_None && !PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "several: record must be a callable or None");
        return NULL;
    }
    _pgr_hot.several = flag;
    if (fn != NULL) Py_XSETREF(_pgr_hot.record, fn == Py_None ? NULL : Py_NewRef(fn));
    Py_RETURN_NONE;
}

static PyMethodDef _pgr_hot_module_defs[] = {
    {"one_device", _pgr_one_device_set, METH_VARARGS, _pgr_one_device_doc},
    {"several", _pgr_several_set, METH_VARARGS, _pgr_several_doc},
    {"bind", _pgr_bind_backend, METH_VARARGS, _pgr_bind_doc},
    {"bind_kernels", _pgr_bind_kernels, METH_VARARGS, _pgr_bind_kernels_doc},
    {"bind_launch", _pgr_bind_launch, METH_VARARGS, _pgr_bind_launch_doc},
    {"add_nodes", _pgr_bulk_add, METH_VARARGS, _pgr_bulk_doc},
    {"index_accesses", _pgr_index_accesses, METH_VARARGS, _pgr_index_doc},
    {"bind_compute", _pgr_bind_compute, METH_VARARGS, _pgr_bind_compute_doc},
    {"build_nodes", _pgr_build_nodes, METH_VARARGS, _pgr_build_nodes_doc},
    {"make_nodes", _pgr_make_nodes, METH_VARARGS, _pgr_make_doc},
    {"method", _pgr_method, METH_VARARGS, _pgr_method_doc},
    {"symbols", _pgr_symbols, METH_NOARGS, _pgr_symbols_doc},
    {"roundtrip", _pgr_roundtrip, METH_VARARGS, _pgr_roundtrip_doc},
    {"handles_read", _pgr_handles_read, METH_NOARGS, _pgr_handles_read_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef _pgr_hot_module = {
    PyModuleDef_HEAD_INIT, _PGR_HOT_NAME,
    "The layer's hot methods in C (see bindgen/hot_methods.c); loaded by pygraphrt._fast.", -1,
    _pgr_hot_module_defs, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC _PGR_HOT_INIT(void) {
    static const char *const names[] = {"_handle", "stream", "dependencies", "edges", "dst",
                                        "value", "count", "element_size", "height", "pitch", "kernel", "grid",
                                        "block", "args", "shared_mem", "attributes", "_backend", "_capture", "_keep", "device",
                                        "src", "_device"};
    PyObject **const cells[] = {&_pgr_s_handle, &_pgr_s_stream,
                                &_pgr_s_dependencies, &_pgr_s_edges, &_pgr_s_dst, &_pgr_s_value, &_pgr_s_count,
                                &_pgr_s_element_size, &_pgr_s_height, &_pgr_s_pitch, &_pgr_s_kernel, &_pgr_s_grid,
                                &_pgr_s_block, &_pgr_s_args, &_pgr_s_shared_mem, &_pgr_s_attributes,
                                &_pgr_s_backend, &_pgr_s_capture, &_pgr_s_keep, &_pgr_s_device, &_pgr_s_src,
                                &_pgr_s_private_device};
    size_t i;
    /* cffi fills its export table when this file's cffi module is imported */
    if (_cffi_exports[10] == NULL || _cffi_exports[11] == NULL) {
        PyErr_SetString(PyExc_ImportError, _PGR_HOT_NAME ": import the cffi module of this file first");
        return NULL;
    }
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (*cells[i] == NULL && (*cells[i] = PyUnicode_InternFromString(names[i])) == NULL) return NULL;
    return PyModule_Create(&_pgr_hot_module);
}
