/* Small helpers shared by the C extensions (profscope.models.core._protowire,
 * profscope.models.core._tfrecord, profscope.models.data._lanes, profscope.models.data._nesting, profscope.models.formats._labels,
 * profscope.models.formats._stepstats, profscope.models.formats._logscan, profscope.models.data._jsonrows,
 * profscope.models.formats._memory_json, profscope.models.formats._chrome_json,
 * profscope.models.formats._torch_snapshot,
 * profscope.models.sql._parquet): the bytes of a buffer,
 * numpy columns and spans taken from Python objects (with a buffer argument
 * beside them), numpy arrays taking raw memory (raw_array), a seeded hash of
 * short byte strings, a growable list of span triples. The other shared headers here are each for one thing:
 * protowire.h (protobuf wire format), json_write.h (json.dumps-identical
 * text), json_lex.h (reading JSON strings), intern.h (the string interner,
 * over hash_bytes).
 *
 * Every function is static inline, so each extension that includes this
 * header gets its own copy and the modules stay independent. Include it
 * first: it includes Python.h and numpy's array API (each module still
 * calls import_array() in its PyInit). */
#ifndef PROFSCOPE_CBUFFERS_H
#define PROFSCOPE_CBUFFERS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <string.h>

#include "portable.h"

/* The bytes of obj (bytes, bytearray, memoryview, mmap, ...). */
static inline int get_buffer(PyObject *obj, Py_buffer *view) {
    return PyObject_GetBuffer(obj, view, PyBUF_SIMPLE);
}

/* obj as a C-contiguous 1-d array of the given type (converted if need be). */
static inline PyArrayObject *as_column(PyObject *obj, int type) {
    return (PyArrayObject *)PyArray_FROMANY(obj, type, 1, 1, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
}

/* array (just converted from an argument, or NULL) with obj's bytes in view;
 * if they cannot be had, the array is released and NULL returned. */
static inline PyArrayObject *with_buffer(PyArrayObject *array, PyObject *obj, Py_buffer *view) {
    if (array && get_buffer(obj, view) < 0) Py_CLEAR(array);
    return array;
}

/* obj as int64 (offset, length) spans of shape (n, 2), else ValueError. */
static inline PyArrayObject *as_spans(PyObject *obj) {
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(obj, NPY_INT64, 2, 2, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
    if (a && PyArray_DIM(a, 1) != 2) {
        Py_DECREF(a);
        PyErr_SetString(PyExc_ValueError, "spans must have shape (n, 2)");
        return NULL;
    }
    return a;
}

/* Drawn by each module's PyInit, before any thread hashes: the strings of a
 * file cannot be chosen to fall on one slot of a table when the hash they
 * meet differs from process to process. */
static uint64_t hash_seed;
static inline void draw_hash_seed(void) {
    if (!hash_seed) hash_seed = pt_seed64() | 1;
}

/* A fast seeded hash of a short byte string, for open-addressing tables (8
 * bytes per step; equal strings are confirmed by comparing them anyway). */
static inline uint64_t hash_bytes(const uint8_t *p, size_t len) {
    uint64_t h = (0x9e3779b97f4a7c15ULL + hash_seed) ^ (uint64_t)len;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
        p += 8;
        len -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, len);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

static inline void raw_capsule_free(PyObject *capsule) { PyMem_RawFree(PyCapsule_GetPointer(capsule, NULL)); }

/* A 1-d numpy array over the first n items of *slot (memory of PyMem_RawMalloc), which it takes (shrunk to fit,
 * *slot set to NULL) and frees with itself; NULL with an exception when it cannot be made (the memory freed). */
static inline PyObject *raw_array(void **slot, int64_t n, int type, size_t itemsize) {
    void *d = *slot;
    *slot = NULL;
    npy_intp dims[1] = {(npy_intp)n};
    if (!d || n == 0) {
        PyMem_RawFree(d);
        return PyArray_SimpleNew(1, dims, type);
    }
    void *shrunk = PyMem_RawRealloc(d, itemsize * (size_t)n);
    if (shrunk) d = shrunk;
    PyObject *arr = PyArray_SimpleNewFromData(1, dims, type, d);
    if (!arr) {
        PyMem_RawFree(d);
        return NULL;
    }
    PyObject *cap = PyCapsule_New(d, NULL, raw_capsule_free);
    if (!cap) {
        Py_DECREF(arr);
        PyMem_RawFree(d);
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)arr, cap) < 0) {
        Py_DECREF(arr);
        Py_DECREF(cap);
        return NULL;
    }
    return arr;
}

/* Growable list of (tag, offset, length) triples; usable without the GIL
 * (raw allocator). Free items with PyMem_RawFree. */
typedef struct {
    int64_t *items;
    Py_ssize_t count, cap;
} SpanList;

/* Appends one triple; returns 0 when out of memory. */
static inline int span_push(SpanList *l, int64_t tag, int64_t off, int64_t len) {
    if (l->count == l->cap) {
        Py_ssize_t cap = l->cap ? l->cap * 2 : 256;
        int64_t *grown = PyMem_RawRealloc(l->items, sizeof(int64_t) * 3 * cap);
        if (!grown) return 0;
        l->items = grown;
        l->cap = cap;
    }
    int64_t *t = l->items + 3 * l->count++;
    t[0] = tag;
    t[1] = off;
    t[2] = len;
    return 1;
}

#endif
