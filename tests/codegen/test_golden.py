"""Golden tests: a small hand-written header -> IR, cdef and layouts.

``golden/sample.h`` uses every construct bindgen handles (enums with computed
values, anonymous and nested records, arrays, bitfields, aligned(N), #pragma
pack, typedefs, function pointers, variadics, inline helpers, renames,
per-thread variants, typed macro constants).  Each stage is checked alone.
To accept an intended change: ``PYGRAPHRT_UPDATE_GOLDEN=1 pytest tests/codegen``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bindgen import ccheck, emit, preprocess
from bindgen.generate import run_pipeline
from bindgen.ir import Array, FuncPtr, Named, Pointer, declare
from bindgen.parse import parse

GOLDEN = Path(__file__).with_name("golden")


def _pipeline():
    return run_pipeline(["sample.h"], [GOLDEN], {}, ("sample.h",), ("SMP", "smp"),
                        "SMP_PER_THREAD", ("_ptsz",))


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PYGRAPHRT_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert text == path.read_text()


def test_preprocess_lifts_attributes():
    pre = preprocess.preprocess(["sample.h"], [GOLDEN], {})
    assert pre.aligned == {"struct smpAligned": 16}
    assert "__attribute__" not in pre.text
    assert "deprecated" not in pre.text


def test_preprocess_rejects_aligned_in_unknown_place():
    with pytest.raises(preprocess.PreprocessError, match="unsupported position"):
        preprocess.lift_attributes("int x __attribute__((aligned(8)));")


def test_parse_ir():
    module = parse(preprocess.preprocess(["sample.h"], [GOLDEN], {}), [GOLDEN])
    kind = dict(module.enums["enum smpKind"].members)
    assert kind == {"smpKindA": 0, "smpKindB": 4, "smpKindC": 5, "smpKindD": 24,
                    "smpKindMax": 0x7FFFFFFF}
    assert dict(module.enums["smpMode"].members) == {"smpModeX": -1, "smpModeY": ord("y")}
    rec = module.records["struct smpRecord"]
    fields = {f.name: f for f in rec.fields}
    assert fields["name"].type == Array(Named("char"), 16)  # SMP_FLAG_B + 8
    assert fields["matrix"].type == Array(Array(Named("long long"), 3), 2)
    assert fields["flagB"].bit_width == 3 and fields["wide"].bit_width == 20
    anon = [f for f in rec.fields if f.name == "" and f.anonymous is not None]
    assert [f.name for f in anon[0].anonymous.fields] == ["asInt", "asFloat"]
    assert fields["pair"].anonymous.kind == "struct"
    assert module.records["struct smpAligned"].align == 16
    assert module.records["struct smpAlignasFirst"].align == 8  # C11 _Alignas on the first member
    assert module.records["struct smpPacked"].packed == 1
    assert module.records["struct smpInner"].packed is None
    assert "smpAnon" in module.records  # typedef name of an anonymous struct
    assert "smpHelper" not in module.functions  # static inline: not exported
    cb = module.typedefs["smpCallback_t"].type
    assert cb == Pointer(FuncPtr(Named("void"), (Pointer(Named("void")), Named("int"))))
    launch = module.functions["smpLaunch"]
    assert launch.variadic and [p.name for p in launch.params] == ["h", "records", "count"]
    assert module.functions["smpFill"].params[0].type == Pointer(Named("int"))


def test_declarators_print_as_c():
    assert declare(Pointer(FuncPtr(Named("int"), (Named("int"),))), "f") == "int (*f)(int)"
    assert declare(Pointer(Array(Named("char"), 4)), "p") == "char (*p)[4]"
    assert declare(Pointer(Named("char", const=True), const=True), "s") == "const char * const s"
    assert declare(Array(Array(Named("int"), 3), 2), "m") == "int m[2][3]"


def test_select_renames_per_thread_and_constants():
    p = _pipeline()
    assert {a: f.symbol for a, f in p.functions.items()} == {
        "smpOpen": "smpOpen", "smpOpen_v2": "smpOpen_v2", "smpOld": "smpOld",
        "smpLaunch": "smpLaunch", "smpSetCallback": "smpSetCallback", "smpFill": "smpFill",
        "smpLaunch_ptsz": "smpLaunch_ptsz"}
    consts = {k: (c.value, c.c_type) for k, c in p.constants.items()}
    assert consts == {
        "SMP_BIG": (2**64 - 1, "unsigned long long"), "SMP_FLAG_A": (1, "unsigned int"),
        "SMP_FLAG_B": (8, "unsigned int"), "SMP_HANDLE_NONE": (2, "smpHandle_t"),
        "SMP_NAME": ("sample-1", "const char *"), "SMP_NEG": (-5, "int"),
        "SMP_RATIO": (0.5, "float"), "SMP_VERSION": (1203, "int")}


def test_cdef_golden():
    p = _pipeline()
    _check_golden("sample.cdef", p.cdef + "/* packed */\n" + p.cdef_packed)
    assert p.omitted == {"struct smpAlignasLater":
                         "_Alignas(16) on member 'b' cannot be expressed in cffi's ABI mode"}


def test_emitted_module_layouts_equal_gcc():
    p = _pipeline()
    ffi = emit.make_ffi(p.cdef, p.cdef_packed)
    manifest = emit.manifest({}, p.module, p.functions, p.constants, ffi, p.omitted)
    _check_golden("sample.manifest.json", emit.manifest_json(manifest))
    gcc = ccheck.run_headers(["sample.h"], [GOLDEN], {}, manifest)
    for rname, rec in manifest["records"].items():
        assert gcc["records"][rname] == (rec["size"], rec["align"]), rname
        for fname, _t, offset in rec["fields"]:
            if offset is not None:
                assert gcc["fields"][(rname, fname)] == offset, f"{rname}.{fname}"
    assert len(gcc["bits"]) == 3
    for (rname, fname), hexbytes in gcc["bits"].items():
        obj = ffi.new(f"{rname} *")
        width = {"flagA": 1, "flagB": 3, "wide": 20}[fname]
        setattr(obj, fname, -1 if fname == "wide" else (1 << width) - 1)
        assert bytes(ffi.buffer(obj)).hex() == hexbytes
    assert gcc["constants"]["SMP_BIG"] == ("unsigned long long", str(2**64 - 1))


def test_over_alignment_beyond_16_is_reported_not_faked():
    text, reason = emit.record_cdef(
        __import__("bindgen.ir", fromlist=["Record"]).Record(
            "struct wide", "struct", (), align=32))
    assert reason is not None and "aligned(32)" in reason and text == "struct wide;"


def test_ffi_module_imports_without_a_compiler(tmp_path, monkeypatch):
    p = _pipeline()
    src = emit.ffi_module_source("golden_ffi", p.cdef, p.cdef_packed)
    (tmp_path / "golden_ffi.py").write_text(src)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("CC", "/nonexistent-cc")
    import golden_ffi

    assert golden_ffi.ffi.sizeof("struct smpPacked") == 5
    assert golden_ffi.ffi.alignof("struct smpAligned") == 16
    assert golden_ffi.ffi.offsetof("struct smpRecord", "pair", "b") == 30
