#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks a vcpkg port manifest (vcpkg.json) against the rules of the vcpkg.json reference
(learn.microsoft.com/vcpkg/reference/vcpkg-json, the fields of vcpkg-tool's
docs/vcpkg.schema.json): strict JSON, known top-level fields, exactly one version field of a
valid form, identifiers for names, dependency objects with known fields, features with a
description, default features that exist. vcpkg itself cannot be fetched here; this is the
offline check.

    python3 ports/check_manifest.py ports/gpass/vcpkg.json     # exit 0 when valid
"""
import json
import re
import sys

IDENT = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
RESERVED = {"prn", "aux", "nul", "con", "lpt1", "lpt2", "lpt3", "com1", "com2", "com3", "core", "default"}
SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
                    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$")
RELAXED = re.compile(r"^\d+(\.\d+)*$")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(\.\d+)*$")
TOP = {"name", "version", "version-semver", "version-date", "version-string", "port-version", "maintainers",
       "summary", "description", "homepage", "documentation", "license", "supports", "dependencies",
       "default-features", "features", "builtin-baseline", "overrides", "configuration", "vcpkg-configuration"}
DEP = {"name", "host", "features", "default-features", "platform", "version>="}
FEATURE = {"description", "dependencies", "supports", "license"}
SPDX_ID = re.compile(r"^[A-Za-z0-9.+-]+$")


def check(path):
    errors = []

    def err(msg):
        errors.append(f"{path}: {msg}")

    try:
        with open(path, encoding="utf-8") as f:
            m = json.load(f)  # strict: no comments, no trailing commas
    except (OSError, ValueError) as e:
        return [f"{path}: not strict JSON: {e}"]
    if not isinstance(m, dict):
        return [f"{path}: the top level must be an object"]

    def unknown(obj, allowed, where):
        for k in obj:
            if k not in allowed and not k.startswith("$"):
                err(f"{where}: unknown field '{k}'")

    def identifier(v, where):
        if not isinstance(v, str) or not IDENT.match(v) or v in RESERVED:
            err(f"{where}: '{v}' is not an identifier (lower-case letters, digits, single hyphens)")

    unknown(m, TOP, "manifest")
    identifier(m.get("name"), "name")
    versions = [k for k in ("version", "version-semver", "version-date", "version-string") if k in m]
    if len(versions) != 1:
        err(f"exactly one version field is required, found {versions or 'none'}")
    else:
        k, v = versions[0], m[versions[0]]
        ok = isinstance(v, str) and {"version": RELAXED, "version-semver": SEMVER, "version-date": DATE}.get(
            k, re.compile(r"^[^#]+$")).match(v)
        if not ok:
            err(f"{k}: '{v}' is not a valid {k}")
    if "port-version" in m and (not isinstance(m["port-version"], int) or m["port-version"] < 0):
        err("port-version must be a non-negative integer")
    for k in ("description", "maintainers"):
        if k in m and not (isinstance(m[k], str) or (isinstance(m[k], list) and all(isinstance(x, str) for x in m[k]))):
            err(f"{k} must be a string or an array of strings")
    if "license" in m and m["license"] is not None:
        lic = m["license"]
        tokens = re.split(r"\s+|\(|\)", lic) if isinstance(lic, str) else [None]
        if not isinstance(lic, str) or not all(t in ("", "AND", "OR", "WITH") or SPDX_ID.match(t) for t in tokens):
            err(f"license '{lic}' is not an SPDX license expression")

    def dependencies(deps, where):
        if not isinstance(deps, list):
            err(f"{where}: must be an array")
            return
        for i, d in enumerate(deps):
            w = f"{where}[{i}]"
            if isinstance(d, str):
                identifier(d, w)
            elif isinstance(d, dict):
                unknown(d, DEP, w)
                identifier(d.get("name"), w + ".name")
                if "host" in d and not isinstance(d["host"], bool):
                    err(f"{w}.host must be a boolean")
                if "default-features" in d and not isinstance(d["default-features"], bool):
                    err(f"{w}.default-features must be a boolean")
            else:
                err(f"{w}: a dependency is a string or an object")

    if "dependencies" in m:
        dependencies(m["dependencies"], "dependencies")
    features = m.get("features", {})
    if not isinstance(features, dict):
        err("features must be an object")
        features = {}
    for name, feat in features.items():
        identifier(name, f"features key")
        if not isinstance(feat, dict):
            err(f"features.{name} must be an object")
            continue
        unknown(feat, FEATURE, f"features.{name}")
        if "description" not in feat:
            err(f"features.{name}: description is required")
        if "dependencies" in feat:
            dependencies(feat["dependencies"], f"features.{name}.dependencies")
    for i, f in enumerate(m.get("default-features", [])):
        n = f if isinstance(f, str) else (f.get("name") if isinstance(f, dict) else None)
        if n not in features:
            err(f"default-features[{i}]: '{n}' is not a feature of this manifest")
    return errors


def main():
    errors = []
    for p in sys.argv[1:] or ["ports/gpass/vcpkg.json"]:
        errors += check(p)
    for e in errors:
        print(e)
    print("manifest: OK" if not errors else f"manifest: {len(errors)} error(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
