#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the backend node test data of the installed onnx release, from onnx's own
generators (`onnx.backend.test.case.node`), in the layout of Debian's libonnx-testdata:
OUT/node/<test>/model.onnx and OUT/node/<test>/test_data_set_0/{input,output}_<k>.pb.

The onnx wheel does not ship this data (its `backend-test-tools generate-data` writes the
model tests only), so gpass's conformance runner can only see the current release's node
tests through this script:

    python3 -m venv /tmp/onnxvenv && /tmp/onnxvenv/bin/pip install onnx numpy
    /tmp/onnxvenv/bin/python scripts/gen_onnx_node_data.py /tmp/onnx-node-data
    build/ci/tests/gpass_conformance /tmp/onnx-node-data --suite=node \\
        --expected=tests/conformance/expected_pass_onnx_current.txt

The data is not committed (tens of MB); tests/conformance/expected_pass_onnx_current.txt lists
the tests that pass, and scripts/onnx_current_conformance.sh runs the whole check.
"""
from __future__ import annotations

import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node as node_cases


def serialize(value, type_proto, name: str) -> bytes:
    if type_proto.HasField("sequence_type"):
        return numpy_helper.from_list(value, name).SerializeToString()
    if type_proto.HasField("optional_type"):
        return numpy_helper.from_optional(value, name).SerializeToString()
    if type_proto.HasField("map_type"):
        return numpy_helper.from_dict(value, name).SerializeToString()
    if isinstance(value, TensorProto):
        return value.SerializeToString()
    return numpy_helper.from_array(np.asarray(value), name).SerializeToString()


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    out = os.path.join(sys.argv[1], "node")
    if os.path.isdir(out):
        shutil.rmtree(out)
    cases = node_cases.collect_testcases()
    for case in cases:
        d = os.path.join(out, case.name)
        os.makedirs(d)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        g = case.model.graph
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, f"test_data_set_{i}")
            os.makedirs(ds)
            for j, value in enumerate(inputs):
                with open(os.path.join(ds, f"input_{j}.pb"), "wb") as f:
                    f.write(serialize(value, g.input[j].type, g.input[j].name))
            for j, value in enumerate(outputs):
                with open(os.path.join(ds, f"output_{j}.pb"), "wb") as f:
                    f.write(serialize(value, g.output[j].type, g.output[j].name))
    print(f"onnx {onnx.__version__} (opset {onnx.defs.onnx_opset_version()}): {len(cases)} node tests in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
