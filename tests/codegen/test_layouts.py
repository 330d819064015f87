"""Every record layout, enum value and constant in every binding equals what gcc computes."""

from __future__ import annotations

import importlib

import pytest

from bindgen import ccheck

from .conftest import BINDINGS, load_manifest


@pytest.fixture(scope="module", params=BINDINGS)
def checked(request, fetched):
    name = request.param
    manifest = load_manifest(name)
    return name, manifest, ccheck.run(name, manifest)


def test_record_sizes_and_offsets_match_gcc(checked):
    name, manifest, gcc = checked
    ffi = importlib.import_module(f"pygraphrt._bindings.{name}").ffi
    nfields = 0
    for rname, rec in manifest["records"].items():
        assert gcc["records"][rname] == (rec["size"], rec["align"]), rname
        assert (ffi.sizeof(rname), ffi.alignof(rname)) == (rec["size"], rec["align"]), rname
        for fname, _ftype, offset in rec["fields"]:
            if offset is None:
                continue
            nfields += 1
            assert gcc["fields"][(rname, fname)] == offset, f"{rname}.{fname}"
            assert ffi.offsetof(rname, *fname.split(".")) == offset, f"{rname}.{fname}"
    assert len(gcc["records"]) == len(manifest["records"])
    print(f"{name}: {len(manifest['records'])} records, {nfields} field offsets equal gcc's")


def test_bitfields_land_on_the_same_bits(checked):
    name, manifest, gcc = checked
    ffi = importlib.import_module(f"pygraphrt._bindings.{name}").ffi
    for (rname, fname), hexbytes in gcc["bits"].items():
        obj = ffi.new(f"{rname} *")
        ftype = next(f[1] for f in manifest["records"][rname]["fields"] if f[0] == fname)
        width = int(ftype.rsplit(":", 1)[1])
        signed = not ftype.startswith("unsigned")
        setattr(obj, fname, -1 if signed else (1 << width) - 1)
        assert bytes(ffi.buffer(obj)).hex() == hexbytes, f"{rname}.{fname}"


def test_enum_values_match_gcc(checked):
    name, manifest, gcc = checked
    count = 0
    for ename, members in manifest["enums"].items():
        for member, value in members.items():
            assert gcc["enums"][(ename, member)] == value, f"{ename}.{member}"
            count += 1
    assert count == len(gcc["enums"])


def test_constants_match_gcc_in_value_and_type(checked):
    name, manifest, gcc = checked
    for cname, value in manifest["constants"].items():
        ctype = manifest["constant_types"][cname]
        gtype, gvalue = gcc["constants"][cname]
        if isinstance(value, str):
            assert gvalue == value, cname
        elif isinstance(value, float):
            assert float(gvalue) == value, cname
        else:
            assert int(gvalue) == value % (1 << 64), cname
        if ctype in ccheck._TYPE_CODES:
            assert gtype == ctype, cname
